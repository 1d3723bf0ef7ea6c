"""The four tasks of a workspace, each with its state, its tools and the agent's plan for it.

- `FailingTests`: bugs behind failing tests; `run_tests` prints pytest's report. Fixed by reading
  the failing line and editing it, some bugs in two edits (the error changes after the first).
- `Service`: an API behind nginx answers 502 because its database URL has the wrong port;
  `http_request` and `restart_service`; after the fix the API boots for a few steps (503).
- `Pipeline`: a load job fails because its input partition is missing; `submit_job`,
  `job_status`, `cancel_job`. The extract job is run first, then the load, each polled.
- `Migration`: `legacy_client.fetch(` is replaced by `http_client.get(` in every file; found
  with the paged `search` tool, then edited file by file.

Each flow yields the calls of a competent agent, labelled where a stretch is productive
repetition (a hard negative: `retest`, `paging`, `iterate`, `poll_done`), and `SafePoint`s
where `trap()` may insert a trap segment. A trap is built only from calls that cannot bring
the task closer to done from the state at that point.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pos_agent.trapbench.toolagent.workspace import (
    SEARCH_PAGE,
    Call,
    Result,
    SafePoint,
    Task,
    Workspace,
    fact,
    search_cursor,
)

# -- the test suite ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stage:
    bad: str
    good: str
    error: tuple[str, ...]
    """The `E` lines pytest prints while this stage is unfixed; the first names the kind."""


@dataclass(frozen=True, slots=True)
class BugTemplate:
    module: str
    function: str
    signature: str
    test: str
    stages: tuple[Stage, ...]


BUGS = (
    BugTemplate(
        "auth",
        "is_expired",
        "def is_expired(issued: int, ttl: int, now: int) -> bool:",
        "test_token_expiry",
        (
            Stage(
                "    return now - issued > ttl * 60",
                "    return now - issued > ttl",
                ("AssertionError: assert False is True", "+  where False = is_expired({args})"),
            ),
        ),
    ),
    BugTemplate(
        "billing",
        "round_total",
        "def round_total(lines: list[Line]) -> float:",
        "test_total_rounds_to_cents",
        (
            Stage(
                "    return round(sum(l.amount for l in lines), 1)",
                "    return round(sum(l.amount for l in lines), 2)",
                ("AssertionError: assert 10.5 == 10.46",),
            ),
        ),
    ),
    BugTemplate(
        "csv_import",
        "parse_row",
        "def parse_row(line: str) -> Row:",
        "test_parse_quoted_row",
        (
            Stage(
                '    fields = line.split(",")',
                "    fields = next(csv.reader([line], skipinitialspace=False))",
                ("ValueError: invalid literal for int() with base 10: ' \"Lovelace'",),
            ),
            Stage(
                "    return Row(int(fields[0]), fields[1], fields[2])",
                "    return Row(int(fields[0]), fields[1].strip(), fields[2].strip())",
                ("AssertionError: assert ' Ada' == 'Ada'",),
            ),
        ),
    ),
    BugTemplate(
        "dates",
        "to_local",
        "def to_local(moment: datetime, zone: ZoneInfo) -> datetime:",
        "test_to_local_converts",
        (
            Stage(
                "    return moment.replace(tzinfo=zone)",
                "    return moment.astimezone(zone)",
                ("AssertionError: assert 9 == 10", "+  where 9 = to_local({args}).hour"),
            ),
        ),
    ),
    BugTemplate(
        "pagination",
        "page_slice",
        "def page_slice(items: list[T], page: int, size: int) -> list[T]:",
        "test_first_page",
        (
            Stage(
                "    return items[page * size : page * size + size]",
                "    return items[(page - 1) * size : page * size]",
                ("AssertionError: assert [4, 5, 6] == [1, 2, 3]",),
            ),
        ),
    ),
    BugTemplate(
        "config",
        "load_settings",
        "def load_settings() -> Settings:",
        "test_defaults_without_env",
        (
            Stage(
                '    path = os.environ["APP_CONFIG"]',
                '    path = os.environ.get("APP_CONFIG", DEFAULT_PATH)',
                ("KeyError: 'APP_CONFIG'",),
            ),
            Stage(
                "    raw = yaml.load(stream)",
                "    raw = yaml.safe_load(stream)",
                ("TypeError: load() missing 1 required positional argument: 'Loader'",),
            ),
        ),
    ),
    BugTemplate(
        "users",
        "normalize_email",
        "def normalize_email(email: str) -> str:",
        "test_email_is_case_folded",
        (
            Stage(
                "    return email.strip()",
                "    return email.strip().lower()",
                ("AssertionError: assert 'Ada@Example.com' == 'ada@example.com'",),
            ),
        ),
    ),
    BugTemplate(
        "retry",
        "backoff",
        "def backoff(attempt: int, base: float = 0.5) -> float:",
        "test_backoff_doubles",
        (
            Stage(
                "    delay = base * attempt",
                "    delay = base * 2 ** attempt",
                ("AssertionError: assert 1.5 == 4.0",),
            ),
            Stage(
                "    return delay",
                "    return min(delay, MAX_DELAY)",
                ("AssertionError: assert 512.0 == 30.0",),
            ),
        ),
    ),
)

FILLER = (
    "    logger.debug({name!r}, extra={{'call': {n}}})",
    "    result = {{}}",
    "    metrics.increment('{name}.calls')",
    "    assert {arg} is not None, '{name}: no input'",
    "    started = time.monotonic()",
    "    options = dict(options or {{}})",
)

SETTINGS = {
    "REQUEST_TIMEOUT": ["5", "10", "30", "60"],
    "MAX_RETRIES": ["3", "5", "0", "8"],
    "CACHE_TTL": ["300", "60", "0", "900"],
    "DEFAULT_TZ": ['"UTC"', '"Europe/Paris"', '"America/New_York"', '"UTC"'],
}


@dataclass
class Bug:
    template: BugTemplate
    path: str
    test_file: str
    lines: list[int]
    stage: int = 0
    seen: int = -1
    """The stage whose outcome the last test run that covered this bug showed."""
    read: bool = False

    @property
    def fixed(self) -> bool:
        return self.stage == len(self.template.stages)

    @property
    def verified(self) -> bool:
        return self.fixed and self.seen == self.stage

    def remaining(self) -> int:
        if self.verified:
            return 0
        edits = len(self.template.stages) - self.stage
        return 2 * edits + (self.seen != self.stage) + (not self.read)


class FailingTests(Task):
    name = "tests"

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        rng = ws.rng
        count = rng.randint(2, 4)
        templates = rng.sample(BUGS, count)
        while sum(len(t.stages) for t in templates) < 3:
            templates = rng.sample(BUGS, count)
        self.bugs: list[Bug] = []
        for template in templates:
            path = f"src/app/{template.module}.py"
            test_file = f"tests/test_{template.module}.py"
            lines = self._write_module(path, template)
            self.bugs.append(Bug(template, path, test_file, lines))
            self._write_test(test_file, template)
        self.passing = {b.test_file: rng.randint(4, 14) for b in self.bugs}
        for extra in rng.sample(["models", "views", "forms", "cli", "storage"], 2):
            self.passing[f"tests/test_{extra}.py"] = rng.randint(5, 20)
        self.settings = {key: values[0] for key, values in SETTINGS.items()}
        ws.write("src/app/settings.py", self._settings_lines())
        ws.write(
            "tests/conftest.py",
            [
                "import pytest",
                "",
                "@pytest.fixture",
                "def client(app):",
                "    return app.test_client()",
            ],
        )
        self.goal_text = "make the failing tests pass (`run_tests`)"

    def _write_module(self, path: str, template: BugTemplate) -> list[int]:
        rng = self.ws.rng
        lines = [
            "from __future__ import annotations",
            "",
            "import csv",
            "import logging",
            "import os",
            "",
            "logger = logging.getLogger(__name__)",
            "",
        ]
        for helper in range(rng.randint(1, 4)):
            name = f"_{template.module}_helper_{helper}"
            lines += [f"def {name}(options: dict, value: str = '') -> dict:"]
            lines += [
                rng.choice(FILLER).format(name=name, n=rng.randint(1, 99), arg="options")
                for _ in range(rng.randint(3, 9))
            ]
            lines += ["    return result", ""]
        lines.append(template.signature)
        positions = []
        for stage in template.stages:
            lines += [
                rng.choice(FILLER).format(name=template.function, n=rng.randint(1, 99), arg="lines")
                for _ in range(rng.randint(1, 4))
            ]
            lines.append(stage.bad)
            positions.append(len(lines))
        lines += ["", ""]
        self.ws.write(path, lines)
        return positions

    def _write_test(self, path: str, template: BugTemplate) -> None:
        self.ws.write(
            path,
            [
                f"from app.{template.module} import {template.function}",
                "",
                "",
                f"def {template.test}(client):",
                f"    assert {template.function}(*CASE) == EXPECTED",
            ],
        )

    def _settings_lines(self) -> list[str]:
        return [f"{key} = {value}" for key, value in self.settings.items()]

    # -- state -------------------------------------------------------------------------------------

    def facts(self) -> set[str]:
        facts = set()
        for bug in self.bugs:
            test = bug.template.test
            facts.add(fact("passing" if bug.fixed else "failing", test))
            facts.add(fact("covers", test, bug.path))
            if not bug.fixed:
                kind = bug.template.stages[bug.stage].error[0].split(":")[0]
                facts.add(fact("raises", test, kind))
                facts.add(fact("defect", bug.path, bug.lines[bug.stage]))
        for key, value in self.settings.items():
            facts.add(fact("setting", "src/app/settings.py", key, value))
        return facts

    def goals(self) -> set[str]:
        return {fact("passing", b.template.test) for b in self.bugs}

    def questions(self) -> set[str]:
        return {fact("cause", b.template.test) for b in self.bugs if b.seen < 0}

    def remaining(self) -> int:
        return sum(b.remaining() for b in self.bugs)

    def entities(self) -> set[str]:
        return {b.template.test for b in self.bugs} | {b.path for b in self.bugs}

    def edited(self, path: str, old: str, new: str) -> None:
        for bug in self.bugs:
            if bug.path == path and not bug.fixed:
                stage = bug.template.stages[bug.stage]
                if old.strip() == stage.bad.strip() and new.strip() == stage.good.strip():
                    bug.stage += 1
        if path == "src/app/settings.py":
            for line in self.ws.files[path]:
                key, _, value = line.partition(" = ")
                self.settings[key] = value

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        for bug in self.bugs:
            if bug.path == path and not bug.fixed:
                line = bug.lines[bug.stage]
                if (start or 1) <= line <= (end or 10**6):
                    bug.read = True
        return None

    # -- tools -------------------------------------------------------------------------------------

    def handle(self, call: Call) -> Result | None:
        if call.tool != "run_tests":
            return None
        return self._run(call.args)

    def _run(self, args: dict[str, Any]) -> Result:
        noise, rng = self.ws.noise, self.ws.rng
        only = args.get("path")
        files = {f: n for f, n in self.passing.items() if only in (None, f)}
        if not files:
            took = noise.seconds(0.01, 0.09)
            return Result(
                f"ERROR: file or directory not found: {only}\n\n"
                f"{'=' * 28} no tests ran in {took} {'=' * 28}",
                error=True,
            )
        failing = [b for b in self.bugs if b.test_file in files and not b.fixed]
        total = sum(files.values()) + len([b for b in self.bugs if b.test_file in files])
        lines = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0",
            f"rootdir: {self.ws.root}",
            f"plugins: anyio-4.6.2, randomly-3.16.0 (seed {rng.randrange(10**9)})",
            f"collected {total} items",
            "",
        ]
        done = 0
        for name, passed in sorted(files.items()):
            marks = ["."] * passed + [
                "F" if b in failing else "." for b in self.bugs if b.test_file == name
            ]
            rng.shuffle(marks)
            done += len(marks)
            lines.append(f"{name} {''.join(marks):<50} [{100 * done // total:>3}%]")
        if failing:
            lines += ["", "=" * 35 + " FAILURES " + "=" * 35]
        for bug in failing:
            template = bug.template
            stage = template.stages[bug.stage]
            args_text = f"{rng.randrange(1_700_000_000, 1_800_000_000)}, {rng.randint(60, 7200)}"
            lines += [
                f"{'_' * 30} {template.test} {'_' * 30}",
                "",
                f"client = <FlaskClient <Flask 'app'>>, tmp_path = PosixPath('/tmp/pytest-of-agent/"
                f"pytest-{rng.randint(1, 400)}/{template.test}0')",
                "",
                f"    def {template.test}(client):",
                f">       assert {template.function}(*CASE) == EXPECTED",
                "",
                f"{bug.test_file}:5: ",
                f"{bug.path}:{bug.lines[bug.stage]}: in {template.function}",
                f"    {stage.bad.strip()}",
            ]
            lines += [f"E       {e.format(args=args_text)}" for e in stage.error]
            lines += [
                "----------------------------- Captured log call ------------------------------",
                f"WARNING  app.{template.module}:{template.module}.py:{bug.lines[bug.stage]} "
                f"{template.function} request_id={noise.uuid()} at {noise.iso(-noise.millis(5, 900))}",
            ]
            bug.seen = bug.stage
            self.ws.see(template.test, bug.path)
        for bug in self.bugs:
            if bug.fixed and bug.test_file in files:
                bug.seen = bug.stage
                self.ws.see(bug.template.test)
        seconds = noise.seconds(0.4, 6.5)
        if failing:
            lines += [
                "=========================== short test summary info ============================"
            ]
            lines += [
                f"FAILED {b.test_file}::{b.template.test} - {b.template.stages[b.stage].error[0]}"
                for b in failing
            ]
            verdict = f"{len(failing)} failed, {total - len(failing)} passed"
        else:
            verdict = f"{total} passed"
        warnings = rng.randint(0, 4)
        if warnings:
            verdict += f", {warnings} warning{'s' if warnings > 1 else ''}"
        lines.append(f"{'=' * 20} {verdict} in {seconds} {'=' * 20}")
        return Result("\n".join(lines))

    # -- the plan ----------------------------------------------------------------------------------

    def flow(self) -> Iterator[Call | SafePoint]:
        yield Call("run_tests", {})
        yield SafePoint("S1")
        first = self.bugs[0]
        yield Call("read_file", {"path": first.test_file})
        for number, bug in enumerate(self.bugs):
            label = "none" if number == 0 else "retest"
            line = bug.lines[bug.stage]
            yield Call(
                "read_file", {"path": bug.path, "start": max(1, line - 12), "end": line + 6}, label
            )
            for _stage in bug.template.stages:
                stage = bug.template.stages[bug.stage]
                yield Call(
                    "edit_file",
                    {"path": bug.path, "old": stage.bad.strip(), "new": stage.good.strip()},
                    "retest",
                )
                yield Call("run_tests", {}, "retest")
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        first = self.bugs[0]
        run = Call("run_tests", {})
        test = Call("read_file", {"path": first.test_file})
        if kind == "repeat":
            if rng.random() < 0.3:  # a test file that does not exist, asked for again and again
                run = Call("run_tests", {"path": f"tests/test_{first.template.module}_api.py"})
            return [run] * rng.randint(6, 12)
        if kind == "alternation":
            return _alternate(run, test, rng.randint(6, 12))
        if kind == "cycle":
            pool = [
                test,
                Call("read_file", {"path": "tests/conftest.py"}),
                run,
                Call("list_dir", {"path": "tests"}),
                Call("read_file", {"path": "src/app/settings.py"}),
            ]
            if point == "S2":
                pool.append(Call("read_file", {"path": first.path}))
            return _cycle(pool, rng)
        if kind == "semantic" and point == "S1":
            calls: list[Call] = []
            keys = rng.sample(list(SETTINGS), 2)
            flags = [
                "-x",
                "--lf",
                "-vv",
                f"-k {first.template.test}",
                "-x --tb=long",
                "-p no:randomly",
            ]
            current = dict(self.settings)
            for attempt in range(rng.randint(3, 4)):
                key = keys[attempt % 2]
                options = [v for v in SETTINGS[key] if v != current[key]]
                value = options[attempt % len(options)]
                calls.append(
                    Call(
                        "edit_file",
                        {
                            "path": "src/app/settings.py",
                            "old": f"{key} = {current[key]}",
                            "new": f"{key} = {value}",
                        },
                        kind,
                    )
                )
                current[key] = value
                calls.append(Call("run_tests", {"args": flags[attempt]}))
                calls.append(
                    Call("read_file", {"path": first.test_file, "start": 1, "end": 4 + attempt})
                )
            return calls
        return None


# -- the service ---------------------------------------------------------------------------------


class Service(Task):
    name = "service"
    ENV = "deploy/api.env"
    LOG = "logs/api/app.log"
    COMPOSE = "deploy/docker-compose.yml"
    URL = "http://localhost:8080/health"

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        rng = ws.rng
        self.db_port = rng.choice([5432, 5433, 6432])
        self.wrong_port = rng.choice([p for p in (5432, 5433, 6432, 5442) if p != self.db_port])
        self.env = {
            "DATABASE_URL": f"postgresql://app:app@db:{self.wrong_port}/app",
            "DB_POOL_SIZE": str(rng.choice([5, 10, 20])),
            "DB_CONNECT_TIMEOUT": str(rng.choice([3, 5, 10])),
            "WEB_CONCURRENCY": str(rng.choice([2, 4])),
            "LOG_LEVEL": "info",
        }
        ws.write(self.ENV, self._env_lines())
        ws.write(
            self.COMPOSE,
            [
                "services:",
                "  db:",
                "    image: postgres:16",
                f"    command: postgres -p {self.db_port}",
                "  api:",
                "    build: .",
                f"    env_file: {self.ENV}",
                "  nginx:",
                "    image: nginx:1.27",
                "    ports: ['8080:80']",
            ],
        )
        self.migrations = rng.randint(4, 7)
        self.boot_total = self.migrations
        self.boot_left = self.boot_total
        self.saw_down = self.cfg_read = self.cause_known = self.port_known = False
        self.restarted = self.hung = self.verified = False
        self.restarts = 0
        self.pid = ws.noise.pid()
        self.hang_armed = False
        self.hang_length = 0
        self.goal_text = f"get {self.URL} to answer 200"

    def _env_lines(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.env.items()]

    @property
    def fixed(self) -> bool:
        return self.env["DATABASE_URL"].endswith(f":{self.db_port}/app")

    @property
    def state(self) -> str:
        if not (self.restarted and self.fixed):
            return "down"
        if self.hung or self.boot_left > 0:
            return "starting"
        return "up"

    def facts(self) -> set[str]:
        facts = {fact("status", "api", self.state), fact("listens", "db", self.db_port)}
        port = self.env["DATABASE_URL"].rsplit(":", 1)[1].split("/")[0]
        facts.add(fact("connects", "api", f"db:{port}"))
        facts |= {fact("setting", self.ENV, k, v) for k, v in self.env.items()}
        code = {"down": 502, "starting": 503, "up": 200}[self.state]
        facts.add(fact("responds", "/health", code))
        if self.state == "starting":
            done = self.boot_total - self.boot_left
            facts.add(
                fact("migrations", "api", "waiting" if self.hung else f"{done}/{self.migrations}")
            )
        return facts

    def goals(self) -> set[str]:
        return {fact("responds", "/health", 200), fact("status", "api", "up")}

    def questions(self) -> set[str]:
        return set() if self.cause_known else {fact("cause", "api")}

    def remaining(self) -> int:
        steps = (not self.saw_down) + (not self.cfg_read) + (not self.cause_known)
        steps += (not self.port_known) + (not self.fixed) + (not self.restarted) + self.hung
        return steps + self.boot_left + (not self.verified)

    def entities(self) -> set[str]:
        return {"api", "/health", "db", self.ENV}

    def tick(self) -> None:
        if self.restarted and self.fixed and not self.hung and self.boot_left > 0:
            self.boot_left -= 1

    def edited(self, path: str, old: str, new: str) -> None:
        if path == self.ENV:
            for line in self.ws.files[path]:
                key, _, value = line.partition("=")
                self.env[key] = value

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        if path == self.ENV:
            self.cfg_read = True
        elif path == self.COMPOSE:
            self.port_known = True
        elif path == self.LOG:
            self.cause_known = True
            return Result(self._log())
        return None

    def _log(self) -> str:
        noise = self.ws.noise
        lines = []
        port = self.env["DATABASE_URL"].rsplit(":", 1)[1].split("/")[0]
        for back in range(6, 0, -1):
            at = noise.iso(-back * noise.millis(800, 4000))
            if self.state == "down":
                lines += [
                    f"{at} [pid {self.pid}] INFO  Starting gunicorn 23.0.0 (workers={self.env['WEB_CONCURRENCY']})",
                    f"{at} [pid {self.pid}] ERROR sqlalchemy.exc.OperationalError: connection to server at "
                    f'"db" (172.18.0.{noise.millis(2, 9)}), port {port} failed: Connection refused',
                    f"{at} [pid {self.pid}] INFO  Worker exiting (pid: {noise.pid()})",
                ]
            elif self.hung:
                lines.append(
                    f"{at} [pid {self.pid}] INFO  alembic: waiting for advisory lock 72707369 "
                    f"(held by pid {noise.pid()} since {noise.iso(-3_600_000)})"
                )
            else:
                lines.append(f"{at} [pid {self.pid}] INFO  GET /health 200 {noise.millis(1, 30)}ms")
        return "\n".join(lines[-12:])

    def handle(self, call: Call) -> Result | None:
        if call.tool == "http_request":
            return self._request(call.args)
        if call.tool == "restart_service":
            return self._restart(call.args)
        return None

    def _request(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        url = str(args["url"])
        if url.startswith("http://localhost:8000") and self.state == "down":
            return Result(
                f"*   Trying 127.0.0.1:8000...\n* connect to 127.0.0.1 port 8000 from 127.0.0.1 port "
                f"{noise.port()} failed: Connection refused\ncurl: (7) Failed to connect to localhost "
                f"port 8000 after {noise.millis(0, 3)} ms: Couldn't connect to server",
                error=True,
            )
        if not url.split("?")[0].endswith("/health"):
            return Result(f"curl: (22) The requested URL returned error: 404 ({url})")
        self.ws.see("api", "/health")
        uptime = noise.millis(1, 40)
        if self.state == "down":
            self.saw_down = True
            status, body = (
                "502 Bad Gateway",
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 "
                "Bad Gateway</h1></center>\r\n<hr><center>nginx/1.27.3</center>\r\n</body>\r\n</html>",
            )
        elif self.state == "starting":
            done = self.boot_total - self.boot_left
            migrations = "waiting for lock" if self.hung else f"running {done}/{self.migrations}"
            status = "503 Service Unavailable"
            body = json.dumps(
                {
                    "status": "starting",
                    "uptime_s": uptime,
                    "checks": {"db": "ok", "migrations": migrations},
                }
            )
        else:
            self.verified = True
            status = "200 OK"
            body = json.dumps(
                {"status": "ok", "version": "2.14.1", "uptime_s": uptime, "commit": noise.hex(7)}
            )
        head = [
            "*   Trying 127.0.0.1:8080...",
            f"* Connected to localhost (127.0.0.1) port 8080 (#0) local port {noise.port()}",
            f"HTTP/1.1 {status}",
            "Server: nginx/1.27.3",
            f"Date: {noise.http_date()}",
            f"Content-Length: {len(body)}",
            "Connection: keep-alive",
            f"X-Request-Id: {noise.uuid()}",
            "",
        ]
        return Result("\n".join(head) + body + "\n" + noise.curl_meter(len(body)))

    def _restart(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        name = str(args["name"])
        if name != "api":
            return Result(f"{name}: restarted (pid {noise.pid()}) at {noise.iso()}")
        old, self.pid = self.pid, noise.pid()
        self.restarts += 1
        if self.fixed:
            self.restarted = True
            if self.hang_armed:
                self.hung, self.hang_armed = True, False
            else:
                self.hung = False
                self.boot_left = self.boot_total
        self.ws.see("api")
        return Result(
            f"Stopping api ... done (pid {old}, exit code {3 if not self.fixed else 0})\n"
            f"Starting api ... done (pid {self.pid}) at {noise.iso()} [{noise.seconds(0.3, 2.5)}]"
        )

    def arm_polling(self, point: str, polls: int) -> bool:
        if point != "S1":
            return False
        self.hang_armed = True
        self.hang_length = polls
        return True

    def flow(self) -> Iterator[Call | SafePoint]:
        health = Call("http_request", {"method": "GET", "url": self.URL})
        yield health
        yield Call("read_file", {"path": self.ENV})
        yield SafePoint("S1")
        yield Call("read_file", {"path": self.LOG})
        yield Call("read_file", {"path": self.COMPOSE})
        old = self.env["DATABASE_URL"]
        yield Call(
            "edit_file",
            {
                "path": self.ENV,
                "old": old,
                "new": old.replace(f":{self.wrong_port}/", f":{self.db_port}/"),
            },
        )
        yield Call("restart_service", {"name": "api"})
        if self.hung:
            for _ in range(self.hang_length):
                yield Call("http_request", health.args, "polling")
            yield Call("read_file", {"path": self.LOG})
            yield Call("restart_service", {"name": "api"})
        while not self.verified:
            yield Call("http_request", health.args, "poll_done")
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        health = Call("http_request", {"method": "GET", "url": self.URL})
        if kind == "repeat":
            draw = rng.random()
            if draw < 0.35:  # a cache-buster that changes every call
                return [
                    Call(
                        "http_request",
                        {"method": "GET", "url": f"{self.URL}?ts={self.ws.noise.epoch() + 17 * i}"},
                    )
                    for i in range(rng.randint(6, 12))
                ]
            if draw < 0.6 and point == "S1":  # the API's own port, refused while it is down
                health = Call(
                    "http_request", {"method": "GET", "url": "http://localhost:8000/health"}
                )
            return [health] * rng.randint(6, 12)
        env = Call("read_file", {"path": self.ENV})
        if kind == "alternation":
            return _alternate(health, env, rng.randint(6, 12))
        if kind == "cycle":
            pool = [
                health,
                env,
                Call("restart_service", {"name": "nginx"}),
                Call("list_dir", {"path": "deploy"}),
            ]
            if point == "S2":
                pool.append(Call("read_file", {"path": self.COMPOSE}))
            return _cycle(pool, rng)
        if kind == "semantic" and point == "S1":
            calls: list[Call] = []
            current = dict(self.env)
            tweaks = {
                "DB_CONNECT_TIMEOUT": ["15", "30", "60", "120"],
                "DB_POOL_SIZE": ["1", "2", "40", "50"],
                "WEB_CONCURRENCY": ["1", "8", "3", "6"],
            }
            keys = rng.sample(list(tweaks), 2)
            for attempt in range(rng.randint(3, 4)):
                key = keys[attempt % 2]
                value = next(v for v in tweaks[key] if v != current[key])
                tweaks[key].remove(value)
                calls.append(
                    Call(
                        "edit_file",
                        {"path": self.ENV, "old": f"{key}={current[key]}", "new": f"{key}={value}"},
                    )
                )
                current[key] = value
                calls.append(Call("restart_service", {"name": "api"}))
                calls.append(health)
            return calls
        return None


# -- the job queue -------------------------------------------------------------------------------


@dataclass
class Job:
    id: str
    pipeline: str
    params: dict[str, Any]
    ticks: list[int]
    """Percent reached after each tick."""
    state: str = "QUEUED"
    percent: int = 0
    elapsed: int = 0
    hung: bool = False
    fails: bool = False
    rows: int = 0
    error: str = ""
    seen_state: str = ""

    def ticks_left(self) -> int:
        return len(self.ticks)


class Pipeline(Task):
    name = "pipeline"
    SUMMARY = "reports/orders_summary.json"

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        rng = ws.rng
        day = ws.noise.now.date()
        self.date = day.isoformat()
        self.partitions = [(day.toordinal() - back) for back in range(4, 0, -1)]
        self.extracted = False
        self.loaded = False
        self.jobs: dict[str, Job] = {}
        self.ids = [ws.noise.hex(8) for _ in range(24)]
        self.failure_seen = self.missing_known = self.summary_read = False
        self.hang_armed = False
        self.hang_length = 0
        self.extract_ticks = rng.randint(4, 7)
        self.load_ticks = rng.randint(4, 7)
        self.rows = rng.randint(40_000, 400_000)
        ws.write(
            "etl/pipelines.yaml",
            [
                "extract_orders:",
                "  source: postgres://shop/orders",
                "  sink: s3://raw/orders/dt={date}/",
                "load_orders:",
                "  source: s3://raw/orders/dt={date}/",
                "  sink: warehouse.orders",
                "  batch_size: 5000",
            ],
        )
        ws.write(
            "docs/pipelines/load_orders.md",
            [
                "# load_orders",
                "",
                "Loads one day of raw orders into warehouse.orders.",
                "Run extract_orders first.",
            ],
        )
        self.first: Job | None = None
        self.goal_text = f"load the orders of {self.date} into warehouse.orders"

    def _schedule(self, ticks: int) -> list[int]:
        rng = self.ws.rng
        cuts = sorted(rng.sample(range(3, 98), ticks - 1))
        return [*cuts, 100]

    def _current(self, pipeline: str) -> Job | None:
        jobs = [j for j in self.jobs.values() if j.pipeline == pipeline and j.state != "CANCELLED"]
        return jobs[-1] if jobs else None

    def _part(self, pipeline: str, ticks: int, done: bool) -> int:
        job = self._current(pipeline)
        if done:
            return 0 if job is not None and job.seen_state == "SUCCEEDED" else 1
        if job is None or job.state in ("FAILED",):
            return 1 + ticks + 1
        if job.hung:
            return 2 + ticks + 1
        return job.ticks_left() + 1

    def facts(self) -> set[str]:
        facts = set()
        for job in self.jobs.values():
            facts.add(fact("job", job.id, job.pipeline, job.state.lower()))
            if job.state == "RUNNING":
                facts.add(fact("progress", job.id, job.percent))
        if self.extracted:
            facts.add(fact("partition", "raw/orders", self.date))
        else:
            facts.add(fact("missing", "raw/orders", self.date))
        if self.loaded:
            facts.add(fact("loaded", "warehouse.orders", self.date))
            facts.add(fact("exists", self.SUMMARY))
        return facts

    def goals(self) -> set[str]:
        return {fact("loaded", "warehouse.orders", self.date)}

    def questions(self) -> set[str]:
        first = self.first
        if first is not None and first.seen_state == "FAILED" and not self.missing_known:
            return {fact("cause", first.id)}
        return set()

    def remaining(self) -> int:
        steps = (not self.failure_seen) + (not self.missing_known) + (not self.summary_read)
        steps += self._part("extract_orders", self.extract_ticks, self.extracted)
        steps += (
            self._part("load_orders", self.load_ticks, self.loaded)
            if self.extracted
            else 1 + self.load_ticks + 1
        )
        return steps

    def entities(self) -> set[str]:
        return {"warehouse.orders", "raw/orders", *self.jobs}

    def tick(self) -> None:
        for job in self.jobs.values():
            if job.state in ("SUCCEEDED", "FAILED", "CANCELLED") or job.hung:
                job.elapsed += self.ws.rng.randint(3, 40) if job.hung else 0
                continue
            job.elapsed += self.ws.rng.randint(5, 45)
            if job.fails:
                job.state, job.error = "FAILED", self._missing_error()
                continue
            job.state = "RUNNING"
            job.percent = job.ticks.pop(0)
            job.rows = self.rows * job.percent // 100
            if not job.ticks:
                job.state = "SUCCEEDED"
                if job.pipeline == "extract_orders":
                    self.extracted = True
                else:
                    self.loaded = True

    def _missing_error(self) -> str:
        return f"FileNotFoundError: no objects under s3://raw/orders/dt={self.date}/"

    def listing(self, prefix: str) -> dict[str, int]:
        if prefix != "raw/orders/":
            return {}
        self.missing_known = self.missing_known or (
            self.first is not None and self.first.seen_state == "FAILED"
        )
        from datetime import date

        days = [date.fromordinal(o).isoformat() for o in self.partitions]
        if self.extracted:
            days.append(self.date)
        return {f"dt={d}/": 1_000 * (i + 7) for i, d in enumerate(days)}

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        noise = self.ws.noise
        if path == self.SUMMARY:
            if not self.loaded:
                return Result(f"error: {path}: No such file or directory", error=True)
            self.summary_read = True
            return Result(
                json.dumps(
                    {
                        "date": self.date,
                        "rows": self.rows,
                        "rejected": 0,
                        "generated_at": noise.iso(-noise.millis(1000, 90_000)),
                        "run_id": noise.uuid(),
                    },
                    indent=2,
                )
            )
        if path.startswith("logs/jobs/") and path.endswith(".log"):
            job = self.jobs.get(path[len("logs/jobs/") : -len(".log")])
            if job is None:
                return Result(f"error: {path}: No such file or directory", error=True)
            lines = [
                f"{noise.iso(-30_000)} INFO  job {job.id} ({job.pipeline}) accepted by etl-w{noise.millis(1, 5)}"
            ]
            if job.state == "FAILED":
                lines += [
                    f"{noise.iso(-20_000)} INFO  reading s3://raw/orders/dt={self.date}/ (request {noise.hex(16)})",
                    f"{noise.iso(-19_000)} ERROR {job.error}",
                    "Traceback (most recent call last):",
                    f'  File "/opt/etl/readers.py", line {noise.millis(80, 300)}, in open_partition',
                ]
            else:
                lines.append(f"{noise.iso()} INFO  {job.percent}% done, {job.rows:,} rows")
            return Result("\n".join(lines))
        return None

    def handle(self, call: Call) -> Result | None:
        if call.tool == "submit_job":
            return self._submit(call.args)
        if call.tool == "job_status":
            return self._status(call.args)
        if call.tool == "cancel_job":
            job = self.jobs.get(str(call.args["job_id"]))
            if job is None:
                return Result(f"error: no job {call.args['job_id']}", error=True)
            was = f"{job.state} {job.percent}%"
            job.state, job.hung = "CANCELLED", False
            return Result(f"job {job.id} cancelled (was {was}) at {self.ws.noise.iso()}")
        return None

    def _submit(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        pipeline = str(args["pipeline"])
        if pipeline not in ("extract_orders", "load_orders"):
            return Result(f"error: unknown pipeline {pipeline!r}", error=True)
        ticks = self.extract_ticks if pipeline == "extract_orders" else self.load_ticks
        job = Job(self.ids.pop(0), pipeline, dict(args.get("params", {})), self._schedule(ticks))
        job.fails = pipeline == "load_orders" and not self.extracted
        if pipeline == "extract_orders" and self.hang_armed:
            job.hung, self.hang_armed = True, False
            if self.ws.rng.random() < 0.5:
                job.state, job.percent = "RUNNING", self.ws.rng.randrange(5, 95)
        self.jobs[job.id] = job
        if self.first is None:
            self.first = job
        self.ws.see(job.id)
        position = noise.millis(1, 6)
        return Result(
            f"Submitted job {job.id} ({pipeline}) to queue etl-default at {noise.iso()}; position {position}"
        )

    def _status(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        job = self.jobs.get(str(args["job_id"]))
        if job is None:
            return Result(f"error: no job {args['job_id']}", error=True)
        job.seen_state = job.state
        if job is self.first and job.state == "FAILED":
            self.failure_seen = True
        elapsed = f"{job.elapsed // 3600}:{job.elapsed // 60 % 60:02d}:{job.elapsed % 60:02d}"
        head = f"job {job.id} · {job.pipeline} · {job.state}"
        if job.state == "QUEUED":
            body = f"position 1 · waiting for a free worker (0/{noise.millis(2, 6)} idle) · queued {elapsed}"
        elif job.state == "RUNNING":
            eta = noise.millis(20, 400) if not job.hung else noise.millis(20, 90)
            body = (
                f"progress {noise.bar(job.percent)} {job.percent}%  rows {job.rows:,}/{self.rows:,}\n"
                f"started {noise.iso(-job.elapsed * 1000)} · elapsed {elapsed} · eta 0:0{eta // 60}:{eta % 60:02d}\n"
                f"worker etl-w{noise.millis(1, 5)} (pid {noise.pid()}) · last heartbeat {noise.millis(1, 30) / 10}s ago"
            )
        elif job.state == "FAILED":
            body = f"failed after {elapsed} · {job.error} (request id {noise.uuid()})"
        elif job.state == "SUCCEEDED":
            sink = (
                "warehouse.orders"
                if job.pipeline == "load_orders"
                else f"s3://raw/orders/dt={self.date}/"
            )
            body = f"{self.rows:,} rows written to {sink} in {elapsed}"
            self.ws.see("warehouse.orders" if job.pipeline == "load_orders" else "raw/orders")
        else:
            body = f"cancelled after {elapsed}"
        return Result(f"{head}\n{body}\nchecked at {noise.iso()}")

    def arm_polling(self, point: str, polls: int) -> bool:
        if point != "S1":
            return False
        self.hang_armed = True
        self.hang_length = polls
        return True

    def flow(self) -> Iterator[Call | SafePoint]:
        load = {"pipeline": "load_orders", "params": {"date": self.date}}
        first = self.ids[0]
        yield Call("submit_job", load)
        yield Call("job_status", {"job_id": first})
        yield SafePoint("S1")
        yield Call("list_dir", {"path": "raw/orders"})
        hung = self.hang_armed
        job = self.ids[0]
        yield Call("submit_job", {"pipeline": "extract_orders", "params": {"date": self.date}})
        if hung:
            for _ in range(self.hang_length):
                yield Call("job_status", {"job_id": job}, "polling")
            yield Call("cancel_job", {"job_id": job})
            job = self.ids[0]
            yield Call(
                "submit_job",
                {
                    "pipeline": "extract_orders",
                    "params": {"date": self.date},
                    "queue": "etl-highmem",
                },
            )
        while not self.extracted or self.jobs[job].seen_state != "SUCCEEDED":
            yield Call("job_status", {"job_id": job}, "poll_done")
        job = self.ids[0]
        yield Call("submit_job", load)
        while not self.loaded or self.jobs[job].seen_state != "SUCCEEDED":
            yield Call("job_status", {"job_id": job}, "poll_done")
        yield Call("read_file", {"path": self.SUMMARY})
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        target = self.first.id if point == "S1" and self.first else self._last_load()
        status = Call("job_status", {"job_id": target})
        log = Call("read_file", {"path": f"logs/jobs/{target}.log"})
        if point == "S2":
            log = Call("read_file", {"path": self.SUMMARY})
        if kind == "repeat":
            draw = rng.random()
            if draw < 0.3:  # a job id mistyped once and asked for again and again
                status = Call(
                    "job_status", {"job_id": target[:-1] + ("0" if target[-1] != "0" else "1")}
                )
            elif draw < 0.55:  # the same status call with a retry counter the agent counts up
                count = rng.randint(6, 12)
                return [
                    Call("job_status", {"job_id": target, "attempt": i + 2}) for i in range(count)
                ]
            return [status] * rng.randint(6, 12)
        if kind == "alternation":
            return _alternate(status, log, rng.randint(6, 12))
        if kind == "cycle":
            pool = [
                status,
                log,
                Call("read_file", {"path": "docs/pipelines/load_orders.md"}),
                Call("read_file", {"path": "etl/pipelines.yaml"}),
                Call("search", {"query": "load_orders"}),
            ]
            return _cycle(pool, rng)
        if kind == "semantic" and point == "S1":
            variants = [
                {"date": self.date, "batch_size": 1000},
                {"date": self.date, "batch_size": 500, "retries": 3},
                {"date": self.date, "workers": 2},
                {"date": self.date, "skip_validation": True},
                {"date": self.date, "source": f"s3://raw/orders/dt={self.date}"},
            ]
            rng.shuffle(variants)
            calls = []
            for attempt in range(rng.randint(3, 4)):
                job = self.ids[attempt]
                calls.append(
                    Call("submit_job", {"pipeline": "load_orders", "params": variants[attempt]})
                )
                calls.append(Call("job_status", {"job_id": job}))
                if attempt % 2 == 1:
                    calls.append(Call("read_file", {"path": f"logs/jobs/{job}.log"}))
            return calls
        return None

    def _last_load(self) -> str:
        loads = [j.id for j in self.jobs.values() if j.pipeline == "load_orders"]
        return loads[-1]


# -- the code migration --------------------------------------------------------------------------

MODULES = (
    "handlers/orders",
    "handlers/users",
    "handlers/invoices",
    "handlers/refunds",
    "jobs/sync_stock",
    "jobs/nightly_report",
    "jobs/expire_carts",
    "clients/payments",
    "clients/shipping",
    "clients/tax",
    "services/catalog",
    "services/pricing",
    "services/search",
    "migrations/0007_backfill_skus",
    "migrations/0012_split_addresses",
    "admin/exports",
    "admin/audit",
    "webhooks/stripe",
    "webhooks/carrier",
    "utils/geo",
)


@dataclass
class Migration(Task):
    ws: Workspace
    old: str = "legacy_client.fetch("
    new: str = "http_client.get("
    guide: str = "docs/MIGRATION.md"
    paths: list[str] = field(default_factory=list)
    seen_pages: set[int] = field(default_factory=set)
    guide_read: bool = False
    verified: bool = False
    style: str = "page"
    name = "migration"

    def __post_init__(self) -> None:
        rng = self.ws.rng
        self.style = rng.choice(["page", "offset", "cursor"])
        chosen = rng.sample(MODULES, rng.randint(8, 13))
        self.paths = sorted(f"src/app/{m}.py" for m in chosen)
        for path in self.paths:
            lines = ["from app.net import legacy_client", ""]
            for use in range(rng.choice([1, 1, 2])):
                lines += [
                    f"def call_{use}(item_id: str) -> dict:",
                    f'    resp = legacy_client.fetch(f"{{BASE}}/{path.rsplit("/", 1)[1][:-3]}/{{item_id}}", '
                    f"timeout={rng.choice([2, 5, 10])})",
                    "    return resp.json()",
                    "",
                ]
            self.ws.write(path, lines)
        while self._matches() < 11:
            path = rng.choice(self.paths)
            self.ws.files[path] += [
                "def extra(item_id: str) -> dict:",
                "    return legacy_client.fetch(item_id).json()",
                "",
            ]
        self.ws.write(
            self.guide,
            [
                "# Migrating to http_client",
                "",
                "Calls to legacy_client.fetch become http_client.get.",
            ],
        )
        self.ws.write(
            "src/app/net/http_client.py",
            ["def get(url: str, timeout: float = 5) -> Response:", "    ..."],
        )
        self.goal_text = f"replace every `{self.old}` with `{self.new}`"
        self._initial_pages = self._pages()

    def _matches(self) -> int:
        return sum(self.old in line for p in self.paths for line in self.ws.files[p])

    def _pages(self) -> int:
        total = sum(self.old in line for p in self.ws.files for line in self.ws.files[p])
        return -(-total // SEARCH_PAGE)

    def pending(self) -> list[str]:
        return [p for p in self.paths if any(self.old in line for line in self.ws.files[p])]

    def facts(self) -> set[str]:
        pending = set(self.pending())
        facts = {fact("uses", p, "legacy_client") for p in pending}
        facts |= {fact("migrated", p) for p in self.paths if p not in pending}
        return facts

    def goals(self) -> set[str]:
        return {fact("migrated", p) for p in self.paths}

    def questions(self) -> set[str]:
        unseen = self._initial_pages - len(self.seen_pages)
        return {fact("where", "legacy_client.fetch")} if unseen > 0 else set()

    def remaining(self) -> int:
        unseen = max(0, self._initial_pages - len(self.seen_pages))
        return (not self.guide_read) + unseen + len(self.pending()) + (not self.verified)

    _initial_pages = 0

    def entities(self) -> set[str]:
        return {self.old.rstrip("("), *self.paths}

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        if path == self.guide:
            self.guide_read = True
        return None

    def searched(self, query: str, offset: int, total: int) -> None:
        if query != self.old:
            return
        if total == 0:
            self.verified = not self.pending()
        elif offset // SEARCH_PAGE < self._initial_pages:
            self.seen_pages.add(offset // SEARCH_PAGE)

    def _page_args(self, number: int) -> dict[str, Any]:
        if number == 0 or self.style == "page":
            return {"query": self.old, "page": number + 1} if number else {"query": self.old}
        if self.style == "offset":
            return {"query": self.old, "offset": number * SEARCH_PAGE, "limit": SEARCH_PAGE}
        return {"query": self.old, "cursor": search_cursor(self.old, number * SEARCH_PAGE)}

    def flow(self) -> Iterator[Call | SafePoint]:
        yield Call("read_file", {"path": self.guide})
        yield Call("list_dir", {"path": "src/app"})
        for number in range(self._initial_pages):
            yield Call("search", self._page_args(number), "paging")
        yield SafePoint("S1")
        yield Call("read_file", {"path": "src/app/net/http_client.py"})
        yield Call("read_file", {"path": self.paths[0]})
        paired = self.ws.rng.random() < 0.4
        for path in self.paths:
            if paired:
                yield Call("read_file", {"path": path}, "iterate")
            yield Call(
                "edit_file",
                {"path": path, "old": self.old, "new": self.new, "replace_all": True},
                "iterate",
            )
        yield Call("search", {"query": self.old})
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        first = Call("search", self._page_args(0))
        other = (
            Call("search", self._page_args(1))
            if point == "S1"
            else Call("read_file", {"path": rng.choice(self.paths)})
        )
        if kind == "repeat":
            if point == "S2" and rng.random() < 0.4:  # an edit already made, retried
                path = rng.choice(self.paths)
                first = Call(
                    "edit_file",
                    {"path": path, "old": self.old, "new": self.new, "replace_all": True},
                )
            return [first] * rng.randint(6, 12)
        if kind == "alternation":
            return _alternate(first, other, rng.randint(6, 12))
        if kind == "cycle":
            pool = [
                first,
                Call("read_file", {"path": self.guide}),
                Call("read_file", {"path": "src/app/net/http_client.py"}),
                Call("list_dir", {"path": "src/app"}),
                other,
            ]
            return _cycle(pool, rng)
        return None


def _alternate(a: Call, b: Call, length: int) -> list[Call]:
    return [a if i % 2 == 0 else b for i in range(length)]


def _cycle(pool: list[Call], rng: Any) -> list[Call]:
    """A cycle of 3-5 distinct calls, played two or three times round (6-15 steps)."""
    period = rng.randint(3, min(5, len(pool)))
    calls = rng.sample(pool, period)
    rounds = rng.choice([2, 3]) if period > 3 else 3
    return [calls[i % period] for i in range(period * rounds)]


TASKS: dict[str, type[Task]] = {
    "tests": FailingTests,
    "service": Service,
    "pipeline": Pipeline,
    "migration": Migration,
}

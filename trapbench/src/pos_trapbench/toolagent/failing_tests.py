"""The failing test suite: bugs behind failing tests, `run_tests` printing pytest's report.

A bug is fixed by reading its failing line and editing it; some take two edits, the error
changing after the first. Traps: the test run or the test file again, settings tweaked and the
tests re-run with other flags (a semantic loop).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pos_trapbench.toolagent.traps import paired_or_cycled
from pos_trapbench.toolagent.workspace import (
    Call,
    Result,
    SafePoint,
    Task,
    Workspace,
    fact,
)


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
        pool = [
            test,
            Call("read_file", {"path": "tests/conftest.py"}),
            run,
            Call("list_dir", {"path": "tests"}),
            Call("read_file", {"path": "src/app/settings.py"}),
        ]
        if point == "S2":
            pool.append(Call("read_file", {"path": first.path}))
        return paired_or_cycled(kind, rng, (run, test), pool)

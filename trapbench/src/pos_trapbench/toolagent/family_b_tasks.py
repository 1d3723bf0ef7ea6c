"""The three tasks of the `tools-b` family (family_b.py), each a small simulated workspace that
answers the agent's calls: `GoTests` (a Go module with failing tests), `Rollout` (a Kubernetes
deployment in CrashLoopBackOff) and `Incident` (a failing route found in paged logs), over one
`Clock` that stamps their output."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pos_trapbench.toolagent.workspace import Call, SafePoint

_ALNUM = string.ascii_lowercase + string.digits


class Clock:
    """The workspace's time and randomness: output footers, log stamps, name suffixes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = datetime(2026, 10, 5, 6, 0, tzinfo=UTC) + timedelta(
            days=rng.randrange(40), seconds=rng.randrange(14 * 3600)
        )

    def tick(self) -> None:
        self.now += timedelta(milliseconds=self.rng.randrange(2_000, 60_000))

    def footer(self, code: int, low: float = 0.05, high: float = 4.0) -> str:
        return f"[exit {code} · {self.rng.uniform(low, high):.2f}s · {self.now:%H:%M:%S}]"

    def stamp(self, back_ms: int = 0) -> str:
        moment = self.now - timedelta(milliseconds=back_ms)
        return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d}"

    def suffix(self, n: int) -> str:
        return "".join(self.rng.choice(_ALNUM) for _ in range(n))

    def hexid(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))


@dataclass
class _Bug:
    test: str
    path: str
    line: int
    messages: list[str]
    edits_left: int
    read: bool = False
    shown: bool = False
    plan: list[str] = field(default_factory=list)
    """The agent steps this bug needs, in order: the run that shows it, reading its line, the
    patch, and for a bug fixed in two patches a run that shows the new failure and the second
    patch."""
    done: int = 0
    """How many steps of `plan` are done."""

    def __post_init__(self) -> None:
        self.plan = ["run", "read", "patch"] + ["run", "patch"] * (self.edits_left - 1)

    def next(self) -> str | None:
        return self.plan[self.done] if self.done < len(self.plan) else None

    @property
    def message(self) -> str:
        return self.messages[len(self.messages) - self.edits_left]


_TESTS = [
    ("TestCartTotal", "cart/cart.go", "got 1999, want 2000", "got 2000, want 2000.00"),
    ("TestApplyCoupon", "cart/coupon.go", "discount = 0, want 15", "discount = 15, want 15%"),
    ("TestParseSKU", "catalog/sku.go", 'unexpected error: invalid sku "AB-12"', ""),
    ("TestShippingZone", "shipping/zone.go", 'zone("DE") = 3, want 2', ""),
    ("TestUserEmail", "user/email.go", 'ValidEmail("a@b") = true, want false', ""),
    ("TestTaxRound", "billing/tax.go", "tax = 1.0049999, want 1.00", "tax = 1.01, want 1.00"),
]
_PASSING = ["TestCartEmpty", "TestListSKUs", "TestZoneDefault", "TestSignup", "TestInvoicePDF"]


class GoTests:
    name = "gotests"

    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self.clock, self.rng = clock, rng
        chosen = rng.sample(_TESTS, rng.randint(2, 3))
        self.bugs = [
            _Bug(t, p, rng.randint(18, 90), [m1] + ([m2] if m2 else []), 2 if m2 else 1)
            for t, p, m1, m2 in chosen
        ]
        self.verified = False  # a run after the last fix shows every test passing
        self.versions: dict[str, int] = {}
        self.goal_text = "make `go test ./...` pass"

    def open(self) -> list[_Bug]:
        return [b for b in self.bugs if b.edits_left > 0]

    def remaining(self) -> int:
        return sum(len(b.plan) - b.done for b in self.bugs) + (not self.verified)

    def _advance(self, step: str, bug: _Bug) -> bool:
        if bug.next() != step:
            return False
        bug.done += 1
        return True

    def facts(self) -> set[str]:
        out = set()
        for b in self.bugs:
            if b.edits_left:
                out.add(f"failing({b.test})")
                if b.shown:
                    out.add(f"message({b.test}, {b.message})")
            else:
                out.add(f"passing({b.test})")
            out.add(f"defined_in({b.test}, {b.path})")
        return out

    def goals(self) -> set[str]:
        return {f"passing({b.test})" for b in self.bugs}

    def questions(self) -> set[str]:
        return {f"cause({b.test})" for b in self.open() if not b.read}

    def entities(self) -> set[str]:
        return {b.test for b in self.open()} | {b.path for b in self.open()}

    def run(self, call: Call) -> tuple[str, int]:
        clock, rng = self.clock, self.rng
        if call.tool == "shell":
            return self._go_test()
        if call.tool == "cat":
            path = call.args["path"]
            first, last = (int(x) for x in call.args.get("lines", "1:40").split(":"))
            for b in self.open():
                if b.path == path and first <= b.line <= last and self._advance("read", b):
                    b.read = True
            version = self.versions.get(path, 0)
            rows = [f"{n}\t{_code_line(path, n, version)}" for n in range(first, last + 1)][:12]
            head = f"{path}  lines {first}-{last}  blob {clock.hexid(7)}{version}"
            return head + "\n" + "\n".join(rows) + "\n" + clock.footer(0, 0.01, 0.2), 0
        if call.tool == "apply_patch":
            path, hunk = call.args["path"], call.args["hunk"]
            self.versions[path] = self.versions.get(path, 0) + 1
            for b in self.open():
                if b.path == path and hunk == _fix_hunk(b) and self._advance("patch", b):
                    b.edits_left -= 1
                    b.shown = False
                    self.verified = False
            text = f"patching file {path}\nHunk #1 succeeded at {rng.randint(10, 99)}."
            return text + "\n" + clock.footer(0, 0.01, 0.1), 0
        return f"{call.tool}: command not found\n" + clock.footer(127), 127

    def _go_test(self) -> tuple[str, int]:
        clock, rng = self.clock, self.rng
        lines = []
        results = [(b.test, b) for b in self.open()] + [(t, None) for t in _PASSING]
        rng.shuffle(results)
        for test, bug in results:
            if bug is None:
                lines.append(f"--- PASS: {test} ({rng.randint(0, 30) / 100:.2f}s)")
            else:
                lines.append(f"=== RUN   {test}")
                lines.append(
                    f"    {bug.path.split('/')[-1][:-3]}_test.go:{bug.line}: {bug.message}"
                )
                lines.append(f"--- FAIL: {test} ({rng.randint(0, 9) / 100:.2f}s)")
                bug.shown = True
                self._advance("run", bug)
        packages = sorted({b.path.split("/")[0] for b in self.bugs} | {"user", "internal/db"})
        failing = {b.path.split("/")[0] for b in self.open()}
        for pkg in packages:
            if pkg in failing:
                lines.append(f"FAIL\tgithub.com/acme/shop/{pkg}\t{rng.uniform(0.1, 2):.3f}s")
            elif rng.random() < 0.3:
                lines.append(f"ok  \tgithub.com/acme/shop/{pkg}\t(cached)")
            else:
                lines.append(f"ok  \tgithub.com/acme/shop/{pkg}\t{rng.uniform(0.1, 2):.3f}s")
        code = 1 if failing else 0
        if failing:
            lines.append("FAIL")
        if not self.open():
            self.verified = True
        return "\n".join(lines) + "\n" + clock.footer(code, 1.0, 9.0), code

    def flow(self) -> Iterator[Call | SafePoint]:
        yield Call("shell", {"cmd": "go test ./..."})
        yield SafePoint("S1")
        for bug in list(self.bugs):
            lines = f"{bug.line - 6}:{bug.line + 6}"
            yield Call("cat", {"path": bug.path, "lines": lines}, "retest")
            while bug.edits_left:
                yield Call("apply_patch", {"path": bug.path, "hunk": _fix_hunk(bug)}, "retest")
                yield Call("shell", {"cmd": "go test ./..."}, "retest")
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call]:
        rng = self.rng
        run = Call("shell", {"cmd": "go test ./..."})
        bug = self.open()[0] if self.open() else self.bugs[0]
        # The test's own file: reading it shows nothing the report did not (the failing line
        # is in the code under test).
        view = Call("cat", {"path": bug.path[:-3] + "_test.go", "lines": f"1:{bug.line}"})
        if kind == "repeat":
            return [run] * rng.randint(6, 12)
        if kind == "alternation":
            return [run if i % 2 == 0 else view for i in range(rng.randint(6, 12))]
        if kind == "cycle":
            others = [Call("cat", {"path": "go.mod", "lines": "1:12"}), view, run,
                      Call("cat", {"path": "Makefile", "lines": "1:20"})]  # fmt: skip
            period = rng.randint(3, 4)
            return [others[i % period] for i in range(period * rng.choice([2, 3]))]
        if kind == "semantic":
            flags = ["-count=1", "-v", "-race", "-run " + bug.test, "-failfast", "-p 1"]
            rng.shuffle(flags)
            calls: list[Call] = []
            for n in range(rng.randint(3, 4)):
                hunk = f"@@ -{bug.line + 3} +{bug.line + 3} @@ timeout := {n + 2} * time.Second"
                calls.append(Call("apply_patch", {"path": bug.path, "hunk": hunk}))
                calls.append(Call("shell", {"cmd": f"go test {flags[n]} ./..."}))
            return calls
        return []


def _fix_hunk(bug: _Bug) -> str:
    step = len(bug.messages) - bug.edits_left + 1
    return f"@@ -{bug.line} +{bug.line} @@ fix {bug.test} (part {step})"


def _code_line(path: str, n: int, version: int) -> str:
    words = ["return", "if err != nil {", "total += it.Price * it.Qty", "}", "var x int"]
    return words[(n + len(path) + version) % len(words)]


class Rollout:
    name = "rollout"

    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self.clock, self.rng = clock, rng
        self.listed = False
        self.cause_seen = False
        self.env_seen = False
        self.fixed = False
        self.ready = 0
        self.restarts = rng.randint(3, 9)
        self.goal_text = "get deployment web rolled out"

    def remaining(self) -> int:
        return (
            (not self.listed)
            + (not self.cause_seen)
            + (not self.env_seen)
            + (not self.fixed)
            + (3 - self.ready)
        )

    def facts(self) -> set[str]:
        status = "Running" if self.ready == 3 else ("Rolling" if self.fixed else "CrashLoop")
        out = {f"status(web, {status})", f"ready(web, {self.ready}/3)"}
        port = 6379 if self.fixed else 6380
        out.add(f"env(web, REDIS_URL, redis://cache:{port})")
        if self.cause_seen:
            out.add(f"error(web, connect redis://cache:{port} refused)")
        return out

    def goals(self) -> set[str]:
        return {"status(web, Running)"}

    def questions(self) -> set[str]:
        return set() if self.cause_seen else {"cause(web)"}

    def entities(self) -> set[str]:
        return {"web"}

    def run(self, call: Call) -> tuple[str, int]:
        clock, rng = self.clock, self.rng
        args = call.args.get("args", "")
        if args.startswith("get pods"):
            self.listed = True
            self.restarts += rng.randint(0, 1)
            rows = ["NAME                   READY   STATUS             RESTARTS        AGE"]
            for n in range(3):
                pod = f"web-{clock.hexid(9)}-{clock.suffix(5)}"
                if n < self.ready:
                    state, ready = "Running", "1/1"
                elif self.fixed:
                    state, ready = "ContainerCreating", "0/1"
                else:
                    state, ready = rng.choice(["CrashLoopBackOff", "Error"]), "0/1"
                back = f"{self.restarts} ({rng.randint(5, 59)}s ago)"
                rows.append(f"{pod:<22} {ready:<7} {state:<18} {back:<15} {rng.randint(2, 40)}m")
            return "\n".join(rows) + "\n" + clock.footer(0, 0.1, 0.9), 0
        if args.startswith("logs"):
            self.cause_seen = True
            port = 6379 if self.fixed else 6380
            lines = []
            for k in range(4):
                trace = clock.hexid(16)
                when = clock.stamp(900 * (4 - k))
                if self.fixed:
                    lines.append(f"{when} INFO  worker ready trace={trace}")
                else:
                    lines.append(f"{when} INFO  starting web v2.14.{rng.randint(0, 3)}")
                    lines.append(
                        f"{when} FATAL redis: dial tcp 10.96.{rng.randint(0, 255)}."
                        f"{rng.randint(0, 255)}:{port}: connect: connection refused trace={trace}"
                    )
            return "\n".join(lines) + "\n" + clock.footer(0, 0.1, 0.6), 0
        if args.startswith("describe"):
            self.env_seen = True
            port = 6379 if self.fixed else 6380
            text = (
                f"Name:         web\nNamespace:    shop\nCreationTimestamp:  {clock.stamp()}\n"
                f"Replicas:     3 desired | {self.ready} available\n"
                f"Environment:\n  REDIS_URL:  redis://cache:{port}\n  LOG_LEVEL:  info\n"
                f"ResourceVersion: {rng.randint(100000, 999999)}"
            )
            return text + "\n" + clock.footer(0, 0.1, 0.5), 0
        if args.startswith("set env"):
            if "REDIS_URL=redis://cache:6379" in args and self.env_seen and self.cause_seen:
                self.fixed = True
            return "deployment.apps/web env updated\n" + clock.footer(0, 0.2, 1.2), 0
        if args.startswith("rollout restart"):
            return "deployment.apps/web restarted\n" + clock.footer(0, 0.2, 1.2), 0
        if args.startswith("get svc"):
            text = (
                "NAME    TYPE        CLUSTER-IP      PORT(S)    AGE\n"
                f"cache   ClusterIP   10.96.{rng.randint(0, 255)}.{rng.randint(0, 255)}   "
                f"6379/TCP   {rng.randint(2, 90)}d"
            )
            return text + "\n" + clock.footer(0, 0.1, 0.5), 0
        if args.startswith("rollout status"):
            if self.fixed and self.ready < 3:
                self.ready += 1
            if self.ready == 3:
                return 'deployment "web" successfully rolled out\n' + clock.footer(0, 1, 20), 0
            text = (
                f'Waiting for deployment "web" rollout to finish: {self.ready} of 3 updated '
                "replicas are available..."
            )
            if not self.fixed and rng.random() < 0.5:
                text += "\nerror: timed out waiting for the condition"
                return text + "\n" + clock.footer(1, 10, 31), 1
            return text + "\n" + clock.footer(0, 2, 30), 0
        return f"error: unknown command {args!r}\n" + clock.footer(1), 1

    def flow(self) -> Iterator[Call | SafePoint]:
        yield Call("kubectl", {"args": "get pods -l app=web"})
        yield Call("kubectl", {"args": "logs deploy/web --tail=8"})
        yield SafePoint("S1")
        yield Call("kubectl", {"args": "describe deploy/web"})
        yield Call("kubectl", {"args": "set env deploy/web REDIS_URL=redis://cache:6379"})
        for _ in range(3):
            yield Call("kubectl", {"args": "rollout status deploy/web --timeout=30s"}, "poll_done")
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call]:
        rng = self.rng
        pods = Call("kubectl", {"args": "get pods -l app=web"})
        logs = Call("kubectl", {"args": "logs deploy/web --tail=8"})
        status = Call("kubectl", {"args": "rollout status deploy/web --timeout=30s"})
        if kind == "repeat":
            return [pods] * rng.randint(6, 12)
        if kind == "alternation":
            return [pods if i % 2 == 0 else logs for i in range(rng.randint(6, 12))]
        if kind == "cycle":
            loop = [pods, logs, Call("kubectl", {"args": "get svc cache -o wide"})]
            return [loop[i % 3] for i in range(3 * rng.choice([2, 3]))]
        if kind == "semantic" and not self.fixed:
            tweaks = ["LOG_LEVEL=debug", "WORKERS=2", "REDIS_TIMEOUT=5s", "POOL_SIZE=20",
                      "REDIS_DB=1", "GOMAXPROCS=2"]  # fmt: skip
            rng.shuffle(tweaks)
            calls: list[Call] = []
            for n in range(rng.randint(3, 4)):
                calls.append(Call("kubectl", {"args": f"set env deploy/web {tweaks[n]}"}))
                calls.append(pods)
                if rng.random() < 0.5:
                    calls.append(logs)
            return calls
        if kind == "polling" and not self.fixed:
            restart = Call("kubectl", {"args": "rollout restart deploy/web"})
            return [restart] + [status] * rng.randint(7, 12)
        return []


class Incident:
    name = "incident"

    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self.clock, self.rng = clock, rng
        self.pages = rng.randint(3, 5)
        self.files = [f"logs/api-{n}.log" for n in rng.sample(range(1, 30), rng.randint(5, 8))]
        self.read_pages: set[int] = set()
        self.read_files: set[str] = set()
        self.goal_text = "find which route returns status=500 in logs/"

    def remaining(self) -> int:
        return (self.pages - len(self.read_pages)) + len(set(self.files) - self.read_files)

    def facts(self) -> set[str]:
        out = {f"page_read(grep, {p})" for p in self.read_pages}
        out |= {f"mentions({f}, status=500)" for f in self.files if f in self.read_files}
        if not self.remaining():
            out.add("found(route, /api/checkout)")
        return out

    def goals(self) -> set[str]:
        return {"found(route, /api/checkout)"}

    def questions(self) -> set[str]:
        return set() if not self.remaining() else {"where(status=500)"}

    def entities(self) -> set[str]:
        return {"status=500", *self.files}

    def run(self, call: Call) -> tuple[str, int]:
        clock, rng = self.clock, self.rng
        if call.tool == "grep":
            page = int(call.args.get("page", 1))
            if 1 <= page <= self.pages:
                self.read_pages.add(page)
            lines = []
            per = max(1, len(self.files) * 2 // self.pages)
            for k in range(per):
                f = self.files[(page * per + k) % len(self.files)]
                lines.append(
                    f"{f}:{(page * 37 + k * 11) % 900 + 1}:{clock.stamp(rng.randint(0, 10**7))} "
                    f"status=500 route=/api/{['checkout', 'cart', 'pay'][(page + k) % 3]} "
                    f"latency={rng.randint(20, 3000)}ms"
                )
            more = "more results: page " + str(page + 1) if page < self.pages else "end of results"
            return "\n".join(lines) + f"\n-- page {page}/{self.pages}, {more}\n" + clock.footer(
                0, 0.05, 0.8
            ), 0
        if call.tool == "cat":
            path = call.args["path"]
            if path in self.files:
                self.read_files.add(path)
            rows = [
                f"{clock.stamp(rng.randint(0, 10**6))} {rng.choice(['INFO', 'WARN'])} "
                f"req={clock.hexid(12)} route=/api/{rng.choice(['checkout', 'cart'])} "
                f"status={rng.choice([200, 200, 500])}"
                for _ in range(4)
            ]
            return f"==> {path} <==\n" + "\n".join(rows) + "\n" + clock.footer(0, 0.01, 0.2), 0
        return f"{call.tool}: not available\n" + clock.footer(127), 127

    def flow(self) -> Iterator[Call | SafePoint]:
        for page in range(1, self.pages + 1):
            yield Call("grep", {"pattern": "status=500", "path": "logs/", "page": page}, "paging")
            if page == 1:
                yield SafePoint("S1")
        for path in self.files:
            yield Call("cat", {"path": path}, "iterate")
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call]:
        rng = self.rng
        first = Call("grep", {"pattern": "status=500", "path": "logs/", "page": 1})
        if kind == "repeat":
            return [first] * rng.randint(6, 12)
        if kind == "alternation" and point == "S2":
            second = Call("grep", {"pattern": "status=500", "path": "logs/", "page": 2})
            return [first if i % 2 == 0 else second for i in range(rng.randint(6, 12))]
        if kind == "cycle" and point == "S2":
            loop = [Call("cat", {"path": p}) for p in self.files[: rng.randint(3, 4)]]
            return [loop[i % len(loop)] for i in range(len(loop) * rng.choice([2, 3]))]
        return []

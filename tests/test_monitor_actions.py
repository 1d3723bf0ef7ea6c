"""Actions as a signal: canonical tool calls, near-duplicates, and repeated call sequences caught
while the outputs keep changing."""

from __future__ import annotations

from types import SimpleNamespace

from pos_agent.monitor import MonitorReport, ToolCall, TrapMonitor, canonical_action
from pos_agent.monitor.volatile import normalise


def key(action: object) -> str:
    return canonical_action(action, normalise).key


def test_tool_calls_ignore_key_order_whitespace_and_spelling_of_the_call() -> None:
    forms = [
        ToolCall("read_file", {"path": "a.py", "limit": 50}),
        ToolCall("read_file", '{ "limit": 50,\n  "path": "a.py" }'),
        {"name": "read_file", "arguments": '{"path":"a.py","limit":50}'},
        {
            "type": "function",
            "function": {"name": "read_file", "arguments": {"limit": 50, "path": "a.py"}},
        },
        {"tool": "read_file", "args": {"path": "a.py", "limit": 50}},
        SimpleNamespace(name="read_file", arguments='{"path": "a.py", "limit": 50}'),
    ]
    assert len({key(f) for f in forms}) == 1
    assert canonical_action(forms[0], normalise).text == 'read_file {"limit":50,"path":"a.py"}'
    assert key(ToolCall("read_file", {"path": "b.py", "limit": 50})) != key(forms[0])
    assert key(ToolCall("read_file", {"path": "a.py", "limit": 60})) != key(forms[0])


def test_odd_arguments_never_raise() -> None:
    assert key(ToolCall("shell", "not json {")) == "shell not json {"
    assert key(ToolCall("shell", {"x": object()})).startswith("shell {")
    assert key({"no": "name"}) == "{'no': 'name'}"
    assert key(None) == "none"


def test_volatile_arguments_and_countdowns_are_one_call() -> None:
    first = ToolCall("shell", {"cmd": "sleep 5 && curl -H 'X-Request-Id: 9f8e7d6c' svc"})
    second = ToolCall("shell", {"cmd": "sleep 5 && curl -H 'X-Request-Id: 0a1b2c3d' svc"})
    assert key(first) == key(second)
    assert key("Retry 3: fetch the page") == key("Retry 4: fetch the page")
    assert key("open box 1") != key("open box 2")  # a number that names a thing stays


def test_reworded_prose_is_one_action_to_the_monitor() -> None:
    monitor = TrapMonitor()
    messages = [
        "I apologize for the confusion, let me provide the complete updated version of the file.",
        "Apologies for the confusion: let me now provide the complete updated version of that file.",
        "I apologize again for the confusion, let me provide the complete updated version of the file below.",
    ]
    reports = [monitor.observe(messages[i % 3], "Error: the file is incomplete.") for i in range(8)]
    assert reports[-1].trapped and reports[-1].pattern == "static"
    assert len({monitor._window[i].step.action for i in range(len(monitor._window))}) == 1
    other = canonical_action("Let me run the test suite to check which tests fail now.", normalise)
    first = canonical_action(messages[0], normalise)
    assert first.words is not None and not first.same(other)


def test_identical_calls_with_changing_outputs_are_caught() -> None:
    # The curl: each output carries a new timestamp and request id.
    monitor = TrapMonitor()
    for i in range(6):
        report = monitor.observe(
            ToolCall("shell", {"cmd": "curl -s http://localhost:8080/api"}),
            f"< HTTP/1.1 500\n< Date: Tue, 01 Dec 2026 09:4{i}:07 GMT\n< X-Request-Id: 7a{i}c9e2f\n"
            '{"error": "upstream unavailable"}',
        )
    assert report.trapped and report.pattern == "static"


def test_an_edit_test_loop_whose_output_only_changes_its_duration_is_a_cycle() -> None:
    monitor = TrapMonitor()
    edit = ToolCall("edit", {"path": "calc.py", "old": "a - b", "new": "a + b"})
    test = ToolCall("shell", {"cmd": "pytest -q"})
    for i in range(8):
        if i % 2 == 0:
            report = monitor.observe(edit, "Edited calc.py.")
        else:
            report = monitor.observe(test, f"F.. 1 failed, 2 passed in 0.{50 + i}s")
    assert report.trapped and report.pattern == "cycle" and report.health.lag == 2


def test_edits_whose_test_results_change_are_productive() -> None:
    monitor = TrapMonitor()
    results = [
        "FAILED test_add - NameError: name 'sub' is not defined. 3 failed in 0.51s",
        "FAILED test_mul - TypeError: unsupported operand. 2 failed in 0.48s",
        "FAILED test_div - ZeroDivisionError: division by zero. 1 failed in 0.55s",
        "4 passed in 0.47s",
    ]
    for i, result in enumerate(results):
        monitor.observe(ToolCall("edit", {"path": "calc.py", "line": 10 + i}), "Edited calc.py.")
        report = monitor.observe(ToolCall("shell", {"cmd": "pytest -q"}), result)
        assert not report.trapped


def test_a_three_call_cycle_is_caught_from_the_calls() -> None:
    monitor = TrapMonitor()
    files = ["a.py", "b.py", "c.py"]
    for i in range(9):
        path = files[i % 3]
        report = monitor.observe(
            ToolCall("read_file", {"path": path}), f"# {path}\nx = 1  # read at 09:4{i}:00"
        )
    assert report.trapped and report.pattern == "cycle" and report.health.lag == 3


def test_paging_through_results_is_not_a_trap() -> None:
    monitor = TrapMonitor()
    for page in range(1, 10):
        report = monitor.observe(
            ToolCall("search", {"query": "TODO", "page": page}),
            f"page {page}: src/mod{page}.py:12 TODO tidy item{page} (0.0{page}s)",
        )
        assert not report.trapped


def test_a_loop_whose_first_round_ends_in_a_new_call_is_caught_in_its_second_round() -> None:
    # The first round goes over two known calls and ends in one made there for the first time;
    # the second round's first call is a cycle only in hindsight, from the call after it.
    monitor = TrapMonitor()
    pods = (ToolCall("kubectl", {"args": "get pods -l app=web"}), "web 0/1 CrashLoopBackOff")
    logs = (ToolCall("kubectl", {"args": "logs deploy/web"}), "FATAL redis: dial cache refused")
    service = (ToolCall("kubectl", {"args": "get svc cache"}), "cache ClusterIP 6379/TCP")
    reports = [
        monitor.observe(call, f"{text}, restarts {i}")
        for i, (call, text) in enumerate([pods, logs, pods, logs, service, pods, logs, service])
    ]
    assert not any(r.trapped for r in reports[:6])
    assert reports[-1].trapped and reports[-1].pattern == "cycle"
    assert reports[-1].health.lag == 3


ROOMS = {
    "office": "-= Office =- You are in an office. A desk stands here. There is an exit to the east.",
    "garage": "-= Garage =- You arrive in a garage. A toolbox sits here. Exits lead south and west.",
    "parlor": "-= Parlor =- You have entered a parlor. A sofa is here. A gateway leads south.",
    "zone": "-= Recreation Zone =- You arrive in a recreation zone. A ping-pong table waits.",
    "scullery": "-= Scullery =- You walk into a scullery. A sink and a mop are here.",
}


def test_retracing_a_path_with_text_commands_is_not_a_loop() -> None:
    """Explore four rooms, then walk back the way one came: every room is known and nothing is
    new, and `go north` twice in a row (or `go west` again) leads somewhere else each time. A
    text command acts where it is given, so these are no repeats (nor, in hindsight, the
    start of a loop's next round)."""
    monitor = TrapMonitor(goal="find the key")
    monitor.observe("look", ROOMS["office"])
    out = [("go east", "garage"), ("go south", "parlor"), ("go south", "zone")]
    back = [("go west", "scullery"), ("go east", "zone"), ("go north", "parlor")]
    back += [("go north", "garage"), ("go west", "office")]
    reports = [monitor.observe(command, ROOMS[room]) for command, room in out + back]
    assert not any(r.trapped for r in reports)


def test_going_back_and_forth_with_text_commands_is_still_a_cycle() -> None:
    monitor = TrapMonitor(goal="find the key")
    monitor.observe("look", ROOMS["garage"])
    reports = [
        monitor.observe(command, ROOMS[room])
        for command, room in [("go south", "parlor"), ("go north", "garage")] * 4
    ]
    assert reports[-1].trapped and reports[-1].pattern == "cycle"
    assert sum(r.onset for r in reports) == 1


def test_a_text_command_repeated_with_a_moving_counter_is_static() -> None:
    """What a text command showed is compared by its things (words), not its numbers: the
    same command whose output only moves a counter is a repeat from its second use on."""
    monitor = TrapMonitor(goal="get the build green")
    reports = [
        monitor.observe("make test", f"build failed, retries left {9 - i}, attempt {i}")
        for i in range(7)
    ]
    assert [r.reading for r in reports[1:]] == ["static"] * 6
    onset = next(r for r in reports if r.onset)
    assert onset.step == 5 and onset.pattern == "static"


def test_walking_back_with_the_commands_of_two_steps_ago_is_not_a_loop_in_hindsight() -> None:
    """Back through known rooms with `go north`, `go west`, `go north`, `go west`: the commands
    repeat with period 2 but each pair leads into other rooms, so the step before is not the
    first step of a loop's next round either."""
    rooms = dict(ROOMS, vault="-= Vault =- You have entered a vault. A steel door hangs open.")
    monitor = TrapMonitor(goal="find the key")
    monitor.observe("look", rooms["office"])
    out = [("go east", "garage"), ("go south", "parlor"), ("go east", "zone")]
    out += [("go south", "vault")]
    back = [("go north", "zone"), ("go west", "parlor"), ("go north", "garage")]
    back += [("go west", "office")]
    reports = [monitor.observe(command, rooms[room]) for command, room in out + back]
    assert not any(r.trapped for r in reports)


def _alternation(first_round_progress: int | None = None) -> list[MonitorReport]:
    """A read/test alternation whose first round shows things for the first time and whose
    later rounds show nothing new (only the duration moves)."""
    monitor = TrapMonitor()
    monitor.observe(ToolCall("ls", {"path": "."}), "cart/ billing/ go.mod")
    monitor.observe(ToolCall("cat", {"path": "go.mod"}), "module shop go 1.22")
    read = ToolCall("cat", {"path": "cart/cart_test.go"})
    test = ToolCall("shell", {"cmd": "go test ./..."})
    reports = []
    for i in range(6):
        call, text = (read, "cart_test.go: want 42 got 41") if i % 2 == 0 else (test, "")
        if call is test:
            text = f"--- FAIL: TestCartTotal (0.{10 + i}s) cart_test.go:12: want 42 got 41"
        progress = first_round_progress if i == 1 else None
        reports.append(monitor.observe(call, text, progress=progress))
    return reports


def test_an_alternation_is_caught_once_its_second_round_is_complete() -> None:
    """A B A B with nothing new in the second round: the transition into the first B is the
    same call after the same call as the second B's, so in hindsight it is the loop's too and
    the window holds three stuck transitions of four when the second round is complete."""
    reports = _alternation()  # steps 3..8: A B A B A B
    onset = next(r for r in reports if r.onset)
    assert onset.step == 6 and onset.pattern == "cycle"
    assert all(r.trapped for r in reports[3:])


def test_a_first_round_the_caller_labelled_progress_is_not_re_read() -> None:
    # The caller's label wins: the first test run made progress, so only the second round's
    # two steps are stuck when it is complete, and the alarm waits for a third.
    reports = _alternation(first_round_progress=1)
    onset = next(r for r in reports if r.onset)
    assert onset.step == 7


def test_a_pair_that_comes_back_once_and_then_shows_something_new_is_not_re_read() -> None:
    # A B A B' where B' shows something first-seen: the second round did not come back empty.
    monitor = TrapMonitor()
    monitor.observe(ToolCall("ls", {"path": "."}), "a.py tests/")
    monitor.observe(ToolCall("cat", {"path": "tests/test_a.py"}), "def test_add(): ...")
    read = ToolCall("cat", {"path": "a.py"})
    test = ToolCall("shell", {"cmd": "pytest -q"})
    steps = [
        (read, "a.py: def add(a, b): return a - b"),
        (test, "FAILED test_add: assert 1 == 3 (0.51s)"),
        (read, "a.py: def add(a, b): return a - b"),
        (test, "FAILED test_sub: ZeroDivisionError in helper (0.52s)"),
    ]
    reports = [monitor.observe(call, text) for call, text in steps]
    assert not any(r.trapped for r in reports)

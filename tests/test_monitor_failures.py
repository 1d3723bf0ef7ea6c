"""Failure signatures (`pos_agent.monitor.failures`) and the semantic loops they reveal."""

from __future__ import annotations

import json

from pos_agent.monitor import MonitorReport, ToolCall, TrapMonitor
from pos_agent.monitor.failures import failure_signature
from pos_agent.monitor.volatile import normalise


def sig(text: str) -> str | None:
    return failure_signature(normalise(text))


PYTEST_FAIL = """\
tests/test_config.py {dots}
=================================== FAILURES ===================================
E       KeyError: 'APP_CONFIG'
FAILED tests/test_config.py::test_defaults - KeyError: 'APP_CONFIG'
==================== 1 failed, {passed} passed{warnings} in {secs}s ===================="""


def pytest_output(dots: str = ".F...", passed: int = 41, warnings: str = ", 1 warning") -> str:
    return PYTEST_FAIL.format(dots=dots, passed=passed, warnings=warnings, secs="0.53")


# --- the signature ------------------------------------------------------------------------------


def test_an_output_without_a_failure_line_has_no_signature() -> None:
    assert sig("42 passed in 0.41s") is None
    assert sig("Edited src/app/settings.py: 1 replacement (line 3)") is None
    assert sig("HTTP/1.1 200 OK\nContent-Length: 12") is None


def test_only_the_failure_lines_make_the_signature() -> None:
    one = sig(pytest_output(dots=".F..."))
    other = sig(pytest_output(dots="...F."))  # random test order moves the dots
    assert one is not None and one == other
    assert "keyerror: 'app_config'" in one
    assert ".f..." not in one


def test_counts_in_failure_lines_do_not_make_another_failure() -> None:
    base = sig(pytest_output(passed=41, warnings=", 1 warning"))
    assert base == sig(pytest_output(passed=40, warnings=", 3 warnings"))
    assert base == sig(pytest_output(passed=41, warnings=""))


def test_another_error_is_another_failure() -> None:
    base = sig(pytest_output())
    changed = sig(pytest_output().replace("KeyError: 'APP_CONFIG'", "TypeError: bad operand"))
    assert changed is not None and changed != base


def test_a_failure_fixed_changes_the_signature() -> None:
    two = sig(
        "E       KeyError: 'A'\nE       ValueError: bad row\n"
        "FAILED t.py::a - KeyError: 'A'\nFAILED t.py::b - ValueError: bad row\n2 failed"
    )
    one = sig("E       ValueError: bad row\nFAILED t.py::b - ValueError: bad row\n1 failed")
    assert two is not None and one is not None and one != two


GO_FAIL = """\
=== RUN   TestTaxRound
    tax_test.go:{line}: tax = {got}, want 1.00
--- FAIL: TestTaxRound (0.05s)
FAIL\tgithub.com/acme/shop/billing\t1.627s
FAIL"""


def test_a_diagnostic_line_of_a_failing_output_is_part_of_the_failure() -> None:
    """Go prints the message on its own `file:line: message` line, above `--- FAIL`: a fix
    that changes the message changes the failure; the line number alone does not."""
    before = sig(GO_FAIL.format(line=33, got="1.0049999"))
    after = sig(GO_FAIL.format(line=33, got="1.01"))
    moved = sig(GO_FAIL.format(line=35, got="1.0049999"))
    assert before is not None and after is not None
    assert before != after
    assert before == moved
    assert sig("    tax_test.go:33: tax = 1.01, want 1.00\nok  billing 0.2s") is None


def test_status_lines_are_kept_whole() -> None:
    bad_gateway = sig("HTTP/1.1 502 Bad Gateway\nDate: Tue, 01 Dec 2026 09:39:52 GMT")
    unavailable = sig("HTTP/1.1 503 Service Unavailable\nDate: Tue, 01 Dec 2026 09:39:53 GMT")
    assert bad_gateway == "http/1.1 502 bad gateway"
    assert unavailable is not None and unavailable != bad_gateway


def test_volatile_tokens_in_failure_lines_are_already_gone() -> None:
    a = sig("curl: (7) Failed to connect to localhost port 8081 after 3 ms: Connection refused")
    b = sig("curl: (7) Failed to connect to localhost port 8081 after 17 ms: Connection refused")
    assert a is not None and a == b


def test_a_non_zero_exit_code_is_a_failure_and_zero_is_not() -> None:
    assert sig("Stopping api ... done (exit code 3)") is not None
    assert sig("Stopping api ... done (exit code 0)") is None


def test_code_that_merely_mentions_a_timeout_is_not_a_failure() -> None:
    assert sig('resp = legacy_client.fetch(f"{base}/x", timeout=5)') is None


# --- semantic loops in the monitor ----------------------------------------------------------------


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name, json.dumps(arguments))


def semantic_loop(monitor: TrapMonitor, rounds: int) -> list[MonitorReport]:
    """Settings tweaked and the tests re-run with other flags: the same failure every time."""
    reports = []
    flags = ["-x", "--lf", "-vv", "-q", "-k config", "--tb=short"]
    for n in range(rounds):
        edit = call("edit_file", path="settings.py", old=f"TTL = {n}", new=f"TTL = {n + 1}")
        reports.append(monitor.observe(edit, "Edited settings.py: 1 replacement (line 3)"))
        test = call("run_tests", args=flags[n])
        reports.append(monitor.observe(test, pytest_output(passed=41 - n % 2)))
    return reports


def test_varied_calls_that_fail_the_same_way_are_drift_model_free() -> None:
    monitor = TrapMonitor(goal="make the tests pass")
    monitor.observe(call("run_tests"), pytest_output())
    reports = semantic_loop(monitor, 4)
    onset = next(r for r in reports if r.onset)
    assert onset.pattern == "drift"
    assert onset.step <= 7  # the second varied attempt that failed as before
    assert reports[-1].trapped and reports[-1].reading == "drift"


def test_one_varied_attempt_is_not_yet_a_loop() -> None:
    monitor = TrapMonitor(goal="make the tests pass")
    monitor.observe(call("run_tests"), pytest_output())
    reports = semantic_loop(monitor, 1)
    assert not any(r.trapped for r in reports)


def test_tests_rerun_after_real_edits_stay_silent() -> None:
    """The hard negative: each edit fixes something, so the failure changes every run."""
    errors = ["KeyError: 'A'", "ValueError: bad row", "TypeError: bad operand", "IndexError: x"]
    monitor = TrapMonitor(goal="make the tests pass")
    reports = []
    for n in range(len(errors)):
        failing = errors[n:]
        output = "\n".join(f"E       {e}\nFAILED t.py::t{i} - {e}" for i, e in enumerate(failing))
        output += f"\n{len(failing)} failed, {n} passed in 0.{n + 1}s"
        reports.append(monitor.observe(call("run_tests", args=f"-k t{n}"), output))
        edit = call("edit_file", path=f"m{n}.py", old="a - b", new="a + b")
        reports.append(monitor.observe(edit, f"Edited m{n}.py: 1 replacement (line {n + 2})"))
    reports.append(monitor.observe(call("run_tests"), "4 passed in 0.3s"))
    assert not any(r.trapped for r in reports)


def test_a_given_progress_label_breaks_the_loop() -> None:
    """Progress the caller gives wins: attempts labelled as progress are not a loop."""
    monitor = TrapMonitor(goal="make the tests pass")
    monitor.observe(call("run_tests"), pytest_output(), progress=1)
    reports = []
    for n in range(4):
        edit = call("edit_file", path="settings.py", old=f"TTL = {n}", new=f"TTL = {n + 1}")
        edited = f"Edited settings.py: 1 replacement (line {n + 3})"
        reports.append(monitor.observe(edit, edited, progress=1))
        test = call("run_tests", args=f"-k t{n}")
        reports.append(monitor.observe(test, pytest_output(), progress=1))
    assert not any(r.trapped for r in reports)


def test_the_same_failing_call_repeated_stays_static() -> None:
    monitor = TrapMonitor(goal="make the tests pass")
    reports = [monitor.observe(call("run_tests"), pytest_output()) for _ in range(7)]
    onset = next(r for r in reports if r.onset)
    assert onset.pattern == "static"


def test_an_alternation_with_a_failing_call_stays_a_cycle() -> None:
    """The first round of a loop starts with a call never made before; one varied attempt is
    not a semantic loop, and the calls going round say cycle."""
    monitor = TrapMonitor(goal="make the tests pass")
    monitor.observe(call("run_tests"), pytest_output())
    reports = []
    for _ in range(5):
        reports.append(monitor.observe(call("read_file", path="tests/t.py"), "def test_a(): ..."))
        reports.append(monitor.observe(call("run_tests"), pytest_output()))
    onset = next(r for r in reports if r.onset)
    assert onset.pattern == "cycle"


def test_a_plural_of_a_word_seen_is_not_a_first_seen_thing() -> None:
    """`1 warning` then `2 warnings`: the plural is no new thing, so a failing run that only
    says `warnings` for the first time brings nothing."""
    monitor = TrapMonitor(goal="make the tests pass")
    first = monitor.observe(call("run_tests"), "1 failed, 1 warning in 0.2s")
    again = monitor.observe(call("run_tests", args="-x"), "1 failed, 2 warnings in 0.3s")
    assert first.novel > 0 and again.novel == 0


def test_every_failure_marker_holds_one_of_the_prefilter_literals() -> None:
    """The cheap substring test in front of the marker pattern must never hide a failure."""
    from pos_agent.monitor import failures

    samples = [
        "keyerror: 'x'", "valueexception", "traceback (most recent call last):", "failed",
        "fatal: not a git repository", "panic: runtime error", "aborted", "connection refused",
        "permission denied", "403 forbidden", "unauthorized", "file not found",
        "no such file or directory", "timed out", "unable to connect", "service unavailable",
        "bad gateway", "http/1.1 500", "status: 502", "exit code 2", "exited with status 1",
    ]  # fmt: skip
    for sample in samples:
        assert failures._MARKER.search(sample), sample
        assert any(literal in sample for literal in failures._LITERALS), sample


def test_a_known_call_coming_back_after_known_calls_starts_a_cycle() -> None:
    """Round two of a loop over calls made before: its first step is read as a cycle; a call
    coming back after a call never made before (an edit, then the tests) is not."""
    monitor = TrapMonitor(goal="get the rollout done")
    loop = [call("kubectl", args=a) for a in ("get pods", "logs deploy/web", "get svc cache")]
    for c in reversed(loop):  # the calls, made once before the loop, in another order
        monitor.observe(c, f"output of {c.arguments} first time")
    for c in loop:
        monitor.observe(c, f"output of {c.arguments}")
    again = monitor.observe(loop[0], f"output of {loop[0].arguments} 42")
    assert again.reading == "cycle"

    monitor = TrapMonitor(goal="make the tests pass")
    monitor.observe(call("run_tests"), "1 failed, 3 passed")
    monitor.observe(call("read_file", path="a.py"), "def f(): return 1")
    monitor.observe(call("edit_file", path="a.py", old="1", new="2"), "Edited a.py")
    rerun = monitor.observe(call("run_tests"), "1 failed, 3 passed (rerun)")
    assert rerun.reading != "cycle"


def test_distinct_files_that_log_the_same_errors_stay_silent() -> None:
    """Reading log after log, each with the same error lines: the failure recurs at once, on
    the very next step, so it is what is read, not the outcome of an attempt."""
    monitor = TrapMonitor(goal="explain the outage")
    listing = "\n".join(f"logs/api-{n}.log:12: ERROR route=/api/checkout" for n in range(10))
    monitor.observe(call("grep", pattern="ERROR", path="logs/"), listing)
    reports = [
        monitor.observe(
            call("cat", path=f"logs/api-{n}.log"),
            f"==> logs/api-{n}.log <==\nERROR route=/api/checkout status=500 req={n:08x}ab",
        )
        for n in range(10)
    ]
    assert not any(r.trapped for r in reports)


def test_distinct_files_that_log_other_errors_in_turn_stay_silent() -> None:
    """Log after log, each with one of a few errors: an error comes back two or three files
    later, but every step between reported an error too. Nothing was done in between, only
    read, so these are no attempts that failed as before."""
    monitor = TrapMonitor(goal="explain the outage")
    routes = ["cart", "checkout", "pay"]
    listing = "\n".join(
        f"logs/api-{n}.log:12: status=500 route=/api/{routes[n % 3]}" for n in range(12)
    )
    monitor.observe(call("grep", pattern="status=500", path="logs/"), listing)
    reports = [
        monitor.observe(
            call("cat", path=f"logs/api-{n}.log"),
            f"==> logs/api-{n}.log <==\nWARN route=/api/{routes[n % 3]} status=500 req={n:08x}ab",
        )
        for n in range(12)
    ]
    assert not any(r.trapped for r in reports)


def test_a_semantic_loop_still_needs_only_an_attempt_between_failures() -> None:
    """The attempt between two reports of one failure did something that reported no failure
    (an edit): that stays a varied attempt."""
    monitor = TrapMonitor(goal="make the tests pass")
    monitor.observe(call("run_tests"), pytest_output())
    reports = semantic_loop(monitor, 4)
    assert reports[-1].trapped and reports[-1].pattern == "drift"

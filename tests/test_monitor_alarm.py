"""Alarm semantics of `TrapMonitor`: onset, escalation, release, advice, caller progress both
ways, per-tool options."""

from __future__ import annotations

import json

import pytest

from pos_agent.monitor import AlarmPolicy, MonitorReport, ToolCall, TrapMonitor


def stuck(monitor: TrapMonitor, steps: int) -> list[MonitorReport]:
    """The same failing call, whose output differs only in volatile tokens."""
    return [
        monitor.observe(
            ToolCall("http_get", {"url": "http://127.0.0.1:8080/health"}),
            f"502 Bad Gateway at 2026-12-01T09:{i:02d}:07Z request_id=r{i}x9 ({10 + i}ms)",
        )
        for i in range(steps)
    ]


def explore(monitor: TrapMonitor, start: int, steps: int) -> list[MonitorReport]:
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    return [
        monitor.observe(ToolCall("read_file", {"path": f"{n}.py"}), f"def {n}(): return {n}_value")
        for n in names[start : start + steps]
    ]


def test_onset_is_the_first_step_of_a_new_alarm_and_trapped_since_holds_it() -> None:
    reports = stuck(TrapMonitor(), 8)
    on = [r.trapped for r in reports]
    first = on.index(True)
    assert reports[first].onset and reports[first].trapped_since == reports[first].step
    assert reports[first].pattern == "static"
    for later in reports[first + 1 :]:
        assert later.trapped and not later.onset
        assert later.trapped_since == reports[first].step
    assert not any(r.onset for r in reports[:first])
    assert all(r.trapped_since is None for r in reports[:first])


def test_the_default_policy_nudges_once_then_blocks_then_stops() -> None:
    reports = stuck(TrapMonitor(), 14)
    first = next(i for i, r in enumerate(reports) if r.trapped)
    kinds = [r.advice.kind for r in reports[first:]]
    levels = [r.escalation for r in reports[first:]]
    # nudge at onset (inject once), block from 3 steps later, stop from 8 steps later
    assert kinds[:3] == ["inject", "none", "none"]
    assert levels[:3] == ["nudge"] * 3
    assert kinds[3:8] == ["block"] * 5 and levels[3:8] == ["block"] * 5
    assert reports[first + 3].advice.text is not None  # the block is explained once
    assert reports[first + 4].advice.text is None
    assert kinds[8] == "stop" and levels[8] == "stop"
    assert reports[first].advice.text == reports[first].recovery
    assert reports[first + 3].advice.forbidden_actions == (
        'http_get {"url":"http://127.0.0.1:8080/health"}',
    )


def test_the_policy_is_configurable_and_checked() -> None:
    reports = stuck(TrapMonitor(policy=AlarmPolicy(block_after=None, stop_after=2)), 10)
    first = next(i for i, r in enumerate(reports) if r.trapped)
    assert [r.advice.kind for r in reports[first : first + 3]] == ["inject", "none", "stop"]
    with pytest.raises(ValueError):
        AlarmPolicy(block_after=4, stop_after=3)
    with pytest.raises(ValueError):
        AlarmPolicy(block_after=0)


def test_the_alarm_clears_at_once_when_the_window_stops_saying_trapped() -> None:
    monitor = TrapMonitor()
    reports = stuck(monitor, 6)
    assert reports[-1].trapped
    escaped = explore(monitor, 0, 1)[0]
    assert not escaped.health.trapped
    assert not escaped.trapped and escaped.released and escaped.trapped_since is None
    assert escaped.advice.kind == "none" and escaped.escalation == "none"
    assert escaped.recovery is None and escaped.forbidden_actions == ()
    again = explore(monitor, 1, 1)[0]
    assert not again.released


def test_a_new_trap_after_a_release_is_a_new_onset_at_the_first_level() -> None:
    monitor = TrapMonitor()
    stuck(monitor, 10)
    explore(monitor, 0, 2)
    reports = stuck(monitor, 8)
    first = next(r for r in reports if r.trapped)
    assert first.onset and first.escalation == "nudge" and first.advice.kind == "inject"


def test_no_stuck_text_without_a_diagnosis() -> None:
    # Every report with recovery text names its pattern; none says "seem stuck".
    monitor = TrapMonitor()
    reports = stuck(monitor, 8) + explore(monitor, 0, 3) + stuck(monitor, 6)
    for report in reports:
        if report.recovery is not None or report.advice:
            assert report.trapped and report.pattern in ("static", "cycle", "drift")
            assert "seem stuck" not in (report.recovery or "")
        if report.health.trapped and report.health.pattern is None:
            assert not report.trapped


def test_monitor_advice_and_blocks_follow_the_latest_report() -> None:
    monitor = TrapMonitor()
    assert monitor.advice().kind == "none"
    reports = stuck(monitor, 10)
    assert monitor.advice() == reports[-1].advice
    assert monitor.advice().kind == "block"
    # The same call written another way (key order, whitespace) is blocked; another is not.
    assert monitor.blocks(
        {"name": "http_get", "arguments": '{ "url" : "http://127.0.0.1:8080/health" }'}
    )
    assert not monitor.blocks(ToolCall("http_get", {"url": "http://127.0.0.1:8080/ready"}))


def test_advice_is_plain_json_in_the_report() -> None:
    reports = stuck(TrapMonitor(), 6)
    data = json.loads(json.dumps(reports[-1].to_dict()))
    assert data["trapped"] and data["onset"] in (True, False)
    assert data["advice"]["kind"] in ("inject", "none", "block", "stop")
    assert {"trapped_since", "escalation", "released", "reading"} <= data.keys()


# --- caller progress wins, both ways ------------------------------------------------------------


def test_a_progress_label_of_one_wins_over_no_novelty() -> None:
    monitor = TrapMonitor()
    for _ in range(8):
        report = monitor.observe(
            ToolCall("job_status", {"id": 42}), "Job 42 is running.", progress=1
        )
    assert not report.trapped and report.progress_source == "label"


def test_a_progress_callable_of_zero_wins_over_novelty() -> None:
    monitor = TrapMonitor(progress=lambda action, observation: False)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    for word in words:
        report = monitor.observe("pytest", f"FAILED test_a - AssertionError {word}")
    assert report.progress_source == "callable"
    assert report.trapped and report.pattern == "static"


def test_a_progress_callable_of_one_wins_over_a_repeated_output() -> None:
    monitor = TrapMonitor(progress=lambda action, observation: True)
    for _ in range(8):
        report = monitor.observe("poll", "Job 42 is running.")
    assert not report.trapped and report.reading == "productive"


# --- per-tool options -------------------------------------------------------------------------


def test_polling_tools_are_waiting_for_their_allowance_then_static() -> None:
    monitor = TrapMonitor(polling_tools={"job_status": 6})
    reports = [
        monitor.observe(ToolCall("job_status", {"id": 42}), f"Job 42 is running ({i}s elapsed).")
        for i in range(12)
    ]
    assert [r.reading for r in reports[1:6]] == ["waiting"] * 5
    assert not any(r.trapped for r in reports[:7])
    assert any(r.trapped for r in reports) and reports[-1].pattern == "static"
    unlisted = TrapMonitor()
    plain = [
        unlisted.observe(ToolCall("job_status", {"id": 42}), "Job 42 is running.") for _ in range(6)
    ]
    assert plain[-1].trapped


def test_exempt_tools_are_not_judged_and_leave_the_alarm_as_it_was() -> None:
    monitor = TrapMonitor(exempt_tools={"todo_write"})
    for _ in range(8):
        report = monitor.observe(ToolCall("todo_write", {"items": ["a"]}), "Updated.")
    assert not report.trapped and report.reading == "exempt"
    standing = stuck(monitor, 6)[-1]
    assert standing.trapped
    note = monitor.observe(ToolCall("todo_write", {"items": ["b"]}), "Updated.")
    assert note.trapped and note.trapped_since == standing.trapped_since
    assert note.advice.kind == "none" and note.reading == "exempt"


# --- model-free progress meters, ids in facts, revisits ----------------------------------------


def job(percent: int, rows: int) -> str:
    return (
        f"job 4f2a9c1e RUNNING progress {percent}% rows {rows:,}/375,350 at 09:4{percent % 10}:00"
    )


def test_a_progress_meter_that_moves_forward_is_progress_without_a_label() -> None:
    monitor = TrapMonitor()
    call = ToolCall("job_status", {"id": "4f2a9c1e"})
    moving = [monitor.observe(call, job(p, 3_753 * p)) for p in (10, 20, 35, 50, 64, 80, 92)]
    assert not any(r.trapped for r in moving)
    assert [r.progress_source for r in moving[1:]] == ["meter"] * 6
    stalled = TrapMonitor()
    stuck_reports = [stalled.observe(call, job(35, 131_372)) for _ in range(7)]
    assert stuck_reports[-1].trapped and stuck_reports[-1].pattern == "static"


def test_a_new_id_in_a_fact_is_not_a_new_thing() -> None:
    from pos_agent.monitor import Facts

    monitor = TrapMonitor()
    goals = frozenset({"loaded(orders)"})
    for i in range(8):
        job_id = f"{0x1A2B3C4D + 7919 * i:08x}"
        facts = Facts(world=frozenset({f"failed(job {job_id})", "exists(raw/orders)"}), goals=goals)
        report = monitor.observe(
            ToolCall("submit_job", {"pipeline": "load_orders", "attempt": i}),
            f"Submitted job {job_id}; it failed: no objects under s3://raw/orders",
            facts,
            progress=0,
        )
    assert report.novel == 0 and report.trapped


def test_with_a_belief_known_outputs_after_known_calls_are_a_cycle_new_ones_drift() -> None:
    from pos_agent.monitor import Facts

    facts = Facts(world=frozenset({"read(docs)"}), goals=frozenset({"migrated(app)"}))
    files = ["docs/MIGRATION.md", "src/net.py", "src/app.py"]
    looping = TrapMonitor()
    for i in range(9):
        path = files[i % 3]
        report = looping.observe(
            ToolCall("read_file", {"path": path}), f"contents of {path}", facts, progress=0
        )
    assert report.trapped and report.pattern == "cycle"
    fiddling = TrapMonitor()
    for i in range(8):
        report = fiddling.observe(
            ToolCall("edit_file", {"path": "settings.py", "value": i}),
            f"Edited settings.py: value {i}",
            facts,
            progress=0,
        )
    assert report.trapped and report.pattern == "drift"

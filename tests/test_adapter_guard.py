"""`Guard` and `watch`: the framework-free part of the adapters (no framework needed)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pos_agent.adapters import HINT_PREFIX, Guard, watch
from pos_agent.monitor import AlarmPolicy, ToolCall, TrapMonitor


def _loop(guard: Guard, steps: int) -> list[str | None]:
    hints = []
    for _ in range(steps):
        guard.observe(ToolCall("read_file", {"path": "a.py"}), "error: a.py not found")
        hints.append(guard.take_hint())
    return hints


def test_the_hint_is_handed_out_once_at_onset() -> None:
    guard = Guard(goal="read a.py", policy=AlarmPolicy(block_after=None, stop_after=None))
    hints = _loop(guard, 10)
    given = [i for i, h in enumerate(hints) if h is not None]
    assert len(given) == 1
    onset = next(r for r in guard.reports if r.onset)
    assert given == [onset.step - 1]
    hint = hints[given[0]]
    assert hint is not None and hint.startswith(HINT_PREFIX) and "RECOVERY" in hint
    assert guard.take_hint() is None


def test_no_hint_for_a_productive_run() -> None:
    guard = Guard(goal="read the files")
    for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]):
        guard.observe(ToolCall("read_file", {"path": f"{i}.py"}), f"def {word}(): return {word}")
        assert guard.take_hint() is None
    assert not any(r.trapped for r in guard.reports)


def test_refusal_only_while_the_advice_blocks_the_call() -> None:
    guard = Guard(goal="read a.py", policy=AlarmPolicy(block_after=2, stop_after=None))
    same = ToolCall("read_file", {"path": "a.py"})
    other = ToolCall("read_file", {"path": "b.py"})
    assert guard.refusal(same) is None
    for _ in range(12):
        guard.observe(same, "error: a.py not found")
        if guard.advice.kind == "block":
            break
    assert guard.advice.kind == "block"
    refusal = guard.refusal(ToolCall("read_file", '{ "path" : "a.py" }'))  # same call, other JSON
    assert refusal is not None and "Refused" in refusal
    assert guard.refusal(other) is None
    guard.reset()
    assert guard.refusal(same) is None and guard.last is None and guard.reports == []


def test_watch_feeds_the_monitor_appends_the_hint_and_refuses() -> None:
    guard = Guard(goal="read a.py", policy=AlarmPolicy(block_after=2, stop_after=None))
    ran: list[str] = []

    @watch(guard)
    def read_file(path: str) -> str:
        ran.append(path)
        return f"error: {path} not found"

    outputs = [read_file("a.py") for _ in range(12)]
    assert len(guard.reports) == 12
    hinted = [o for o in outputs if HINT_PREFIX in o and "Refused" not in o]
    assert hinted and hinted[0].startswith("error: a.py not found\n\n" + HINT_PREFIX)
    refused = [o for o in outputs if "Refused: this call was not run" in o]
    assert refused, outputs
    assert len(ran) == 12 - len(refused)
    assert read_file.__name__ == "read_file"


def test_watch_works_on_async_tools() -> None:
    guard = Guard(goal="read a.py", policy=AlarmPolicy(block_after=None, stop_after=None))

    @watch(guard, name="read")
    async def read_file(path: str) -> str:
        return f"error: {path} not found"

    async def run() -> list[str]:
        return [await read_file(path="a.py") for _ in range(8)]

    outputs = asyncio.run(run())
    assert sum(HINT_PREFIX in o for o in outputs) == 1
    assert guard.reports[0].pattern is None and guard.last is not None
    assert any(r.onset for r in guard.reports)


def test_aobserve_is_observe() -> None:
    guard = Guard(goal="x")
    report = asyncio.run(guard.aobserve(ToolCall("t", {}), "out"))
    assert report.step == 1 and guard.last is report


def test_one_guard_fed_from_many_threads_counts_every_step() -> None:
    guard = Guard(goal="read the files")
    barrier = threading.Barrier(8)

    def feed(worker: int) -> None:
        barrier.wait(timeout=30)
        for i in range(50):
            guard.observe(ToolCall("read_file", {"path": f"{worker}-{i}"}), f"text {worker} {i}")

    threads = [threading.Thread(target=feed, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [r.step for r in guard.reports] == list(range(1, 401))


def test_a_monitor_or_its_options_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        Guard(TrapMonitor(), goal="x")
    guard = Guard(goal="x", exempt_tools={"think"})
    assert guard.monitor.exempt_tools == frozenset({"think"})


def test_a_monitor_that_raises_never_breaks_the_tool_call(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    guard = Guard(goal="read a.py")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("monitor bug")

    monkeypatch.setattr(guard.monitor, "observe", broken)
    monkeypatch.setattr(guard.monitor, "blocks", broken)

    @watch(guard)
    def read_file(path: str) -> str:
        return f"contents of {path}"

    assert [read_file("a.py") for _ in range(3)] == ["contents of a.py"] * 3
    assert guard.errors == 6  # each call: the block check and the step
    assert guard.feed(ToolCall("t", {}), "x") is None
    assert "monitor bug" in caplog.text
    with pytest.raises(RuntimeError, match="monitor bug"):
        guard.observe(ToolCall("t", {}), "x")  # observe itself stays strict

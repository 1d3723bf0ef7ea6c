"""One encoding boundary for the run records: text no UTF-8 file can hold (a lone surrogate in an
observation, an error, a key) is written as U+FFFD and counted, in `pos bench` and in
`pos serve`, never ending the case or dropping the session's trace."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.envs._episode import BackendResult
from pos_agent.envs.toy import ToyEnvironment
from pos_agent.events import ObservationEvent
from pos_agent.llm import ScriptedModel
from pos_agent.serve.traces import SessionTrace
from pos_agent.trace import (
    SCORED_STATUSES,
    TraceWriter,
    encodable,
    read_result,
    read_trace,
    record_line,
    write_json_atomic,
)

BAD = "a lone \ud800 surrogate and \udfff another"


def test_encodable_replaces_and_counts() -> None:
    assert encodable(BAD) == ("a lone \ufffd surrogate and \ufffd another", 2)
    assert encodable("plain é 😀") == ("plain é 😀", 0)


def test_record_line_covers_keys_and_values() -> None:
    line, replaced = record_line({"k\ud800": [BAD]})
    assert replaced == 3
    line.encode("utf-8")
    assert json.loads(line) == {"k\ufffd": ["a lone \ufffd surrogate and \ufffd another"]}


def test_the_trace_writer_takes_a_surrogate_and_counts_it(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as trace:
        trace.emit(ObservationEvent(step=1, text=BAD))
        assert trace.replaced == 2
    events, found = read_trace(tmp_path)
    assert [e.text for e in events if isinstance(e, ObservationEvent)] == [encodable(BAD)[0]]
    assert not found.skipped


def test_a_result_with_a_surrogate_is_written(tmp_path: Path) -> None:
    write_json_atomic(tmp_path / "x.json", {"error": BAD})
    assert "\ufffd" in json.loads((tmp_path / "x.json").read_text(encoding="utf-8"))["error"]


def test_a_surrogate_in_an_observation_never_ends_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reset = ToyEnvironment._backend_reset

    def hostile_reset(self: ToyEnvironment) -> BackendResult:
        result = reset(self)
        return replace(result, text=result.text + "\n" + BAD)

    monkeypatch.setattr(ToyEnvironment, "_backend_reset", hostile_reset)
    spec = CaseSpec(env="toy", task="heat-mug", agent="raw", model="scripted", max_steps=2)
    result = run_case(spec, tmp_path / "c", run_name="r", load=lambda _s, _r: ScriptedModel())
    assert result.status in SCORED_STATUSES, f"{result.status}: {result.error}"
    assert result.extra["unencodable_replaced"] >= 2
    written = read_result(tmp_path / "c")
    assert written is not None and written.status == result.status
    events, found = read_trace(tmp_path / "c")
    assert not found.skipped
    assert any("\ufffd" in e.text for e in events if isinstance(e, ObservationEvent))


def test_a_serve_session_trace_keeps_its_steps_past_a_surrogate(tmp_path: Path) -> None:
    trace = SessionTrace(tmp_path / "s")
    trace.emit([ObservationEvent(step=1, text=BAD)])
    trace.emit([ObservationEvent(step=2, text="fine")])
    assert not trace.broken and trace.replaced == 2
    events, _ = read_trace(tmp_path / "s")
    assert [e.step for e in events] == [1, 2]

"""The monitor's reports pinned on two fixed streams (those of `benchmarks.monitor`, a
text game and a noisy tool agent), model-free, for both diagnoses: work on the monitor's speed
changes no verdict.

Per step, three letters: how the step was read, the alarm's pattern (upper case, `.` when
none) and the advice (`inject`, `block`, `stop`, `-` for none); and a digest of every field of
every report. A change meant to alter verdicts re-pins them: `python tests/test_monitor_pinned.py`
prints the current values.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from benchmarks.monitor import scripted_stream, tool_stream

from pos_agent.monitor import TrapMonitor

STEPS = 150
READING = {
    "productive": "p",
    "exploring": "e",
    "waiting": "w",
    "static": "s",
    "cycle": "c",
    "drift": "d",
    "unexplained": "u",
    "exempt": "x",
    "starting": "-",
}
ADVICE = {"none": "-", "inject": "i", "block": "b", "stop": "s"}


def _run(stream_name: str, health: str) -> tuple[str, str]:
    stream = scripted_stream(STEPS) if stream_name == "text" else tool_stream(STEPS)
    monitor = TrapMonitor(goal="find the golden key", health=health)  # type: ignore[arg-type]
    codes = []
    digest = hashlib.sha256()
    for action, observation in stream:
        report = monitor.observe(action, observation)
        pattern = (report.pattern or "?")[0].upper() if report.trapped else "."
        codes.append(READING[report.reading] + pattern + ADVICE[report.advice.kind])
        digest.update(json.dumps(report.to_dict(), sort_keys=True).encode())
    return " ".join(codes), digest.hexdigest()[:16]


PINNED: dict[tuple[str, str], tuple[str, str]] = {
    ("text", "improved"): (
        "-.- s.- sSi sS- sS- sSb sSb sSb sSb p.- p.- p.- p.- p.- p.- p.- p.- d.- c.- cCi "
        "cC- cC- cCb cCb cCb cCb sCb sCs sCs sSs sSs sSs sSs sSs sSs sSs sSs sSs sSs sSs "
        "sSs uSs cSs cSs cCs cCs cCs cCs cCs cCs cCs cCs p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- c.- c.- cCi cC- p.- p.- p.- p.- p.- p.- p.- c.- p.- u.- c.- "
        "cCi cC- cC- cCb cCb cCb cCb sCb sCs sCs sSs sSs sSs sSs uSs p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- c.- p.- s.- c.- cCi p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- c.- c.- cCi cC- cC- cCb p.- p.- c.- "
        "p.- p.- u.- c.- cCi cC- cC- cCb cCb cCb",
        "b3c2c331c7f3d221",
    ),
    ("text", "paper"): (
        "-.- s.- s.- s.- s.- s.- s.- sSi sS- p.- p.- p.- p.- p.- p.- p.- p.- d.- c.- c.- "
        "c.- c.- c.- c.- c.- c.- sSi sS- sS- sSb sSb sSb sSb sSb sSs sSs sSs sSs sSs sSs "
        "sSs u.- c.- c.- c.- c.- c.- c.- c.- c.- c.- c.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- c.- c.- c.- c.- p.- p.- p.- p.- p.- p.- u.- c.- p.- u.- c.- "
        "c.- c.- c.- c.- c.- c.- c.- sSi sS- sS- sSb sSb sSb sSb u.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- u.- u.- c.- u.- s.- c.- c.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- c.- c.- c.- c.- c.- c.- u.- u.- c.- "
        "u.- p.- u.- c.- c.- c.- c.- c.- c.- c.-",
        "82591c89f0047d7f",
    ),
    ("tools", "improved"): (
        "-.- s.- sSi sS- sS- sSb sSb sSb sSb p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- c.- cCi cC- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- u.- s.- sSi sS- sS- sSb sSb sSb uS- uS- cSs cCs cCs cCs cCs cCs cCs cCs p.- "
        "p.- p.- p.- p.- p.- p.- u.- u.- c.- cCi cC- cC- cCb sCb cCb cCb cCb cCs cCs p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- u.- s.- sSi sS- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- u.- s.- sSi sS- sS- sSb sSb sSb p.-",
        "8e42729320aa686d",
    ),
    ("tools", "paper"): (
        "-.- s.- s.- s.- s.- s.- s.- sSi sS- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- c.- c.- c.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- u.- s.- s.- s.- s.- sSi sS- sS- u.- u.- c.- c.- c.- c.- c.- c.- c.- c.- p.- "
        "p.- p.- p.- p.- p.- p.- u.- u.- c.- c.- c.- c.- c.- sSi c.- c.- c.- c.- c.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- p.- "
        "p.- u.- s.- s.- s.- p.- p.- p.- p.- p.- p.- p.- p.- p.- u.- p.- p.- p.- p.- p.- "
        "p.- u.- s.- s.- s.- s.- sSi sS- sS- p.-",
        "0e8c3a5aa7d84982",
    ),
}


@pytest.mark.parametrize("stream_name", ["text", "tools"])
@pytest.mark.parametrize("health", ["improved", "paper"])
def test_reports_on_a_fixed_stream_are_as_pinned(stream_name: str, health: str) -> None:
    codes, digest = _run(stream_name, health)
    pinned_codes, pinned_digest = PINNED[(stream_name, health)]
    assert codes == pinned_codes
    assert digest == pinned_digest


if __name__ == "__main__":
    for name in ("text", "tools"):
        for mode in ("improved", "paper"):
            print((name, mode), _run(name, mode))

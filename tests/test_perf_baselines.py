"""The baselines perf script on a short replayed RCA episode: every method runs, the table and
the last line come out, and the methods that cut context stay below the raw trajectory."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from benchmarks import baselines

from extras import needs_pyarrow

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "rca-nezha"


@pytest.fixture(scope="module")
def nezha_dir() -> Path:
    if not SHARED_DATA.is_dir():
        message = f"{SHARED_DATA} is missing: the perf test needs ../shared/data/rca-nezha"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA


@needs_pyarrow
def test_prints_both_tables_and_the_last_line_for_every_method(
    nezha_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baselines.main(["--steps", "30", "--data-dir", str(nezha_dir)])
    out = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith("Policy prompt tokens") for line in out)
    assert any(line.startswith("Context building per step") for line in out)
    last = re.fullmatch(
        r"policy tokens at step 30: raw=(\d+) acon=(\d+) pace=(\d+) hiagent=(\d+) lh=(\d+) pos=(\d+)",
        out[-1],
    )
    assert last is not None, out[-1]
    raw, acon, pace, hiagent, lh, pos = map(int, last.groups())
    assert min(acon, pace, hiagent, lh, pos) > 0
    assert max(acon, pace, hiagent, lh) < raw


def test_rejects_unknown_methods() -> None:
    with pytest.raises(SystemExit):
        baselines.main(["--methods", "raw,memgpt"])

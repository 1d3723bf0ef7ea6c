"""The README's own-agent examples run as printed (all 8 patch operations, a Sentinel rule, the
health window), so that the README cannot drift from the API."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from pos_agent.belief import PATCH_OPS

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert match, f"README has no {marker} block"
    return match.group(1)


def test_the_own_agent_example_shows_every_patch_op_and_runs() -> None:
    code = _block("own-agent-example")
    assert all(f'"op": "{op}"' in code for op in PATCH_OPS)
    out = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README own-agent-example", "exec"), namespace)
        exec(compile(_block("own-agent-health"), "README own-agent-health", "exec"), namespace)
    assert out.getvalue().splitlines() == ["['contradicts_observation']", "True static achievement"]

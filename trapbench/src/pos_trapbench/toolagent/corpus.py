"""Writing and reading the tool-agent corpus: `<out>/tools/corpus.jsonl` and its manifest.

The family is generated in-process in seconds and is the same for the same seed and count,
so `make` rebuilds it whole every time (nothing to resume).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pos_agent.trace import write_text_atomic
from pos_trapbench.records import load_records
from pos_trapbench.toolagent.family_b import FAMILY as FAMILY_B
from pos_trapbench.toolagent.family_b import make_corpus_b
from pos_trapbench.toolagent.generate import make_corpus
from pos_trapbench.toolagent.records import ToolManifest, ToolTrajectory

TOOLS_FOLDER = "tools"
TOOLS_B_FOLDER = FAMILY_B
"""The held-out family `tools-b` (`family_b.py`) lives in `<out>/tools-b/`."""
CORPUS_FILE = "corpus.jsonl"
MANIFEST_FILE = "manifest.json"
DEFAULT_TRAJECTORIES = 120


def tools_corpus_file(out: Path, family: str = TOOLS_FOLDER) -> Path:
    return out / family / CORPUS_FILE


def write_tools_corpus(
    out: Path, count: int, seed: int, family: str = TOOLS_FOLDER
) -> tuple[Path, ToolManifest]:
    """Generate `count` trajectories from `seed` into `out/<family>/` (`tools`, or the held-out
    `tools-b`); returns the corpus path and the manifest."""
    maker = make_corpus_b if family == TOOLS_B_FOLDER else make_corpus
    trajectories = maker(count, seed)
    folder = out / family
    manifest = ToolManifest(
        seed=seed,
        trajectories=len(trajectories),
        steps=sum(len(t.steps) for t in trajectories),
        segments=dict(sorted(Counter(s.kind for t in trajectories for s in t.segments).items())),
    )
    path = folder / CORPUS_FILE
    write_text_atomic(path, "".join(t.model_dump_json() + "\n" for t in trajectories))
    write_text_atomic(folder / MANIFEST_FILE, manifest.model_dump_json(indent=2) + "\n")
    return path, manifest


def load_tool_trajectories(path: Path) -> list[ToolTrajectory]:
    """Read a JSONL file of tool trajectories; raises ValueError naming the bad line."""
    return load_records(path, ToolTrajectory, "a tool trajectory")

"""Writing and reading the tool-agent corpus: `<out>/tools/corpus.jsonl` and its manifest.

The family is generated in-process in seconds and is the same for the same seed and count,
so `make` rebuilds it whole every time (nothing to resume).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pos_agent.trace import write_text_atomic
from pos_agent.trapbench.toolagent.generate import make_corpus
from pos_agent.trapbench.toolagent.records import ToolManifest, ToolTrajectory

TOOLS_FOLDER = "tools"
CORPUS_FILE = "corpus.jsonl"
MANIFEST_FILE = "manifest.json"
DEFAULT_TRAJECTORIES = 120


def tools_corpus_file(out: Path) -> Path:
    return out / TOOLS_FOLDER / CORPUS_FILE


def write_tools_corpus(out: Path, count: int, seed: int) -> tuple[Path, ToolManifest]:
    """Generate `count` trajectories from `seed` into `out/tools/`; returns the corpus path."""
    trajectories = make_corpus(count, seed)
    folder = out / TOOLS_FOLDER
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
    trajectories = []
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                trajectories.append(ToolTrajectory.model_validate(json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a tool trajectory ({exc})") from exc
    return trajectories

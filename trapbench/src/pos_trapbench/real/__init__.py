"""The real-trajectory corpus: agent trajectories from public repositories and issue threads,
labelled by reading (stuck stretches with a loop type, productive repetition with its type).

The repository holds what is ours: the manifest (`manifest.jsonl`: each trajectory's source
repository, path, commit, licence, sha256 and split), the labels (`labels.jsonl`), the split
rule (`split.json`) and the converters, one module per family of source formats (`textgames`,
`coding`, `openhands`, `chatlogs`, `notebooks`, `consoles`; `formats.CONVERTERS` by name).
The trajectories themselves are rebuilt from the source files (`build.py`,
`pos trapbench real build`), and `eval --real` scores the detectors on them (`corpus.py`,
`tables.py`).
"""

from pos_trapbench.real.build import BuildReport, build_corpus
from pos_trapbench.real.corpus import RealRun, load_real
from pos_trapbench.real.formats import CONVERTERS, convert
from pos_trapbench.real.manifest import (
    PRODUCTIVE_TYPES,
    STUCK_TYPES,
    SourceEntry,
    TrajectoryLabels,
    load_labels,
    load_manifest,
)
from pos_trapbench.real.steps import RealStep, RealTrajectory

__all__ = [
    "CONVERTERS",
    "PRODUCTIVE_TYPES",
    "STUCK_TYPES",
    "BuildReport",
    "RealRun",
    "RealStep",
    "RealTrajectory",
    "SourceEntry",
    "TrajectoryLabels",
    "build_corpus",
    "convert",
    "load_labels",
    "load_manifest",
    "load_real",
]

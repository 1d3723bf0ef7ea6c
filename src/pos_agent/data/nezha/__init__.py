"""rca-nezha: IntelligentDDS/Nezha's fault-injection incidents as RCA100-layout cases.

The converter is this project's own (`build.py` and the modules it calls); it reads
`rca_data/` of Nezha at the pinned commit from any source tree (a git directory, a folder or
an unpacked archive) and writes what the `rca-nezha` environment reads.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pos_agent.data.acquire import Pinned
from pos_agent.data.nezha.build import DateSummary, convert
from pos_agent.data.nezha.upstream import iso
from pos_agent.data.store import Manifest
from pos_agent.data.tree import SourceTree

__all__ = ["PINNED", "build", "convert"]

PINNED = Pinned(
    repository="IntelligentDDS/Nezha",
    commit="d8140101fdb4e7dfb60d3ef9f64706f382b68470",
    pins={
        "LICENSE": "59b8f8bdb16579b28732a7f073dc6441825c1fff",
        "rca_data/2022-08-22/2022-08-22-fault_list.json": "0314aeef9494bcb12cf526b70e1738cbfb56eb61",
        "rca_data/2022-08-22/metric": "cc2f62949f9218fe382ddc546f02f8a1273912ff",
        "rca_data/2022-08-22/log": "13c6c463f0813519565649cea06dab3a3bc0bba7",
        "rca_data/2022-08-22/trace": "baf600796285c6ee537bf82a375fa5d5ddaaa065",
        "rca_data/2022-08-23/2022-08-23-fault_list.json": "438b8230ba9286a1f849c6358925172d56e5dc66",
        "rca_data/2022-08-23/metric": "de6b467808b881b196e121fae7d2f4bdd4bcfe4c",
        "rca_data/2022-08-23/log": "637633c9ae2a2245f098e1819c11ee7de9f65ae2",
        "rca_data/2022-08-23/trace": "64df08f0246efaba85f2e448608f395acd8030f5",
        "rca_data/2023-01-29/2023-01-29-fault_list.json": "4789477935f8e7981c5ca747cdbb3addaf39a5ec",
        "rca_data/2023-01-29/metric": "07a7f73488a0c348e2b2ce6845348636778ffe3a",
        "rca_data/2023-01-29/log": "02bd1f78585acbfd5cfaec2f66b63fde0e2ea070",
        "rca_data/2023-01-29/trace": "e5a8bf1699900fffed1bf4a6e187935973f534c8",
        "rca_data/2023-01-30/2023-01-30-fault_list.json": "bb093446906c4fa21c692040f3d5189598cbeba3",
        "rca_data/2023-01-30/metric": "c46af425fb8753a6b789cacdc5c7b33e0efb0858",
        "rca_data/2023-01-30/log": "311b7fdf510560351793576ed4597f8e5f1d3652",
        "rca_data/2023-01-30/trace": "e609da043496057f3f4685fa62efc72e7a5abf76",
    },
)


def _table(index: list[dict[str, Any]]) -> list[str]:
    kinds = sorted({line["fault_type"] for line in index})
    systems = sorted({line["system"] for line in index})
    counts = Counter((line["system"], line["fault_type"]) for line in index)
    lines = [
        "| system | " + " | ".join(kinds) + " | total |",
        "|---" * (len(kinds) + 2) + "|",
    ]
    for system in systems:
        cells = [str(counts[(system, kind)]) for kind in kinds]
        total = sum(counts[(system, kind)] for kind in kinds)
        lines.append(f"| {system} | " + " | ".join(cells) + f" | {total} |")
    return lines


def _gaps(index: list[dict[str, Any]]) -> list[str]:
    def ids(test: Callable[[dict[str, Any]], bool]) -> str:
        chosen = [line["case_id"] for line in index if test(line)]
        return f"{len(chosen)}" + (f": {', '.join(chosen)}" if chosen else "")

    return [
        f"- cases without logs: {ids(lambda line: not line['has_logs'])}",
        f"- cases without traces: {ids(lambda line: not line['has_traces'])}",
        "- cases with log files missing from the source: "
        + ids(lambda line: bool(line["log_files_missing_from_snapshot"])),
        "- cases with trace files missing from the source: "
        + ids(lambda line: bool(line["trace_files_missing_from_snapshot"])),
    ]


def _readme(index: list[dict[str, Any]], dates: list[DateSummary], pinned: Pinned) -> str:
    per_date = [
        f"- `{d.date}` ({d.system}): {d.pods} pods, {d.injections} injections; metric rows "
        f"{iso(d.first_row)} .. {iso(d.last_row)}; log files {d.log_files} ({d.log_missing} "
        f"missing from the source), trace files {d.trace_files} ({d.trace_missing} missing); "
        f"{d.call_edges} call edges"
        + (f" (inferred: {', '.join(f'{a} -> {b}' for a, b in d.inferred)})" if d.inferred else "")
        + f"; columns dropped as never collected: {d.dropped_pod_columns + d.dropped_front_columns}"
        for d in dates
    ]
    return "\n".join(
        [
            "# rca-nezha (prepared by `pos data get rca-nezha`)",
            "",
            f"{len(index)} fault-injection incidents of Nezha (github.com/{pinned.repository}, "
            f"commit {pinned.commit}, `rca_data/`, MIT: see LICENSE), one folder per incident "
            "in the RCA100 case layout. Give an agent only `cases/<id>/`: `answers/` and "
            "`index.jsonl` hold the root cause.",
            "",
            "The conversion rules (windows, caps, derived span status and alerts) are written "
            "in the project's docs (docs/data.md) and in the converter's modules "
            "(pos_agent/data/nezha/).",
            "",
            *_table(index),
            "",
            "Gaps:",
            *_gaps(index),
            "",
            "Per date:",
            *per_date,
            "",
        ]
    )


def build(
    tree: SourceTree,
    pinned: Pinned,
    work: Path,
    manifest: Manifest,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Prepare rca-nezha in `work` from the pinned upstream tree."""
    index, dates = convert(tree, work, progress=progress)
    with (work / "index.jsonl").open("w", encoding="utf-8") as handle:
        for line in index:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    (work / "README.md").write_text(_readme(index, dates, pinned), "utf-8")
    license_text = (tree.read("LICENSE") or b"").decode("utf-8", errors="replace")
    notice = (
        f"\n\nNOTICE: derived from {pinned.url}, commit {pinned.commit}, directory rca_data/, "
        "converted into per-incident cases (windowed and sampled parquet tables) by "
        "`pos data get rca-nezha` (pos_agent.data.nezha). The copyright notice and MIT license "
        "text above are Nezha's.\n"
    )
    (work / "LICENSE").write_text(license_text.rstrip("\n") + notice, "utf-8")
    missing = sum(
        1
        for line in index
        if line["log_files_missing_from_snapshot"] or line["trace_files_missing_from_snapshot"]
    )
    manifest.notes.append(
        f"{len(index)} cases; {missing} with telemetry files missing from the source"
    )

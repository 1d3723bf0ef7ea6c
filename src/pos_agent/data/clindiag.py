"""ClinDiag: github.com/geteff1/ClinDiag at a pinned commit, packed into `cases.jsonl`.

Upstream keeps one folder per case under `benchmark_dataset/`, seven JSON files each, every file
wrapping its content in one key (`{"laboratory_examinations": [...]}`). The pack is one JSON
object a line, sorted by case id: `case_id`, `in_paper_common_sample` (the paper's 302 Common
cases, from the list shipped with this package), `in_rare_subset` (the paper's Rare half), then
the seven sections unwrapped. That is the layout the `clindiag` environment reads.

The Rare half: the pinned folder holds ClinDiag's Rare Disease subset as `rare0` .. `rare301`,
302 cases, and the paper's Rare half has 302 cases too (its Table 5). The paper does not list
its Rare cases, so they are identified by ClinDiag's naming and the count, not by a list: the
pack marks every `rare<N>` folder `in_rare_subset`, and the README written beside it says how.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from pos_agent.data.acquire import Pinned
from pos_agent.data.errors import DataError
from pos_agent.data.store import Manifest
from pos_agent.data.tree import SourceTree

PINNED = Pinned(
    repository="geteff1/ClinDiag",
    commit="d9222f32d2afeb71a3c477e5b3de4cf7dbfb06a1",
    pins={
        "benchmark_dataset": "928b78828ee400a8ebc2d5a442e7d12b5885fe99",
        "LICENSE": "261eeb9e9f8b2b4b0d119366dda99c6fd7d35c64",
    },
)
FOLDER = "benchmark_dataset"
SECTIONS = (
    "initial_information",
    "medical_history",
    "physical_examination",
    "laboratory_test",
    "radiographic_test",
    "other_test",
    "diagnosis",
)
REQUIRED = ("initial_information", "diagnosis")
COMMON_LIST = "paper_common_sample.txt"
JSONL = "cases.jsonl"
RARE_PREFIX = "rare"
PAPER_RARE_CASES = 302
"""The paper's Rare half (Table 5); the pack says so when the folder names another count."""


def is_rare_case(case_id: str) -> bool:
    """ClinDiag's Rare Disease subset by its folder names: rare0 .. rare301."""
    return case_id.startswith(RARE_PREFIX) and case_id[len(RARE_PREFIX) :].isdigit()


def paper_common_ids() -> list[str]:
    """The paper's 302 Common case ids, in its evaluation order (package data)."""
    text = (resources.files("pos_agent.data") / "clindiag_paper_common.txt").read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def unwrap(value: Any) -> Any:
    """A section file's content without its one wrapping key."""
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value.values()))
    return value


def read_case(tree: SourceTree, case_id: str) -> dict[str, Any]:
    """One upstream case folder as a record (sections a case lacks are left out)."""
    record: dict[str, Any] = {"case_id": case_id}
    for section in SECTIONS:
        raw = tree.read(f"{FOLDER}/{case_id}/{section}.json")
        if raw is None:
            continue
        try:
            record[section] = unwrap(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as exc:
            raise DataError(
                f"{FOLDER}/{case_id}/{section}.json is not valid JSON ({exc})."
            ) from exc
    missing = [section for section in REQUIRED if section not in record]
    if missing:
        raise DataError(f"{FOLDER}/{case_id} has no {', '.join(missing)}.json.")
    return record


def pack(tree: SourceTree, out: Path, common: list[str]) -> dict[str, int]:
    """Write `cases.jsonl` from the case folders; counts of what was written."""
    common_set = set(common)
    case_ids = sorted(entry.name for entry in tree.entries(FOLDER) if entry.kind == "tree")
    unknown = sorted(common_set - set(case_ids))
    if unknown:
        raise DataError(
            f"{len(unknown)} of the paper's Common cases are not in {FOLDER}/ ({', '.join(unknown[:5])}"
            "...); this is not the pinned ClinDiag data."
        )
    with out.open("w", encoding="utf-8") as handle:
        for case_id in case_ids:
            record = read_case(tree, case_id)
            ordered = {
                "case_id": case_id,
                "in_paper_common_sample": case_id in common_set,
                "in_rare_subset": is_rare_case(case_id) and case_id not in common_set,
            }
            ordered.update((key, record[key]) for key in SECTIONS if key in record)
            handle.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    rare = sum(1 for case_id in case_ids if is_rare_case(case_id) and case_id not in common_set)
    return {"cases": len(case_ids), "common": len(common_set), "rare": rare}


def _rare_line(rare: int) -> str:
    if rare == PAPER_RARE_CASES:
        return (
            f"- Rare half: the {rare} cases of ClinDiag's Rare Disease subset (folders `rare0` ..\n"
            f"  `rare{rare - 1}`) are marked `in_rare_subset: true`. The paper's Rare half has "
            f"{PAPER_RARE_CASES}\n  cases too; it does not list them, so they are identified by "
            "ClinDiag's naming and\n  the count, not by a list."
        )
    return (
        f"- Rare half: {rare} folders are named `rare<N>` (ClinDiag's Rare Disease subset) and "
        f"marked\n  `in_rare_subset: true`; the paper's Rare half has {PAPER_RARE_CASES} cases, "
        "so this is not\n  the paper's Rare half as run."
    )


def _readme(counts: dict[str, int], pinned: Pinned) -> str:
    return f"""# ClinDiag cases (packed by `pos data get clindiag`)

{counts["cases"]} clinical diagnosis cases from ClinDiag (github.com/{pinned.repository}, folder
`{FOLDER}/` at commit {pinned.commit}, Apache-2.0: see LICENSE), one case per line in `{JSONL}`
(sorted by case id): `case_id`, `in_paper_common_sample`, `in_rare_subset`, then the seven
upstream files of the case folder, each unwrapped from its one key. `diagnosis` is the answer
key: never show it to an agent.

- Common half: the {counts["common"]} cases the PoS paper evaluates as "Common" are marked
  `in_paper_common_sample: true`; `{COMMON_LIST}` lists them in the paper's order.
{_rare_line(counts["rare"])}
- The other cases (ClinDiag's Challenging subset beyond the Common half) carry neither mark.
  ClinDiag's Emergency subset (MIMIC-derived) is not in the repository and not here.
"""


def build(
    tree: SourceTree, pinned: Pinned, work: Path, manifest: Manifest, progress: object = None
) -> None:
    """Prepare the ClinDiag folder in `work` from the pinned upstream tree."""
    common = paper_common_ids()
    counts = pack(tree, work / JSONL, common)
    (work / COMMON_LIST).write_text("".join(f"{case_id}\n" for case_id in common), "utf-8")
    license_text = tree.read("LICENSE")
    if license_text is not None:
        (work / "LICENSE").write_bytes(license_text)
    (work / "README.md").write_text(_readme(counts, pinned), "utf-8")
    manifest.notes.append(
        f"{counts['cases']} cases; {counts['common']} marked as the paper's Common half; "
        f"{counts['rare']} marked as its Rare half (ClinDiag's Rare Disease subset, folders "
        "rare<N>; identified by name and count: the paper lists no Rare ids)"
    )

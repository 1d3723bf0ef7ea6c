"""Reading ClinDiag data: the packed `cases.jsonl` (indexed once per file) or the upstream layout
of one folder per case, the paper's Common and Rare halves, and the task listing.

Splits: `common` (the paper's 302 Common cases, in `paper_common_sample.txt` order), `rare`
(ClinDiag's Rare Disease subset, `rare0` .. `rare301`, in number order), `paper` (the paper's
whole ClinDiag, Common + Rare, the two halves interleaved so that the first N tasks hold both)
and `all` (every case of the data, file order). Task ids are the upstream case ids: Rare ones
begin with `rare`, Common ones never do; the category says it too (`common`, `rare`, `other`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pos_agent.data.clindiag import SECTIONS
from pos_agent.envs._types import EnvError, TaskSpec
from pos_agent.envs.clindiag.record import ClinDiagCase
from pos_agent.envs.tools import locate_data

ENV_NAME = "clindiag"
SPLITS = ("common", "rare", "paper", "all")
DEFAULT_SPLIT = "all"
DATA_ENV_VAR = "POS_CLINDIAG_DATA"
JSONL_NAME = "cases.jsonl"
COMMON_LIST_NAME = "paper_common_sample.txt"
RARE_PREFIX = "rare"
"""ClinDiag names the cases of its Rare Disease subset rare0 .. rare301."""


@dataclass
class _JsonlIndex:
    """Where each case's line starts in `cases.jsonl`, and which cases are flagged common or
    rare (`rare_flags`: whether any line carries `in_rare_subset`; packs made before the flag
    do not)."""

    offsets: dict[str, int]
    order: list[str]
    flagged_common: list[str]
    flagged_rare: list[str]
    rare_flags: bool


_INDEX_CACHE: dict[tuple[str, int, int], _JsonlIndex] = {}
_INDEX_LOCK = threading.Lock()


def _jsonl_index(path: Path) -> _JsonlIndex:
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _INDEX_LOCK:
        cached = _INDEX_CACHE.get(key)
        if cached is not None:
            return cached
        offsets: dict[str, int] = {}
        order: list[str] = []
        flagged: list[str] = []
        rare: list[str] = []
        rare_flags = False
        with path.open("rb") as handle:
            offset = 0
            for number, line in enumerate(handle, start=1):
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    case_id = str(data["case_id"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise EnvError(
                        f"{path} line {number} is not a ClinDiag case record ({exc}); "
                        "each line must be a JSON object with a case_id."
                    ) from exc
                if case_id not in offsets:
                    order.append(case_id)
                offsets[case_id] = start
                if data.get("in_paper_common_sample") is True:
                    flagged.append(case_id)
                rare_flags = rare_flags or "in_rare_subset" in data
                if data.get("in_rare_subset") is True:
                    rare.append(case_id)
        index = _JsonlIndex(offsets, order, flagged, rare, rare_flags)
        _INDEX_CACHE.clear()
        _INDEX_CACHE[key] = index
        return index


def _unwrap(value: Any, section: str) -> Any:
    """Upstream files wrap their content in one key (e.g. {"laboratory_examinations": [...]})."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if section == "medical_history" and key != "medical_history":
            return value
        if section == "diagnosis" and key != "diagnosis":
            return value
        return inner
    return value


class ClinDiagData:
    """A ClinDiag data folder: `cases.jsonl`, or one folder per case (the upstream layout)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.jsonl = root / JSONL_NAME
        self.folders = root
        if not self.jsonl.is_file():
            self.jsonl = Path()
            nested = root / "benchmark_dataset"
            if nested.is_dir():
                self.folders = nested
            if not any((d / "initial_information.json").is_file() for d in self._case_dirs()):
                raise EnvError(
                    f"{root} holds neither {JSONL_NAME} nor case folders with "
                    "initial_information.json; point data_dir (or "
                    f"{DATA_ENV_VAR}) at the ClinDiag data."
                )

    @classmethod
    def locate(cls, data_dir: str | Path | None = None) -> ClinDiagData:
        root = locate_data(
            "clindiag",
            data_dir=data_dir,
            env_var=DATA_ENV_VAR,
            what="ClinDiag",
            marker=f"{JSONL_NAME}, or one folder per case with the seven upstream JSON files",
        )
        return cls(root)

    @property
    def packed(self) -> bool:
        return self.jsonl != Path()

    def _case_dirs(self) -> list[Path]:
        return sorted(d for d in self.folders.iterdir() if d.is_dir())

    def case_ids(self) -> list[str]:
        if self.packed:
            return list(_jsonl_index(self.jsonl).order)
        return [d.name for d in self._case_dirs() if (d / "initial_information.json").is_file()]

    def common_ids(self) -> list[str]:
        """The paper's Common half: the list file's order if present, else the flags."""
        listing = self.root / COMMON_LIST_NAME
        if listing.is_file():
            wanted = [line.strip() for line in listing.read_text().splitlines() if line.strip()]
            known = set(self.case_ids())
            return [case_id for case_id in wanted if case_id in known]
        if self.packed:
            return list(_jsonl_index(self.jsonl).flagged_common)
        return []

    def rare_ids(self) -> list[str]:
        """ClinDiag's Rare Disease subset (the paper's Rare half), in number order: the cases
        flagged `in_rare_subset`, or (data packed before the flag, upstream folders) the cases
        named rare0 .. rare301."""
        if self.packed and _jsonl_index(self.jsonl).rare_flags:
            found = _jsonl_index(self.jsonl).flagged_rare
        else:
            found = [case_id for case_id in self.case_ids() if is_rare_name(case_id)]
        return sorted(found, key=_rare_number)

    def load(self, case_id: str) -> ClinDiagCase:
        common = case_id in set(self.common_ids())
        rare = case_id in set(self.rare_ids())
        if self.packed:
            offset = _jsonl_index(self.jsonl).offsets.get(case_id)
            if offset is None:
                raise EnvError(
                    f"Unknown ClinDiag case {case_id!r} in {self.jsonl}; "
                    "`pos envs clindiag` lists the cases."
                )
            with self.jsonl.open("rb") as handle:
                handle.seek(offset)
                raw = json.loads(handle.readline())
        else:
            raw = self._load_folder(case_id)
        raw["in_paper_common_sample"] = common or raw.get("in_paper_common_sample") is True
        raw["in_rare_subset"] = rare
        try:
            return ClinDiagCase.model_validate(raw)
        except ValidationError as exc:
            raise EnvError(f"ClinDiag case {case_id!r} is malformed: {exc}") from exc

    def _load_folder(self, case_id: str) -> dict[str, Any]:
        folder = self.folders / case_id
        if "/" in case_id or "\\" in case_id or case_id in (".", "..") or not folder.is_dir():
            raise EnvError(
                f"Unknown ClinDiag case {case_id!r} in {self.folders}; "
                "`pos envs clindiag` lists the cases."
            )
        raw: dict[str, Any] = {"case_id": case_id}
        for section in SECTIONS:  # the seven files of an upstream case folder
            path = folder / f"{section}.json"
            if not path.is_file():
                continue  # upstream leaves out sections a case does not have
            try:
                raw[section] = _unwrap(json.loads(path.read_text(encoding="utf-8")), section)
            except ValueError as exc:
                raise EnvError(f"{path} is not valid JSON ({exc}).") from exc
        for required in ("initial_information", "diagnosis"):
            if required not in raw:
                raise EnvError(f"ClinDiag case folder {folder} has no {required}.json.")
        return raw


def is_rare_name(case_id: str) -> bool:
    """Whether a case id is one of ClinDiag's Rare Disease subset by its name (rare0 ..)."""
    return case_id.startswith(RARE_PREFIX) and case_id[len(RARE_PREFIX) :].isdigit()


def _rare_number(case_id: str) -> tuple[int, str]:
    tail = case_id[len(RARE_PREFIX) :]
    return (int(tail) if tail.isdigit() else -1, case_id)


def check_split(split: str | None) -> str:
    chosen = split or DEFAULT_SPLIT
    if chosen not in SPLITS:
        raise EnvError(f"Unknown ClinDiag split {chosen!r}; use one of {', '.join(SPLITS)}.")
    return chosen


def case_category(common: bool, rare: bool) -> str:
    """A case's category: `common` (the paper's Common half), `rare` (its Rare half), `other`."""
    return "common" if common else "rare" if rare else "other"


def interleave(first: list[str], second: list[str]) -> list[str]:
    """first[0], second[0], first[1], second[1], ..., then the rest of the longer one."""
    out: list[str] = []
    for index in range(max(len(first), len(second))):
        out += [ids[index] for ids in (first, second) if index < len(ids)]
    return out


def split_ids(data: ClinDiagData, split: str) -> list[str]:
    """The case ids of a split, in its order (module docstring); EnvError when the data does
    not mark the half the split needs."""
    common, rare = data.common_ids(), data.rare_ids()
    if split in ("common", "paper") and not common:
        raise EnvError(
            f"No Common cases marked in {data.root}: add {COMMON_LIST_NAME} (one case id "
            "a line) or use split `all`."
        )
    if split in ("rare", "paper") and not rare:
        raise EnvError(
            f"No Rare cases in {data.root}: the Rare half is ClinDiag's rare0 .. rare301 "
            "(`pos data get clindiag` packs them), or use split `common` or `all`."
        )
    if split == "common":
        return common
    if split == "rare":
        return rare
    if split == "paper":
        return interleave(common, [case_id for case_id in rare if case_id not in set(common)])
    return data.case_ids()


def list_clindiag_tasks(split: str | None, data_dir: str | Path | None = None) -> list[TaskSpec]:
    """The cases of a split: `common` (302, paper order), `rare` (302), `paper` (the two
    halves interleaved) or `all` (file order)."""
    chosen = check_split(split)
    data = ClinDiagData.locate(data_dir)
    common_set, rare_set = set(data.common_ids()), set(data.rare_ids())
    return [
        TaskSpec(
            env=ENV_NAME,
            task_id=case_id,
            category=case_category(case_id in common_set, case_id in rare_set),
            split=chosen,
            description="Diagnose a patient from the initial presentation.",
        )
        for case_id in split_ids(data, chosen)
    ]


def iter_cases(data_dir: str | Path | None = None) -> Iterable[ClinDiagCase]:
    """Every case of a data folder (for scripts and tests)."""
    data = ClinDiagData.locate(data_dir)
    for case_id in data.case_ids():
        yield data.load(case_id)


def case_answer(case: ClinDiagCase) -> Mapping[str, Any]:
    """The answer key as plain data (for scripted policies in tests and offline checks)."""
    return case.diagnosis.model_dump()

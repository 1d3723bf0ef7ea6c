"""Answers and scoring: the only code that touches `answers/`.

FT: the fault type is among the answer's types. RCL: the entity matches the answer at pod or
service level (the answer pod, its service, or another pod of that service). Joint: both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pos_agent.envs._types import EnvError
from pos_agent.envs.rca.data import check_case_id

# Nezha's injected fault types; a case's task.json may list its own in `fault_types`.
DEFAULT_FAULT_TYPES = ("cpu_contention", "cpu_consumed", "network_delay", "return", "exception")
FAULT_ALIASES = {
    "cpu_hog": "cpu_consumed",
    "cpu_consumption": "cpu_consumed",
    "cpu_exhaustion": "cpu_consumed",
    "cpu_stress": "cpu_consumed",
    "high_cpu": "cpu_consumed",
    "cpu_throttling": "cpu_contention",
    "network_jam": "network_delay",
    "network_latency": "network_delay",
    "latency": "network_delay",
    "delay": "network_delay",
    "wrong_return_value": "return",
    "return_value": "return",
    "code_defect_return": "return",
    "injected_exception": "exception",
    "code_exception": "exception",
    "code_defect_exception": "exception",
}


class RcaAnswer(BaseModel):
    """`answers/<case_id>.json`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    case_id: str = ""
    """The case."""
    root_cause_entities: list[str] = Field(min_length=1)
    """The injected pod and its service."""
    root_cause_types: list[str] = Field(min_length=1)
    """The injected fault type(s)."""


def read_answer(answers_dir: Path, case_id: str) -> RcaAnswer:
    """The answer key of one case; called by the scorer at submission, never by a tool."""
    path = answers_dir / f"{check_case_id(case_id)}.json"
    try:
        return RcaAnswer.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise EnvError(f"The answer file {path} cannot be used ({exc}).") from exc


@dataclass(frozen=True)
class RcaScore:
    """FT, RCL and Joint for one submission, with what they were decided on."""

    ft: bool
    rcl: bool
    pod_exact: bool

    @property
    def joint(self) -> bool:
        return self.ft and self.rcl

    def metrics(self) -> dict[str, int]:
        return {"FT": int(self.ft), "RCL": int(self.rcl), "Joint": int(self.joint)}


def score_submission(
    answer: RcaAnswer,
    entity: str,
    fault_type: str,
    service_of: Callable[[str], str | None],
) -> RcaScore:
    """Pure scoring: fault type among the answer's types; entity at pod or service level."""
    types = {normalize_fault_type(t) for t in answer.root_cause_types}
    truth = set(answer.root_cause_entities)
    truth_services = {s for s in (service_of(e) for e in truth) if s}
    submitted_service = service_of(entity)
    rcl = entity in truth or (submitted_service is not None and submitted_service in truth_services)
    return RcaScore(
        ft=normalize_fault_type(fault_type) in types, rcl=rcl, pod_exact=entity in truth
    )


def normalize_fault_type(text: str) -> str:
    """`CPU Hog` -> `cpu_consumed` style: lower case, underscores, known aliases resolved."""
    key = re.sub(r"[\s\-/]+", "_", text.strip().lower()).strip("_")
    return FAULT_ALIASES.get(key, key)

"""The ClinDiag case record: what the doctor may ask about, and the answer key it never sees."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "; ".join(t for t in (as_text(v) for v in value) if t)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {t}" for k, v in value.items() if (t := as_text(v)))
    return str(value)


class DiagnosisKey(BaseModel):
    """The answer key of a case: never shown to the agent."""

    model_config = ConfigDict(frozen=True)
    final_diagnosis: str
    """The diagnosis the judge compares the submission with."""
    differential_diagnosis: list[str] = Field(default_factory=list)
    """Alternatives the case authors considered."""
    diagnostic_reasoning: str = ""
    """Why the authors reached the final diagnosis."""

    @field_validator("final_diagnosis", "diagnostic_reasoning", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> str:
        return as_text(value)

    @field_validator("differential_diagnosis", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value.strip()] if value.strip() else []
        if isinstance(value, list):
            return [t for t in (as_text(v) for v in value) if t]
        return [as_text(value)]


class ClinDiagCase(BaseModel):
    """One case record (the packed `cases.jsonl` line, or an upstream folder read into it)."""

    model_config = ConfigDict(frozen=True)
    case_id: str
    """Upstream folder name."""
    in_paper_common_sample: bool = False
    """True for the 302 cases of the paper's Common half."""
    in_rare_subset: bool = False
    """True for ClinDiag's Rare Disease subset (rare0 .. rare301), the paper's Rare half."""
    initial_information: str
    """What the doctor sees at the start."""
    medical_history: dict[str, str] = Field(default_factory=dict)
    """Chief complaint, present illness, past, family and social history."""
    physical_examination: list[dict[str, str]] = Field(default_factory=list)
    """Examination entries: date, vital signs, findings, changes over time."""
    laboratory_test: list[dict[str, str]] = Field(default_factory=list)
    """Procedures with findings."""
    radiographic_test: list[dict[str, str]] = Field(default_factory=list)
    """Procedures with findings."""
    other_test: list[dict[str, str]] = Field(default_factory=list)
    """Procedures with findings."""
    diagnosis: DiagnosisKey
    """The answer key."""

    @field_validator("initial_information", mode="before")
    @classmethod
    def _initial(cls, value: Any) -> str:
        return as_text(value)

    @field_validator("medical_history", mode="before")
    @classmethod
    def _history(cls, value: Any) -> dict[str, str]:
        if isinstance(value, dict):
            return {str(k): as_text(v) for k, v in value.items()}
        text = as_text(value)
        return {"history": text} if text else {}

    @field_validator(
        "physical_examination", "laboratory_test", "radiographic_test", "other_test", mode="before"
    )
    @classmethod
    def _entries(cls, value: Any) -> list[dict[str, str]]:
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        entries = []
        for item in items:
            if isinstance(item, dict):
                entries.append({str(k): as_text(v) for k, v in item.items()})
            elif as_text(item):
                entries.append({"findings": as_text(item)})
        return entries


def section_payload(case: ClinDiagCase, section: str) -> Any:
    """The raw content of one record section (never the diagnosis)."""
    if section == "diagnosis":
        raise ValueError("the diagnosis section is the answer key and is never provided")
    return getattr(case, section)

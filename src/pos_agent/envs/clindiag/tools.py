"""The ClinDiag tools: each question tool next to the record section it asks, and the submission.

A question tool is answered by the provider from its own section only (never the diagnosis);
`submit_diagnosis` ends the case and goes to the judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pos_agent.envs.tools import ToolCall, ToolSpec, object_schema, string_param

SUBMIT_TOOL = "submit_diagnosis"


@dataclass(frozen=True)
class SectionQuery:
    """What one tool asks: the record section and how to present its items."""

    section: str
    label: str
    per_sentence: bool
    max_items: int
    not_found: str


@dataclass(frozen=True)
class RecordTool:
    """A question tool: its spec and the record section that answers it."""

    spec: ToolSpec
    query: SectionQuery


def _record_tool(
    name: str,
    description: str,
    asks: Literal["question", "test"],
    example: str,
    section: str,
    label: str,
    not_found: str,
) -> RecordTool:
    """A tool with one argument, `asks`: a free question (history, examination) is answered by
    up to three sentences of its section, an ordered test by up to two of its results."""
    free_question = asks == "question"
    return RecordTool(
        ToolSpec(name, description, object_schema([asks], **{asks: string_param(example)})),
        SectionQuery(
            section,
            label,
            per_sentence=free_question,
            max_items=3 if free_question else 2,
            not_found=not_found,
        ),
    )


RECORD_TOOLS: tuple[RecordTool, ...] = (
    _record_tool(
        "ask_history",
        "Ask the patient one history question (complaint, present illness, past, family, "
        "social history).",
        "question",
        "One question, e.g. 'Any recent travel or sick contacts?'",
        "medical_history",
        "History",
        "The record holds no history that answers this question.",
    ),
    _record_tool(
        "ask_physical_exam",
        "Ask for one physical-examination finding or the vital signs.",
        "question",
        "What to examine, e.g. 'abdominal examination'.",
        "physical_examination",
        "Physical examination",
        "The record holds no examination finding that answers this question.",
    ),
    _record_tool(
        "order_lab_test",
        "Order one laboratory test and get its result.",
        "test",
        "The one test to order, e.g. 'complete blood count'.",
        "laboratory_test",
        "Laboratory test",
        "No result for this laboratory test in the record (not performed or not reported).",
    ),
    _record_tool(
        "order_radiographic_test",
        "Order one imaging study (X-ray, CT, MRI, ultrasound, ...) and get its report.",
        "test",
        "The imaging study, e.g. 'chest CT'.",
        "radiographic_test",
        "Radiographic test",
        "No result for this imaging study in the record (not performed or not reported).",
    ),
    _record_tool(
        "order_other_test",
        "Order one other test (ECG, biopsy, endoscopy, pathology, genetic test, ...).",
        "test",
        "The test, e.g. 'skin biopsy'.",
        "other_test",
        "Other test",
        "No result for this test in the record (not performed or not reported).",
    ),
)
SECTION_QUERIES: dict[str, SectionQuery] = {tool.spec.name: tool.query for tool in RECORD_TOOLS}

SUBMIT_SPEC = ToolSpec(
    SUBMIT_TOOL,
    "Submit your final answer; this ends the case.",
    object_schema(
        ["final_diagnosis"],
        final_diagnosis=string_param("The single most likely diagnosis."),
        differential_diagnosis={
            "type": "array",
            "items": {"type": "string"},
            "description": "Other diagnoses you considered.",
        },
        diagnostic_reasoning=string_param("Why the findings support the final diagnosis."),
    ),
)
CLINDIAG_TOOLS: tuple[ToolSpec, ...] = (*(tool.spec for tool in RECORD_TOOLS), SUBMIT_SPEC)

# What the harness sends when a policy produced no action: a neutral history question, which
# reveals nothing the doctor could not ask and never ends the case.
FALLBACK_CALL = ToolCall("ask_history", {"question": "What is the history of the present illness?"})

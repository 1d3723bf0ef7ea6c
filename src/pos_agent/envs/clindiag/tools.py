"""The ClinDiag tools: each question tool next to the record section it asks, and the submission.

A question tool is answered by the provider from its own section only (never the diagnosis);
`submit_diagnosis` ends the case and goes to the judge.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _question_tool(
    name: str, description: str, example: str, section: str, label: str, not_found: str
) -> RecordTool:
    """A history or examination tool: a free question, answered by up to three sentences."""
    return RecordTool(
        ToolSpec(name, description, object_schema(["question"], question=string_param(example))),
        SectionQuery(section, label, per_sentence=True, max_items=3, not_found=not_found),
    )


def _test_tool(
    name: str, description: str, example: str, section: str, label: str, not_found: str
) -> RecordTool:
    """An ordered test: one test named, answered by up to two of the section's results."""
    return RecordTool(
        ToolSpec(name, description, object_schema(["test"], test=string_param(example))),
        SectionQuery(section, label, per_sentence=False, max_items=2, not_found=not_found),
    )


RECORD_TOOLS: tuple[RecordTool, ...] = (
    _question_tool(
        "ask_history",
        "Ask the patient one history question (complaint, present illness, past, family, "
        "social history).",
        "One question, e.g. 'Any recent travel or sick contacts?'",
        "medical_history",
        "History",
        "The record holds no history that answers this question.",
    ),
    _question_tool(
        "ask_physical_exam",
        "Ask for one physical-examination finding or the vital signs.",
        "What to examine, e.g. 'abdominal examination'.",
        "physical_examination",
        "Physical examination",
        "The record holds no examination finding that answers this question.",
    ),
    _test_tool(
        "order_lab_test",
        "Order one laboratory test and get its result.",
        "The one test to order, e.g. 'complete blood count'.",
        "laboratory_test",
        "Laboratory test",
        "No result for this laboratory test in the record (not performed or not reported).",
    ),
    _test_tool(
        "order_radiographic_test",
        "Order one imaging study (X-ray, CT, MRI, ultrasound, ...) and get its report.",
        "The imaging study, e.g. 'chest CT'.",
        "radiographic_test",
        "Radiographic test",
        "No result for this imaging study in the record (not performed or not reported).",
    ),
    _test_tool(
        "order_other_test",
        "Order one other test (ECG, biopsy, endoscopy, pathology, genetic test, ...).",
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

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


RECORD_TOOLS: tuple[RecordTool, ...] = (
    RecordTool(
        ToolSpec(
            "ask_history",
            "Ask the patient one history question (complaint, present illness, past, family, "
            "social history).",
            object_schema(
                ["question"],
                question=string_param("One question, e.g. 'Any recent travel or sick contacts?'"),
            ),
        ),
        SectionQuery(
            "medical_history",
            "History",
            per_sentence=True,
            max_items=3,
            not_found="The record holds no history that answers this question.",
        ),
    ),
    RecordTool(
        ToolSpec(
            "ask_physical_exam",
            "Ask for one physical-examination finding or the vital signs.",
            object_schema(
                ["question"],
                question=string_param("What to examine, e.g. 'abdominal examination'."),
            ),
        ),
        SectionQuery(
            "physical_examination",
            "Physical examination",
            per_sentence=True,
            max_items=3,
            not_found="The record holds no examination finding that answers this question.",
        ),
    ),
    RecordTool(
        ToolSpec(
            "order_lab_test",
            "Order one laboratory test and get its result.",
            object_schema(
                ["test"], test=string_param("The one test to order, e.g. 'complete blood count'.")
            ),
        ),
        SectionQuery(
            "laboratory_test",
            "Laboratory test",
            per_sentence=False,
            max_items=2,
            not_found="No result for this laboratory test in the record (not performed or not "
            "reported).",
        ),
    ),
    RecordTool(
        ToolSpec(
            "order_radiographic_test",
            "Order one imaging study (X-ray, CT, MRI, ultrasound, ...) and get its report.",
            object_schema(["test"], test=string_param("The imaging study, e.g. 'chest CT'.")),
        ),
        SectionQuery(
            "radiographic_test",
            "Radiographic test",
            per_sentence=False,
            max_items=2,
            not_found="No result for this imaging study in the record (not performed or not "
            "reported).",
        ),
    ),
    RecordTool(
        ToolSpec(
            "order_other_test",
            "Order one other test (ECG, biopsy, endoscopy, pathology, genetic test, ...).",
            object_schema(["test"], test=string_param("The test, e.g. 'skin biopsy'.")),
        ),
        SectionQuery(
            "other_test",
            "Other test",
            per_sentence=False,
            max_items=2,
            not_found="No result for this test in the record (not performed or not reported).",
        ),
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

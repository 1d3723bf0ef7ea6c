"""submit_root_cause: its spec, checking a submission against the case, and scoring it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.envs.rca.scoring import RcaScore, normalize_fault_type, read_answer, score_submission
from pos_agent.envs.rca.telemetry import CaseTelemetry
from pos_agent.envs.tools import ToolCall, ToolSpec, object_schema, string_param

SUBMIT_TOOL = "submit_root_cause"


def submit_spec(fault_types: Sequence[str]) -> ToolSpec:
    """The submission tool of a case whose fault types are `fault_types`.

    The schema lists the types (constrained decoding and strict servers produce only those);
    the parser still maps the spellings models write ("CPU hog", "wrong return value") onto them.
    """
    listed = {normalize_fault_type(t): t for t in fault_types}

    def canonical_fault_type(text: str) -> str:
        return listed.get(normalize_fault_type(text), text)

    return ToolSpec(
        SUBMIT_TOOL,
        "Submit the root cause; this ends the case.",
        object_schema(
            ["root_cause_entity", "fault_type"],
            root_cause_entity=string_param("The faulty pod or service, as list_entities shows it."),
            fault_type=string_param("The kind of fault.", enum=list(fault_types)),
            analysis=string_param("The evidence for your conclusion."),
        ),
        canonical={"fault_type": canonical_fault_type},
    )


@dataclass(frozen=True)
class Submission:
    """A submission whose entity is a name of the case and whose type is one of its types."""

    entity: str
    fault_type: str
    analysis: str


def check_submission(call: ToolCall, telemetry: CaseTelemetry) -> Submission:
    """The submission of a parsed call; ToolFailure when the entity is not a name of the case."""
    entity = telemetry.resolve_entity(str(call.args["root_cause_entity"]))
    return Submission(entity, str(call.args["fault_type"]), str(call.args.get("analysis", "")))


def score(
    submission: Submission, answers_dir: Path, case_id: str, telemetry: CaseTelemetry
) -> tuple[RcaScore, dict[str, Any]]:
    """The score and what the final observation reports about it (the answer included)."""
    answer = read_answer(answers_dir, case_id)
    result = score_submission(
        answer, submission.entity, submission.fault_type, telemetry.service_of
    )
    info = {
        "metrics": result.metrics(),
        "judge": "matcher",
        "rcl_pod_exact": result.pod_exact,
        "submission": {
            "root_cause_entity": submission.entity,
            "fault_type": submission.fault_type,
            "analysis": submission.analysis,
        },
        "answer": {
            "root_cause_entities": list(answer.root_cause_entities),
            "root_cause_types": list(answer.root_cause_types),
        },
    }
    return result, info

"""The model provider: a `Model` answers one question from one record section only."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from pos_agent.envs.clindiag.model_calls import Asked, ask, retry_note
from pos_agent.envs.clindiag.record import ClinDiagCase, section_payload
from pos_agent.envs.clindiag.tools import SectionQuery
from pos_agent.llm import Message, Model

# Generation budget of one answer. The prompt asks for one to three sentences; the budget is
# generous so that a real model is never cut off (a cut answer is malformed and retried).
PROVIDER_MAX_TOKENS = 1024

PROVIDER_SYSTEM = """You hold one section of a patient's medical record and answer a doctor's \
question about it. Answer ONLY what is asked, using ONLY the record section below: report the \
matching findings in one to three sentences, never other results, never a diagnosis or an \
interpretation. If the section does not contain the answer, say exactly: "Not documented in the \
record."

Record section ({label}):
{record}"""


class ProviderReply(BaseModel):
    """The provider model's answer to one question."""

    answer: str = Field(description="The answer, from the record section only.")


def _usable(reply: ProviderReply) -> str | None:
    return None if reply.answer.strip() else "the provider answered with empty text"


def provider_answer(
    model: Model, case: ClinDiagCase, query: SectionQuery, question: str
) -> Asked[ProviderReply]:
    """The model's answer to `question` from the section `query` names (None if malformed)."""
    record = json.dumps(section_payload(case, query.section), ensure_ascii=False, indent=1)
    system = PROVIDER_SYSTEM.format(label=query.label, record=record)

    def conversation(attempt: int) -> list[Message]:
        return [Message("system", system), Message("user", question + retry_note(attempt))]

    return ask(
        model,
        conversation,
        ProviderReply,
        role="provider",
        purpose="answer",
        max_tokens=PROVIDER_MAX_TOKENS,
        check=_usable,
    )

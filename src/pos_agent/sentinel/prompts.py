"""The sentinel's prompts: the local audit of one transition, the progress judgment and the
global audit. Past observations are clipped to the sentinel's `AuditClips`.

Cache-aware layout (`roles/prompts.py`): the PoS roles' shared system text first, then the
audit's instructions, then what the audit reads. The local audit reads only the changed
records, their neighbours, the gaps and the last transitions (paper Table 8), not B_t, so it
shares the system text with the other roles; the global audit reads the whole belief and puts
it first, as the policy and the belief model do.
"""

from __future__ import annotations

from collections.abc import Sequence

from pos_agent.llm import Message
from pos_agent.roles.prompts import SHARED_SYSTEM, clip
from pos_agent.transition import Transition

AUDIT_SYSTEM = """You audit an agent's belief state against what it observed.
Report each problem of the records shown:
- "internal": records that contradict each other.
- "external": a record that an observation contradicts, or a record marked observed ("obs")
  that no observation shows: an unsupported inference. After "You put the mug 1 in/on the
  microwave 1." the mug is in the microwave; that it is hot is not shown. Give evidence_step,
  the observation you checked, and an exact quote from it.
Plans and intentions ("needs to be heated", "plan: open it") are not states and contradict
nothing. Report what the records and observations show to be wrong; when nothing is, answer
with an empty list."""

# One progress question for the audit (full method) and the judge (no_consistency): progress is
# judged against the gap that was active before the step, even when the step resolved it.
PROGRESS_QUESTION = """Judge progress: 1 if the last action narrowed the gap that was active
before it (shown as "active before this step"), acquired information needed for that gap, or
advanced a plausible path to the goal; otherwise 0. Give a short reason."""

PROGRESS_SYSTEM = "You judge one step of an agent.\n" + PROGRESS_QUESTION


def audit_system(judge_progress: bool) -> str:
    return AUDIT_SYSTEM + ("\n" + PROGRESS_QUESTION if judge_progress else "")


def transition_lines(recent: Sequence[Transition], limit: int | None) -> str:
    return "\n".join(
        f"step {s.step - 1}: {s.action} -> step {s.step}: {clip(s.observation, limit)}"
        for s in recent
    )


def transition_view(
    changed_text: str,
    before_text: str,
    gaps_text: str,
    recent: Sequence[Transition],
    observation_chars: int | None,
    answered: Sequence[str] = (),
) -> str:
    """What the audit and the progress judge read of one transition (B_t+1, B_t, the gaps, the
    last transitions). The transitions come last: the newest one is the prompt's last line."""
    answers = (
        "The belief model answered these findings with evidence (checked: the quote is in that "
        "step's observation):\n" + "\n".join(f"- {a}" for a in answered) + "\n\n"
        if answered
        else ""
    )
    return (
        f"Changed records and their neighbours (after this step):\n{changed_text}\n\n"
        f"{before_text}\n\n{gaps_text}\n\n{answers}"
        f"Recent transitions:\n{transition_lines(recent, observation_chars)}"
    )


def audit(
    changed_text: str,
    before_text: str,
    gaps_text: str,
    recent: Sequence[Transition],
    *,
    judge_progress: bool,
    observation_chars: int | None,
    answered: Sequence[str] = (),
) -> list[Message]:
    view = transition_view(
        changed_text, before_text, gaps_text, recent, observation_chars, answered
    )
    return instructed(audit_system(judge_progress), view)


def progress(
    changed_text: str,
    before_text: str,
    gaps_text: str,
    recent: Sequence[Transition],
    *,
    observation_chars: int | None,
) -> list[Message]:
    """The no_consistency judge: the audit's inputs, the progress question alone."""
    view = transition_view(changed_text, before_text, gaps_text, recent, observation_chars)
    return instructed(PROGRESS_SYSTEM, view)


def global_audit(
    belief_text: str, trajectory: Sequence[Transition], *, observation_chars: int | None
) -> list[Message]:
    lines = "\n".join(
        f"{s.step}: {s.action} -> {clip(s.observation, observation_chars)}" for s in trajectory
    )
    head = f"Current belief:\n{belief_text}"
    user = f"{head}\n\n{AUDIT_SYSTEM}\n\nTrajectory (step: action -> observation):\n{lines}"
    # Breakpoints: after the shared system text and after B_t (the prefix the roles share).
    return [
        Message("system", SHARED_SYSTEM, (len(SHARED_SYSTEM),)),
        Message("user", user, (len(head),)),
    ]


def instructed(instructions: str, view: str) -> list[Message]:
    """The shared system text, then the judge's fixed instructions and what it judges; cache
    breakpoints after the system text and after the instructions (the stable prefix)."""
    return [
        Message("system", SHARED_SYSTEM, (len(SHARED_SYSTEM),)),
        Message("user", f"{instructions}\n\n{view}", (len(instructions),)),
    ]

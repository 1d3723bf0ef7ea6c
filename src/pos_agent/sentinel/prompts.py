"""The sentinel's prompts: the local audit of one transition, the progress judgment and the
global audit. Past observations are clipped to the sentinel's `AuditClips`."""

from __future__ import annotations

from collections.abc import Sequence

from pos_agent.llm import Message
from pos_agent.roles.prompts import clip
from pos_agent.roles.transition import Transition

AUDIT_SYSTEM = """You audit one update of an agent's belief state against what it observed.
Report only real problems: "internal" when records contradict each other, "external" when a
record contradicts an observation (give evidence_step and an exact quote from it). Do not invent
problems; an empty list is a good answer."""

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


def audit(
    changed_text: str,
    gaps_text: str,
    recent: Sequence[Transition],
    *,
    judge_progress: bool,
    observation_chars: int | None,
) -> list[Message]:
    # The transitions come last: the newest one is the prompt's last line.
    user = (
        f"Changed records and their neighbours:\n{changed_text}\n\n{gaps_text}\n\n"
        f"Recent transitions:\n{transition_lines(recent, observation_chars)}"
    )
    return [Message("system", audit_system(judge_progress)), Message("user", user)]


def progress(gaps_text: str, last: Transition, *, observation_chars: int | None) -> list[Message]:
    user = f"{gaps_text}\n\nLast transition:\n{transition_lines([last], observation_chars)}"
    return [Message("system", PROGRESS_SYSTEM), Message("user", user)]


def global_audit(
    belief_text: str, trajectory: Sequence[Transition], *, observation_chars: int | None
) -> list[Message]:
    lines = "\n".join(
        f"{s.step}: {s.action} -> {clip(s.observation, observation_chars)}" for s in trajectory
    )
    user = f"Whole belief:\n{belief_text}\n\nTrajectory (step: action -> observation):\n{lines}"
    return [Message("system", AUDIT_SYSTEM), Message("user", user)]

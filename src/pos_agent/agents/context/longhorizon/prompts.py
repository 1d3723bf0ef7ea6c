"""The LongHorizon-Harness role prompts, in our words after upstream's `role_prompts.py`.

Every role starts from a fresh context. The manager sees the task, the task state and contract it
carried from its last round, every audit report (newest kept when they must be cut) and the
harness's feedback; it never sees a trajectory. The executor sees the task, the state, the
contract, its bounded subtask and the audit reports the manager cited. The auditor sees the same
plus the executor's report (a claim, not evidence) and checks the environment itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from pos_agent.agents.context.longhorizon.reports import AuditReport, ManagerPlan, round_id
from pos_agent.agents.context.turns import Turn, render_turns
from pos_agent.llm import Message

MANAGER_SYSTEM = """You are the manager of a long-horizon task. You do not act in the environment:
you keep the task state, keep a stable task contract, and hand out one bounded subtask per round
to an executor. An independent auditor checks every subtask against the environment; audit
reports are the only source of trusted facts. Executors' own claims are unverified.

Answer in plain text with these sections, in this order:

Task state:
  Completed: facts, each citing the audit round that established it, e.g. [round_002]
  Incomplete: what is still open
  Blockers: what stands in the way
  Untrusted: claims no audit has confirmed, or that an audit contradicted
Task contract:
  The acceptance constraints of the whole task, one per line as "- C1: <constraint>; verified by:
  <how an auditor can check it>". Keep it stable across rounds; revise it only when an audit says
  it needs revision.
Dependencies: what the next subtask depends on, which of that is already verified and which is not.
Next: work | done | blocked

For "Next: work" add:
Subtask: one dominant state change or question, small enough for a few actions
Acceptance criteria: checkable results
Related audit rounds: the round ids whose reports the executor and auditor need, e.g. round_002
Boundaries: what the executor must not do

Say "Next: done" only when the latest audit is complete, clean and aligned and every constraint of
the contract is verified. Say "Next: blocked" only when no subtask can make progress."""

EXECUTOR_SYSTEM = """You are an executor. Do only the subtask below, in the environment, with the
actions offered. Trust the task state and the cited audit reports; do not redo what they confirm.
When the subtask is done, or cannot be done, choose "finish" and report."""

EXECUTOR_REPORT_ASK = """Report to the auditor in a few lines: what you did, what the environment
showed, where the results are, and what is left or failed. Report only what happened."""

AUDITOR_SYSTEM = """You are an auditor. Check, with read-only queries of the environment, whether
the subtask below really reached its acceptance criteria. The executor's report is a claim to
check, not evidence. You may not change the environment.

Your report must begin with exactly these three lines:
Status: complete | incomplete | blocked
Integrity: clean | suspect | violation
Contract audit: aligned | unknown | needs_revision | invalid

Then write:
Facts: what you verified, each with its evidence (the query and what it showed)
Constraint check: for each constraint of the subtask and the task contract: met, unmet or unverified, and why
Blocking constraints: the unmet constraints that block completion, or "none"
State update for the manager: new trusted facts, open gaps, untrusted claims

Integrity is a violation when the executor's claims contradict the environment, suspect when they
cannot be checked. The contract audit is aligned when the subtask and the task contract still
match the original task."""

AUDITOR_QUERY_NOTE = """Choose a read-only query to check the subtask, or "finish" when you have
seen enough to write the report."""

REPAIR_ASK = """Your audit report did not begin with the three required control lines. This is not
a new audit: do not change your findings. Rewrite the same report so that its first three lines
are exactly:
Status: complete | incomplete | blocked
Integrity: clean | suspect | violation
Contract audit: aligned | unknown | needs_revision | invalid
(one value each). If your report does not let you decide, write Status: blocked, Integrity:
suspect, Contract audit: unknown. Return only the corrected report."""

FINAL_NOTE = """Submit the final answer now, from the verified state only: the task state and the
audit reports below. Do not rely on anything no audit confirmed."""


def task_block(goal: str, first_observation: str) -> str:
    first = first_observation.strip()
    if not first or first == goal.strip():  # the instruction is the first observation: once
        return f"Task: {goal.strip()}"
    return f"Task: {goal.strip()}\n\nInitial observation:\n{first}"


def audit_block(reports: Sequence[AuditReport], max_chars: int) -> str:
    """The reports, newest last; the oldest are left out when they do not fit `max_chars`."""
    rendered: list[str] = []
    used = 0
    for report in reversed(reports):
        text = (
            f"[{report.round_id}] status={report.status} integrity={report.integrity} "
            f"contract={report.contract}\n{report.text}"
        )
        if rendered and used + len(text) > max_chars:
            rendered.append(f"({len(reports) - len(rendered)} older report(s) left out)")
            break
        rendered.append(text if len(text) <= max_chars else text[:max_chars] + " ...")
        used += len(text)
    return "\n\n".join(reversed(rendered)) or "(no audit reports yet)"


def manager_messages(
    task: str,
    state: str,
    contract: str,
    reports: Sequence[AuditReport],
    feedback: Sequence[str],
    round_number: int,
    actions_left: int,
    max_chars: int,
) -> list[Message]:
    user = (
        f"{task}\n\n"
        f"Task state from your last round:\n{state or '(none yet: set it up from the task)'}\n\n"
        f"Task contract:\n{contract or '(none yet: write it from the task)'}\n\n"
        f"Audit reports (the trusted record):\n{audit_block(reports, max_chars)}\n\n"
        + (
            "Harness feedback (not an audit):\n" + "\n".join(f"- {f}" for f in feedback) + "\n\n"
            if feedback
            else ""
        )
        + f"This is management round {round_id(round_number)}; {actions_left} environment "
        "actions are left for executors and auditors. Write the sections."
    )
    return [Message("system", MANAGER_SYSTEM), Message("user", user)]


def role_context(task: str, plan: ManagerPlan, state: str, contract: str, related: str) -> str:
    return (
        f"{task}\n\nTask state:\n{state or '(none)'}\n\nTask contract:\n{contract or '(none)'}\n\n"
        f"Your subtask:\n{plan.subtask_contract()}\n\n"
        f"Cited audit reports:\n{related or '(none cited)'}"
    )


def executor_context(base: str, turns: Sequence[Turn]) -> str:
    done = render_turns(turns) if turns else "(no actions yet)"
    return f"{EXECUTOR_SYSTEM}\n\n{base}\n\nYour actions in this subtask:\n{done}"


def executor_report_messages(base: str, turns: Sequence[Turn]) -> list[Message]:
    done = render_turns(turns) if turns else "(no actions taken)"
    user = f"{base}\n\nYour actions in this subtask:\n{done}\n\n{EXECUTOR_REPORT_ASK}"
    return [Message("system", EXECUTOR_SYSTEM), Message("user", user)]


def auditor_context(base: str, executor_report: str, latest: str, queries: Sequence[Turn]) -> str:
    seen = render_turns(queries) if queries else "(no queries yet)"
    return (
        f"{AUDITOR_SYSTEM}\n\n{base}\n\nExecutor's report (a claim):\n{executor_report}\n\n"
        f"Latest environment output:\n{latest.strip()}\n\nYour queries:\n{seen}\n\n{AUDITOR_QUERY_NOTE}"
    )


def auditor_report_messages(
    base: str, executor_report: str, latest: str, queries: Sequence[Turn]
) -> list[Message]:
    seen = render_turns(queries) if queries else "(no queries made)"
    user = (
        f"{base}\n\nExecutor's report (a claim):\n{executor_report}\n\n"
        f"Latest environment output:\n{latest.strip()}\n\nYour queries:\n{seen}\n\n"
        "Write your audit report now."
    )
    return [Message("system", AUDITOR_SYSTEM), Message("user", user)]


def repair_messages(report: str) -> list[Message]:
    user = f"Your report:\n{report.strip() or '(empty)'}\n\n{REPAIR_ASK}"
    return [Message("system", AUDITOR_SYSTEM), Message("user", user)]


def final_context(task: str, state: str, reports: Sequence[AuditReport], max_chars: int) -> str:
    return (
        f"{task}\n\nVerified task state:\n{state or '(none)'}\n\n"
        f"Audit reports:\n{audit_block(reports, max_chars)}\n\n{FINAL_NOTE}"
    )

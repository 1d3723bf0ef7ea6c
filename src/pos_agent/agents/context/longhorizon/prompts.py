"""The LongHorizon-Harness role prompts, in our own words, carrying every rule of upstream's
`role_prompts.py` / `prompt_texts.py` (v0.1.7) that applies here (docs/benchmarks/baselines.md lists them side
by side; upstream's GUI/CLI routing, human `ask` route and screenshot rules have no counterpart in
these benchmarks).

Every role starts from a fresh context. The manager sees the task, the task state and contract it
carried from its last round, every audit report (newest kept when they must be cut), the
harness's feedback and the rounds and actions left; it never sees a trajectory. The executor and
the auditor see the task, the state, the contract, the manager's whole plan for the round, their
bounded subtask and the audit reports the manager cited; the auditor also sees the executor's
report (a claim, not evidence) and checks the environment itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from pos_agent.agents.context.longhorizon.reports import AuditReport, ManagerPlan, round_id
from pos_agent.llm import Message
from pos_agent.transition import Transition, render_transitions

# Rules every role shares: what the task contract is and what counts as the task being done.
# Our words for upstream's task-contract rules and final-state guard (`prompt_texts.py`); the
# baselines page of the docs lists upstream's rules next to these.
CONTRACT_RULES = """How the task contract works:
- The contract is the fixed reference of what the finished task looks like, carried from round to
  round. It is not a plan of steps, and it must never swap the task for an easier stand-in.
- Keep every exact object of the task as the task names it: file names, paths, ids, fields,
  accounts, values, units, formats, times, and the form the result must take.
- Facts about the environment count only once an audit has confirmed them; until then, and in
  the first round always, they are assumptions and must be marked as such.
- When it is unclear what the result should be or where the inputs are, find out first (read,
  look, query); never change the final object on a guess about what was meant.
- Write each acceptance constraint from the task's own words and from confirmed facts: where it
  comes from, what must hold, how an auditor can check it, and what would block completion. A
  plan, a guess or an easier substitute is not a constraint.
- Keep every restriction the task states (do not change, only use, exact name, same place, do
  not add or leave out, keep the rest as it is). Loosening one of them for a good reason loosens
  only that one.
- A restriction on the final state is checked on the final state; it does not become a demand to
  prove that something never happened along the way, unless the task itself asks for that."""

DONE_RULES = """When the task counts as done:
- The result must be in the place where it is used (the saved record, the database, the file,
  the sent message, the submitted answer); a statement that it was done does not count.
- Inputs come from the environment or from the task; never invent a missing input, default or
  stand-in.
- Results are made by the environment's own actions and tools, never by faking their signs.
- Filled-in fields, a draft or a preview are not a result until it is saved, sent, submitted or
  applied, and that is confirmed.
- When several candidates exist (old files, drafts, earlier records, similar names), show that the
  one that counts is the right one and that the wrong ones do not interfere."""

MANAGER_SYSTEM = (
    """You are the manager of a long-horizon task. You plan and schedule; you never act in the
environment yourself. Each round you hand one bounded subtask to an executor; an independent
auditor then checks it against the environment. Audit reports are the only source of trusted
facts: an executor's own account is a claim until an audit confirms it.

Your job each round:
1. Keep the task state up to date from the task and the audited facts.
2. Keep a stable task contract: the finished state the task asks for, its inputs, where the
   result must end up, how it may be produced, when it counts as saved or submitted, and the
   acceptance constraints with how each is checked.
3. Assess dependencies before you choose the next subtask. A prerequisite is met only when an
   audit confirmed it. While any prerequisite is unmet, the subtask works on the single most
   important unmet one, not on the final result.
4. Give one subtask per round, with one main change of state; never bundle several.
5. Read each audit's constraint check first. When it lists blocking constraints, or its contract
   audit is unknown, needs_revision or invalid, revise the contract or schedule the check or
   repair it calls for; never finish then.
6. Say done only when the latest audit's first lines are Status: complete, Integrity: clean and
   Contract audit: aligned and its report supports every requirement of the task; cite the
   audited facts that show each one.
7. Mind the budget: with one round (or very few actions) left, do not spend it on a prerequisite
   that puts off the task itself; give the most complete subtask that can still finish it, or
   say blocked when it cannot honestly be finished.

"""
    + CONTRACT_RULES
    + "\n\n"
    + DONE_RULES
    + """

Answer in plain text (never JSON) with these sections, in this order, and no others:

Task state:
  Completed: facts, each citing the audit round that established it, e.g. [round_002]
  Incomplete: what is still open
  Blockers: what stands in the way, and risks
  Untrusted: claims no audit has confirmed or that an audit contradicted; do not reuse them
  Anything without an audit to cite is unverified: say so, and never promote an executor's claim.
Task contract:
  One acceptance constraint per line: "- C1: <constraint> (source: <where the task says so>);
  verified by: <how an auditor can check it>; blocks completion if: <what would block>".
  Keep it stable across rounds; revise it only when an audit shows it is wrong or incomplete.
Dependencies: the target state; met prerequisites (with the audit round that confirmed each);
  unmet prerequisites; why the next subtask is the right one.
Next: work | done | blocked

For "Next: work" add:
Subtask: one main change of state or one question, small enough for a few actions
Acceptance criteria: the checkable results that show it is done
Related audit rounds: the round ids whose reports the executor and auditor need, and why
Boundaries: what the executor must not do or touch

For "Next: done", cite under Task state the audited facts that support every requirement. For
"Next: blocked", say why no further subtask can make progress."""
)

EXECUTOR_SYSTEM = (
    """You are an executor. Do only the subtask the manager gave you, in the environment, with
the actions offered.
- The audited facts and the task contract are your trusted ground. Do not redo what an audit
  confirmed, and do not use anything an audit marked suspect, violating, untrusted or removed.
- Keep the task's exact objects: the names, paths, ids and values it states, never look-alikes.
- If something you need is missing, or the subtask needs a different kind of work than you can
  do here, stop and say so in your report; do not guess and do not re-plan the whole task.
- Stay inside the subtask's boundaries. When it is done, or cannot be done, choose "finish".

"""
    + CONTRACT_RULES
    + "\n\n"
    + DONE_RULES
)

EXECUTOR_REPORT_ASK = """Report to the auditor in a few lines: what you did, what the environment
showed, where the results are (exact names, paths, ids, values) so they can be checked
independently, and what is left or failed. Report only what happened; never claim what you did
not see."""

AUDITOR_SYSTEM = (
    """You are an auditor, not an executor. With read-only queries of the environment, check
whether the subtask just finished really reached its acceptance criteria, stayed inside its
boundaries, and can be trusted. You may not change the environment; if you find something faked
or wrong, report it, do not repair it.
- The executor's report is a claim to check, not evidence. Earlier audit reports and the plan are
  background, never a substitute for looking at the environment now.
- Do not assume the task contract is correct. Rebuild the acceptance constraints from the task's
  own words first, then compare them with the contract: look for constraints it left out,
  weakened, distorted or got wrong.
- The contract itself and the executor's claims are not evidence for any constraint; only what
  you (or an earlier audit) saw in the environment is.
- Mark integrity suspect or violation only for something positive: a claim the environment
  contradicts, a result of doubtful origin, an unexpected change, a forbidden action. A missing
  record of what the executor did is not, by itself, a reason.
- Something that cannot be observed after the fact (that a step never happened) is a residual
  risk, not a blocking constraint, unless the task itself demands that guarantee.

"""
    + DONE_RULES
    + """

Your report must begin with exactly these three lines:
Status: complete | incomplete | blocked
Integrity: clean | suspect | violation
Contract audit: aligned | unknown | needs_revision | invalid

Then write, in plain text (never JSON):
Facts: what you verified, each with its evidence (the query and what it showed)
Gaps: what is missing or not verified, and the next step it needs
Trusted results: results you confirmed; Untrusted results: results you could not confirm or
  found wrong (do not reuse)
Constraint check:
  Contract conclusion: aligned | unknown | needs_revision | invalid (the same as the third line)
  Constraints of the task: every constraint you rebuilt from the task (where the result must be,
    the inputs, which candidate counts, values, files and paths, saving or submitting, exact
    formats and texts, what must not change, be added or be left out)
  Coverage: what the contract leaves out, weakens or distorts
  Per constraint: its content, its source, whether it blocks completion, the independent
    evidence, and verified | unknown | violated | not_applicable
  Blocking constraints: every blocking constraint that is unknown or violated, or "none"
  Risks: where the result could still be judged wrong, and any contract revision you recommend
State update for the manager: new trusted facts, what is still trusted, open gaps, untrusted
  claims (this section comes last)

The verdicts must agree with the check: a blocking constraint that is unknown makes the contract
audit unknown; one that is violated makes it needs_revision or invalid; and while any blocking
constraint is listed or the contract audit is not aligned, the status is incomplete, even when
the subtask itself succeeded."""
)

AUDITOR_QUERY_NOTE = """Choose a read-only query to check the subtask, or "finish" when you have
seen enough to write the report."""

REPAIR_ASK = """Your audit report did not begin with the three required control lines. This only
fixes the format; it is not a new audit: do not change your findings and make no queries.
Rewrite the same report so that its first three lines are exactly:
Status: complete | incomplete | blocked
Integrity: clean | suspect | violation
Contract audit: aligned | unknown | needs_revision | invalid
(one value each). Write aligned only if the report's constraint check supports it. If your
report does not let you decide, write Status: blocked, Integrity: suspect, Contract audit:
unknown. Return only the corrected report."""

FINAL_NOTE = """Submit the final answer now, from the verified state only: the task state and the
audit reports below. Do not rely on anything no audit confirmed, and keep the task's exact
objects (names, ids, values) as the audits recorded them."""


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
    max_rounds: int,
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
        + f"This is management round {round_id(round_number)} of at most {max_rounds} "
        f"({max_rounds - round_number + 1} left, this one included); {actions_left} environment "
        "actions are left for executors and auditors. Write the sections."
    )
    # Breakpoints: after the system text and after the task (the same every round).
    return [
        Message("system", MANAGER_SYSTEM, (len(MANAGER_SYSTEM),)),
        Message("user", user, (len(task),)),
    ]


def role_context(
    task: str, plan: ManagerPlan, plan_text: str, state: str, contract: str, related: str
) -> str:
    """What the executor and the auditor both get: the task, the carried state and contract,
    the manager's whole plan for this round (its state, contract, dependencies and route, as
    upstream passes the plan text), the bounded subtask, and the audit reports it cites."""
    return (
        f"{task}\n\nTask state (kept by the manager; facts come from audits):\n"
        f"{state or '(none)'}\n\nTask contract (the reference, not necessarily correct):\n"
        f"{contract or '(none)'}\n\n"
        f"The manager's plan for this round:\n{plan_text.strip() or '(none)'}\n\n"
        f"Your subtask:\n{plan.subtask_contract()}\n\n"
        f"Cited audit reports (background):\n{related or '(none cited)'}"
    )


def executor_context(base: str, turns: Sequence[Transition]) -> str:
    done = render_transitions(turns) if turns else "(no actions yet)"
    return f"{EXECUTOR_SYSTEM}\n\n{base}\n\nYour actions in this subtask:\n{done}"


def executor_report_messages(base: str, turns: Sequence[Transition]) -> list[Message]:
    done = render_transitions(turns) if turns else "(no actions taken)"
    user = f"{base}\n\nYour actions in this subtask:\n{done}\n\n{EXECUTOR_REPORT_ASK}"
    return [Message("system", EXECUTOR_SYSTEM), Message("user", user)]


def auditor_context(
    base: str, executor_report: str, latest: str, queries: Sequence[Transition]
) -> str:
    seen = render_transitions(queries) if queries else "(no queries yet)"
    return (
        f"{AUDITOR_SYSTEM}\n\n{base}\n\nExecutor's report (a claim):\n{executor_report}\n\n"
        f"Latest environment output:\n{latest.strip()}\n\nYour queries:\n{seen}\n\n{AUDITOR_QUERY_NOTE}"
    )


def auditor_report_messages(
    base: str, executor_report: str, latest: str, queries: Sequence[Transition]
) -> list[Message]:
    seen = render_transitions(queries) if queries else "(no queries made)"
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

"""One ClinDiag case as an environment: question tools answered by the provider, a submission
graded by the judge, 30 tool calls in all (the submission included)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.envs._episode import BackendResult
from pos_agent.envs._types import EnvError
from pos_agent.envs.clindiag.data import ENV_NAME, ClinDiagData, case_category, check_split
from pos_agent.envs.clindiag.judge import model_judgement
from pos_agent.envs.clindiag.matcher import match_diagnosis
from pos_agent.envs.clindiag.provider import provider_answer
from pos_agent.envs.clindiag.retrieval import retrieval_answer
from pos_agent.envs.clindiag.tools import (
    CLINDIAG_TOOLS,
    FALLBACK_CALL,
    SECTION_QUERIES,
    SUBMIT_TOOL,
)
from pos_agent.envs.tools import (
    ToolCall,
    ToolEnvironment,
    ToolSpec,
)
from pos_agent.llm import Model

# Paper setting: 30 tool calls per case, the submission included.
DEFAULT_MAX_STEPS = 30
# The offline options, used when the harness passes no model for the role.
OFFLINE_PROVIDER = "retrieval"
OFFLINE_JUDGE = "matcher"
# The model roles the environment takes from the harness, each with its offline option.
MODEL_ROLES = {"provider": OFFLINE_PROVIDER, "judge": OFFLINE_JUDGE}


@dataclass
class Submission:
    """What the doctor submitted."""

    final_diagnosis: str
    differential_diagnosis: list[str] = field(default_factory=list)
    diagnostic_reasoning: str = ""


def _role_model(value: str | Model, role: str) -> Model | None:
    """The model for a role, or None for the role's offline option."""
    offline = MODEL_ROLES[role]
    if isinstance(value, str):
        if value.strip() in ("", offline):
            return None
        raise EnvError(
            f"ClinDiag does not load models: {role}={value!r} is neither {offline!r} nor a "
            f"Model. Give the model to the harness (`pos run/bench --env-model {value}`, or "
            f"`env_model: {value}` in a suite), or pass a loaded Model "
            f"(`{role}=load_model({value!r})`)."
        )
    return value


class ClinDiagEnvironment(ToolEnvironment):
    """One ClinDiag case behind the diagnosis interface.

    `provider` and `judge` are `Model` objects given by the harness (the paper's fixed LLM,
    the same for every method and backbone), or the offline options "retrieval" and
    "matcher".
    """

    name: str = ENV_NAME

    def __init__(
        self,
        case_id: str,
        *,
        split: str | None = None,
        max_steps: int | None = None,
        data_dir: str | Path | None = None,
        provider: str | Model = OFFLINE_PROVIDER,
        judge: str | Model = OFFLINE_JUDGE,
    ) -> None:
        chosen = check_split(split)
        self._provider = _role_model(provider, "provider")
        self._judge = _role_model(judge, "judge")
        data = ClinDiagData.locate(data_dir)
        case = data.load(case_id.strip())
        in_split = {
            "common": case.in_paper_common_sample,
            "rare": case.in_rare_subset,
            "paper": case.in_paper_common_sample or case.in_rare_subset,
        }.get(chosen, True)
        if not in_split:
            raise EnvError(
                f"ClinDiag case {case_id!r} is not in the {chosen} split; use split `all`."
            )
        category = case_category(case.in_paper_common_sample, case.in_rare_subset)
        super().__init__(
            task_id=case.case_id,
            max_steps=max_steps or DEFAULT_MAX_STEPS,
            category=category,
            split=chosen,
        )
        self.case = case
        self.data_root = data.root
        self.provider_name = OFFLINE_PROVIDER if self._provider is None else self._provider.spec
        self.judge_name = OFFLINE_JUDGE if self._judge is None else f"llm:{self._judge.spec}"

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return list(CLINDIAG_TOOLS)

    @property
    def fallback_call(self) -> ToolCall:
        return FALLBACK_CALL

    # -- BudgetedEnvironment ---------------------------------------------------------------

    def _backend_reset(self) -> BackendResult:
        self.goal = (
            "Diagnose the patient: gather the history, examination and test results you need, "
            "then submit the final diagnosis with submit_diagnosis."
        )
        text = (
            f"Clinical case {self.case.case_id}.\n"
            f"Patient presentation: {self.case.initial_information}\n\n"
            "You are the doctor. Each tool call asks one question or orders one test; you have "
            f"{self.max_steps} tool calls in all, the submission included.\n"
        ) + self.tool_instructions(
            '{"tool": "order_lab_test", "args": {"test": "complete blood count"}}'
        )
        return BackendResult(text=text, admissible_actions=None, extra=self._base_info())

    def _backend_step(self, action: str) -> BackendResult:
        calls = self.parse_turn(action)
        if isinstance(calls, BackendResult):
            return calls
        (call,) = calls
        if call.tool == SUBMIT_TOOL:
            return self._submit(call)
        text, extra = self._answer(call)
        left = self.max_steps - self.steps_used
        result = BackendResult(
            text=f"{text}\n[{left} tool call(s) left]",
            admissible_actions=None,
            extra={**self._base_info(), **extra, "tool": call.tool},
        )
        return self._pending(result)

    def _backend_restart(self) -> None:
        """Nothing runs in the background: a restart has nothing to replace."""

    def _backend_close(self) -> None:
        """Nothing to stop."""

    # -- tools -----------------------------------------------------------------------------

    def _answer(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        question = str(next(iter(call.args.values())))
        if self._provider is None:
            return retrieval_answer(self.case, call.tool, question), {"provider": OFFLINE_PROVIDER}
        asked = provider_answer(self._provider, self.case, SECTION_QUERIES[call.tool], question)
        if asked.answer is not None:
            return asked.answer.answer.strip(), {"provider": self.provider_name}
        # Every attempt was malformed: this one answer comes from the record by retrieval, and
        # the observation says so.
        return retrieval_answer(self.case, call.tool, question), {
            "provider": OFFLINE_PROVIDER,
            "provider_fallback": f"{self.provider_name} gave no usable answer in "
            f"{len(asked.failures)} attempt(s) ({asked.failures[-1]}); answered by retrieval",
        }

    def _submit(self, call: ToolCall) -> BackendResult:
        submission = Submission(
            final_diagnosis=str(call.args["final_diagnosis"]),
            differential_diagnosis=list(call.args.get("differential_diagnosis", [])),
            diagnostic_reasoning=str(call.args.get("diagnostic_reasoning", "")),
        )
        correct, details = self._judge_submission(submission)
        verdict = "correct" if correct else "incorrect"
        if "judge_failed" in details:
            verdict = "not judged: the judge gave no usable verdict; the case is not scored"
        return BackendResult(
            text=f"Diagnosis submitted: {submission.final_diagnosis}. The case is closed "
            f"(judged {verdict}).",
            admissible_actions=None,
            done=True,
            success=correct,
            score=1.0 if correct else 0.0,
            extra={
                **self._base_info(),
                **details,
                "metrics": {"accuracy": int(correct)},
                "judge": self.judge_name,
                "submission": {
                    "final_diagnosis": submission.final_diagnosis,
                    "differential_diagnosis": submission.differential_diagnosis,
                    "diagnostic_reasoning": submission.diagnostic_reasoning,
                },
                "reference_diagnosis": self.case.diagnosis.final_diagnosis,
            },
        )

    def _judge_submission(self, submission: Submission) -> tuple[bool, dict[str, Any]]:
        reference = self.case.diagnosis.final_diagnosis
        if self._judge is None:
            match = match_diagnosis(reference, submission.final_diagnosis)
            return match.correct, {"judge_reason": match.reason}
        judged = model_judgement(self._judge, reference, submission.final_diagnosis)
        if judged.answer is None:
            # A failed judgement is no verdict: the harness leaves the case unscored (never a
            # failure). It is never replaced by the matcher, so every case of a run is graded
            # by the same judge.
            return False, {
                "judge_failed": f"no usable verdict in {len(judged.failures)} attempt(s): "
                + " | ".join(judged.failures),
            }
        return judged.answer.correct, {"judge_reason": judged.answer.reason}

    # -- info ------------------------------------------------------------------------------

    def _base_info(self) -> dict[str, Any]:
        return {"subset": self.category, "calls_left": self.max_steps - self.steps_used}

    def _pending(self, result: BackendResult) -> BackendResult:
        """A non-terminal result; on the last unit of budget it carries the failure metrics."""
        if not result.done and self.steps_used >= self.max_steps:
            result.extra.update(
                {"metrics": {"accuracy": 0}, "judge": "none", "subset": self.category}
            )
        return result

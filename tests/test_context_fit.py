"""One cut-to-fit rule for every history-based method (issue 22, item 3): with
`--context-window` Raw, ACON, PACE and HiAgent all leave out their oldest history units until
the policy prompt fits, traced and counted; without it nothing is cut and a prompt that does
not fit is the scored `context_overflow` failure; the option is part of the settings hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from extras import needs_alfworld
from pos_agent.agents.context.acon import AconContext
from pos_agent.agents.context.hiagent import HiAgentContext, Subgoal
from pos_agent.agents.fit import estimated_tokens, fit_to_window
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.events import ContextCutEvent
from pos_agent.llm import Message, ScriptedModel
from pos_agent.llm._scripted import ScriptedItem, default_responder
from pos_agent.llm.backend import BackendError, GenerationRequest
from pos_agent.trace import read_events, read_result
from pos_agent.transition import Transition

CUT_METHODS = ("raw", "acon", "pace", "hiagent")
# The policy prompts of these 40-step scripted episodes grow from about 600-830 to 1,330-1,590
# estimated tokens, so with the 512-token answer this window fits the first steps only.
WINDOW = 1700


class WindowedServer:
    """A scripted server with a `window`-token context: a policy prompt whose estimate plus its
    answer budget does not fit is refused as a real server refuses it."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.policy_prompts: list[int] = []

    def __call__(self, request: GenerationRequest) -> ScriptedItem:
        if request.role == "policy":
            size = estimated_tokens(request.messages)
            self.policy_prompts.append(size + request.max_tokens)
            if size + request.max_tokens > self.window:
                raise BackendError(
                    "context_overflow",
                    f"the prompt does not fit the {self.window}-token context",
                    retryable=False,
                )
        return default_responder(request)


def run(agent: str, folder: Path, context_window: int | None) -> tuple[WindowedServer, Path]:
    server = WindowedServer(WINDOW)
    model = ScriptedModel(server)
    spec = CaseSpec(
        env="alfworld-mini",
        task="heat-mug",
        agent=agent,
        model="scripted",
        max_steps=40,
        context_window=context_window,
    )
    case = folder / spec.folder
    run_case(spec, case, run_name="r", load=lambda _s, _r: model)
    return server, case


@needs_alfworld
@pytest.mark.parametrize("agent", CUT_METHODS)
def test_every_history_method_is_cut_to_fit_only_when_asked(tmp_path: Path, agent: str) -> None:
    server, case = run(agent, tmp_path / "cut", WINDOW)
    result = read_result(case)
    assert result is not None
    assert result.failure_reason != "context_overflow", f"{agent}: {result.error}"
    assert result.steps == 40, "the whole budget was played"
    assert max(server.policy_prompts) <= WINDOW, "every policy prompt fits with its answer"
    cuts = [e for e in read_events(case) if isinstance(e, ContextCutEvent)]
    assert cuts and result.context_cuts == len(cuts)
    assert all(c.context_window == WINDOW and c.dropped > 0 for c in cuts)
    assert result.settings["context_window"] == WINDOW

    uncut_server, uncut = run(agent, tmp_path / "uncut", None)
    plain = read_result(uncut)
    assert plain is not None
    assert plain.status == "failure" and plain.failure_reason == "context_overflow"
    assert plain.context_cuts == 0
    assert not [e for e in read_events(uncut) if isinstance(e, ContextCutEvent)]
    assert max(uncut_server.policy_prompts) > WINDOW
    assert plain.settings_hash != result.settings_hash, "the cut is part of the settings hash"


def test_the_cut_keeps_the_task_and_the_newest_units() -> None:
    def build(dropped: int) -> list[Message]:
        kept = [f"turn {n} " + "x" * 300 for n in range(dropped, 20)]
        return [Message("system", "SYSTEM"), Message("user", "TASK\n" + "\n".join(kept))]

    fitted = fit_to_window(build, 20, 1000, 512)
    text = fitted.messages[1].content
    assert estimated_tokens(fitted.messages) <= 1000 - 512
    assert estimated_tokens(build(fitted.dropped - 1)) > 1000 - 512, "no more than needed"
    assert text.startswith("TASK") and "turn 19 " in text and "turn 0 " not in text
    assert fit_to_window(build, 20, None, 512).dropped == 0, "no window: never cut"


def test_each_memory_leaves_out_its_oldest_units_first() -> None:
    turns = tuple(Transition(n, f"act {n}", f"saw {n}") for n in (1, 2, 3))
    acon = AconContext("SUMMARY", turns, None)
    assert acon.units() == 4
    assert "SUMMARY" not in acon.render(1) and "act 1" in acon.render(1)
    assert "act 1" not in acon.render(2) and "act 3" in acon.render(3)
    done = Subgoal(1, "find the mug", 0, list(turns[:1]), summary="found it")
    active = Subgoal(2, "heat the mug", 2, list(turns[1:]))
    hiagent = HiAgentContext(turns[:1], (done,), frozenset(), active)
    assert hiagent.units() == 1 + 1 + 2
    assert "Before the first subgoal" not in hiagent.render(1)
    assert "found it" not in hiagent.render(2) and "act 2" in hiagent.render(2)
    assert "act 2" not in hiagent.render(3) and "heat the mug" in hiagent.render(4)

"""ACON, PACE and HiAgent in the shared ReAct policy harness (paper Table 7, App. D.2).

Same harness, budgets, action validation, repair and fallback as the raw baseline
(`RoleCaller.settle_action`); what differs is what the policy is conditioned on: the method's
memory of the earlier steps instead of the whole trajectory. Each step:

    memory.begin(t)        the method builds its context (compressions, chunk summaries: its
                           own LLM calls, accounted under their roles and traced)
    policy(t)              the prompt: goal, step 0, the memory, the actions; PACE may answer
                           glimpse(i) and HiAgent retrieve(i) instead of an action, shown and
                           asked again within the step (capped, no environment action)
    memory.decided(...)    HiAgent: the answer's subgoal; a new one folds the previous
    env.step(a_t)          the one action of the step, settled as for every method
    memory.add(turn)

Internal calls that fail degrade the step (the method keeps what it had); an unreachable
backbone ends the case as an infrastructure error, as for the policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Unpack

from pydantic import BaseModel

from pos_agent.agents import prompts
from pos_agent.agents.backbone import BackboneAgent, BackboneOptions
from pos_agent.agents.base import (
    Episode,
    finish,
    observation_event,
)
from pos_agent.agents.context.accounting import InternalCalls
from pos_agent.agents.context.acon import AconMemory
from pos_agent.agents.context.adapters import (
    AconAdapter,
    ContextMethod,
    HiAgentAdapter,
    Offer,
    PaceAdapter,
)
from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.embeddings import LEXICAL_SPEC, make_scorer
from pos_agent.agents.context.hiagent import SubgoalMemory
from pos_agent.agents.context.lookups import Lookup, decide_with_lookups, split_lookups
from pos_agent.agents.context.pace import PaceMemory
from pos_agent.agents.context.settings import BaselineSettings
from pos_agent.envs import Environment, Observation
from pos_agent.events import LookupEvent
from pos_agent.llm import Message, Model, ModelOptions
from pos_agent.roles.limits import RoleLimits
from pos_agent.roles.schemas import PolicyAnswer, action_text, decision_schema, with_subgoal
from pos_agent.transition import Transition


def _acon(agent: ContextAgent, env: Environment, caller: ModelCaller) -> ContextMethod:
    return AconAdapter(AconMemory(env.goal, agent.settings.acon, caller))


def _pace(agent: ContextAgent, env: Environment, caller: ModelCaller) -> ContextMethod:
    scorer = make_scorer(agent.embed_model, caller, agent.embed_options)
    memory = PaceMemory(env.goal, agent.settings.pace, caller, scorer, step_budget=env.max_steps)
    return PaceAdapter(memory)


def _hiagent(agent: ContextAgent, env: Environment, caller: ModelCaller) -> ContextMethod:
    return HiAgentAdapter(SubgoalMemory(env.goal, agent.settings.hiagent, caller))


# The context methods that run on this ReAct harness, each with the memory it builds.
_MEMORIES: dict[str, Callable[[ContextAgent, Environment, ModelCaller], ContextMethod]] = {
    "acon": _acon,
    "pace": _pace,
    "hiagent": _hiagent,
}
REACT_METHODS: tuple[str, ...] = tuple(_MEMORIES)
EMBEDDING_METHODS: frozenset[str] = frozenset({"pace"})
"""The methods that score relevance with `--embed-model`."""


@dataclass(frozen=True)
class _Ask:
    """What one policy call of a step needs."""

    goal: str
    first: str
    observation: Observation
    step: int
    limits: RoleLimits
    episode: Episode


class ContextAgent(BackboneAgent):
    """ReAct over one context method's memory: `acon`, `pace` or `hiagent`."""

    def __init__(
        self,
        method: str,
        model: Model,
        settings: BaselineSettings,
        *,
        embed_model: str = LEXICAL_SPEC,
        embed_options: ModelOptions | None = None,
        **options: Unpack[BackboneOptions],
    ) -> None:
        if method not in REACT_METHODS:
            raise ValueError(f"unknown context method {method!r}; use {', '.join(REACT_METHODS)}")
        super().__init__(model, **options)
        self.name = method
        self.settings = settings
        self.embed_model = embed_model
        self.embed_options = embed_options

    def make_method(self, env: Environment, caller: ModelCaller) -> ContextMethod:
        """This episode's memory (PACE's scorer checked here: a bad spec fails the case now)."""
        return _MEMORIES[self.name](self, env, caller)

    def run(self, env: Environment) -> Episode:
        limits = self.policy_limits(env)
        caller = ModelCaller(self.model, temperature=self.temperature, cap=self.internal_cap(env))
        internal = InternalCalls(caller, self.call)
        episode = Episode()
        lookups_made = 0
        method: ContextMethod | None = None
        observation = env.reset()
        self.call.emit(observation_event(0, observation))
        first = observation.text
        recent: list[str] = []
        try:
            method = self.make_method(env, caller)
            for t in range(env.max_steps):
                ask = _Ask(env.goal, first, observation, t, limits, episode)
                try:
                    for event in method.begin(t):
                        self.call.emit(event)
                finally:
                    failed = internal.settle(t)
                answer, lookups = self._decide(method, ask)
                lookups_made += len(lookups)
                try:
                    for event in method.decided(answer, t):
                        self.call.emit(event)
                finally:
                    failed += internal.settle(t)
                decision = self.call.settle_action(
                    _as_action(answer), observation, observation.admissible_actions, recent, t
                )
                degraded = decision.degraded or failed > 0
                episode.degraded_steps += degraded
                observation = env.step(decision.action)
                self.record_step(episode, t + 1, decision.action, observation, degraded=degraded)
                method.add(Transition(t + 1, decision.action, observation.text))
                recent = [*recent[-1:], decision.action]
                if observation.done:
                    break
        finally:
            internal.settle(episode.steps)
            finish(episode, observation)
            episode.extra.update(
                environment_actions=episode.steps,
                internal_calls=dict(internal.by_role),
                lookups=lookups_made,
            )
            if method is not None:
                record = method.record()
                if "scorer" in record:
                    episode.extra["pace_scorer"] = record["scorer"]
                episode.extra["context"] = {"method": self.name, **record}
        return episode

    # -- one decision -------------------------------------------------------------------------

    def _decide(self, method: ContextMethod, ask: _Ask) -> tuple[BaseModel | None, list[Lookup]]:
        """The step's answer, after the lookups the policy made (each traced)."""
        answers: list[BaseModel | None] = []

        def policy(done: Sequence[Lookup]) -> str | None:
            answers.append(self._policy(method, ask, done))
            return action_text(answers[-1])

        def resolve(text: str) -> Lookup | None:
            request, real = split_lookups(text)
            if request is None or real is not None:
                return None
            lookup = method.lookup(request)
            if lookup is not None:
                self.call.emit(
                    LookupEvent(
                        step=ask.step,
                        method=self.name,
                        request=lookup.request,
                        ok=lookup.ok,
                        note=lookup.note,
                    )
                )
            return lookup

        action, lookups = decide_with_lookups(policy, resolve, method.max_lookups)
        return (answers[-1] if action is not None else None), lookups

    def _policy(
        self, method: ContextMethod, ask: _Ask, lookups: Sequence[Lookup]
    ) -> BaseModel | None:
        observation, limits = ask.observation, ask.limits
        offer = method.offer()
        admissible, tools, hint = _with_offer(observation, offer)
        schema = decision_schema(admissible, tools, limits.bounds, max_calls=observation.max_calls)
        if method.asks_subgoal:
            schema = with_subgoal(schema, limits.bounds)

        def build(dropped: int) -> list[Message]:
            return prompts.context_policy(
                ask.goal,
                ask.first,
                method.render(dropped),
                ask.step,
                observation.admissible_actions,
                tools,
                max_calls=observation.max_calls,
                method_note=method.note,
                lookup_hint=hint,
                lookups=[f"{x.request}: {x.note}" for x in lookups],
                action_limit=limits.action_list,
                dropped=dropped,
                latest=observation.text,
            )

        messages = self.fitted_prompt(
            build,
            method.units(),
            step=ask.step,
            max_tokens=limits.max_tokens,
            schema=schema,
            episode=ask.episode,
        )
        return self.call(
            "policy",
            self.model,
            messages,
            schema,
            step=ask.step,
            max_tokens=limits.max_tokens,
            temperature=self.temperature,
            purpose="act",
        )


def _with_offer(
    observation: Observation, offer: Offer | None
) -> tuple[list[str] | None, list[dict[str, object]] | None, str]:
    """The admissible list and tools the schema offers with the lookups, and the prompt's hint.

    Tool environments get a pseudo-tool (listed with the tools, the same all episode so the
    schema is built once); admissible lists get `glimpse(i)` entries (the prompt lists the real
    actions); free-text environments only get the prompt's line, which always names the numbers
    that may be looked up now."""
    admissible = observation.admissible_actions
    tools = observation.tools
    if offer is None:
        return admissible, tools, ""
    if tools:
        return admissible, [*tools, offer.tool()], offer.hint(as_tool=True)
    if admissible:
        return [*admissible, *offer.entries()], tools, offer.hint()
    return admissible, tools, offer.hint()


def _as_action(answer: BaseModel | None) -> BaseModel | None:
    """The answer as the harness settles it: lookups mixed into a tool answer are left out."""
    if answer is None:
        return None
    text = action_text(answer)
    _, real = split_lookups(text)
    if real is None or real == text:
        return answer if real is not None else None
    return PolicyAnswer(thought=str(getattr(answer, "thought", "")), action=real)

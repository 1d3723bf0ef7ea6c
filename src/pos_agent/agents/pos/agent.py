"""The PoS agent: every decision is conditioned on a validated belief, not on a transcript.

One episode (Algorithm 1 of the paper):

    B0 <- initialize(goal, o0)                                   belief model
    for t in 0..T-1:
        a_t   <- policy(B_t, active gap Δ_t, recovery constraint)  policy model
        o_t+1 <- env.step(a_t)
        B~    <- apply_patch(B_t, update(B_t, a_t, o_t+1))       belief model
        B_t+1 <- sentinel(B_t, B~): rules, LLM audit, one revision, else keep B_t
        u_t+1 <- progress on Δ_t (sentinel judgment, or Eq. 4 for diagnosis; success = 1)
        keep Δ_t until it is resolved; then the belief model's choice, else the earliest open gap
        from the K-th validated transition: health H; trapped -> diagnose, compose C; else release C

The variants share this loop; what each one uses is a fact of `VARIANT_PARTS` (config.py): without
consistency (`no_consistency`) the audit and revision are skipped (on execution tasks progress
is still judged, by the same question; on diagnosis tasks Eq. 4 needs no call), without trapping (`no_trapping`) health and recovery, and with
`generic_recovery` one generic line replaces the factorized constraint.

`run()` is a short loop over `step()`; everything one episode knows is its `EpisodeState`
(state.py), created by `start()` at the beginning of the episode. The belief's update and
validation are `BeliefSteps` (belief_steps.py), the active gap, health and recovery
`TrappingSteps` (trapping.py).
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from pos_agent.agents.base import (
    Decision,
    Episode,
    RoleCaller,
    StepCallback,
    StepInfo,
    finish,
    observation_event,
)
from pos_agent.agents.pos import prompts
from pos_agent.agents.pos.belief_steps import BeliefSteps, patch_ops, render_for
from pos_agent.agents.pos.config import VARIANT_PARTS, PosConfig, RoleModels
from pos_agent.agents.pos.state import EpisodeState, StepStart, Validated
from pos_agent.agents.pos.trapping import TrappingSteps
from pos_agent.belief import Belief, apply_patch_detailed, world_keys
from pos_agent.envs import Environment, Observation
from pos_agent.events import BeliefCommitEvent, BeliefRejectEvent, RevisionEvent
from pos_agent.health import WorldKeys
from pos_agent.llm import TokenLedger
from pos_agent.recovery.constraint import allowed_actions
from pos_agent.roles.limits import AgentLimits, paper_generation_tokens
from pos_agent.roles.schemas import decision_schema
from pos_agent.sentinel import check_rules
from pos_agent.sentinel.audit import Sentinel, Transcript, issue_text
from pos_agent.trace import TraceWriter
from pos_agent.transition import Transition


class PosAgent(BeliefSteps, TrappingSteps):
    """The belief-state agent with sentinel validation and trapping recovery."""

    def __init__(
        self,
        models: RoleModels,
        config: PosConfig | None = None,
        *,
        ledger: TokenLedger | None = None,
        trace: TraceWriter | None = None,
        on_step: StepCallback | None = None,
    ) -> None:
        self.models = models
        self.config = config or PosConfig()
        self.parts = VARIANT_PARTS[self.config.variant]
        self.name: str = self.config.variant
        self.ledger = ledger or TokenLedger()
        self.call = RoleCaller(self.ledger, trace)
        self.on_step = on_step

    # -- the episode ----------------------------------------------------------------------------

    def run(self, env: Environment) -> Episode:
        state = self.start(env)
        try:
            while not state.over:
                info = self.step(env, state)
                if self.on_step is not None:
                    info.tokens = self.call.tokens()
                    self.on_step(info)
        finally:
            finish(state.episode, state.observation)
            state.episode.final_belief = state.belief.to_dict()
        return state.episode

    def episode_state(self, env: Environment, observation: Observation) -> EpisodeState:
        """A fresh state for an episode of `env` whose first observation is `observation`
        (the belief not yet initialized)."""
        cfg = self.config
        health = replace(cfg.health, task=env.kind)
        limits = cfg.limits or AgentLimits.for_models(
            self.models.specs(), generation_tokens=paper_generation_tokens(env.kind, env.name)
        )
        transcript = Transcript()
        sentinel = Sentinel(self.call, self.models.sentinel, limits.sentinel, transcript, cfg.clips)
        return EpisodeState(
            goal=env.goal,
            max_steps=env.max_steps,
            health=health,
            limits=limits,
            transcript=transcript,
            sentinel=sentinel,
            observation=observation,
            belief=Belief(goal=env.goal, step=0),
            window=deque(maxlen=health.window),
            transitions=deque(maxlen=health.window),
        )

    def start(self, env: Environment) -> EpisodeState:
        """Reset the environment and initialize the belief: B0 <- initialize(goal, o0)."""
        state = self.episode_state(env, env.reset())
        self._observe(state, 0, state.observation)
        state.belief = self.initialize(state)
        return state

    def step(self, env: Environment, state: EpisodeState) -> StepInfo:
        """One transition of the loop: act, update and validate the belief, keep the active gap,
        then health and recovery (and every N steps the global audit)."""
        cfg, t = self.config, state.t
        turn = StepStart(t, state.belief, self._keys(state), state.belief.active_gap)
        decision = self.decide(state, turn)
        observation = env.step(decision.action)
        state.observation = observation
        state.t = state.episode.steps = t + 1
        transition = self._observe(state, t + 1, observation, decision.action)

        update = self.update(state, turn, transition)
        degraded = decision.degraded or update.degraded
        state.episode.degraded_steps += degraded
        state.belief = update.belief
        if observation.done:
            state.done = True
            return StepInfo(t + 1, decision.action, observation.success, degraded=degraded)
        state.belief = self.keep_active_gap(
            turn.gap, state.belief, state.constraint, prefer=state.preferred_gap
        )
        state.transitions.append(
            replace(transition, progress=update.progress, state_before=turn.world)
        )
        state.window.append(Validated(state.belief, world_keys(state.belief), update.progress))

        report = None
        if self.parts.uses_trapping and len(state.window) >= state.health.window:
            report = self.assess(state.window, state.belief, state.health)
            state.constraint = self.recover(state, report)
        if cfg.global_audit_every and (t + 1) % cfg.global_audit_every == 0:
            state.belief = self.global_audit(state, t + 1)
        return StepInfo(
            t + 1,
            decision.action,
            observation.success,
            health=report.health if report else None,
            trapped=bool(report and report.trapped),
            pattern=report.pattern if report else None,
            recovery=state.constraint is not None,
            degraded=degraded,
        )

    # -- the global audit ----------------------------------------------------------------------

    def global_audit(self, state: EpisodeState, step: int) -> Belief:
        """Every N steps: the whole belief against a compact trajectory; fix what is supported."""
        belief = state.belief
        if not self.parts.uses_consistency:
            return belief
        issues = state.sentinel.global_audit(
            belief, render_for(belief, state.limits.sentinel), step
        )
        if not issues:
            return belief
        fix = self._belief_patch(
            state,
            prompts.global_revision(
                render_for(belief, state.limits.belief),
                [issue_text(i) for i in issues],
                diagnostic=state.diagnostic,
                note=state.limits.belief.patch_note,
            ),
            step=step,
            purpose="global_revision",
        )
        ops = patch_ops(fix)
        outcome = apply_patch_detailed(belief, ops)
        self._trace_patch(RevisionEvent, step, ops, outcome, scope="global")
        observations = state.transcript.observations
        if check_rules(outcome.belief, observations, patch=ops, changed=outcome.changed):
            self.call.emit(BeliefRejectEvent(step=step, scope="global"))
            return belief
        self.call.emit(BeliefCommitEvent(step=step, scope="global"))
        return self.keep_active_gap(
            belief.active_gap, outcome.belief, state.constraint, prefer=state.preferred_gap
        )

    # -- decision ------------------------------------------------------------------------------

    def decide(self, state: EpisodeState, turn: StepStart) -> Decision:
        """The next action, settled (validated, repaired or fallen back) and traced."""
        observation, constraint, steps = state.observation, state.constraint, state.transcript.steps
        admissible = observation.admissible_actions
        mode = self.config.recovery
        if admissible is not None and constraint is not None and mode in ("hard", "both"):
            admissible = allowed_actions(admissible, constraint)
        shown = constraint.render() if constraint and mode in ("soft", "both") else None
        last_action = steps[-1].action if steps else ""
        limits = state.limits.policy
        answer = self.call(
            "policy",
            self.models.policy,
            prompts.policy(
                state.goal,
                render_for(turn.belief, limits),
                Transition(turn.t, last_action, observation.text),
                admissible,
                shown,
                observation.tools,
                max_calls=observation.max_calls,
                observation_chars=self.config.policy_observation_chars,
                action_limit=limits.action_list,
            ),
            decision_schema(
                admissible, observation.tools, limits.bounds, max_calls=observation.max_calls
            ),
            step=turn.t,
            max_tokens=limits.max_tokens,
            temperature=self.config.temperature,
            purpose="act",
        )
        recent = [s.action for s in steps[-2:]]
        return self.call.settle_action(answer, observation, admissible, recent, turn.t)

    # -- helpers -------------------------------------------------------------------------------

    def _observe(
        self, state: EpisodeState, t: int, observation: Observation, action: str | None = None
    ) -> Transition:
        """Record observation t (and the step that led to it) and trace it."""
        state.transcript.observations[t] = observation.text
        self.call.emit(observation_event(t, observation))
        step = Transition(t, action or "", observation.text)
        if action is not None:
            state.transcript.steps.append(step)
        return step

    def _keys(self, state: EpisodeState) -> WorldKeys:
        # The keys of the last window entry are this belief's, unless a global audit changed it
        # since; computing them is the costly part on large beliefs.
        latest = state.window[-1] if state.window else None
        belief = state.belief
        return latest.world if latest and latest.belief is belief else world_keys(belief)

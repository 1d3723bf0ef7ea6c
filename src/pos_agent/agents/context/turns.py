"""One turn of a trajectory, as context methods keep and render it: the harness's one transition
record (`roles.Transition`) under the name these modules use. Observations are kept whole: a
method decides what to cut, not the record."""

from __future__ import annotations

from pos_agent.roles.transition import Transition as Turn
from pos_agent.roles.transition import render_transitions as render_turns

__all__ = ["Turn", "render_turns"]

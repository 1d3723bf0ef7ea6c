"""The transition record, re-exported: it lives in the core (`pos_agent.transition`), so that the
monitor and the recovery logic import it without the role-call machinery."""

from pos_agent.transition import Transition, render_transitions

__all__ = ["Transition", "render_transitions"]

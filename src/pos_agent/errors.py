"""Errors every layer may raise or catch (environments, role calls, the harness)."""


class InfrastructureError(Exception):
    """The backend itself failed (e.g. its Java process died); the episode must not be scored.

    The adapter has already restarted the backend when this is raised: call `reset()` to run
    the case again.
    """

"""Starting and stopping the Java backends (ScienceWorld, TextWorldExpress) through py4j."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pos_agent.envs._episode import BudgetedEnvironment
from pos_agent.envs._types import EnvError

# Seconds to wait for the JVM to exit by itself after the gateway is shut down.
_EXIT_GRACE = 5.0


def require_java(env_name: str) -> None:
    """Fail early, with the fix, when no `java` is on PATH."""
    if shutil.which("java") is None:
        raise EnvError(
            f"{env_name} runs on Java, but no `java` executable was found on PATH. "
            "Install a Java runtime (Debian/Ubuntu: `apt-get install default-jre-headless`) "
            "and try again."
        )


def crash_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the JVM or the py4j link broke."""
    from py4j.protocol import Py4JError

    return (Py4JError, OSError)


def java_process(backend: Any) -> subprocess.Popen[bytes] | None:
    """The JVM process a ScienceWorld/TextWorldExpress backend launched, if any."""
    gateway = getattr(backend, "_gateway", None)
    process = getattr(gateway, "java_process", None)
    return process if isinstance(process, subprocess.Popen) else None


def stop_backend(backend: Any) -> None:
    """Shut a backend's gateway down and make sure the JVM it started has exited."""
    process = java_process(backend)
    # The gateway may already be gone (crashed JVM); the process itself is handled below.
    with contextlib.suppress(Exception):
        backend.close()
    # After a crash py4j still believes it is connected, so every JavaObject finalizer would
    # try to reach the dead JVM and log a traceback from whatever code the garbage collector
    # interrupts (on Python 3.11 that can even break an `ast.parse` running at that moment).
    client = getattr(getattr(backend, "_gateway", None), "_gateway_client", None)
    if client is not None:
        client.is_connected = False
    if process is None:
        return
    try:
        process.wait(timeout=_EXIT_GRACE)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(timeout=_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=_EXIT_GRACE)
    # The package's own __del__ calls close() again; make that a no-op once we are done.
    backend.close = _already_closed


def _already_closed() -> None:
    return None


def seed_in_split(
    seed: int | None, offered: Iterable[Any], refusal: Callable[[list[int]], str]
) -> int:
    """`seed` when the split `offered` it, the split's first one when None; otherwise EnvError
    with `refusal(the offered ones)`."""
    choices = [int(choice) for choice in offered]
    if seed is None:
        return choices[0]
    if seed not in choices:
        raise EnvError(refusal(choices))
    return seed


class JvmEnvironment(BudgetedEnvironment):
    """What the Java-backed adapters share: a py4j backend process, a gold path walked by the
    expert, restart after a crash, and a close that stops the JVM.

    Subclasses start their backend in `_start_backend` and (re)load the task, including
    `self._gold`, in `_load`.
    """

    _backend: Any = None
    _gold: list[str]
    _gold_position: int = 0
    _on_gold_path: bool = True

    def _start_backend(self) -> Any:
        raise NotImplementedError

    @contextlib.contextmanager
    def _starting(self) -> Iterator[None]:
        """Start the backend with no gold path walked yet; when the block (choosing and loading
        the task) fails, the JVM is stopped again before the error goes on."""
        self._gold = []
        self._gold_position = 0
        self._on_gold_path = True
        self._backend = self._start_backend()
        try:
            yield
        except BaseException:
            stop_backend(self._backend)
            raise

    def _load(self) -> None:
        raise NotImplementedError

    @property
    def backend_pid(self) -> int | None:
        """Process id of the JVM this environment started (None once closed)."""
        process = java_process(self._backend) if self._backend is not None else None
        return process.pid if process is not None else None

    @property
    def gold_path(self) -> list[str]:
        """The simulator's gold action sequence for the current task."""
        return list(self._gold)

    def _crash_errors(self) -> tuple[type[BaseException], ...]:
        return crash_errors()

    def _expert_action(self) -> str | None:
        if self._on_gold_path and self._gold_position < len(self._gold):
            return self._gold[self._gold_position]
        return None

    def _backend_restart(self) -> None:
        stop_backend(self._backend)
        self._backend = self._start_backend()
        self._load()

    def _backend_close(self) -> None:
        if self._backend is not None:
            stop_backend(self._backend)
            self._backend = None

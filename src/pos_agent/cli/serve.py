"""`pos serve`: the OpenAI-compatible proxy that puts the trap monitor in front of any agent."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from pos_agent.cli.app import app
from pos_agent.cli.serve_config import ConfigOption, ExemptOption, PollingOption, polling_table

if TYPE_CHECKING:
    from pos_agent.serve import ServeConfig

LOOPBACK = ("127.0.0.1", "localhost", "::1")

UpstreamOption = Annotated[
    str,
    typer.Option(
        help="The OpenAI-compatible base URL to forward to, e.g. http://127.0.0.1:8080/v1."
    ),
]
HostOption = Annotated[str, typer.Option(help="Address to bind (loopback by default).")]
PortOption = Annotated[int, typer.Option(help="Port to listen on (0: any free port).", min=0)]
HealthOption = Annotated[str, typer.Option(help="Trap diagnosis: improved or paper (Eq. 5-6).")]
PolicyOption = Annotated[
    str,
    typer.Option(
        help="observe (headers only), nudge (add the monitor's note), block (also refuse forbidden repeated calls)."
    ),
]
BeliefModelOption = Annotated[
    str | None,
    typer.Option(
        help="Keep a PoS belief per session with this model spec (local, scripted, openai:MODEL, ...)."
    ),
]
ShowBeliefOption = Annotated[
    bool, typer.Option(help="In belief mode, show the agent its belief in a note.")
]
TraceDirOption = Annotated[
    Path | None,
    typer.Option(help="Folder for the per-session traces (default: runs/serve-<time>)."),
]
TraceOption = Annotated[bool, typer.Option(help="Write per-session traces.")]
MaxSessionsOption = Annotated[
    int, typer.Option(help="Sessions kept (least recently used go).", min=1)
]
TtlOption = Annotated[float, typer.Option(help="Seconds an idle session is kept.", min=1)]
TimeoutOption = Annotated[float, typer.Option(help="Upstream timeout per request, seconds.", min=1)]
NoteRoleOption = Annotated[str, typer.Option(help="Role of the note message: user or system.")]
LogLevelOption = Annotated[str, typer.Option(help="Log level: debug, info, warning, error.")]


@app.command()
def serve(
    upstream: UpstreamOption,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8765,
    health: HealthOption = "improved",
    policy: PolicyOption = "observe",
    belief_model: BeliefModelOption = None,
    show_belief: ShowBeliefOption = False,
    trace_dir: TraceDirOption = None,
    trace: TraceOption = True,
    max_sessions: MaxSessionsOption = 1024,
    ttl: TtlOption = 3600.0,
    timeout: TimeoutOption = 600.0,
    note_role: NoteRoleOption = "user",
    log_level: LogLevelOption = "info",
    polling_tool: PollingOption = None,
    exempt_tool: ExemptOption = None,
    config_file: ConfigOption = None,
) -> None:
    """Serve the OpenAI-compatible proxy: point your agent's base_url at it."""
    try:
        import uvicorn

        from pos_agent.serve import ServeConfig, create_app, default_trace_dir
    except ModuleNotFoundError as error:  # the `serve` extra is not installed
        from pos_agent.cli.extras import missing_extra_message

        missing = (error.name or "").partition(".")[0]
        if not missing or missing == "pos_agent":
            raise
        typer.echo(missing_extra_message(missing), err=True)
        raise typer.Exit(2) from None

    _check(upstream, health, policy, note_role)
    folder = (trace_dir or default_trace_dir()) if trace else None
    config = ServeConfig(
        upstream=upstream,
        policy=policy,  # type: ignore[arg-type]
        health=health,  # type: ignore[arg-type]
        belief_model=belief_model,
        show_belief=show_belief,
        trace_dir=folder,
        max_sessions=max_sessions,
        ttl_s=ttl,
        timeout_s=timeout,
        note_role=_note_role(note_role),
        polling_tools=polling_table(polling_tool),
        exempt_tools=tuple(exempt_tool or ()),
    )
    _announce(config, upstream, host, port, log_level)
    try:
        uvicorn.run(
            create_app(config),
            host=host,
            port=port,
            log_level=log_level.lower(),
            timeout_graceful_shutdown=30,
            # The access log names paths and statuses only; headers (and keys) are never logged.
            access_log=True,
        )
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C after its graceful shutdown
        raise typer.Exit(130) from None


def _check(upstream: str, health: str, policy: str, note_role: str) -> None:
    """Refuse an option value the proxy does not know (exit 2)."""
    if health not in ("improved", "paper"):
        raise typer.BadParameter("must be improved or paper", param_hint="--health")
    if policy not in ("observe", "nudge", "block"):
        raise typer.BadParameter("must be observe, nudge or block", param_hint="--policy")
    if note_role not in ("user", "system"):
        raise typer.BadParameter("must be user or system", param_hint="--note-role")
    if not upstream.startswith(("http://", "https://")):
        raise typer.BadParameter("must be an http:// or https:// URL", param_hint="--upstream")


def _note_role(note_role: str) -> Literal["user", "system"]:
    return "system" if note_role == "system" else "user"


def _announce(config: ServeConfig, upstream: str, host: str, port: int, log_level: str) -> None:
    """Set up logging and say where the proxy listens, where to (`upstream` as given), and
    what it does."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per upstream call otherwise
    if host not in LOOPBACK:
        typer.echo(f"warning: binding {host}: the proxy is reachable beyond this machine", err=True)
    belief = f", belief {config.belief_model}" if config.belief_model else ""
    polls = ", ".join(f"{name}={n}" for name, n in config.polling_tools.items())
    belief += f", polling {polls}" if polls else ""
    belief += f", exempt {', '.join(config.exempt_tools)}" if config.exempt_tools else ""
    typer.echo(
        f"pos serve: {host}:{port} -> {upstream} (policy {config.policy}, health "
        f"{config.health}{belief}); traces: {config.trace_dir or 'off'}",
        err=True,
    )

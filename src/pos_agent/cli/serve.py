"""`pos serve`: the proxy that puts the trap monitor in front of any agent, for OpenAI Chat
Completions, the OpenAI Responses API and the Anthropic Messages API."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from pos_agent.cli.app import app
from pos_agent.cli.serve_config import ConfigOption, ExemptOption, PollingOption, polling_table
from pos_agent.redaction import RedactingFilter, redact_text

if TYPE_CHECKING:
    from pos_agent.serve import ServeConfig

LOOPBACK = ("127.0.0.1", "localhost", "::1")

UpstreamOption = Annotated[
    str,
    typer.Option(
        help="The upstream's base URL to forward to (an OpenAI-compatible or Anthropic server), "
        "e.g. http://127.0.0.1:8080/v1."
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
TraceOutputsOption = Annotated[
    bool,
    typer.Option(
        help="Also write the tools' outputs into the traces (redacted); by default a trace "
        "names only their length."
    ),
]
MaxBodyOption = Annotated[
    float,
    typer.Option(help="Largest request body in MB; a larger one gets 413, unread.", min=0.001),
]
PosTokenOption = Annotated[
    str | None,
    typer.Option(
        envvar="POS_SERVE_TOKEN",
        show_envvar=True,
        help="The token /pos/* endpoints need (Authorization: Bearer TOKEN); default: one is "
        "made at start and printed once. Required to bind beyond loopback.",
    ),
]
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
    trace_outputs: TraceOutputsOption = False,
    max_body_mb: MaxBodyOption = 32.0,
    pos_token: PosTokenOption = None,
) -> None:
    """Serve the proxy for Chat Completions, Responses and Anthropic Messages: point your agent's base_url at it."""
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
    _check_bind(host, pos_token)
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
        trace_outputs=trace_outputs,
        max_body_bytes=max(1, int(max_body_mb * 1024 * 1024)),
        pos_token=pos_token or None,
    )
    _announce(config, upstream, host, port, log_level)
    if not pos_token:
        typer.echo(f"pos serve: /pos token (shown once): {config.pos_token}", err=True)
    try:
        uvicorn.run(
            create_app(config),
            host=host,
            port=port,
            log_level=log_level.lower(),
            timeout_graceful_shutdown=30,
            # The access log names paths and statuses only; headers (and keys) are never logged,
            # and every line goes through the redaction (a key in a query string).
            access_log=True,
            log_config=_log_config(),
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


def _check_bind(host: str, pos_token: str | None) -> None:
    """Refuse to listen beyond loopback with a token nobody chose (exit 2)."""
    if host not in LOOPBACK and not pos_token:
        typer.echo(
            f"error: binding {host} makes the proxy reachable beyond this machine, and its /pos "
            "endpoints need a token you chose: give --pos-token TOKEN (or set POS_SERVE_TOKEN), "
            "or bind 127.0.0.1.",
            err=True,
        )
        raise typer.Exit(2)


def _note_role(note_role: str) -> Literal["user", "system"]:
    return "system" if note_role == "system" else "user"


def _announce(config: ServeConfig, upstream: str, host: str, port: int, log_level: str) -> None:
    """Set up logging and say where the proxy listens, where to (`upstream` as given), and
    what it does."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per upstream call otherwise
    if host not in LOOPBACK:
        typer.echo(f"warning: binding {host}: the proxy is reachable beyond this machine", err=True)
    belief = f", belief {config.belief_model}" if config.belief_model else ""
    polls = ", ".join(f"{name}={n}" for name, n in config.polling_tools.items())
    belief += f", polling {polls}" if polls else ""
    belief += f", exempt {', '.join(config.exempt_tools)}" if config.exempt_tools else ""
    typer.echo(
        f"pos serve: {host}:{port} -> {redact_text(upstream)} (policy {config.policy}, health "
        f"{config.health}{belief}); traces: {config.trace_dir or 'off'}",
        err=True,
    )


def _log_config() -> dict[str, object]:
    """uvicorn's own logging set-up, with the redaction on each of its handlers."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact"] = {"()": "pos_agent.redaction.RedactingFilter"}
    for handler in config.get("handlers", {}).values():
        handler.setdefault("filters", []).append("redact")
    return config

"""`pos serve`: the OpenAI-compatible proxy that puts the trap monitor in front of any agent."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal

import typer

from pos_agent.cli.app import app

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.command()
def serve(
    upstream: Annotated[
        str,
        typer.Option(
            help="The OpenAI-compatible base URL to forward to, e.g. http://127.0.0.1:8080/v1."
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).", min=0)] = 8765,
    health: Annotated[
        str, typer.Option(help="Trap diagnosis: improved or paper (Eq. 5-6).")
    ] = "improved",
    policy: Annotated[
        str,
        typer.Option(
            help="observe (headers only), nudge (add the monitor's note), block (also refuse forbidden repeated calls)."
        ),
    ] = "observe",
    belief_model: Annotated[
        str | None,
        typer.Option(
            help="Keep a PoS belief per session with this model spec (local, scripted, openai:MODEL, ...)."
        ),
    ] = None,
    show_belief: Annotated[
        bool, typer.Option(help="In belief mode, show the agent its belief in a note.")
    ] = False,
    trace_dir: Annotated[
        Path | None,
        typer.Option(help="Folder for the per-session traces (default: runs/serve-<time>)."),
    ] = None,
    trace: Annotated[bool, typer.Option(help="Write per-session traces.")] = True,
    max_sessions: Annotated[
        int, typer.Option(help="Sessions kept (least recently used go).", min=1)
    ] = 1024,
    ttl: Annotated[float, typer.Option(help="Seconds an idle session is kept.", min=1)] = 3600.0,
    timeout: Annotated[
        float, typer.Option(help="Upstream timeout per request, seconds.", min=1)
    ] = 600.0,
    note_role: Annotated[
        str, typer.Option(help="Role of the note message: user or system.")
    ] = "user",
    log_level: Annotated[
        str, typer.Option(help="Log level: debug, info, warning, error.")
    ] = "info",
) -> None:
    """Serve the OpenAI-compatible proxy: point your agent's base_url at it."""
    try:
        import uvicorn

        from pos_agent.serve import ServeConfig, create_app, default_trace_dir
    except ModuleNotFoundError as error:  # the `serve` extra is not installed
        from pos_agent.cli import missing_extra_message

        missing = (error.name or "").partition(".")[0]
        if not missing or missing == "pos_agent":
            raise
        typer.echo(missing_extra_message(missing), err=True)
        raise typer.Exit(2) from None

    if health not in ("improved", "paper"):
        raise typer.BadParameter("must be improved or paper", param_hint="--health")
    if policy not in ("observe", "nudge", "block"):
        raise typer.BadParameter("must be observe, nudge or block", param_hint="--policy")
    if note_role not in ("user", "system"):
        raise typer.BadParameter("must be user or system", param_hint="--note-role")
    if not upstream.startswith(("http://", "https://")):
        raise typer.BadParameter("must be an http:// or https:// URL", param_hint="--upstream")
    chosen_role: Literal["user", "system"] = "system" if note_role == "system" else "user"
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
        note_role=chosen_role,
    )
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per upstream call otherwise
    if host not in LOOPBACK:
        typer.echo(f"warning: binding {host}: the proxy is reachable beyond this machine", err=True)
    typer.echo(
        f"pos serve: {host}:{port} -> {upstream} (policy {policy}, health {health}"
        f"{', belief ' + belief_model if belief_model else ''}); traces: {folder or 'off'}",
        err=True,
    )
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

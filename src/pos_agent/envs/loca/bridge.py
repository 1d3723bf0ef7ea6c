"""The LOCA side of the adapter: runs inside LOCA's runtime, never inside the project's venv.

`LocaEnvironment` starts `<runtime python> bridge.py --log FILE` with PYTHONPATH at the LOCA
checkout and talks to it in JSON lines (one request on stdin, one answer on the protocol fd).
This file imports only the standard library at module level: LOCA's own modules (gem.*) and
fastmcp are imported when a case is set up, from the runtime. Its two helpers, the process tree
(`bridge_processes.py`) and the environment's size (`bridge_measure.py`), sit beside it and are
imported by their file names when it runs as a script (this folder is then first on sys.path,
and `pos_agent` is not importable in LOCA's runtime).

Requests: `setup` (build the task with LOCA's data generator, check the workspace, start the
case's MCP servers with rewritten launch commands, list their tools, measure the environment
description), `call` (one tool call), `evaluate` (LOCA's `env.step` after claim_done: the
task's official evaluator), `pids` and `close`. An answer is `{"ok": true, ...}` or
`{"ok": false, "kind": "infra" | "usage", "error": ...}`.

Every process the bridge starts dies with it: the bridge is a child subreaper (orphaned
grandchildren reparent to it, so the servers that mcp starts in their own sessions stay in its
tree), and it kills its whole tree on `close`, on SIGTERM/SIGINT/SIGHUP, and when its stdin
reaches end of file, which is what happens when the worker that started it dies, even by
SIGKILL. PR_SET_PDEATHSIG was not used: it fires when the parent *thread* exits, which would
kill the servers of a case set up from a short-lived thread.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

if __package__:  # imported from the project: tests and the type checker
    from pos_agent.envs.loca.bridge_measure import measure_environment
    from pos_agent.envs.loca.bridge_processes import (
        descendants,
        process_table,
        shutdown_and_exit,
    )
else:  # run as a script by LOCA's python
    from bridge_measure import measure_environment  # type: ignore[no-redef]
    from bridge_processes import (  # type: ignore[no-redef]
        descendants,
        process_table,
        shutdown_and_exit,
    )


PR_SET_CHILD_SUBREAPER = 36
# LOCA's runner builds MCPTool with these (inference/run_react.py).
EXECUTION_TIMEOUT = 120.0
# Server types whose `data_dir` the generator must fill (the mock services' databases).
DATABASE_SERVERS = ("canvas", "email", "google_cloud", "google_sheet", "woocommerce", "snowflake")
ERROR_PREFIXES = ("[Tool execution error", "[Tool execution failed")


class CaseFailure(Exception):
    """Set-up or run failure; `kind` is "infra" (retry, never score) or "usage" (fix config)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# -- the case -----------------------------------------------------------------------------------


class Case:
    """One LOCA task instance: its environment object, its workspace and its MCP tool."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.loca_root = Path(request["loca_root"])
        self.task_dir = Path(request["task_dir"])
        self.agent_workspace = self.task_dir / "agent_workspace"
        self.config: dict[str, Any] = request["case"]
        self.runtime: dict[str, Any] = request["runtime"]
        self.fix_schema_for_openai = bool(request.get("fix_schema_for_openai", False))
        self.env: Any = None
        self.tool: Any = None
        self.server_pids: dict[int, str] = {}

    # -- setup ------------------------------------------------------------------------------

    def setup(self) -> dict[str, Any]:
        timings: dict[str, float] = {}
        started = time.monotonic()
        instruction = self._build_environment()
        timings["generate_s"] = time.monotonic() - started
        self._check_workspace()
        started = time.monotonic()
        tools = self._start_servers()
        timings["servers_s"] = time.monotonic() - started
        started = time.monotonic()
        context = measure_environment(instruction, self.task_dir)
        timings["measure_s"] = time.monotonic() - started
        return {
            "instruction": instruction,
            "tools": tools,
            "agent_workspace": str(self.agent_workspace),
            "server_pids": sorted(self.server_pids),
            "context_tokens": context[0],
            "tokenizer": context[1],
            "timings": {k: round(v, 3) for k, v in timings.items()},
        }

    def _build_environment(self) -> str:
        # The upstream runner's order (inference/run_react.py): folders first, then the class.
        for folder in (self.task_dir / "local_db", self.agent_workspace / "memory"):
            folder.mkdir(parents=True, exist_ok=True)
        module_name, _, class_name = str(self.config["env_class"]).rpartition(".")
        try:
            env_class = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise CaseFailure(
                "usage", f"cannot import {self.config['env_class']} from the checkout: {exc}"
            ) from exc
        params = {k: self._placeholders(v) for k, v in self.config["env_params"].items()}
        params.setdefault("task_dir", str(self.task_dir))
        try:
            # The constructor runs LOCA's data generator (its reset); a second reset, as the
            # upstream runner does, would only generate the same data again.
            self.env = env_class(**params)
        except Exception as exc:
            raise CaseFailure(
                "infra", f"the task's data generator raised {type(exc).__name__}: {exc}"
            ) from exc
        instructions = getattr(self.env, "_get_instructions", None)
        if callable(instructions):
            return str(instructions())
        observation, _ = self.env.reset()
        return str(observation)

    def _placeholders(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return value.replace("{task_workspace}", str(self.task_dir)).replace(
            "{agent_workspace}", str(self.agent_workspace)
        )

    def _check_workspace(self) -> None:
        """LOCA's reset() logs generator errors and carries on: refuse an incomplete case."""
        problems: list[str] = []
        log = self.task_dir / "logs" / "env.log"
        if log.is_file():
            errors = [
                line.strip()
                for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
                if " - ERROR - " in line
            ]
            problems.extend(f"generator log: {line[:300]}" for line in errors[:5])
        if not self.agent_workspace.is_dir():
            problems.append("no agent_workspace/ was created")
        template = Path(sys.modules[type(self.env).__module__].__file__ or "").parent
        shipped = sorted((template / "initial_workspace").glob("*"))
        if shipped and self.agent_workspace.is_dir() and not any(self.agent_workspace.iterdir()):
            problems.append("agent_workspace/ is empty")
        for name, server in self.config["mcp_servers"].items():
            data_dir = server.get("params", {}).get("data_dir")
            if server.get("type") in DATABASE_SERVERS and data_dir:
                folder = Path(self._placeholders(data_dir))
                if not folder.is_dir() or not any(folder.iterdir()):
                    problems.append(f"the {name} database {folder} is missing or empty")
        if problems:
            raise CaseFailure(
                "infra",
                "the data generator did not produce a complete workspace (LOCA's reset() "
                "swallows generator errors): " + "; ".join(problems[:8]),
            )

    def _start_servers(self) -> list[dict[str, Any]]:
        from gem.tools.mcp_server.config_loader import build_server_config
        from gem.tools.mcp_tool import MCPTool

        servers: dict[str, Any] = {}
        for name, server in self.config["mcp_servers"].items():
            if not server.get("enabled", True):
                continue
            params = {k: self._placeholders(v) for k, v in server.get("params", {}).items()}
            params["task_workspace"] = str(self.task_dir)
            params["agent_workspace"] = str(self.agent_workspace)
            try:
                built = build_server_config(server["type"], params, name)
            except (FileNotFoundError, ValueError) as exc:
                raise CaseFailure("usage", f"MCP server {name!r}: {exc}") from exc
            for server_name, stdio in built.items():
                servers[server_name] = self._rewrite(server_name, stdio)
        before = set(descendants(os.getpid()))
        # fix_schema_for_openai: LOCA's runner fixes array schemas without `items` only for
        # OpenAI models, which reject them (run_react.py: "openai" in the model name).
        self.tool = MCPTool(
            {"mcpServers": servers},
            validate_on_init=False,
            execution_timeout=EXECUTION_TIMEOUT,
            fix_schema_for_openai=self.fix_schema_for_openai,
        )
        functions = self.tool.get_tool_function()
        if not functions:
            raise CaseFailure("infra", "the MCP servers started but listed no tools")
        table = process_table()
        children = {
            pid: started
            for pid, started in descendants(os.getpid()).items()
            if pid not in before and table.get(pid, (0, "", ""))[0] == os.getpid()
        }
        if len(children) < len(servers):
            raise CaseFailure(
                "infra",
                f"only {len(children)} of {len(servers)} MCP servers ({', '.join(servers)}) "
                "are running after start-up; see the bridge log",
            )
        self.server_pids = children
        hints = self._read_only_hints()
        return [
            {
                "name": f["function"]["name"],
                "description": f["function"].get("description", ""),
                "parameters": f["function"].get("parameters")
                or {"type": "object", "properties": {}},
                # The server's own MCP annotation, where it gives one (LOCA's runner drops it).
                **(
                    {"read_only": hints[f["function"]["name"]]}
                    if f["function"]["name"] in hints
                    else {}
                ),
            }
            for f in functions
        ]

    def _read_only_hints(self) -> dict[str, bool]:
        """`readOnlyHint` per tool, for the tools whose server annotates it; {} when the list
        cannot be read (the adapter's reviewed table then decides, see tool_access.py)."""
        from gem.tools.mcp_tool import _run_async

        async def listed() -> Any:
            async with self.tool.client:
                return await self.tool.client.list_tools()

        try:
            tools = _run_async(listed())
        except Exception as exc:  # an unreadable list is not a broken case
            print(f"tool annotations unavailable: {exc!r}", file=sys.stderr)
            return {}
        hints: dict[str, bool] = {}
        for tool in tools:
            hint = getattr(getattr(tool, "annotations", None), "readOnlyHint", None)
            if isinstance(hint, bool):
                hints[str(tool.name)] = hint
        return hints

    def _rewrite(self, name: str, stdio: dict[str, Any]) -> dict[str, Any]:
        """The installed equivalent of a launch command that would fetch (uv run, uvx, npx)."""
        command, args = str(stdio["command"]), [str(a) for a in stdio.get("args", [])]
        python, bin_dir = self.runtime["python"], Path(self.runtime["bin_dir"])
        if command == "python":
            command = python
        elif command == "uv":  # uv --directory ROOT run python SCRIPT ARGS...
            command, args = python, args[args.index("python") + 1 :]
        elif command == "uvx":  # uvx PACKAGE ARGS...
            command, args = str(bin_dir / args[0]), args[1:]
        elif command in ("npx", "node"):
            package = args[0]
            script = self.runtime["npm_servers"].get(package) if command == "npx" else package
            if not script:
                raise CaseFailure("usage", f"MCP server {name!r}: no local install of {package}")
            command, args = self.runtime["node"], [script, *args[1:]]
        elif (bin_dir / command).is_file():
            command = str(bin_dir / command)
        else:
            raise CaseFailure("usage", f"MCP server {name!r}: unknown launch command {command!r}")
        env = {str(k): str(v) for k, v in (stdio.get("env") or {}).items()}
        env["PYTHONPATH"] = str(self.loca_root)
        env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        rewritten: dict[str, Any] = {"command": command, "args": args, "env": env}
        if stdio.get("cwd"):
            rewritten["cwd"] = stdio["cwd"]
        return rewritten

    # -- steps ------------------------------------------------------------------------------

    def dead_servers(self) -> list[int]:
        alive = descendants(os.getpid())
        return [pid for pid, started in self.server_pids.items() if alive.get(pid) != started]

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.tool is None:
            raise CaseFailure("usage", "call before setup")
        dead = self.dead_servers()
        if dead:
            raise CaseFailure("infra", f"MCP server process(es) {dead} died")
        started = time.monotonic()
        parsed, has_error, text, _, _ = self.tool.execute_tool(name, args, "call")
        seconds = time.monotonic() - started
        dead = self.dead_servers()
        if dead:
            raise CaseFailure("infra", f"MCP server process(es) {dead} died during {name}")
        return {
            "text": str(text),
            "known": bool(parsed),
            "is_error": bool(has_error) or str(text).startswith(ERROR_PREFIXES),
            "seconds": round(seconds, 4),
        }

    def evaluate(self, action: dict[str, Any]) -> dict[str, Any]:
        if self.env is None:
            raise CaseFailure("usage", "evaluate before setup")
        observation, reward, terminated, truncated, info = self.env.step(action)
        return {
            "reward": float(reward),
            "observation": str(observation),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": {str(k): _jsonable(v) for k, v in (info or {}).items()},
        }


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


# -- the loop -----------------------------------------------------------------------------------


def _answer(channel: Any, payload: dict[str, Any]) -> None:
    # Every answer lists the live process tree, so the adapter can clean up after a bridge
    # that was itself killed.
    payload.setdefault("pids", descendants(os.getpid()))
    channel.write(json.dumps(payload, ensure_ascii=False) + "\n")
    channel.flush()


def serve(requests: queue.Queue[dict[str, Any] | None], channel: Any) -> None:
    case: Case | None = None
    while True:
        request = requests.get()
        if request is None or request.get("op") == "close":
            _answer(channel, {"ok": True})
            return
        op = request.get("op")
        try:
            if op == "setup":
                case = Case(request)
                result = case.setup()
            elif op == "call" and case is not None:
                result = case.call(str(request["tool"]), dict(request.get("args") or {}))
            elif op == "evaluate" and case is not None:
                result = case.evaluate(dict(request.get("action") or {}))
            elif op == "pids":
                result = {}
            else:
                raise CaseFailure("usage", f"unknown or out-of-order request {op!r}")
            _answer(channel, {"ok": True, **result})
        except CaseFailure as failure:
            _answer(channel, {"ok": False, "kind": failure.kind, "error": str(failure)})
        except Exception as exc:
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            _answer(
                channel,
                {"ok": False, "kind": "infra", "error": f"{type(exc).__name__}: {exc}"},
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", required=True, help="File for everything LOCA prints.")
    options = parser.parse_args()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # The protocol gets private copies of stdin/stdout; fds 0-2 go to /dev/null and the log, so
    # neither LOCA's prints nor its subprocesses can read or corrupt the protocol.
    proto_in = os.fdopen(os.dup(0), "rb")
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    log_fd = os.open(options.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = os.fdopen(1, "w", encoding="utf-8", buffering=1)
    sys.stderr = os.fdopen(2, "w", encoding="utf-8", buffering=1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: shutdown_and_exit(0))
    requests: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def read_requests() -> None:
        # End of file means the adapter is gone (closed, or its process died): stop everything
        # at once, even in the middle of a long data generation.
        for line in proto_in:
            try:
                requests.put(json.loads(line))
            except ValueError:
                requests.put({"op": "invalid"})
        shutdown_and_exit(0)

    threading.Thread(target=read_requests, daemon=True).start()
    _answer(channel, {"ok": True, "ready": True, "pid": os.getpid()})
    serve(requests, channel)
    shutdown_and_exit(0)


if __name__ == "__main__":
    main()

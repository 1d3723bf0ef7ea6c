"""`LocaEnvironment`: one LOCA-Bench case under the paper's protocol (App. C, Table 6).

- The first observation is the task instruction; `Observation.tools` are exactly the case's MCP
  tools as LOCA's runner presents them (name, description with its `[server]` prefix, JSON
  schema), sorted by name.
- An action is one tool call, `{"tool": NAME, "args": {...}}` (OpenAI's `{"name", "arguments"}`
  and `{"function": {...}}` shapes are accepted too); its result is the next observation.
- The budget is 100 tool calls. Malformed calls, unknown tools and tool errors are error
  observations that spend budget; running out of budget fails the case.
- `claim_done_claim_done` runs the task's official evaluator (LOCA's `env.step`): success means
  a score of at least 1.0, and the score is recorded.
- A data generator that failed, an incomplete workspace, an MCP server that died, a bridge
  that hung: `InfrastructureError` (retried, never scored).

The case's data is generated into `workdir/task` (default: a temporary folder); everything
under it except `logs/` is removed on close unless `keep_workspace=True`.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pos_agent.envs._episode import BackendResult, BudgetedEnvironment, is_empty_action
from pos_agent.envs._types import EnvError, Observation, TaskKind
from pos_agent.envs.loca.bridge_client import BridgeClient, BridgeFailure, BridgeUsageError
from pos_agent.envs.loca.cases import ENV_NAME, LocaCase, find_case, length_tokens, locate_checkout
from pos_agent.envs.loca.runtime import ensure_runtime
from pos_agent.envs.loca.tool_access import with_access

# Paper App. C / Table 6: 100 MCP tool calls per case (LOCA's own runner defaults to 500).
DEFAULT_MAX_TOOL_CALLS = 100
# Generation at 256K took more than 18 minutes on a 2-core machine (docs/benchmarks/loca.md).
SETUP_TIMEOUT = 3600.0
# LOCA's MCPTool: 120 s per attempt, 3 attempts.
CALL_TIMEOUT = 420.0
EVALUATE_TIMEOUT = 1800.0
CLAIM_DONE = "claim_done"
# Read-only tools for a step where the agent produced no call, in order of preference.
_FALLBACK_TOOLS = ("filesystem_list_allowed_directories", "email_get_folders")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)
_NAME_KEYS = ("tool", "name", "tool_name")
_ARGS_KEYS = ("args", "arguments", "parameters", "input")
_EVALUATOR_TEXT_LIMIT = 1500


class ToolCallError(ValueError):
    """An action that is not one tool call; the message says how to write one."""


def parse_tool_call(action: str, names: set[str]) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of an action; ToolCallError for anything else.

    The arguments are not checked against the tool's schema: as in LOCA's runner, the MCP
    server validates them and answers a bad call with an error the agent sees.
    """
    hint = 'Send one tool call as JSON: {"tool": "<name>", "args": {...}}.'
    text = action.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    value = _load_object(text)
    if not isinstance(value, dict):
        raise ToolCallError(f"The action is not a JSON object: {text[:120]!r}. {hint}")
    data = dict(value)
    function = data.pop("function", None)
    if isinstance(function, dict):
        data.update(function)
    name = next((data.pop(k) for k in _NAME_KEYS if isinstance(data.get(k), str)), None)
    if name is None:
        raise ToolCallError(f"The tool call names no tool. {hint}")
    name = name.strip()
    if name not in names:
        close = difflib.get_close_matches(name, sorted(names), n=1)
        guess = f" Did you mean {close[0]!r}?" if close else ""
        raise ToolCallError(f"Tool {name!r} not found.{guess} {hint}")
    key = next((k for k in _ARGS_KEYS if k in data), None)
    args: Any = data[key] if key else {k: v for k, v in data.items() if k not in ("type", "id")}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise ToolCallError(f"{name}: the arguments are not valid JSON ({exc}).") from exc
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolCallError(f'{name}: "args" must be a JSON object. {hint}')
    return name, args


def _load_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        start = text.find("{")
        if start < 0:
            return None
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]
        except ValueError:
            return None


class LocaEnvironment(BudgetedEnvironment):
    """One LOCA case (task, length, seed) over a checkout, run in LOCA's own runtime."""

    name = ENV_NAME
    kind: TaskKind = "execution"
    free_text_actions = False  # a tool call goes to the MCP server as the agent wrote it

    def __init__(
        self,
        task_id: str,
        *,
        split: str | None = None,
        seed: int | None = None,
        max_steps: int | None = None,
        loca_root: str | Path | None = None,
        workdir: str | Path | None = None,
        runtime_dir: str | Path | None = None,
        keep_workspace: bool = False,
        setup_timeout: float = SETUP_TIMEOUT,
        evaluate_timeout: float = EVALUATE_TIMEOUT,
        openai_schemas: bool = False,
    ) -> None:
        root = locate_checkout(loca_root)
        case = find_case(task_id, seed, split, root)
        super().__init__(
            task_id=case.task_id,
            max_steps=max_steps or DEFAULT_MAX_TOOL_CALLS,
            category=case.category,
            split=case.length,
        )
        self.case: LocaCase = case
        self.loca_root = root
        self.runtime = ensure_runtime(Path(runtime_dir) if runtime_dir else None)
        self._temporary = workdir in (None, "")
        self.workdir = (
            Path(tempfile.mkdtemp(prefix="pos-loca-"))
            if self._temporary
            else Path(str(workdir)).resolve()
        )
        self.keep_workspace = keep_workspace
        self.setup_timeout = setup_timeout
        self.evaluate_timeout = evaluate_timeout
        # LOCA's runner applies fix_schema_for_openai only when the model is an OpenAI one
        # (inference/run_react.py); `bench` sets this from the policy model's spec.
        self.openai_schemas = openai_schemas
        self.tools: list[dict[str, Any]] = []
        self.tool_names: set[str] = set()
        self.setup_info: dict[str, Any] = {}
        self._bridge: BridgeClient | None = None

    @property
    def task_dir(self) -> Path:
        """LOCA's task folder (its reset() deletes and regenerates it)."""
        return self.workdir / "task"

    @property
    def server_pids(self) -> list[int]:
        """Every process the case's bridge reported (bridge, servers, their children)."""
        return sorted(self._bridge.known) if self._bridge else []

    @property
    def case_extra(self) -> dict[str, Any]:
        """What a result records about the case (`extra` of result.json)."""
        extra: dict[str, Any] = {
            "loca_task": self.case.task,
            "length": self.case.length,
            # Figure 4's x axis: the paper plots success against LOCA's nominal lengths
            # (8K ... 256K); the measured size of this case's description is below.
            "context_length": length_tokens(self.case.length),
            "seed": self.case.seed,
            "category": self.category,
            "loca_root": str(self.loca_root),
        }
        if self.setup_info:
            extra["description_tokens"] = self.setup_info.get("context_tokens")
            extra["description_tokenizer"] = self.setup_info.get("tokenizer")
            extra["tool_count"] = len(self.tools)
            extra["setup_timings"] = self.setup_info.get("timings")
            extra["fix_schema_for_openai"] = self.openai_schemas
        return extra

    # -- BudgetedEnvironment ---------------------------------------------------------------

    def _crash_errors(self) -> tuple[type[BaseException], ...]:
        return (BridgeFailure,)

    def _backend_reset(self) -> BackendResult:
        self._stop_bridge()
        if self.task_dir.exists():
            shutil.rmtree(self.task_dir)
        self._bridge = BridgeClient(self.runtime, self.loca_root, self.workdir)
        try:
            answer = self._bridge.request(
                {
                    "op": "setup",
                    "case": self.case.config(),
                    "task_dir": str(self.task_dir),
                    "loca_root": str(self.loca_root),
                    "runtime": self._runtime_paths(),
                    "fix_schema_for_openai": self.openai_schemas,
                },
                timeout=self.setup_timeout,
            )
        except BridgeUsageError as exc:
            raise EnvError(f"LOCA case {self.case.task_id} seed {self.case.seed}: {exc}") from exc
        # Each tool says whether it only reads or submits (the reviewed table of tool_access):
        # LongHorizon-Harness's auditor gets the read-only ones, never a guess from the name.
        self.tools = [with_access(tool) for tool in answer["tools"]]
        self.tool_names = {str(t["name"]) for t in self.tools}
        self.setup_info = {k: answer.get(k) for k in ("context_tokens", "tokenizer", "timings")}
        self.setup_info["agent_workspace"] = answer.get("agent_workspace")
        self.goal = str(answer["instruction"])
        return BackendResult(text=self.goal, admissible_actions=None, extra=self.case_extra)

    def _backend_step(self, action: str) -> BackendResult:
        try:
            name, args = parse_tool_call(action, self.tool_names)
        except ToolCallError as error:
            return self.invalid_result(str(error))
        bridge = self._require_bridge()
        try:
            answer = bridge.request({"op": "call", "tool": name, "args": args}, CALL_TIMEOUT)
        except BridgeUsageError as exc:
            return self.invalid_result(f"{name}: {exc}")
        text = str(answer.get("text", ""))
        extra = {"tool": name, "tool_seconds": answer.get("seconds")}
        if not answer.get("known", True) or answer.get("is_error"):
            result = self.invalid_result(text or f"{name} failed without a message.")
            result.extra.update(extra)
            return result
        if CLAIM_DONE in name:
            return self._evaluate(bridge, name, args, text, extra)
        return BackendResult(text=text, admissible_actions=None, extra=extra)

    def _evaluate(
        self,
        bridge: BridgeClient,
        name: str,
        args: dict[str, Any],
        tool_text: str,
        extra: dict[str, Any],
    ) -> BackendResult:
        """claim_done: LOCA's env.step runs the task's evaluator, as its runner does."""
        action = {"type": "tool", "data": [{"function": {"name": name, "arguments": args}}]}
        verdict = bridge.request({"op": "evaluate", "action": action}, self.evaluate_timeout)
        score = float(verdict.get("reward", 0.0))
        info = dict(verdict.get("info") or {})
        passed = score >= 1.0
        detail = "" if passed else _evaluator_detail(info, str(verdict.get("observation", "")))
        text = (
            f"{tool_text}\nThe task's evaluator ran: {'passed' if passed else 'failed'} "
            f"(score {score:g}).{detail}"
        )
        return BackendResult(
            text=text,
            admissible_actions=None,
            done=True,
            success=passed,
            score=score,
            extra={**extra, **self.case_extra, "evaluation": info},
        )

    def _backend_restart(self) -> None:
        self._stop_bridge()

    def _backend_close(self) -> None:
        self._stop_bridge()
        if self._temporary:
            shutil.rmtree(self.workdir, ignore_errors=True)
        elif not self.keep_workspace and self.task_dir.is_dir():
            # Generated data can take gigabytes at 256K; LOCA's logs are small and worth keeping.
            for item in self.task_dir.iterdir():
                if item.name == "logs":
                    continue
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item, ignore_errors=True)
                else:
                    item.unlink(missing_ok=True)

    def step(self, action: str) -> Observation:
        # The base class explains an empty action with admissible actions; a LOCA action is
        # a tool call, so the parser's message (with the JSON format) is the useful one.
        return super().step("(empty action)" if is_empty_action(action) else action)

    def _observation(self, result: BackendResult, *, budget_exhausted: bool) -> Observation:
        observation = super()._observation(result, budget_exhausted=budget_exhausted)
        observation.info.pop("expert_action", None)
        if not result.done:
            observation.tools = [dict(tool) for tool in self.tools]
            observation.max_calls = 1
            observation.fallback_action = self._fallback_action()
        return observation

    # -- helpers ----------------------------------------------------------------------------

    def _fallback_action(self) -> str | None:
        """A harmless read-only call for a step where the agent produced none."""
        for name in _FALLBACK_TOOLS:
            if name in self.tool_names:
                return json.dumps({"tool": name, "args": {}})
        return None

    def _runtime_paths(self) -> dict[str, Any]:
        node = shutil.which("node")
        if not node:
            raise EnvError(
                "LOCA's npm MCP servers need Node.js on PATH (`apt-get install nodejs`)."
            )
        npm_servers = {
            package: str(self.runtime.npm_server(package))
            for package in (
                "@modelcontextprotocol/server-filesystem",
                "@modelcontextprotocol/server-memory",
            )
        }
        return {
            "python": str(self.runtime.python),
            "bin_dir": str(self.runtime.bin_dir),
            "node": node,
            "npm_servers": npm_servers,
        }

    def _require_bridge(self) -> BridgeClient:
        if self._bridge is None:
            raise BridgeFailure("the LOCA bridge is not running; call reset() first")
        return self._bridge

    def _stop_bridge(self) -> None:
        if self._bridge is not None:
            self._bridge.close()
            self._bridge = None


def _evaluator_detail(info: dict[str, Any], observation: str) -> str:
    """The evaluator's own error message, without LOCA's repeated banner lines."""
    message = info.get("error")
    if not isinstance(message, str) or not message.strip():
        lines = [line for line in observation.splitlines() if line.strip().strip("=")]
        message = "\n".join(dict.fromkeys(lines))
    message = message.strip()
    if len(message) > _EVALUATOR_TEXT_LIMIT:
        message = message[: _EVALUATOR_TEXT_LIMIT - 15] + " ...[truncated]"
    return f"\n{message}" if message else ""

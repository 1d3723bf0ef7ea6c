"""Tool calls reach the tools intact (issue 27): a tool call's text is data, never rewritten.

Every method (Raw, the four baselines, PoS and its ablations) runs one short episode in each of
the three tool environments with a scripted model whose policy answer is a call carrying a
multi-line, indented Python program. The environments are the real classes: RCA and ClinDiag
over ../shared/data, LOCA as `LocaEnvironment` with its MCP bridge replaced by an in-process
fake (`FakeBridge`, which records the arguments the MCP server would receive and answers like
LOCA's `python_execute`), since starting LOCA's servers per method would take minutes. The test
asserts the argument that reached the tool equals the one the model wrote, byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent_fixtures import DESK_TOOLS, KitchenEnv, ToolDesk
from pos_agent.agents.methods import METHODS
from pos_agent.bench.agent_factory import build_agent
from pos_agent.bench.spec import CaseSpec
from pos_agent.envs import BackendResult, BudgetedEnvironment, EnvError, list_tasks, make_env
from pos_agent.envs.clindiag.environment import ClinDiagEnvironment
from pos_agent.envs.loca.environment import LocaEnvironment
from pos_agent.envs.rca.environment import RcaEnvironment
from pos_agent.envs.tools import ToolCall, parse_tool_calls
from pos_agent.llm import ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest, minimal_instance
from pos_agent.roles import validate_action
from pos_agent.roles.limits import SchemaBounds
from pos_agent.roles.prompts import tools_block
from pos_agent.roles.schemas import action_text, decision_schema
from pos_agent.trace import TraceWriter

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PROGRAM = (
    "import json\n"
    "rows = json.load(open('data.json'))\n"
    "for row in rows:\n"
    "    if row['stock'] < row['threshold']:\n"
    "        print(row['name'],   row['stock'])\n"
    "\telse:\n"
    "  \t      pass\n"
)
MODEL_METHODS = [name for name, m in METHODS.items() if m.kind != "expert"]

# -- LOCA without its MCP servers -----------------------------------------------------------------

PYTHON_EXECUTE = {
    "name": "python_execute",
    "description": "[python_execute] Execute Python code under the agent workspace.",
    "parameters": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python code to execute"},
            "filename": {"type": "string", "description": "Filename for the Python file"},
            "timeout": {"type": "integer", "description": "Seconds", "default": 30},
        },
        "required": ["code"],
    },
}
CLAIM_DONE = {
    "name": "claim_done_claim_done",
    "description": "[claim_done] Claim the task is done.",
    "parameters": {"type": "object", "properties": {}},
}


class FakeBridge:
    """Stands in for LOCA's bridge process: records every call's arguments as the MCP server
    would receive them (after the JSON round trip the real bridge makes)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        if message["op"] == "call":
            args = json.loads(json.dumps(message["args"]))
            self.calls.append((str(message["tool"]), args))
            return {"text": "=== STDOUT ===\n", "known": True, "is_error": False, "seconds": 0.0}
        if message["op"] == "evaluate":
            return {"reward": 0.0, "info": {}, "observation": ""}
        raise AssertionError(f"unexpected bridge request {message['op']!r}")

    def close(self) -> None:
        pass


class BridgeFreeLoca(LocaEnvironment):
    """A real `LocaEnvironment` whose bridge is a `FakeBridge` and whose tools are given."""

    def __init__(self, tools: list[dict[str, Any]], *, max_steps: int = 3) -> None:
        BudgetedEnvironment.__init__(
            self, task_id="FakeTask-8k", max_steps=max_steps, category="fake", split="8k"
        )
        self.tools = sorted(tools, key=lambda t: str(t["name"]))
        self.tool_names = {str(t["name"]) for t in tools}
        self.setup_info = {}
        self.evaluate_timeout = 60.0
        self.fake = FakeBridge()
        self._bridge = None

    def _backend_reset(self) -> BackendResult:
        self._bridge = self.fake  # type: ignore[assignment]
        self.goal = "Report the products below their stock threshold."
        return BackendResult(text=self.goal, admissible_actions=None)

    def _backend_close(self) -> None:
        self._bridge = None

    @property
    def case_extra(self) -> dict[str, Any]:
        return {}

    def received(self, tool: str) -> list[dict[str, Any]]:
        return [args for name, args in self.fake.calls if name == tool]


# -- RCA and ClinDiag, recording what reaches their tools -----------------------------------------


class RecordingRca(RcaEnvironment):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[ToolCall] = []

    def _run_turn(self, calls: list[ToolCall]) -> Any:
        self.seen.extend(calls)
        return super()._run_turn(calls)


class RecordingClinDiag(ClinDiagEnvironment):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[ToolCall] = []

    def _answer(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        self.seen.append(call)
        return super()._answer(call)


def _data(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_dir():
        pytest.fail(f"{path} is missing: this test needs ../shared/data/{name}")
    return path


def _rca() -> RecordingRca:
    folder = _data("rca-nezha")
    task = list_tasks("rca-nezha", None, data_dir=str(folder))[0].task_id
    return RecordingRca(task, max_steps=3, data_dir=str(folder))


def _clindiag() -> RecordingClinDiag:
    folder = _data("clindiag")
    options = {"data_dir": str(folder), "provider": "retrieval", "judge": "matcher"}
    task = list_tasks("clindiag", None, **options)[0].task_id
    return RecordingClinDiag(task, max_steps=3, **options)


ENVIRONMENTS = {
    "loca": lambda: BridgeFreeLoca([PYTHON_EXECUTE, CLAIM_DONE]),
    "rca": _rca,
    "clindiag": _clindiag,
}
# The tool the policy calls in each environment and its free-text argument.
CALLS = {
    "loca": ("python_execute", "code"),
    "rca": ("search_logs", "pattern"),
    "clindiag": ("ask_history", "question"),
}


def _received(env_name: str, env: Any, tool: str, argument: str) -> list[Any]:
    """The argument of every call of `tool` the environment got, but for its own fallback call
    (what an unusable decision spends its step on: LongHorizon's final answer, which this
    responder answers with a tool outside that view)."""
    if env_name == "loca":
        return [args.get(argument) for args in env.received(tool)]
    fallback = env.fallback_call
    return [
        call.args.get(argument)
        for call in env.seen
        if call.tool == tool and (call.tool, call.args) != (fallback.tool, fallback.args)
    ]


def _responder(tool: str, argument: str) -> Any:
    """The policy (and LongHorizon's executor) calls `tool` with the program; every other call
    gets the smallest valid answer of its schema."""

    def answer(request: GenerationRequest) -> str:
        schema = request.schema or {}
        properties = schema.get("properties", {})
        if "call" in properties or "calls" in properties:
            call = {"tool": tool, "args": {argument: PROGRAM}}
            decision: dict[str, Any] = {
                k: minimal_instance({**schema, "properties": {k: v}, "required": [k]}).get(k)
                for k, v in properties.items()
                if k not in ("call", "calls")
            }
            decision["calls" if "calls" in properties else "call"] = (
                [call] if "calls" in properties else call
            )
            return json.dumps(decision)
        if request.role == "manager":  # LongHorizon's manager routes the round to the executor
            return "Next: work\nSubtask: run the program\nAcceptance criteria: it ran"
        return "ok" if not schema else json.dumps(minimal_instance(schema))

    return answer


@pytest.fixture(params=sorted(ENVIRONMENTS))
def env_name(request: pytest.FixtureRequest) -> Iterator[str]:
    yield str(request.param)


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_a_multiline_program_reaches_the_tool_byte_for_byte(
    method: str, env_name: str, tmp_path: Path
) -> None:
    env = ENVIRONMENTS[env_name]()
    tool, argument = CALLS[env_name]
    model = ScriptedModel(_responder(tool, argument), spec="openai:scripted")
    spec = CaseSpec(env=env.name, task=env.task_id, agent=method, model="openai:scripted")
    with env, TraceWriter(tmp_path) as trace:
        agent, _ = build_agent(
            spec, env, lambda name, role: model, TokenLedger(), trace, None, None
        )
        agent.run(env)
        received = _received(env_name, env, tool, argument)
    assert received, f"{method} never called {tool} in {env_name}"
    assert all(value == PROGRAM for value in received), received[0]


def test_only_a_text_games_free_text_is_normalised() -> None:
    game = KitchenEnv()
    game.reset()
    assert not game.step("  open   microwave\n1 ").info["invalid_action"]
    desk = ToolDesk(max_calls=1)
    desk.reset()
    call = json.dumps(
        {
            "tool": "submit",
            "args": {
                "service": " payment",
                "fault": "network",
                "note": "line one\n    indented  twice",
            },
        }
    )
    desk.step(call)
    assert desk.received == [call]
    (parsed,) = parse_tool_calls(call, DESK_TOOLS)
    assert parsed.args == {
        "service": "payment",
        "fault": "network",
        "note": "line one\n    indented  twice",
    }
    assert validate_action("  look  \n", None) == ("  look  \n", None)
    assert validate_action(" open  microwave 1", ["open microwave 1"]) == ("open microwave 1", None)


# -- nested schemas: what the policy reads is enough to call the tool -----------------------------


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _choice(description: str, *values: str) -> dict[str, Any]:
    return {"type": "string", "description": description, "enum": list(values)}


# WooCommerce's `woo_products_create` as LOCA's woocommerce server declares it.
WOO_PRODUCTS_CREATE = {
    "name": "woocommerce_woo_products_create",
    "description": "[woocommerce] Create a new product",
    "parameters": {
        "type": "object",
        "properties": {
            "productData": {
                "type": "object",
                "description": "Product data",
                "properties": {
                    "name": _text("Product name"),
                    "type": _choice("Product type", "simple", "grouped", "external", "variable"),
                    "status": _choice("Product status", "publish", "draft", "private", "pending"),
                    "featured": {"type": "boolean", "description": "Featured product"},
                    "regular_price": _text("Regular price"),
                    "stock_quantity": {"type": "integer", "description": "Stock quantity"},
                    "categories": {
                        "type": "array",
                        "description": "Product categories",
                        "items": {
                            "type": "object",
                            "properties": {"id": {"type": "integer", "description": "Category ID"}},
                        },
                    },
                    "images": {
                        "type": "array",
                        "description": "Product images",
                        "items": {
                            "type": "object",
                            "properties": {"src": _text("Image URL"), "alt": _text("Alt text")},
                        },
                    },
                },
            }
        },
        "required": ["productData"],
    },
}
_ARGUMENT_LINE = re.compile(r"^(?P<indent> *)(?P<name>\w+) \((?P<facts>[^)]*)\)")


def _read_tool(prompt: str, tool: str) -> list[tuple[int, str, str]]:
    """(depth, name, facts) of every argument line the prompt shows under `tool`."""
    lines = prompt.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"- {tool}:"))
    shown = []
    for line in lines[start + 1 :]:
        match = _ARGUMENT_LINE.match(line)
        if match is None or not match["indent"]:
            break
        shown.append((len(match["indent"]) // 4, match["name"], match["facts"]))
    return shown


def _value(facts: str, children: dict[str, Any]) -> Any:
    kind, *rest = [f.strip() for f in facts.split(";")]
    allowed = next((f.removeprefix("one of: ") for f in rest if f.startswith("one of: ")), None)
    if allowed:
        return allowed.split(", ")[0]
    scalar = {"string": "Blue mug", "integer": 7, "number": 1.5, "boolean": True}
    if kind in scalar:
        return scalar[kind]
    if kind == "object":
        return children
    if kind.startswith("array of "):
        item = kind.removeprefix("array of ")
        return [children] if item == "object" else [scalar.get(item, "x")]
    return None


def _arguments(shown: list[tuple[int, str, str]], depth: int = 1) -> dict[str, Any]:
    """Arguments for every field shown, built from the shown types alone."""
    args: dict[str, Any] = {}
    for index, (level, name, facts) in enumerate(shown):
        if level != depth:
            continue
        below = []
        for entry in shown[index + 1 :]:
            if entry[0] <= depth:
                break
            below.append(entry)
        args[name] = _value(facts, _arguments(below, depth + 1))
    return args


def _conforms(value: Any, schema: dict[str, Any]) -> bool:
    """The JSON-schema subset the tool uses: types, enums, required and declared keys."""
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        return False
    if kind == "object":
        properties = schema.get("properties", {})
        return (
            isinstance(value, dict)
            and set(schema.get("required", [])) <= set(value)
            and set(value) <= set(properties)
            and all(_conforms(v, properties[k]) for k, v in value.items())
        )
    if kind == "array":
        return isinstance(value, list) and all(_conforms(v, schema["items"]) for v in value)
    python = {"string": str, "integer": int, "boolean": bool, "number": float}[str(kind)]
    return isinstance(value, python) and (kind == "boolean" or not isinstance(value, bool))


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_a_nested_loca_tool_is_called_correctly_from_what_the_policy_reads(
    method: str, tmp_path: Path
) -> None:
    tool = str(WOO_PRODUCTS_CREATE["name"])
    schemas: list[dict[str, Any]] = []

    def answer(request: GenerationRequest) -> str:
        schema = request.schema or {}
        prompt = "\n".join(m.content for m in request.messages)
        if "call" in schema.get("properties", {}) and f"- {tool}:" in prompt:
            schemas.append(schema)
            call = {"tool": tool, "args": _arguments(_read_tool(prompt, tool))}
            return json.dumps({**minimal_instance(schema), "call": call})
        if request.role == "manager":
            return "Next: work\nSubtask: create the product\nAcceptance criteria: it exists"
        return "ok" if not schema else json.dumps(minimal_instance(schema))

    env = BridgeFreeLoca([WOO_PRODUCTS_CREATE, PYTHON_EXECUTE, CLAIM_DONE], max_steps=2)
    model = ScriptedModel(answer, spec="openai:scripted")
    spec = CaseSpec(env=env.name, task=env.task_id, agent=method, model="openai:scripted")
    with env, TraceWriter(tmp_path) as trace:
        agent, _ = build_agent(
            spec, env, lambda name, role: model, TokenLedger(), trace, None, None
        )
        agent.run(env)
    received = env.received(tool)
    assert received, f"{method} never called {tool}"
    product = received[0]["productData"]
    nested = WOO_PRODUCTS_CREATE["parameters"]["properties"]["productData"]  # type: ignore[index]
    assert set(product) == set(nested["properties"]), "every field was shown"
    assert product["categories"] == [{"id": 7}] and product["type"] == "simple"
    assert _conforms(received[0], WOO_PRODUCTS_CREATE["parameters"])  # type: ignore[arg-type]
    # The structured-output schema holds the same nested fields.
    shown = json.dumps(schemas[0])
    assert all(f'"{k}"' in shown for k in nested["properties"])
    assert '"enum": ["publish", "draft", "private", "pending"]' in shown


def test_refs_nullable_arguments_and_defaults_reach_schema_and_tool_list() -> None:
    # How FastMCP writes a pydantic argument: a $ref into $defs, Optional as anyOf with null.
    tool = {
        "name": "sheet_write",
        "description": "Write rows.",
        "parameters": {
            "type": "object",
            "$defs": {
                "Row": {
                    "type": "object",
                    "properties": {"cells": {"type": "array", "items": {"type": "string"}}},
                    "required": ["cells"],
                }
            },
            "properties": {
                "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
                "sheet": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "Sheet1"},
            },
            "required": ["rows"],
        },
    }
    text = tools_block([tool])
    assert "rows (array of object; required)" in text
    assert "        cells (array of string; required)" in text
    assert 'sheet (string; optional; default "Sheet1")' in text
    schema = decision_schema(None, [tool], SchemaBounds()).model_json_schema()
    flat = json.dumps(schema)
    assert (
        '"default": "Sheet1"' in flat
        and '"cells"' in flat
        and 'anyOf": [{"type": "string"}' not in flat
    )
    answer = decision_schema(None, [tool], SchemaBounds()).model_validate(
        {"thought": "", "call": {"tool": "sheet_write", "args": {"rows": [{"cells": ["a  b"]}]}}}
    )
    assert json.loads(action_text(answer) or "") == {
        "tool": "sheet_write",
        "args": {"rows": [{"cells": ["a  b"]}]},
    }


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_the_instruction_is_shown_once(method: str, tmp_path: Path) -> None:
    """LOCA's first observation is the task instruction itself: no prompt repeats it."""
    prompts: list[str] = []

    def answer(request: GenerationRequest) -> str:
        prompts.append("\n".join(m.content for m in request.messages))
        if request.role == "manager":
            return "Next: work\nSubtask: look\nAcceptance criteria: done"
        schema = request.schema
        return "ok" if not schema else json.dumps(minimal_instance(schema))

    env = BridgeFreeLoca([PYTHON_EXECUTE, CLAIM_DONE], max_steps=2)
    model = ScriptedModel(answer, spec="openai:scripted")
    spec = CaseSpec(env=env.name, task=env.task_id, agent=method, model="openai:scripted")
    with env, TraceWriter(tmp_path) as trace:
        agent, _ = build_agent(
            spec, env, lambda name, role: model, TokenLedger(), trace, None, None
        )
        agent.run(env)
    assert prompts
    for prompt in prompts:
        # A PoS belief's gaps are the belief model's own words (they may quote the goal).
        lines = [line for line in prompt.splitlines() if not re.match(r"[*-] g\d+ ", line)]
        assert "\n".join(lines).count(env.goal) <= 1, prompt
        assert "text environment" not in prompt


# -- fix_schema_for_openai, as LOCA's runner: only for OpenAI models ------------------------------


class RecordingBridgeClient:
    """Replaces LOCA's bridge process: answers setup, records what was asked."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, *args: Any) -> None:
        self.known: set[int] = set()

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        type(self).requests.append({**message, "timeout": timeout})
        if message["op"] == "setup":
            return {"tools": [CLAIM_DONE], "instruction": "Do the task."}
        return {"reward": 1.0, "info": {}, "observation": "", "text": "", "known": True}

    def close(self) -> None:
        pass


@pytest.mark.parametrize("openai", [False, True])
def test_loca_fixes_schemas_for_openai_models_only(
    openai: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pos_agent.envs.loca.environment as loca

    RecordingBridgeClient.requests = []
    monkeypatch.setattr(loca, "BridgeClient", RecordingBridgeClient)
    options: dict[str, Any] = {"workdir": str(tmp_path), "evaluate_timeout": 12.5}
    with make_env(
        "loca", "WoocommerceStockAlert-8k", seed=42, openai_schemas=openai, **options
    ) as env:
        env.reset()
        final = env.step(json.dumps({"tool": "claim_done_claim_done", "args": {}}))
    setup, evaluate = RecordingBridgeClient.requests[0], RecordingBridgeClient.requests[-1]
    assert setup["fix_schema_for_openai"] is openai
    assert evaluate["op"] == "evaluate" and evaluate["timeout"] == 12.5 and final.success


@pytest.mark.parametrize(("model", "fixed"), [("openai:gpt-4o", True), ("vllm:qwen3-8b", False)])
def test_bench_asks_loca_for_openai_schemas_by_the_policy_model(
    model: str, fixed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pos_agent.bench.case as case

    seen: dict[str, Any] = {}

    def make_env_stub(*args: Any, **options: Any) -> Any:
        seen.update(options)
        raise EnvError("stop here")

    monkeypatch.setattr(case, "make_env", make_env_stub)
    spec = CaseSpec(env="loca", task="WoocommerceStockAlert-8k", seed=42, agent="raw", model=model)
    case.run_case(spec, tmp_path / "case", run_name="t", load=lambda name, role: ScriptedModel())
    assert seen["openai_schemas"] is fixed


# -- an unusable answer is asked again before a tool call is spent --------------------------------


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_an_unusable_tool_decision_is_asked_again_without_spending_a_call(
    method: str, tmp_path: Path
) -> None:
    program = {"tool": "python_execute", "args": {"code": PROGRAM}}
    asked: list[GenerationRequest] = []

    def answer(request: GenerationRequest) -> str:
        schema = request.schema or {}
        if "call" in schema.get("properties", {}):
            asked.append(request)
            # Junk until the harness asks again with its note; then a valid call.
            if not any("could not be used" in m.content for m in request.messages):
                return "I will run some code {not json"
            return json.dumps({**minimal_instance(schema), "call": program})
        if request.role == "manager":
            return "Next: work\nSubtask: run it\nAcceptance criteria: it ran"
        return "ok" if not schema else json.dumps(minimal_instance(schema))

    # Two calls: LongHorizon keeps the last one for its final answer.
    env = BridgeFreeLoca([PYTHON_EXECUTE, CLAIM_DONE], max_steps=2)
    model = ScriptedModel(answer, spec="openai:scripted")
    spec = CaseSpec(env=env.name, task=env.task_id, agent=method, model="openai:scripted")
    with env, TraceWriter(tmp_path) as trace:
        agent, _ = build_agent(
            spec, env, lambda name, role: model, TokenLedger(), trace, None, None
        )
        agent.run(env)
    # The fallback would have been claim_done (the one tool without required arguments).
    assert env.fake.calls[0] == ("python_execute", {"code": PROGRAM}), "no fallback call spent"
    assert any("could not be used" in m.content for m in asked[-1].messages)


# -- native tool calling ---------------------------------------------------------------------------


@pytest.mark.parametrize("refuse", [False, True])
def test_tool_decisions_go_as_native_function_definitions_where_the_server_takes_them(
    refuse: bool,
) -> None:
    from fake_openai import Behaviour, fake_openai
    from pos_agent.llm import Message, ModelOptions, load_model

    tools = [WOO_PRODUCTS_CREATE, PYTHON_EXECUTE]
    schema = decision_schema(None, tools, SchemaBounds())
    with fake_openai(Behaviour(refuse_tools=refuse)) as (url, behaviour):
        model = load_model("openai:native", ModelOptions(base_url=url, max_retries=0))
        answer = model.complete([Message("user", "go")], schema=schema, max_tokens=64)
        again = model.complete([Message("user", "go on")], schema=schema, max_tokens=64)
    sent = behaviour.bodies[0]
    (function, _) = (t["function"] for t in sent["tools"])
    assert function["name"] == "woocommerce_woo_products_create"
    assert function["description"] == "[woocommerce] Create a new product"
    product = function["parameters"]["properties"]["productData"]
    assert product["properties"]["status"]["enum"] == ["publish", "draft", "private", "pending"]
    assert product["properties"]["categories"]["items"]["properties"]["id"]["type"] == "integer"
    assert "$ref" not in json.dumps(function) and "response_format" not in sent
    call = json.loads(action_text(answer.parsed) or "")
    assert call["tool"] == "woocommerce_woo_products_create"
    if refuse:  # negotiated like the structured-output modes, and remembered
        assert answer.structured_mode == again.structured_mode == "json_schema"
        assert "tools" not in behaviour.bodies[-1] and "response_format" in behaviour.bodies[-1]
        assert len(behaviour.bodies) == 3
    else:
        assert answer.structured_mode == again.structured_mode == "tools"
        assert len(behaviour.bodies) == 2

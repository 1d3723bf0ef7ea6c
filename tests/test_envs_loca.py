"""LOCA-Bench over the checkout at ../shared/vendor/LOCA-bench, in LOCA's own runtime.

The fast tests read the checkout's configs and exercise parsing and suite filters. The slow ones
run real cases: LOCA's data generators, its MCP servers (Python and npm, from the runtime that
`make loca-runtime` builds) and its official evaluators; they need no network.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.suite import load_suite
from pos_agent.envs import EnvError, Environment, InfrastructureError, list_tasks, make_env
from pos_agent.envs.loca import (
    CATEGORIES,
    LENGTHS,
    SEEDS,
    LocaEnvironment,
    read_cases,
)
from pos_agent.envs.loca.bridge_client import alive, start_time
from pos_agent.envs.loca.cases import find_case, locate_checkout
from pos_agent.envs.loca.environment import ToolCallError, parse_tool_call
from pos_agent.envs.loca.runtime import find_runtime

REPO = Path(__file__).resolve().parents[1]
CHECKOUT = REPO / ".." / "shared" / "vendor" / "LOCA-bench"
STOCK_ALERT = "WoocommerceStockAlert-8k"
MANAGER = "laura_thompson@mcp.com"


@pytest.fixture(scope="module")
def runtime() -> None:
    if find_runtime() is None:
        pytest.fail("The LOCA runtime is not built: run `make loca-runtime` (CI does).")


# -- the checkout's cases ----------------------------------------------------------------------


def test_checkout_holds_525_cases_in_three_categories_of_five_tasks() -> None:
    cases = read_cases(CHECKOUT)
    assert len(cases) == 525
    assert Counter(c.length for c in cases) == dict.fromkeys(LENGTHS, 75)
    assert {c.seed for c in cases} == set(SEEDS)
    tasks = {c.task for c in cases}
    assert tasks == set(CATEGORIES)
    assert Counter(CATEGORIES[t] for t in tasks) == {
        "cross-source": 5,
        "analytics": 5,
        "env-ops": 5,
    }
    specs = list_tasks("loca", loca_root=str(CHECKOUT))
    assert len(specs) == 105
    # Task-major order: --limit 4 over two lengths keeps both lengths.
    assert [s.task_id for s in specs[:2]] == ["CanvasArrangeExam-8k", "CanvasArrangeExam-16k"]
    assert len(list_tasks("loca", "8k", loca_root=str(CHECKOUT))) == 15


def test_a_case_is_a_task_length_and_seed() -> None:
    case = find_case("woocommercestockalert-8K", 123, None, CHECKOUT)
    assert (case.task, case.length, case.seed) == ("WoocommerceStockAlert", "8k", 123)
    assert case.env_params["seed"] == 123
    assert find_case("WoocommerceStockAlert", None, "256k", CHECKOUT).length == "256k"
    with pytest.raises(EnvError, match="42, 123, 456, 789, 2024"):
        find_case(STOCK_ALERT, 7, None, CHECKOUT)
    with pytest.raises(EnvError, match="needs a length"):
        find_case("WoocommerceStockAlert", 42, None, CHECKOUT)
    with pytest.raises(EnvError, match="Unknown LOCA task"):
        find_case("NoSuchTask-8k", 42, None, CHECKOUT)


def test_a_missing_checkout_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POS_LOCA_ROOT", str(tmp_path))
    with pytest.raises(EnvError) as error:
        locate_checkout()
    message = str(error.value)
    assert "hkust-nlp/LOCA-bench" in message and "8cd474d" in message
    assert "git clone" in message and "POS_LOCA_ROOT" in message


@pytest.mark.parametrize(
    "action",
    [
        '{"tool": "email_get_folders", "args": {"x": 1}}',
        '{"name": "email_get_folders", "arguments": "{\\"x\\": 1}"}',
        '{"type": "function", "function": {"name": "email_get_folders", "arguments": {"x": 1}}}',
        '```json\n{"tool": "email_get_folders", "args": {"x": 1}}\n```',
        'I will call {"tool": "email_get_folders", "args": {"x": 1}} now',
    ],
)
def test_tool_calls_are_parsed_in_the_shapes_models_write(action: str) -> None:
    assert parse_tool_call(action, {"email_get_folders"}) == ("email_get_folders", {"x": 1})


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("list the folders", "not a JSON object"),
        ('{"args": {}}', "names no tool"),
        ('{"tool": "email_get_folder", "args": {}}', "Did you mean 'email_get_folders'"),
        ('{"tool": "email_get_folders", "args": [1]}', "must be a JSON object"),
        ('{"tool": "email_get_folders", "args": "{oops"}', "not valid JSON"),
    ],
)
def test_malformed_tool_calls_say_what_is_wrong(action: str, message: str) -> None:
    with pytest.raises(ToolCallError, match=message):
        parse_tool_call(action, {"email_get_folders"})


def test_bench_filters_lengths_and_seeds_before_the_limit() -> None:
    suite = load_suite("loca")
    suite.env_options["loca_root"] = str(CHECKOUT)
    specs = suite.cases(["pos", "raw"], "scripted", 4, lengths=["8k", "16K"], seeds=[42])
    assert len(specs) == 8
    assert {s.seed for s in specs} == {42}
    assert {s.task.rsplit("-", 1)[1] for s in specs} == {"8k", "16k"}
    assert all(s.max_steps == 100 for s in specs)
    assert {s.global_audit_every for s in specs if s.agent == "pos"} == {32}
    with pytest.raises(ValueError, match="no seed"):
        suite.cases(["pos"], "scripted", seeds=[7])
    with pytest.raises(ValueError, match="Unknown LOCA length"):
        suite.cases(["pos"], "scripted", lengths=["12k"])
    with pytest.raises(ValueError, match="no task at length"):
        load_suite("loca-8k").cases(["pos"], "scripted", lengths=["16k"])
    with pytest.raises(ValueError, match="applies to LOCA suites"):
        load_suite("alfworld-mini").cases(["pos"], "scripted", lengths=["8k"])
    assert [load_suite(f"loca-{n}").split for n in LENGTHS] == list(LENGTHS)


# -- one real task end to end ---------------------------------------------------------------------


def _call(env: Environment, tool: str, **args: Any) -> Any:
    return env.step(json.dumps({"tool": tool, "args": args}))


def _low_stock_products(env: Environment) -> list[dict[str, Any]]:
    """What the agent reads from WooCommerce: products below their stock threshold."""
    observation = _call(env, "woocommerce_woo_products_list", perPage=100)
    assert not observation.info["invalid_action"], observation.text
    low = []
    for product in json.loads(observation.text):
        meta = {m["key"]: m["value"] for m in product["meta_data"]}
        if product["stock_quantity"] < int(meta["stock_threshold"]):
            low.append(
                {**product, "threshold": meta["stock_threshold"], "supplier": meta["supplier"]}
            )
    assert low
    return low


def _record_in_sheet(env: Environment, products: list[dict[str, Any]]) -> None:
    spreadsheets = json.loads(_call(env, "google_sheet_list_spreadsheets").text)
    sheet_id = next(s["id"] for s in spreadsheets if s["title"] == "WooCommerce Stock Alert")
    rows = [
        [
            str(p["id"]),
            p["name"],
            p["sku"],
            str(p["stock_quantity"]),
            str(p["threshold"]),
            p["supplier"],
            "",
            "",
        ]
        for p in products
    ]
    observation = _call(
        env,
        "google_sheet_update_cells",
        spreadsheet_id=sheet_id,
        sheet="Stock Alert",
        range=f"A2:H{len(rows) + 1}",
        data=rows,
    )
    assert not observation.info["invalid_action"], observation.text


def _send_alerts(env: Environment, products: list[dict[str, Any]]) -> None:
    for product in products:
        body = (
            "Dear Purchasing Manager,\n\nThe following product's stock is below the safety "
            f"threshold.\n- Product Name: {product['name']}\n- SKU: {product['sku']}\n"
            f"- Current Stock: {product['stock_quantity']}\n- Safety Threshold: "
            f"{product['threshold']}\n- Supplier: {product['supplier']}\n\nBest regards,\n"
            "Stock Alert System"
        )
        observation = _call(
            env,
            "email_send_email",
            to=MANAGER,
            subject=f"[Stock Alert] {product['name']} Stock Below Safety Threshold",
            body=body,
        )
        assert not observation.info["invalid_action"], observation.text


@pytest.mark.slow
def test_a_scripted_correct_solution_scores_one(runtime: None, tmp_path: Path) -> None:
    with make_env("loca", STOCK_ALERT, seed=42, workdir=str(tmp_path / "case")) as env:
        assert isinstance(env, LocaEnvironment)
        first = env.reset()
        assert first.text == env.goal and "stock_threshold" in first.text
        names = [t["name"] for t in first.tools or []]
        assert names == sorted(names) and "claim_done_claim_done" in names
        spec = {"name", "description", "parameters", "read_only", "terminal"}
        assert all(set(t) == spec for t in first.tools or [])
        access = {t["name"]: (t["read_only"], t["terminal"]) for t in first.tools or []}
        # readOnlyHint from the filesystem server; the reviewed table for the others.
        assert access["filesystem_read_text_file"] == (True, False)
        assert access["filesystem_write_file"] == (False, False)
        assert access["claim_done_claim_done"] == (False, True)
        assert access["woocommerce_woo_products_list"] == (True, False)
        assert access["email_send_email"] == (False, False)
        assert first.info["description_tokens"] > 1000 and first.info["length"] == "8k"
        assert first.info["context_length"] == 8000
        fallback = env.step(first.fallback_action or "")
        assert not fallback.info["invalid_action"] and "agent_workspace" in fallback.text
        products = _low_stock_products(env)
        _record_in_sheet(env, products)
        _send_alerts(env, products)
        final = _call(env, "claim_done_claim_done")
    assert final.done and final.success and final.score == 1.0
    assert "passed" in final.text
    assert final.info["steps_used"] == len(products) + 5


@pytest.mark.slow
def test_a_wrong_solution_scores_zero(runtime: None, tmp_path: Path) -> None:
    with make_env("loca", STOCK_ALERT, seed=42, workdir=str(tmp_path / "case")) as env:
        env.reset()
        products = _low_stock_products(env)
        _record_in_sheet(env, products)  # ... but no e-mail to the purchasing manager
        final = _call(env, "claim_done_claim_done")
    assert final.done and not final.success and final.score == 0.0
    assert "failed" in final.text and final.info["evaluation"]["evaluation"] == "failed"


@pytest.mark.slow
def test_running_out_of_tool_calls_fails_and_errors_spend_budget(
    runtime: None, tmp_path: Path
) -> None:
    with make_env("loca", STOCK_ALERT, seed=42, max_steps=3, workdir=str(tmp_path)) as env:
        env.reset()
        malformed = env.step("please list the products")
        assert malformed.info["invalid_action"] and not malformed.done
        tool_error = _call(env, "filesystem_read_file", path="/etc/hostname")
        assert tool_error.info["invalid_action"] and "outside allowed" in tool_error.text
        last = _call(env, "woocommerce_woo_products_list", perPage=1)
    assert last.done and not last.success and last.info["budget_exhausted"]
    assert last.info["steps_used"] == 3


# -- every task, failures, processes --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(CATEGORIES))
def test_every_task_resets_at_8k_with_its_configured_tools(
    runtime: None, task: str, tmp_path: Path
) -> None:
    case = find_case(f"{task}-8k", 42, None, CHECKOUT)
    with make_env("loca", f"{task}-8k", seed=42, workdir=str(tmp_path)) as env:
        assert isinstance(env, LocaEnvironment)
        observation = env.reset()
        assert (tmp_path / "task" / "agent_workspace").is_dir()
        names = [t["name"] for t in observation.tools or []]
        for server in case.mcp_servers:
            assert any(n.startswith(f"{server}_") for n in names), (server, names[:5])
        assert observation.info["description_tokens"] > 0
        assert observation.info["task_category"] == CATEGORIES[task]


def _broken_checkout(tmp_path: Path) -> Path:
    """A copy of the checkout whose stock-alert data generator exits with an error."""
    copy = tmp_path / "LOCA-bench"
    shutil.copytree(CHECKOUT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _, files in os.walk(copy):  # the shared checkout is read-only
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    generator = copy / "gem" / "envs" / "woocommerce_stock_alert_s2l" / "preprocess" / "main.py"
    generator.write_text('raise SystemExit("generator broken on purpose")\n', encoding="utf-8")
    return copy


@pytest.mark.slow
def test_a_failing_data_generator_is_an_infrastructure_error(runtime: None, tmp_path: Path) -> None:
    root = _broken_checkout(tmp_path)
    env = make_env("loca", STOCK_ALERT, loca_root=str(root), workdir=str(tmp_path / "a"))
    with env, pytest.raises(InfrastructureError, match="complete workspace"):
        env.reset()
    spec = CaseSpec(
        env="loca",
        task=STOCK_ALERT,
        agent="raw",
        model="scripted",
        seed=42,
        env_options={"loca_root": str(root)},
    )
    result = run_case(spec, tmp_path / "run" / spec.folder, run_name="t")
    assert result.status == "infra_error" and "generator" in (result.error or "")


@pytest.mark.slow
def test_a_dead_mcp_server_is_an_infrastructure_error(runtime: None, tmp_path: Path) -> None:
    with make_env("loca", STOCK_ALERT, seed=42, workdir=str(tmp_path)) as env:
        assert isinstance(env, LocaEnvironment)
        env.reset()
        bridge = env._bridge
        assert bridge is not None
        servers = [p for p in env.server_pids if p != bridge.process.pid]
        os.kill(servers[0], signal.SIGKILL)
        with pytest.raises(InfrastructureError, match="died"):
            _call(env, "filesystem_list_allowed_directories")


@pytest.mark.slow
def test_no_process_survives_a_finished_case(runtime: None, tmp_path: Path) -> None:
    with make_env("loca", STOCK_ALERT, seed=42, workdir=str(tmp_path)) as env:
        assert isinstance(env, LocaEnvironment)
        env.reset()
        assert env._bridge is not None
        recorded = {p: start_time(p) or "" for p in env.server_pids}
        assert len(recorded) >= 7  # the bridge and the case's six servers
        _call(env, "claim_done_claim_done")
    assert _gone(recorded, within=5.0) == []
    assert not (tmp_path / "task" / "local_db").exists()
    assert (tmp_path / "task" / "logs" / "env.log").is_file()


_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pos_agent.envs import make_env
    with make_env("loca", "WoocommerceStockAlert-8k", seed=42, workdir=sys.argv[1]) as env:
        env.reset()
        print(json.dumps(env.server_pids), flush=True)
        time.sleep(600)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_no_process_survives_a_stopped_worker(
    runtime: None, tmp_path: Path, stop: signal.Signals
) -> None:
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline()
        pids = json.loads(line)
        recorded = {p: start_time(p) or "" for p in pids}
        assert len(alive(recorded)) >= 7
        worker.send_signal(stop)
        worker.wait(timeout=180)
        assert _gone(recorded, within=15.0) == []
    finally:
        if worker.poll() is None:
            worker.kill()


_SETUP_WORKER = textwrap.dedent(
    """
    import sys
    from pos_agent.envs import make_env
    with make_env("loca", "WoocommerceStockAlert-32k", seed=42, workdir=sys.argv[1]) as env:
        env.reset()
    """
)


def _descendants(root: int) -> dict[int, str]:
    """Live descendants of `root` (pid -> start time), from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text(errors="replace")
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found and (started := start_time(pid)):
                found[pid] = started
                frontier.append(pid)
    return found


@pytest.mark.slow
def test_ctrl_c_during_data_generation_stops_everything(runtime: None, tmp_path: Path) -> None:
    worker = subprocess.Popen(
        [sys.executable, "-c", _SETUP_WORKER, str(tmp_path)], stderr=subprocess.DEVNULL
    )
    try:
        recorded: dict[int, str] = {}
        # A bound for a loaded machine (a reset took more than 60 s there), not a speed target.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not (tmp_path / "task" / "logs").is_dir():
            recorded.update(_descendants(worker.pid))
            time.sleep(0.05)
        recorded.update(_descendants(worker.pid))
        assert recorded, "the case never started its bridge"
        worker.send_signal(signal.SIGINT)  # while LOCA's generator runs
        worker.wait(timeout=180)
        assert _gone(recorded, within=15.0) == []
    finally:
        if worker.poll() is None:
            worker.kill()


def _gone(recorded: dict[int, str], within: float) -> list[int]:
    """The recorded processes still alive after waiting up to `within` seconds."""
    deadline = time.monotonic() + within
    while alive(recorded) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive(recorded)


# -- the agents on a LOCA case ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["pos", "raw"])
def test_an_embedded_model_episode_finishes_with_a_result(
    runtime: None, agent: str, tmp_path: Path
) -> None:
    # One tool call keeps CI fast (the suites keep the paper's 100); NhlB2bAnalysis offers the
    # fewest tools (33), so the embedded model's prompts are the shortest of the 15 tasks.
    spec = CaseSpec(
        env="loca", task="NhlB2bAnalysis-8k", agent=agent, model="local", seed=42, max_steps=1
    )
    result = run_case(spec, tmp_path / spec.folder, run_name="t")
    assert result.status in ("success", "failure"), result.error
    assert result.steps >= 1 and result.category == "analytics"
    assert result.extra["length"] == "8k" and result.extra["context_length"] == 8000
    assert result.extra["description_tokens"] > 0
    assert (tmp_path / spec.folder / "env" / "task" / "logs" / "env.log").is_file()

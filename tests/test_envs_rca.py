"""RCA over the shipped Nezha cases: listing, every tool, turns of several calls, both budgets,
scoring (FT/RCL/Joint at pod or service level), malformed submissions, complete tool schemas,
the fallback action, times read against the case's own date, named span records, and that no
argument can reach the answers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import pos_agent.envs.rca as rca
import pos_agent.envs.rca.submission as rca_submission
from extras import needs_pyarrow
from pos_agent.envs import EnvError, Observation, list_tasks, make_env
from pos_agent.envs.rca import RcaAnswer, normalize_fault_type, score_submission
from pos_agent.envs.tools import parse_tool_calls, tool_schema_problems

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# Output bound of one tool call (MAX_OUTPUT_CHARS plus the budget line and clipping note).
OUTPUT_BOUND = rca.MAX_OUTPUT_CHARS + 200


@pytest.fixture(scope="module")
def nezha_dir() -> Path:
    path = SHARED_DATA / "rca-nezha"
    if not path.is_dir():
        message = f"{path} is missing: the RCA tests need ../shared/data/rca-nezha"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


def act(*calls: dict[str, Any] | str) -> str:
    return json.dumps(calls[0] if len(calls) == 1 else list(calls))


def answer_of(root: Path, case_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "answers" / f"{case_id}.json").read_text())
    return data


# -- listing ------------------------------------------------------------------------------------


def test_lists_the_shipped_cases_by_system(nezha_dir: Path) -> None:
    tasks = list_tasks("rca-nezha", data_dir=nezha_dir)
    assert len(tasks) == 101
    counts = {s: sum(t.category == s for t in tasks) for s in ("online-boutique", "train-ticket")}
    assert counts == {"online-boutique": 56, "train-ticket": 45}
    tt = list_tasks("rca-nezha", "train-ticket", data_dir=nezha_dir)
    assert len(tt) == 45 and all(t.task_id.startswith("nz-tt-") for t in tt)
    with pytest.raises(EnvError, match="Unknown RCA split"):
        list_tasks("rca-nezha", "sock-shop", data_dir=nezha_dir)


@needs_pyarrow
def test_generic_rca_needs_a_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POS_RCA_DATA", raising=False)
    with pytest.raises(EnvError, match="POS_RCA_DATA"):
        list_tasks("rca")
    with pytest.raises(EnvError, match="POS_RCA_DATA"):
        make_env("rca", "nz-tt-010")


@needs_pyarrow
def test_numeric_options_are_checked_before_any_data_is_read() -> None:
    with pytest.raises(EnvError, match=r"max_tool_calls must be an integer \(got 'many'\)"):
        make_env("rca-nezha", "nz-tt-010", max_tool_calls="many")
    with pytest.raises(EnvError, match="setup_timeout must be a number of seconds"):
        make_env("loca", "WoocommerceStockAlert-8k", setup_timeout="soon")


# -- a scripted SRE on real cases ---------------------------------------------------------------


@needs_pyarrow
@pytest.mark.parametrize("case_id", ["nz-tt-010", "nz-ob-005", "nz-ob-008"])
def test_every_tool_answers_within_bounds_and_the_right_answer_scores_one(
    nezha_dir: Path, case_id: str
) -> None:
    truth = answer_of(nezha_dir, case_id)
    pod, service = truth["root_cause_entities"]
    with make_env("rca-nezha", case_id, data_dir=nezha_dir) as env:
        first = env.reset()
        assert env.kind == "diagnosis" and env.max_steps == 50
        assert first.tools is not None and first.admissible_actions is None
        assert len(first.tools) == 9
        actions = [
            act(call("get_data_overview")),
            act(call("list_entities")),
            act(call("list_entities", type="pod")),
            act(call("list_metric_names")),
            act(call("list_metric_names", entity=service)),
            act(call("get_topology")),
            act(call("get_topology", entity=pod)),
            act(call("query_metrics", metric="CpuUsageRate(%)")),
            act(call("query_metrics", entity=service)),
            act(call("query_metrics", entity=pod, metric="PodServerLatencyP90")),
            act(call("search_logs")),
            act(call("search_logs", pattern="error|exception", limit=5)),
            act(call("query_traces")),
            act(call("query_traces", service=service)),
            act(call("get_alerts")),
        ]
        for action in actions:
            observation = env.step(action)
            assert not observation.done
            assert not observation.info["invalid_action"], observation.text
            assert "Error:" not in observation.text, observation.text
            assert len(observation.text) <= OUTPUT_BOUND, (action, len(observation.text))
        done = env.step(
            act(
                call(
                    "submit_root_cause",
                    root_cause_entity=service,
                    fault_type=truth["root_cause_types"][0],
                    analysis="scripted",
                )
            )
        )
    assert done.done and done.success and done.score == 1.0
    assert done.info["metrics"] == {"FT": 1, "RCL": 1, "Joint": 1}
    assert done.info["judge"] == "matcher"
    assert done.info["subset"] == done.info["task_category"]
    assert done.tools is None


@needs_pyarrow
def test_pod_or_service_level_and_wrong_answers(nezha_dir: Path) -> None:
    truth = answer_of(nezha_dir, "nz-tt-010")
    pod, service = truth["root_cause_entities"]

    def submit(entity: str, fault_type: str) -> Observation:
        with make_env("rca-nezha", "nz-tt-010", data_dir=nezha_dir) as env:
            env.reset()
            return env.step(
                act(call("submit_root_cause", root_cause_entity=entity, fault_type=fault_type))
            )

    by_pod = submit(pod, "return")
    assert by_pod.info["metrics"] == {"FT": 1, "RCL": 1, "Joint": 1}
    assert by_pod.info["rcl_pod_exact"]
    by_prefix = submit("ts-verification-code", "return")
    assert by_prefix.info["submission"]["root_cause_entity"] == service
    assert by_prefix.success
    wrong_type = submit(service, "exception")
    assert wrong_type.info["metrics"] == {"FT": 0, "RCL": 1, "Joint": 0}
    assert wrong_type.done and not wrong_type.success and wrong_type.score == 0.0
    wrong_entity = submit("ts-auth-service", "return")
    assert wrong_entity.info["metrics"] == {"FT": 1, "RCL": 0, "Joint": 0}
    node = submit("33.33.33.155", "return")
    assert node.info["metrics"]["RCL"] == 0


def test_scoring_is_pure_and_alias_aware() -> None:
    answer = RcaAnswer(root_cause_entities=["cart-1", "cart"], root_cause_types=["cpu_consumed"])
    services = {"cart-1": "cart", "cart-2": "cart", "cart": "cart", "ad-1": "ad"}
    score = score_submission(answer, "cart-2", "CPU hog", services.get)
    assert score.ft and score.rcl and not score.pod_exact and score.joint
    assert not score_submission(answer, "ad-1", "cpu_consumed", services.get).rcl
    assert normalize_fault_type("Network Jam") == "network_delay"
    assert normalize_fault_type("cpu-contention") == "cpu_contention"


@needs_pyarrow
def test_malformed_submissions_are_errors_that_can_be_retried(nezha_dir: Path) -> None:
    with make_env("rca-nezha", "nz-tt-010", data_dir=nezha_dir, max_steps=5) as env:
        env.reset()
        unknown_entity = env.step(
            act(call("submit_root_cause", root_cause_entity="ts-nonexistent", fault_type="return"))
        )
        assert not unknown_entity.done and unknown_entity.info["invalid_action"]
        assert "Submit again" in unknown_entity.text
        unknown_type = env.step(
            act(
                call(
                    "submit_root_cause",
                    root_cause_entity="ts-verification-code-service",
                    fault_type="gremlins",
                )
            )
        )
        assert not unknown_type.done and "cpu_contention" in unknown_type.text
        missing = env.step('{"tool": "submit_root_cause", "args": {"fault_type": "return"}}')
        assert not missing.done and "root_cause_entity" in missing.text
        garbage = env.step("the root cause is the verification code service")
        assert not garbage.done and '{"tool"' in garbage.text
        done = env.step(
            act(
                call(
                    "submit_root_cause",
                    root_cause_entity="ts-verification-code-service",
                    fault_type="wrong return value",
                )
            )
        )
    assert done.success and done.info["steps_used"] == 5


@needs_pyarrow
def test_turns_of_several_calls(nezha_dir: Path) -> None:
    with make_env("rca-nezha", "nz-ob-005", data_dir=nezha_dir) as env:
        env.reset()
        three = env.step(
            act(call("get_alerts"), call("list_entities", type="node"), "get_topology")
        )
        assert "[1] get_alerts" in three.text and "[3] get_topology" in three.text
        assert three.info["tool_calls_used"] == 3 and three.info["steps_used"] == 1
        four = env.step(json.dumps([call("get_alerts")] * 4))
        assert four.info["invalid_action"] and "at most 3" in four.text
        assert four.info["tool_calls_used"] == 3
        mixed = env.step(
            act(call("query_metrics"), call("get_alerts"))
        )  # one failing call of two: the turn is still valid
        assert not mixed.info["invalid_action"] and "Error:" in mixed.text
        done = env.step(
            act(
                call("get_alerts"),
                call(
                    "submit_root_cause", root_cause_entity="cartservice", fault_type="network_delay"
                ),
                call("get_topology"),
            )
        )
    assert done.done and done.success
    assert "[1] get_alerts" in done.text and "[3]" not in done.text
    assert done.info["tool_calls_used"] == 7


@needs_pyarrow
def test_tool_call_budget_ends_the_case(nezha_dir: Path) -> None:
    with make_env("rca-nezha", "nz-ob-005", data_dir=nezha_dir, max_tool_calls=4) as env:
        env.reset()
        env.step(act(call("get_alerts"), call("get_alerts"), call("get_alerts")))
        last = env.step(act(call("get_alerts"), call("get_topology"), call("get_alerts")))
    assert last.done and not last.success
    assert "Not run" in last.text and "Tool-call budget of 4 exhausted" in last.text
    assert last.info["metrics"] == {"FT": 0, "RCL": 0, "Joint": 0}
    assert last.info["budget_exhausted"]


@needs_pyarrow
def test_no_submission_is_a_failure(nezha_dir: Path) -> None:
    with make_env("rca-nezha", "nz-ob-005", data_dir=nezha_dir, max_steps=2) as env:
        env.reset()
        env.step(act(call("get_alerts")))
        last = env.step("not an action")
    assert last.done and not last.success and last.info["budget_exhausted"]
    assert last.info["metrics"] == {"FT": 0, "RCL": 0, "Joint": 0}


# -- the answers stay out of reach --------------------------------------------------------------


@pytest.mark.parametrize(
    "case_id", ["../answers/nz-tt-010", "nz-tt-010/../nz-tt-011", "/etc/passwd", "..", ".", ""]
)
def test_case_ids_cannot_name_other_folders(nezha_dir: Path, case_id: str) -> None:
    with pytest.raises(EnvError):
        make_env("rca-nezha", case_id, data_dir=nezha_dir)


@needs_pyarrow
def test_no_tool_argument_reaches_the_answers(
    nezha_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real_read = rca_submission.read_answer

    def counting_read(answers_dir: Path, case_id: str) -> RcaAnswer:
        reads.append(case_id)
        return real_read(answers_dir, case_id)

    monkeypatch.setattr(rca_submission, "read_answer", counting_read)
    answer_file = nezha_dir / "answers" / "nz-tt-010.json"
    probes = [
        "../answers/nz-tt-010.json",
        "../../answers/nz-tt-010",
        str(answer_file),
        "nz-tt-011",
        "answers",
        "index.jsonl",
    ]
    texts: list[str] = []
    with make_env("rca-nezha", "nz-tt-010", data_dir=nezha_dir) as env:
        env.reset()
        for probe in probes:
            for action in (
                call("query_metrics", entity=probe),
                call("query_metrics", metric=probe),
                call("search_logs", pattern="root_cause", entity=probe),
                call("list_metric_names", entity=probe),
                call("get_topology", entity=probe),
                call("query_traces", service=probe, operation=probe),
            ):
                texts.append(env.step(act(action)).text)
        texts.append(env.step(act(call("search_logs", pattern="root_cause_entities"))).text)
        texts.append(env.step(act(call("get_data_overview"))).text)
        assert reads == []
        done = env.step(
            act(call("submit_root_cause", root_cause_entity=probes[0], fault_type="return"))
        )
        assert not done.done and reads == []  # an unknown entity is refused before scoring
        env.step(
            act(call("submit_root_cause", root_cause_entity="ts-auth-service", fault_type="return"))
        )
    assert reads == ["nz-tt-010"]
    leaked = ("root_cause_types", "inject_time", "Nezha 2023-01-29", '"root_cause_entities"')
    assert not any(marker in text for text in texts for marker in leaked)


@needs_pyarrow
def test_a_broken_telemetry_file_is_a_tool_error_not_a_crash(
    nezha_dir: Path, tmp_path: Path
) -> None:
    for folder in ("cases/nz-ob-005",):
        shutil.copytree(nezha_dir / folder, tmp_path / folder)
    (tmp_path / "answers").mkdir()
    shutil.copy(nezha_dir / "answers/nz-ob-005.json", tmp_path / "answers")
    (tmp_path / "cases/nz-ob-005/traces.parquet").write_bytes(b"not parquet")
    (tmp_path / "cases/nz-ob-005/logs.parquet").unlink()
    with make_env("rca", "nz-ob-005", data_dir=tmp_path) as env:
        env.reset()
        broken = env.step(act(call("query_traces")))
        assert not broken.done and broken.info["invalid_action"]
        assert "traces.parquet could not be read" in broken.text
        missing = env.step(act(call("search_logs", pattern="error")))
        assert "no logs" in missing.text
        done = env.step(
            act(
                call(
                    "submit_root_cause", root_cause_entity="cartservice", fault_type="network_delay"
                )
            )
        )
    assert done.success


@needs_pyarrow
def test_missing_answer_file_is_a_setup_error(nezha_dir: Path, tmp_path: Path) -> None:
    shutil.copytree(nezha_dir / "cases/nz-ob-005", tmp_path / "cases/nz-ob-005")
    with pytest.raises(EnvError, match="answer file"):
        make_env("rca", "nz-ob-005", data_dir=tmp_path)


# -- tool schemas, several calls a turn, the fallback action ------------------------------------


@needs_pyarrow
def test_every_tool_schema_is_complete_with_the_fault_types_as_an_enum(nezha_dir: Path) -> None:
    with rca.RcaEnvironment("nz-tt-010", data_dir=nezha_dir) as env:
        first = env.reset()
    assert first.tools is not None
    for tool in first.tools:
        parameters = tool["parameters"]
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert isinstance(parameters["required"], list), tool["name"]
        for name, schema in parameters["properties"].items():
            assert schema.get("type") and schema.get("description"), (tool["name"], name)
    assert all(tool_schema_problems(spec) == [] for spec in env.tool_specs)
    submit = next(t for t in first.tools if t["name"] == "submit_root_cause")
    assert submit["parameters"]["properties"]["fault_type"]["enum"] == list(rca.DEFAULT_FAULT_TYPES)
    assert submit["parameters"]["required"] == ["root_cause_entity", "fault_type"]
    types = next(t for t in first.tools if t["name"] == "list_entities")
    assert types["parameters"]["properties"]["type"]["enum"] == ["service", "pod", "node"]


@needs_pyarrow
def test_a_case_listing_its_own_fault_types_gets_them_in_the_schema(
    nezha_dir: Path, tmp_path: Path
) -> None:
    root = copy_case(nezha_dir, tmp_path, "nz-ob-005")
    task_file = root / "cases/nz-ob-005/task.json"
    task = json.loads(task_file.read_text())
    task["fault_types"] = ["network_delay", "pod_failure"]
    task_file.write_text(json.dumps(task))
    with make_env("rca", "nz-ob-005", data_dir=root) as env:
        first = env.reset()
        assert first.tools is not None
        submit = next(t for t in first.tools if t["name"] == "submit_root_cause")
        assert submit["parameters"]["properties"]["fault_type"]["enum"] == [
            "network_delay",
            "pod_failure",
        ]
        # A spelling of a listed type is still accepted and recorded as the listed type.
        done = env.step(
            act(call("submit_root_cause", root_cause_entity="cartservice", fault_type="Latency"))
        )
    assert done.info["submission"]["fault_type"] == "network_delay" and done.success


@needs_pyarrow
def test_observations_offer_three_calls_and_a_read_only_fallback(nezha_dir: Path) -> None:
    with rca.RcaEnvironment("nz-ob-005", data_dir=nezha_dir) as env:
        first = env.reset()
        assert first.max_calls == 3
        assert first.fallback_action is not None
        (fallback,) = parse_tool_calls(first.fallback_action, env.tool_specs)
        assert fallback.tool == "get_data_overview"
        after = env.step(first.fallback_action)
        assert not after.done and not after.info["invalid_action"]
        assert "Topology:" in after.text and after.info["tool_calls_used"] == 1
        assert after.max_calls == 3 and after.fallback_action == first.fallback_action
        done = env.step(
            act(call("submit_root_cause", root_cause_entity="cartservice", fault_type="return"))
        )
    assert done.done and done.fallback_action is None


# -- times come from the case, never from the day the code runs ---------------------------------


def copy_case(nezha_dir: Path, root: Path, case_id: str) -> Path:
    shutil.copytree(nezha_dir / "cases" / case_id, root / "cases" / case_id)
    (root / "answers").mkdir(exist_ok=True)
    shutil.copy(nezha_dir / "answers" / f"{case_id}.json", root / "answers")
    for path in (root / "cases" / case_id).iterdir():
        path.chmod(0o644)  # the shared data are read-only; the copy is edited
    return root


def edit_task(root: Path, case_id: str, **changes: Any) -> None:
    path = root / "cases" / case_id / "task.json"
    task = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            task.pop(key, None)
        else:
            task[key] = value
    path.write_text(json.dumps(task))


@needs_pyarrow
def test_clock_times_are_read_on_the_date_of_the_case_data(nezha_dir: Path, tmp_path: Path) -> None:
    # nz-tt-010's telemetry is from 2023-01-29, about 09:38-09:46 UTC. Without an alert time or
    # window, "09:40" must be read on that date (from the data), not on the day the test runs.
    root = copy_case(nezha_dir, tmp_path, "nz-tt-010")
    edit_task(root, "nz-tt-010", alert_time=None, alert_window=None)
    query = call(
        "query_metrics", entity="ts-ui-dashboard", metric="CpuUsageRate", start="09:38", end="09:50"
    )
    with make_env("rca", "nz-tt-010", data_dir=root) as env:
        env.reset()
        relative = env.step(act(query)).text
        absolute = env.step(
            act(
                call(
                    "query_metrics",
                    entity="ts-ui-dashboard",
                    metric="CpuUsageRate",
                    start="2023-01-29T09:38:00Z",
                    end="2023-01-29T09:50:00Z",
                )
            )
        ).text
    assert "Series (" in relative and "No metric points" not in relative
    assert relative.split("\n[")[0] == absolute.split("\n[")[0]


@needs_pyarrow
def test_a_dateless_alert_time_takes_the_window_date(nezha_dir: Path, tmp_path: Path) -> None:
    root = copy_case(nezha_dir, tmp_path, "nz-tt-010")
    edit_task(root, "nz-tt-010", alert_time="09:44:26")
    with make_env("rca", "nz-tt-010", data_dir=root) as env:
        env.reset()
        overview = env.step(act(call("get_data_overview"))).text
    # The split is 3 minutes before the alert, on the alert window's date.
    assert "split at 09:41:26" in overview


def test_a_case_with_no_time_at_all_asks_for_full_timestamps(
    nezha_dir: Path, tmp_path: Path
) -> None:
    root = copy_case(nezha_dir, tmp_path, "nz-ob-005")
    edit_task(root, "nz-ob-005", alert_time=None, alert_window=None)
    for name in ("metrics", "logs", "traces", "alerts"):
        (root / "cases/nz-ob-005" / f"{name}.parquet").unlink()
    telemetry = rca.CaseTelemetry(root / "cases/nz-ob-005")
    assert telemetry.reference_time is None and telemetry.alert_time is None
    with pytest.raises(rca.ToolFailure, match="full ISO-8601"):
        telemetry.window("09:40", None)
    assert telemetry.window("2023-01-29T09:40:00Z", None)[0] is not None


# -- span records ---------------------------------------------------------------------------------


@needs_pyarrow
def test_spans_are_named_records_and_error_status_is_one_constant(nezha_dir: Path) -> None:
    import pyarrow.parquet as pq

    folder = nezha_dir / "cases/nz-tt-010"
    table = pq.read_table(folder / "traces.parquet").to_pylist()
    spans = rca.CaseTelemetry(folder).spans()
    assert len(spans) == len(table)
    first, row = spans[0], table[0]
    assert (first.span_id, first.service, first.name) == (
        row["spanId"],
        row["serviceName"],
        row["spanName"],
    )
    assert first.duration_ms == pytest.approx(row["duration"] / 1e6)
    failed = sum(str(r["statusCode"]) == rca.SPAN_ERROR_STATUS for r in table)
    assert failed == 36  # the case has error spans, so the count below can be wrong
    assert sum(span.failed for span in spans) == failed
    with make_env("rca-nezha", "nz-tt-010", data_dir=nezha_dir) as env:
        env.reset()
        overview = env.step(act(call("get_data_overview"))).text
    assert f"{failed} with error status" in overview


# -- layout ---------------------------------------------------------------------------------------


def test_diagnosis_environments_are_packages_of_small_modules() -> None:
    envs = Path(rca.__file__).resolve().parents[1]
    for name in ("rca", "clindiag"):
        assert (envs / name / "__init__.py").is_file() and not (envs / f"{name}.py").exists()
        modules = sorted((envs / name).rglob("*.py"))
        # One job per file, not one file renamed (tests/test_layers.py bounds their length).
        assert len(modules) >= 6, name

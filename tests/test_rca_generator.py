"""The incident generator: layout, determinism, the fault and its propagation, the red herring,
and a round trip through the `rca` environment (scripted and heuristic SREs)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pos_agent.envs import EnvError, list_tasks, make_env
from pos_agent.envs.rca import DEFAULT_FAULT_TYPES
from pos_agent.envs.rca.generator import ENTRY, generate

pq = pytest.importorskip(
    "pyarrow.parquet", reason="needs the `diagnosis` extra (pyarrow): uv sync --extra diagnosis"
)

CASE_FILES = (
    "task.json",
    "topology.json",
    "metrics.parquet",
    "logs.parquet",
    "traces.parquet",
    "alerts.parquet",
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synthetic")
    generate(root, 10, seed=11)
    return root


def index_rows(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "index.jsonl").read_text().splitlines()]


def us(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1_000_000)


def test_writes_the_rca100_layout(generated: Path) -> None:
    rows = index_rows(generated)
    assert [r["case_id"] for r in rows] == [f"syn-11-{i:04d}" for i in range(10)]
    for row in rows:
        folder = generated / "cases" / row["case_id"]
        assert all((folder / name).is_file() for name in CASE_FILES)
        answer = json.loads((generated / "answers" / f"{row['case_id']}.json").read_text())
        assert answer["root_cause_entities"] == [row["root_cause_pod"], row["root_cause_service"]]
        assert answer["root_cause_types"] == [row["fault_type"]]
        task = json.loads((folder / "task.json").read_text())
        # The agent-visible task never names the fault, its pod or its service.
        visible = json.dumps(task)
        assert row["root_cause_service"] not in visible.replace(ENTRY, "")
        assert row["root_cause_pod"] not in visible
        assert task["fault_types"] == list(DEFAULT_FAULT_TYPES)
    assert {r["fault_type"] for r in rows[:5]} == set(DEFAULT_FAULT_TYPES)


def test_same_seed_same_bytes_other_seed_other_cases(tmp_path: Path, generated: Path) -> None:
    generate(tmp_path / "again", 3, seed=11)
    generate(tmp_path / "other", 3, seed=12)
    for case in ("syn-11-0000", "syn-11-0001", "syn-11-0002"):
        for name in CASE_FILES:
            first = (generated / "cases" / case / name).read_bytes()
            assert first == (tmp_path / "again" / "cases" / case / name).read_bytes(), name
    mine = (generated / "cases/syn-11-0000/topology.json").read_text()
    theirs = (tmp_path / "other/cases/syn-12-0000/topology.json").read_text()
    assert mine != theirs
    with pytest.raises(EnvError):
        generate(tmp_path / "none", 0, seed=1)


def _series(folder: Path, metric: str) -> dict[str, list[tuple[int, float]]]:
    table = pq.read_table(folder / "metrics.parquet").to_pylist()
    out: dict[str, list[tuple[int, float]]] = {}
    for row in table:
        if row["metric"] == metric:
            out.setdefault(row["entity_name"], []).append((row["time"], row["value"]))
    return out


def _mean(points: list[tuple[int, float]], low: int, high: int) -> float:
    values = [v for t, v in points if low <= t < high]
    return sum(values) / len(values)


def test_fault_symptoms_propagate_along_the_calls(generated: Path) -> None:
    fired = 0
    for row in index_rows(generated):
        folder = generated / "cases" / row["case_id"]
        topology = json.loads((folder / "topology.json").read_text())
        calls = [(e["src"], e["dst"]) for e in topology["edges"] if e["relation"] == "calls"]
        pods = {
            e["name"]: e["props"]["service"] for e in topology["entities"] if e["type"] == "pod"
        }
        callers = {src for src, dst in calls if dst == row["root_cause_service"]}
        assert callers, "the faulty service is called by someone"
        start, fault = us(row["window_start"]), us(row["inject_time"])
        during = fault + 3 * 60_000_000
        if row["fault_type"] in ("cpu_consumed", "cpu_contention", "network_delay"):
            latency = _series(folder, "PodServerLatencyP90(s)")
            faulty = latency[row["root_cause_pod"]]
            assert _mean(faulty, fault, during) > 3 * _mean(faulty, start, fault)
            for pod, service in pods.items():
                if service in callers:
                    series = latency[pod]
                    assert _mean(series, fault, during) > 1.5 * _mean(series, start, fault)
        else:
            logs = pq.read_table(folder / "logs.parquet").to_pylist()
            complaints = {
                pods[r["_pod_name_"]]
                for r in logs
                if row["root_cause_service"] in r["content"] and r["_time_"] >= fault
            }
            assert complaints & callers
        alerts = pq.read_table(folder / "alerts.parquet").to_pylist()
        if alerts:
            fired += 1
            assert alerts[0]["status"] == "firing" and alerts[0]["time"] >= fault
    # As in Nezha, a fault deep in the graph does not always move the entry enough to alert.
    assert fired >= 8


def test_every_case_has_a_red_herring(generated: Path) -> None:
    for row in index_rows(generated):
        folder = generated / "cases" / row["case_id"]
        herring = row["red_herring_pod"]
        assert herring != row["root_cause_pod"]
        assert not herring.startswith(row["root_cause_service"] + "-")
        logs = pq.read_table(folder / "logs.parquet").to_pylist()
        fault = us(row["inject_time"])
        errors = [
            r["_time_"] for r in logs if r["_pod_name_"] == herring and "ERROR" in r["content"]
        ]
        assert min(errors) < fault <= max(errors)  # steady: before and during the incident
        cpu = _series(folder, "CpuUsageRate(%)")[herring]
        baseline = _mean(cpu, us(row["window_start"]), fault)
        assert max(v for t, v in cpu if t >= fault) > 2.5 * baseline


def test_round_trip_through_the_environment(generated: Path) -> None:
    tasks = list_tasks("rca", data_dir=generated)
    assert len(tasks) == 10 and {t.category for t in tasks} == {"synthetic-shop"}
    for row in index_rows(generated)[:5]:
        for entity, fault_type, expected in (
            (row["root_cause_pod"], row["fault_type"], 1),
            (row["root_cause_service"], row["fault_type"], 1),
            (row["red_herring_pod"], row["fault_type"], 0),
        ):
            with make_env("rca", row["case_id"], data_dir=generated) as env:
                env.reset()
                overview = env.step('{"tool": "get_data_overview"}')
                assert "synthetic-shop" in overview.text
                done = env.step(
                    json.dumps(
                        {
                            "tool": "submit_root_cause",
                            "args": {"root_cause_entity": entity, "fault_type": fault_type},
                        }
                    )
                )
            assert done.done and done.info["metrics"]["Joint"] == expected


def _heuristic_submission(env: Any) -> tuple[str, str]:
    """An SRE that reads the tools' text: logs for code faults, latency and CPU for the rest."""

    def ask(tool: str, **args: Any) -> str:
        text: str = env.step(json.dumps({"tool": tool, "args": args})).text
        return text

    exceptions = ask("search_logs", pattern="exception", limit=1)
    if "matching lines" in exceptions:
        pod = re.search(r"per pod: ([^ ]+) ", exceptions)
        assert pod is not None
        return pod.group(1), "exception"
    invalid = ask("search_logs", pattern="invalid response from", limit=1)
    if "matching lines" in invalid:
        service = re.search(r"invalid response from ([\w-]+)", invalid)
        assert service is not None
        return service.group(1), "return"
    latency = ask("query_metrics", metric="PodServerLatencyP90(s)")
    top = latency.splitlines()[1].strip().split(":")[0]
    cpu = ask("query_metrics", entity=top, metric="CpuUsageRate(%)")
    node = ask("query_metrics", entity=top, metric="NodeCpuUsageRate(%)")
    peak = float(re.search(r"peak ([\d.]+)", cpu).group(1))  # type: ignore[union-attr]
    node_peak = float(re.search(r"peak ([\d.]+)", node).group(1))  # type: ignore[union-attr]
    if peak >= 85:
        return top, "cpu_consumed"
    if node_peak >= 80:
        return top, "cpu_contention"
    return top, "network_delay"


def test_a_heuristic_sre_can_solve_generated_cases(generated: Path) -> None:
    solved = 0
    for row in index_rows(generated):
        with make_env("rca", row["case_id"], data_dir=generated) as env:
            env.reset()
            entity, fault_type = _heuristic_submission(env)
            done = env.step(
                json.dumps(
                    {
                        "tool": "submit_root_cause",
                        "args": {"root_cause_entity": entity, "fault_type": fault_type},
                    }
                )
            )
        solved += done.info["metrics"]["Joint"]
    assert solved >= 9

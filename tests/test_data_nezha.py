"""The Nezha -> RCA100 converter: on a tiny upstream tree in Nezha's shape (every rule checked
by hand), and, where the upstream snapshot and the reference conversion are on the machine,
against the reference cases, table by table."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from data_fakes import CART, DATE, ERROR_SPAN, FRONT, TEN_O_CLOCK, make_nezha, pin
from extras import needs_pyarrow
from pos_agent.data import DataError, get, status
from pos_agent.data.nezha import PINNED, convert
from pos_agent.data.tree import FolderTree, GitTree
from pos_agent.envs import list_tasks, make_env

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
# Snapshots of upstream repositories (what the `fetch` tool leaves); elsewhere, set the variable.
MIRRORS = Path(os.environ.get("POS_TEST_MIRRORS", "/work/.mirror"))
NEZHA_GIT = MIRRORS / "IntelligentDDS+Nezha" / "repo"
CLINDIAG_GIT = MIRRORS / "geteff1+ClinDiag" / "repo"
PINS = [
    "LICENSE",
    f"rca_data/{DATE}/{DATE}-fault_list.json",
    f"rca_data/{DATE}/metric",
    f"rca_data/{DATE}/log",
    f"rca_data/{DATE}/trace",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("POS_DATA", str(tmp_path / "pos-data"))
    monkeypatch.delenv("POS_RCA_DATA", raising=False)
    return tmp_path / "pos-data"


def _table(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


@needs_pyarrow
def test_a_tiny_nezha_tree_becomes_two_cases_by_the_documented_rules(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_nezha(tmp_path / "Nezha")
    pin(monkeypatch, "rca-nezha", root, PINS)
    out = get("rca-nezha", str(root))
    assert sorted(p.name for p in (out / "cases").iterdir()) == ["nz-ob-001", "nz-ob-002"]
    first = json.loads((out / "cases" / "nz-ob-001" / "task.json").read_text())
    assert first["alert_window"] == {"start": f"{DATE}T09:59:30Z", "end": f"{DATE}T10:09:30Z"}
    assert first["alert_time"] == f"{DATE}T10:07:30Z" and first["alert_entity"] == "frontend"
    assert "cartservice" not in json.dumps(first)
    answer = json.loads((out / "answers" / "nz-ob-001.json").read_text())
    assert answer["root_cause_entities"] == [CART, "cartservice"]
    assert answer["root_cause_types"] == ["cpu_contention"]
    index = [json.loads(line) for line in (out / "index.jsonl").read_text().splitlines()]
    assert index[1]["window_notes"] == ["window start moved to previous injection + 4 min"]
    assert (
        index[1]["window_start"] == f"{DATE}T10:09:30Z"
        and index[1]["prev_injection_gap_s"] == 420.0
    )
    assert index[0]["log_files_used"] == ["10_05_log.csv"] and index[1]["log_files_used"] == []

    case = out / "cases" / "nz-ob-001"
    metrics = _table(case / "metrics.parquet")
    assert {row["metric"] for row in metrics} == {
        "CpuUsageRate(%)",
        "PodServerLatencyP90(s)",
        "SuccessRate(%)",
        "LatencyP90(s)",
    }
    assert len(metrics) == 60, (
        "10 minutes x (2 pods x 2 metrics + 2 entry metrics); the all-zero column is dropped"
    )
    assert metrics == sorted(metrics, key=lambda r: (r["time"], r["entity_name"], r["metric"]))
    logs = _table(case / "logs.parquet")
    assert [row["content"] for row in logs] == ["ERROR cart store unreachable", "INFO cart ok"]
    spans = _table(case / "traces.parquet")
    assert len(spans) == 2, "the duplicated span is kept once"
    failing = [s for s in spans if s["statusCode"] == "2"]
    assert [s["spanId"] for s in failing] == [ERROR_SPAN]
    assert (
        failing[0]["statusMessage"]
        == "derived from ERROR log on this span: ERROR cart store unreachable"
    )
    assert [s["parentSpanId"] for s in spans if s["serviceName"] == "frontend"] == [""]
    alerts = _table(case / "alerts.parquet")
    assert [(a["time"] // 10**6 - TEN_O_CLOCK, a["status"], a["severity"]) for a in alerts] == [
        (6 * 60 + 11, "firing", "warning"),
        (8 * 60 + 11, "resolved", "info"),
    ]
    assert json.loads(alerts[0]["data"])["baseline_median"] == 0.2
    topology = json.loads((case / "topology.json").read_text())
    assert [e["id"] for e in topology["entities"] if e["type"] == "node"] == [
        "10.0.0.1",
        "10.0.0.2",
    ]
    assert {"src": "frontend", "dst": "cartservice", "relation": "calls"} in topology["edges"]
    assert {"src": FRONT, "dst": "10.0.0.1", "relation": "hosted_on"} in topology["edges"]

    # The environment finds the prepared folder with no option and no variable, and scores it.
    assert [t.task_id for t in list_tasks("rca-nezha")] == ["nz-ob-001", "nz-ob-002"]
    with make_env("rca-nezha", "nz-ob-001") as env:
        env.reset()
        seen = env.step(json.dumps({"tool": "get_alerts", "args": {}}))
        assert "EntryLatencyP90High" in seen.text
        call = {"root_cause_entity": "cartservice", "fault_type": "cpu_contention", "analysis": "t"}
        done = env.step(json.dumps({"tool": "submit_root_cause", "args": call}))
    assert done.success and done.info["metrics"] == {"FT": 1, "RCL": 1, "Joint": 1}


@needs_pyarrow
def test_caps_keep_errors_first_and_are_the_same_on_every_run(tmp_path: Path) -> None:
    root = make_nezha(tmp_path / "Nezha")
    runs = []
    for attempt in ("a", "b"):
        out = tmp_path / attempt
        index, _dates = convert(FolderTree(root), out, only={"nz-ob-001"}, caps=(1, 1))
        runs.append((out / "cases" / "nz-ob-001" / "logs.parquet").read_bytes())
        logs = _table(out / "cases" / "nz-ob-001" / "logs.parquet")
        spans = _table(out / "cases" / "nz-ob-001" / "traces.parquet")
        assert [row["content"] for row in logs] == ["ERROR cart store unreachable"]
        assert index[0]["n_log_lines_before_cap"] == 2 and index[0]["n_log_lines"] == 1
        assert len(spans) == 2, "a trace with an error span is kept whole, over the cap"
    assert runs[0] == runs[1]


@needs_pyarrow
def test_a_changed_upstream_file_is_refused(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_nezha(tmp_path / "Nezha")
    pin(monkeypatch, "rca-nezha", root, PINS)
    faults = root / "rca_data" / DATE / f"{DATE}-fault_list.json"
    faults.write_text(faults.read_text().replace("cpu_contention", "network_delay"))
    with pytest.raises(DataError, match=r"fault_list\.json has git id"):
        get("rca-nezha", str(root))
    assert status("rca-nezha").state == "missing"


# -- against the reference conversion ----------------------------------------------------------

REFERENCE = SHARED / "data" / "rca-nezha"
# One case of each system: a window moved by the previous fault, trace files missing from the
# snapshot and a derived alert (nz-ob-003); logs capped, error spans and a window overlapping the
# previous fault (nz-tt-004).
COMPARED = ("nz-ob-003", "nz-tt-004")


@pytest.mark.slow
@needs_pyarrow
@pytest.mark.skipif(
    not (NEZHA_GIT.is_dir() and REFERENCE.is_dir()),
    reason="no Nezha snapshot or reference cases here",
)
def test_the_converter_reproduces_the_reference_cases(tmp_path: Path) -> None:
    with GitTree(NEZHA_GIT, PINNED.commit) as tree:
        tree.check_pins(PINNED.pins)
        index, _dates = convert(tree, tmp_path, only=set(COMPARED))
    reference = {
        line["case_id"]: line
        for line in map(json.loads, (REFERENCE / "index.jsonl").read_text().splitlines())
    }
    for line in index:
        case_id = line["case_id"]
        assert line == reference[case_id]
        for name in ("task.json", "topology.json"):
            assert (tmp_path / "cases" / case_id / name).read_bytes() == (
                REFERENCE / "cases" / case_id / name
            ).read_bytes()
        answer = f"answers/{case_id}.json"
        assert (tmp_path / answer).read_bytes() == (REFERENCE / answer).read_bytes()
        for table in ("metrics", "logs", "traces", "alerts"):
            ours = _table(tmp_path / "cases" / case_id / f"{table}.parquet")
            theirs = _table(REFERENCE / "cases" / case_id / f"{table}.parquet")
            assert ours == theirs, (case_id, table)
    assert [line["case_id"] for line in index] == list(COMPARED)


@pytest.mark.slow
@pytest.mark.skipif(
    not (CLINDIAG_GIT.is_dir() and (SHARED / "data" / "clindiag").is_dir()),
    reason="no ClinDiag snapshot or reference pack here",
)
def test_the_clindiag_pack_is_the_reference_pack_byte_for_byte(tmp_path: Path) -> None:
    from pos_agent.data import clindiag

    with GitTree(CLINDIAG_GIT, clindiag.PINNED.commit) as tree:
        tree.check_pins(clindiag.PINNED.pins)
        counts = clindiag.pack(tree, tmp_path / "cases.jsonl", clindiag.paper_common_ids())
    assert counts == {"cases": 2021, "common": 302, "rare": 302}
    reference = SHARED / "data" / "clindiag"
    # The reference pack predates the Rare mark: without `in_rare_subset`, the same bytes.
    packed = (tmp_path / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    rare = [json.loads(line).pop("in_rare_subset") for line in packed]
    assert sum(rare) == 302
    unmarked = "".join(
        json.dumps(
            {k: v for k, v in json.loads(line).items() if k != "in_rare_subset"}, ensure_ascii=False
        )
        + "\n"
        for line in packed
    )
    assert unmarked.encode("utf-8") == (reference / "cases.jsonl").read_bytes()
    assert (
        clindiag.paper_common_ids() == (reference / "paper_common_sample.txt").read_text().split()
    )

"""Tiny upstream trees in the shapes `pos data` reads (ClinDiag, Nezha, LOCA-Bench, ALFWorld),
and a local HTTP server that can cut a download short, for tests that must not touch the
network."""

from __future__ import annotations

import csv
import http.server
import io
import json
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pos_agent.data import sources
from pos_agent.data.acquire import Pinned
from pos_agent.data.gitobj import path_id

# -- ClinDiag ----------------------------------------------------------------------------------

CLINDIAG_CASES = ("1001", "1002", "rare0")


def clindiag_case(case_id: str) -> dict[str, Any]:
    return {
        "initial_information": {"initial_information": f"Patient {case_id} has a fever."},
        "medical_history": {"medical_history": {"chief_complaint": "fever for three days"}},
        "physical_examination": {"physical_examinations": [{"relevant_findings": "rash"}]},
        "laboratory_test": {
            "laboratory_examinations": [{"procedure_name": "CBC", "findings": "WBC 14"}]
        },
        "radiographic_test": {"radiographic_examinations": []},
        "other_test": {"other_tests": []},
        "diagnosis": {
            "diagnosis": {
                "final_diagnosis": f"disease {case_id}",
                "differential_diagnosis": ["flu"],
            }
        },
    }


def make_clindiag(root: Path) -> Path:
    for case_id in CLINDIAG_CASES:
        for section, value in clindiag_case(case_id).items():
            path = root / "benchmark_dataset" / case_id / f"{section}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value, indent=4))
    (root / "LICENSE").write_text("Apache License 2.0 (fake)\n")
    return root


# -- Nezha -------------------------------------------------------------------------------------

DATE = "2022-08-22"
FRONT = "frontend-579b9bff58-t2dbm"
CART = "cartservice-579f59597d-wc2lz"
ERROR_TRACE, ERROR_SPAN = "a" * 32, "b" * 16
TEN_O_CLOCK = 1661162400  # 2022-08-22 10:00:00 UTC


def _csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(out.getvalue())


def _stamp(minute: int, second: int) -> tuple[str, int]:
    """A Nezha `Time` string and its epoch seconds, `minute` minutes after 10:00 on DATE."""
    epoch = TEN_O_CLOCK + minute * 60 + second
    moment = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{moment}.123456789 +0000 UTC m=+1.0", epoch


def make_nezha(root: Path) -> Path:
    """One Online Boutique date: two injections (10:05 on cartservice, 10:12 on frontend),
    metrics 09:58-10:20, a latency spike at 10:06-10:07, one log and one trace file."""
    base = root / "rca_data" / DATE
    faults = {
        "10": [
            {
                "inject_time": f"{DATE} 10:05:30",
                "inject_timestamp": "1661162730",
                "inject_pod": CART,
                "inject_type": "cpu_contention",
            },
            {
                "inject_time": f"{DATE} 10:12:30",
                "inject_timestamp": "1661163150",
                "inject_pod": FRONT,
                "inject_type": "return",
            },
        ]
    }
    base.mkdir(parents=True)
    (base / f"{DATE}-fault_list.json").write_text(json.dumps(faults, indent=4))
    header = [
        "Time",
        "TimeStamp",
        "PodName",
        "CpuUsageRate(%)",
        "PodServerLatencyP90(s)",
        "PodSuccessRate(%)",
    ]
    for pod in (FRONT, CART):
        rows = []
        for minute in range(-2, 21):
            text, epoch = _stamp(minute, 10)
            busy = 90.0 if pod == CART and minute in (6, 7) else 10.0
            rows.append([text, epoch, pod, busy, 0.1, 0])
        _csv(base / "metric" / f"{pod}_metric.csv", header, rows)
    front = []
    for minute in range(-2, 21):
        text, epoch = _stamp(minute, 11)
        front.append([text, epoch, "Frontend", 100, 1.0 if minute in (6, 7) else 0.2])
    _csv(
        base / "metric" / "front_service.csv",
        ["Time", "TimeStamp", "ServiceName", "SuccessRate(%)", "LatencyP90(s)"],
        front,
    )
    _csv(
        base / "metric" / "dependency.csv",
        ["Source", "Target", "Weight"],
        [
            ["frontend", "cartservice", 1],
            ["frontend", "10.0.0.1", 1],
            ["cartservice", "10.0.0.2", 1],
            ["loadgenerator", "10.0.0.9", 1],
        ],
    )
    _, t0 = _stamp(5, 40)
    ns = t0 * 1_000_000_000

    def record(text: str) -> str:
        return json.dumps({"log": text + "\n", "stream": "stdout"})

    _csv(
        base / "log" / "10_05_log.csv",
        ["Timestamp", "TimeUnixNano", "Node", "PodName", "Container", "TraceID", "SpanID", "Log"],
        [
            [
                "t",
                ns + 1000,
                "10.0.0.2",
                CART,
                "server",
                ERROR_TRACE,
                ERROR_SPAN,
                record("ERROR cart store unreachable"),
            ],
            ["t", ns + 2000, "10.0.0.2", CART, "server", "", "", record("INFO cart ok")],
            ["t", ns + 3000, "10.0.0.2", CART, "server", "", "", '{"log": broken'],
        ],
    )
    _csv(
        base / "trace" / "10_05_trace.csv",
        [
            "TraceID",
            "SpanID",
            "ParentID",
            "PodName",
            "OperationName",
            "StartTimeUnixNano",
            "EndTimeUnixNano",
            "Duration",
        ],
        [
            [ERROR_TRACE, "c" * 16, "root", FRONT, "GET /cart", ns, ns + 9_000_000, 9000],
            [ERROR_TRACE, ERROR_SPAN, "c" * 16, CART, "GetCart", ns + 100, ns + 8_000_000, 7900],
            [ERROR_TRACE, ERROR_SPAN, "c" * 16, CART, "GetCart", ns + 100, ns + 8_000_000, 7900],
        ],
    )
    (root / "LICENSE").write_text("MIT License (fake)\n")
    return root


# -- LOCA-Bench --------------------------------------------------------------------------------


def make_loca(root: Path) -> Path:
    (root / "gem" / "envs").mkdir(parents=True)
    (root / "gem" / "__init__.py").write_text("")
    config: dict[str, Any] = {"WoocommerceStockAlertS2LEnv": {}}
    (root / "task-configs").mkdir()
    (root / "task-configs" / "final_8k_set_config.json").write_text(json.dumps(config))
    (root / "LICENSE").write_text("MIT License (fake)\n")
    return root


# -- ALFWorld ----------------------------------------------------------------------------------

GAME = "json_2.1.1/valid_unseen/pick_and_place_simple-Mug-None-Desk-308/trial_1"


def make_alfworld_archives(folder: Path) -> Path:
    """The three release archives, each holding its part of one valid_unseen game."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = {
        "json_2.1.1_json.zip": {
            "traj_data.json": json.dumps(
                {"task_type": "pick_and_place_simple", "task_desc": "put a mug on the desk"}
            )
        },
        "json_2.1.1_pddl.zip": {"initial_state.pddl": "(define (problem p))"},
        "json_2.1.1_tw-pddl.zip": {"game.tw-pddl": json.dumps({"solvable": True})},
    }
    for name, files in parts.items():
        with zipfile.ZipFile(folder / name, "w") as bundle:
            for file_name, text in files.items():
                bundle.writestr(f"{GAME}/{file_name}", text)
    return folder


# -- helpers -----------------------------------------------------------------------------------


def pin(
    monkeypatch: pytest.MonkeyPatch, name: str, root: Path, paths: list[str], commit: str = "0" * 40
) -> Pinned:
    """Point data set `name` at a fake upstream: its pins become the fake tree's git ids."""
    source = sources.SOURCES[name]
    assert source.pinned is not None
    pinned = replace(
        source.pinned, commit=commit, pins={path: str(path_id(root / path)) for path in paths}
    )
    monkeypatch.setitem(sources.SOURCES, name, replace(source, pinned=pinned))
    return pinned


def git_commit(root: Path) -> str:
    """Make `root` a git repository with one commit of its files; the commit's id."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
        )

    run("init", "-q")
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fake upstream")
    return run("rev-parse", "HEAD").stdout.strip()


def tarball(root: Path, target: Path, top: str) -> Path:
    with tarfile.open(target, "w:gz") as bundle:
        bundle.add(root, arcname=top)
    return target


@contextmanager
def serving(folder: Path, *, cut: int | None = None) -> Iterator[str]:
    """Serve `folder` on 127.0.0.1; with `cut`, announce every file whole but send only its
    first `cut` bytes (a transfer that breaks off). Yields the base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = folder / self.path.lstrip("/")
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data if cut is None else data[:cut])

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

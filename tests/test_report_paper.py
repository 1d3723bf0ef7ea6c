"""`pos report --paper`: the published tables shipped as data, the statistics, and the paper's
layout from a run's records (values beside the published ones, intervals, the paired test and
the footnotes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pos_agent.bench.paper import published
from pos_agent.bench.report.load import load_runs
from pos_agent.bench.report.paper import (
    bootstrap_interval,
    collect,
    mcnemar_exact,
    paper_tables,
    table_csv,
    write_paper_report,
)
from pos_agent.bench.report.paper.layout import PaperTable, Value
from pos_agent.cli.app import app
from pos_agent.trace import CaseResult, write_result

PAPER_RESULTS = Path(__file__).resolve().parents[1].parent / "shared" / "PAPER_RESULTS.md"
BACKBONE = "openai:qwen3.7-plus"


def test_the_shipped_tables_are_the_papers_as_transcribed() -> None:
    if not PAPER_RESULTS.is_file():
        pytest.skip(f"{PAPER_RESULTS} is not here to compare with")
    text = PAPER_RESULTS.read_text()
    paper = published()
    blocks = re.findall(r"```\n(.*?)```", text, re.S)
    rows = [line.split("\t") for line in blocks[0].strip().splitlines()[2:]]
    titles = dict(zip([r[0] for r in rows], paper.table1["Qwen3.7-Plus"], strict=True))
    for row in rows:
        method = titles[row[0]]
        shipped = [
            paper.table1[b][method][c]
            for b in ("Qwen3.7-Plus", "Kimi-K3", "GLM-5.3")
            for c in ("ALF", "LOCA", "RCA", "Clin")
        ]
        assert shipped == [float(v) for v in row[1:]], row[0]
    assert paper.table2["Qwen3.7-Plus"]["no_consistency"]["sentinel"] == 125.30
    assert paper.table9["GLM-5.3"]["no_trapping"]["loca"]["Env. Ops"] == 32.57
    assert paper.table9["Kimi-K3"]["pos"]["clindiag"]["Rare"] == 52.32
    # Table 9's ClinDiag halves, every backbone and method: the last three columns.
    backbone = ""
    for line in blocks[2].strip().splitlines():
        if line.startswith("Backbone: "):
            backbone = line.removeprefix("Backbone: ")
        elif line.split("\t")[0] in titles:
            halves = paper.table9[backbone][titles[line.split("\t")[0]]]["clindiag"]
            shipped = [halves[c] for c in ("Common", "Rare", "Overall")]
            assert shipped == [float(v) for v in line.split("\t")[-3:]], (backbone, line)


def test_mcnemar_exact_and_the_bootstrap_interval() -> None:
    test = mcnemar_exact(
        {"a": True, "b": True, "c": True, "d": False},
        {"a": False, "b": False, "c": True, "e": True},
    )
    assert (test.n, test.only_first, test.only_second) == (3, 2, 0), "d and e are unpaired"
    assert test.p_value == pytest.approx(0.5)  # 2 * (1/4)
    five = mcnemar_exact({str(i): True for i in range(5)}, {str(i): False for i in range(5)})
    assert five.p_value == pytest.approx(2 / 32)
    assert mcnemar_exact({"a": True}, {"a": True}).p_value == 1.0
    assert bootstrap_interval([1.0] * 10) == (100.0, 100.0)
    low, high = bootstrap_interval([1.0, 0.0] * 20) or (0.0, 0.0)
    assert 30 < low < 50 < high < 70
    assert bootstrap_interval([1.0, 0.0] * 20) == (low, high), "seeded: the same every time"


def result(case: str, agent: str, success: bool, **fields: object) -> CaseResult:
    return CaseResult(
        run="study", case=f"rca-nezha__{case}", env="rca-nezha", task=case, agent=agent,
        models={"policy": BACKBONE}, status=fields.pop("status", "success" if success else "failure"),
        success=success, extra={"metrics": {"FT": 1, "RCL": int(success), "Joint": int(success)}},
        **fields,
    )  # fmt: skip


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "study"
    wins = {"pos": [1, 1, 1, 0], "raw": [1, 0, 0, 0], "acon": [0, 1, 1, 0]}
    listed = []
    for agent, outcomes in wins.items():
        for i, won in enumerate([*outcomes, None]):  # the fifth case: listed, never recorded
            folder = f"{agent}__rca-nezha__c{i}__b"
            spec = {
                "env": "rca-nezha",
                "task": f"c{i}",
                "agent": agent,
                "models": {"policy": BACKBONE},
            }
            listed.append({"folder": folder, "spec": spec})
            if won is not None:
                write_result(run / folder, result(f"c{i}", agent, bool(won)))
    write_result(
        run / "hiagent__rca-nezha__c0__b", result("c0", "hiagent", False, status="infra_error")
    )
    listed.append(
        {
            "folder": "hiagent__rca-nezha__c0__b",
            "spec": {"env": "rca-nezha", "agent": "hiagent", "models": {"policy": BACKBONE}},
        }
    )
    config = {"cases": listed, "backbones": [{"model": BACKBONE, "label": "qwen", "paper": None}]}
    (run / "config.json").write_text(json.dumps(config))
    return run


def test_the_papers_layout_from_a_runs_records(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    data = collect(load_runs([run]), [run])
    table1, table2, table9, paired = paper_tables(data)
    assert table1.groups == [("qwen [1]", 4)] and table1.columns == ["ALF", "LOCA", "RCA", "Clin"]
    assert "shown beside the paper's Qwen3.7-Plus" in table1.footnotes[0]
    rows = dict(table1.rows)
    pos = rows["PoS (Ours)"][2]
    assert isinstance(pos, Value)
    assert (pos.ours, pos.n, pos.paper) == (75.0, 4, 38.83)
    assert pos.diff == pytest.approx(36.17)
    assert pos.interval is not None and pos.interval[0] < 75.0 <= pos.interval[1]
    notes = [table1.footnotes[n - 1] for n in pos.notes]
    assert any("substituted: RCA-100 is substituted by Nezha" in n for n in notes)
    assert any("RCA-100: 5 case(s) run, fewer than the paper's 103" in n for n in notes)
    loca = rows["PoS (Ours)"][1]
    assert isinstance(loca, Value) and loca.ours is None and loca.paper == 56.38
    assert [table1.footnotes[n - 1] for n in loca.notes] == ["missing: not run"]
    hiagent = rows["HiAgent"][2]
    assert isinstance(hiagent, Value) and hiagent.ours is None
    hiagent_notes = [table1.footnotes[n - 1] for n in hiagent.notes]
    assert "missing: no scored case (1 infra_error)" in hiagent_notes
    # Table 9: RCA's FT, RCL and Joint from each case's metrics.
    pos9 = next(entries for label, entries in table9.rows if label.endswith("/ PoS (Ours)"))
    rca = [e for e in pos9 if isinstance(e, Value)][8:11]
    assert [v.ours for v in rca] == [100.0, 75.0, 75.0] and [v.paper for v in rca] == [
        39.81,
        67.96,
        38.83,
    ]
    pos2 = next(entries for label, entries in table2.rows if label.endswith("/ PoS (Ours)"))
    assert isinstance(pos2[0], Value) and isinstance(pos2[-1], Value)
    assert (pos2[0].ours, pos2[-1].paper, pos2[-1].unit) == (75.0, 1800.13, "K")
    # PoS against the strongest baseline (ACON: 2 of 4), paired on the same four cases.
    ((label, entries),) = paired.rows
    assert label == "qwen [1] / RCA" and entries[1] == "ACON"
    assert entries[4] == "4" and entries[5] == "1 / 0" and entries[6] == "1"
    gap = entries[3]
    assert isinstance(gap, Value) and gap.ours == 25.0 and gap.paper == pytest.approx(38.83 - 28.16)
    csv = table_csv(table1)
    assert "PoS (Ours),qwen [1],RCA,75," in csv and ",38.83,36.17,%," in csv


def test_pos_report_paper_writes_markdown_csv_latex_and_figures(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    written = write_paper_report([run], tmp_path / "out")
    assert written.markdown_path.name == "paper.md"
    assert "75.0 [" in written.markdown and "· paper 38.83 (+36.2)" in written.markdown
    assert {p.name for p in written.latex_paths} >= {"table1.tex", "table2.tex", "table9.tex"}
    assert "\\multicolumn{4}{c}{qwen [1]}" in (tmp_path / "out" / "table1.tex").read_text()
    assert [p.name for p in written.plot_paths] == ["figure1.png", "figure3.png"], "no LOCA: no 4"
    done = CliRunner().invoke(app, ["report", str(tmp_path / "empty"), "--paper"])
    assert done.exit_code == 1


def clindiag_run(tmp_path: Path, halves: dict[str, list[int]]) -> Path:
    """A study's ClinDiag cells: per half (category), each case's success for pos and raw."""
    run = tmp_path / "clindiag-study"
    listed = []
    for agent, flip in (("pos", False), ("raw", True)):
        for half, wins in halves.items():
            for i, won in enumerate(wins):
                task = f"rare{i}" if half == "rare" else f"{1000 + i}"
                folder = f"{agent}__clindiag__{task}__qwen"
                spec = {
                    "env": "clindiag",
                    "task": task,
                    "agent": agent,
                    "models": {"policy": BACKBONE},
                }
                listed.append({"folder": folder, "spec": spec})
                success = bool(won) != flip
                status = "success" if success else "failure"
                write_result(
                    run / folder,
                    CaseResult(
                        run="study", case=f"clindiag__{task}", env="clindiag", task=task,
                        agent=agent, models={"policy": BACKBONE}, status=status,
                        success=success, category=half,
                    ),
                )  # fmt: skip
    config = {"cases": listed, "backbones": [{"model": BACKBONE, "label": "qwen3.7-plus"}]}
    (run / "config.json").write_text(json.dumps(config))
    return run


def _clindiag9(table9: PaperTable, method: str) -> list[Value]:
    rows = dict(table9.rows)
    (entries,) = [e for label, e in rows.items() if label.endswith(f"/ {method}")]
    return [e for e in entries if isinstance(e, Value)][-3:]


def test_table9_shows_clindiags_common_and_rare_beside_the_published_halves(
    tmp_path: Path,
) -> None:
    run = clindiag_run(tmp_path, {"common": [1, 1, 0, 0], "rare": [1, 0, 0]})
    table1, _, table9, _ = paper_tables(collect(load_runs([run]), [run]))
    assert table9.columns[-3:] == ["Common", "Rare", "Overall"]
    common, rare, overall = _clindiag9(table9, "PoS (Ours)")
    assert (common.ours, common.n, common.paper) == (50.0, 4, 48.01)
    assert (rare.n, rare.paper) == (3, 42.05) and rare.ours == pytest.approx(100 / 3)
    assert (overall.n, overall.paper) == (7, 45.03) and overall.ours == pytest.approx(300 / 7)
    raw_common, raw_rare, _ = _clindiag9(table9, "Raw Trajectory")
    assert (raw_common.ours, raw_common.paper, raw_rare.paper) == (50.0, 37.75, 40.07)
    assert raw_rare.ours == pytest.approx(200 / 3)
    notes = [table9.footnotes[n - 1] for n in common.notes]
    assert notes == ["ClinDiag: 7 case(s) run, fewer than the paper's 604"], "both halves run"
    assert not any("Rare" in note for note in table9.footnotes + table1.footnotes)
    clin = dict(table1.rows)["PoS (Ours)"][3]
    assert isinstance(clin, Value) and (clin.n, clin.paper) == (7, 45.03)


def test_a_clindiag_cell_of_one_half_says_which_half_is_missing(tmp_path: Path) -> None:
    run = clindiag_run(tmp_path, {"common": [1, 0]})
    table1, _, table9, _ = paper_tables(collect(load_runs([run]), [run]))
    common, rare, overall = _clindiag9(table9, "PoS (Ours)")
    assert (common.ours, rare.ours, rare.paper, overall.ours) == (50.0, None, 42.05, 50.0)
    missing = "ClinDiag: no Rare case run (only Common); the paper's overall is over Common + Rare (302 + 302)"
    assert missing in [table9.footnotes[n - 1] for n in rare.notes]
    clin = dict(table1.rows)["PoS (Ours)"][3]
    assert isinstance(clin, Value) and missing in [table1.footnotes[n - 1] for n in clin.notes]
    markdown = write_paper_report([run], tmp_path / "out").markdown
    assert "no Rare case run" in markdown and "42.05" in markdown

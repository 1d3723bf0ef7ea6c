"""`pos report`: aggregation, the paper's table shapes, CSV/markdown/PNG files, the CLI."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.report import (
    Rate,
    ReportError,
    Table,
    aggregate,
    build_tables,
    context_value,
    format_cell,
    load_runs,
    render_markdown,
    render_table,
    table_csv,
    write_report,
)
from pos_agent.cli.app import app
from pos_agent.trace import CaseResult, RoleTokens, write_result

PNG = b"\x89PNG\r\n\x1a\n"


def case(
    agent: str = "pos",
    status: str = "success",
    *,
    env: str = "alfworld-mini",
    category: str | None = "Transform",
    model: str = "local",
    tokens: dict[str, tuple[int, int]] | None = None,
    trapped: int = 0,
    patterns: dict[str, int] | None = None,
    extra: dict[str, Any] | None = None,
    name: str = "c",
    run: str = "run",
    error: str | None = None,
) -> CaseResult:
    roles = (
        ("policy",)
        if agent == "raw"
        else ()
        if agent == "expert"
        else ("policy", "belief", "sentinel")
    )
    return CaseResult(
        run=run,
        case=name,
        env=env,
        task=name,
        category=category,
        agent=agent,
        models={role: model for role in roles},
        status=status,
        success=status == "success",
        steps=10,
        max_steps=20,
        tokens={
            role: RoleTokens(calls=3, prompt_tokens=p, completion_tokens=c)
            for role, (p, c) in (tokens or {}).items()
        },
        trapped_steps=trapped,
        patterns=patterns or {},
        extra=extra or {},
        error=error,
    )


def table(tables: list[Table], name: str) -> Table:
    return next(t for t in tables if t.name == name)


def column(t: Table, name: str) -> list[Any]:
    index = t.columns.index(name)
    return [row[index] for row in t.rows]


# -- aggregation ---------------------------------------------------------------------------------


def test_only_success_and_failure_are_scored() -> None:
    cases = [
        case(status="success"),
        case(status="failure"),  # budget exhausted: stays in the denominator
        case(status="harness_error", error="ValueError: boom\nTraceback ..."),  # our bug
        case(status="config_error", error="model: HTTP 401 rejected the API key"),
        case(status="infra_error", error="environment backend failed: JVM died"),
        case(status="interrupted", error="interrupted by the user (Ctrl-C)"),
    ]
    data = aggregate(cases)
    assert data.stats["pos"].success == Rate(1, 2)
    outcomes = table(build_tables(data), "outcomes")
    assert outcomes.columns[2:8] == [
        "success",
        "failure",
        "config_error",
        "harness_error",
        "infra_error",
        "interrupted",
    ], "the legacy 'error' column appears only when a result has it"
    assert outcomes.rows[0][:8] == ["pos", 6, 1, 1, 1, 1, 1, 1]
    problems = table(build_tables(data), "problems")
    assert [row[0] for row in problems.rows] == [
        "config_error",
        "harness_error",
        "infra_error",
        "interrupted",
    ]
    assert problems.rows[1][4] == "ValueError: boom", "first line of the error only"


def test_results_of_older_versions_with_status_error_are_not_scored() -> None:
    data = aggregate([case(status="success"), case(status="error", error="model: bad key")])
    assert data.stats["pos"].success == Rate(1, 1)
    outcomes = table(build_tables(data), "outcomes")
    assert outcomes.columns[-5] == "error" and outcomes.rows[0][-5] == 1


def test_missing_cases_are_reported_not_dropped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_result(run / "pos__a", case(name="a"))
    (run / "config.json").write_text(
        '{"identity": "x", "cases": [{"folder": "pos__a", "spec": {"agent": "pos"}},'
        ' {"folder": "raw__b", "spec": {"agent": "raw"}}]}'
    )
    loaded = load_runs([run])
    assert [(m.run, m.folder, m.agent) for m in loaded.missing] == [("run", "raw__b", "raw")]
    data = aggregate(loaded.cases, missing=loaded.missing)
    problems = table(build_tables(data), "problems")
    assert problems.rows == [
        ["missing", "raw", "run", "raw__b", "listed in config.json, no record"]
    ]
    text = render_markdown(build_tables(data), loaded=loaded)
    assert "Missing" in text and "raw__b" in text


def test_methods_side_by_side_in_the_papers_order_with_models_when_several() -> None:
    cases = [
        case("raw", model="local"),
        case("expert"),
        case("pos", model="openai:gpt-4o"),
        case("pos", model="local", status="failure"),
        case("no_trapping", model="local"),
    ]
    data = aggregate(cases)
    # Paper Table 1: Raw, ACON, PACE, HiAgent, LongHorizon-Harness, PoS, then the ablations.
    assert data.methods == [
        "raw · local",
        "pos · local",
        "pos · openai:gpt-4o",
        "no_trapping · local",
        "expert",
    ]
    success = table(build_tables(data), "success")
    assert success.columns == ["benchmark", *data.methods]
    assert aggregate([case("pos"), case("raw")]).methods == ["raw", "pos"], "one model: no suffix"
    six = [case(m) for m in ("pos", "lh_harness", "hiagent", "pace", "acon", "raw")]
    assert aggregate(six).methods == ["raw", "acon", "pace", "hiagent", "lh_harness", "pos"]


def test_split_runs_makes_each_run_its_own_method() -> None:
    data = aggregate([case(run="soft"), case(run="hard")], split_runs=True)
    assert data.methods == ["pos · hard", "pos · soft"]


def test_success_per_benchmark_and_per_category() -> None:
    cases = [
        case(env="alfworld-mini", category="Transform"),
        case(env="alfworld-mini", category="Pick", status="failure"),
        case(env="scienceworld", category="boil"),
        case("raw", env="scienceworld", category="boil", status="failure"),
    ]
    tables = build_tables(aggregate(cases))
    success = table(tables, "success")
    assert [row[0] for row in success.rows] == ["alfworld-mini", "scienceworld", "all"]
    assert success.columns[1:] == ["raw", "pos"]
    assert success.rows[0][1:] == [Rate(0, 0), Rate(1, 2)]
    assert success.rows[2][1:] == [Rate(0, 1), Rate(2, 3)]
    categories = table(tables, "success_by_category")
    assert [row[:2] for row in categories.rows] == [
        ["alfworld-mini", "Pick"],
        ["alfworld-mini", "Transform"],
        ["scienceworld", "boil"],
    ]
    assert "success_by_category" not in {
        t.name for t in build_tables(aggregate([case(category=None)]))
    }, "no categories, no Table 9"


def test_loca_adds_overall_and_category_rows_to_table_1_micro_averaged() -> None:
    cases = [
        case(env="loca", category="analytics", name="a1"),
        case(env="loca", category="analytics", name="a2", status="failure"),
        case(env="loca", category="analytics", name="a3", status="failure"),
        case(env="loca", category="env-ops", name="e1"),
        case("raw", env="loca", category="env-ops", name="e1"),
        case(env="rca", category="latency", name="r1"),
    ]
    success = table(build_tables(aggregate(cases)), "success")
    assert [row[0] for row in success.rows] == [
        "loca overall",
        "loca analytics",
        "loca env-ops",
        "rca",
        "all",
    ], "categories under LOCA only; other benchmarks keep one row"
    # Micro-averaged: 2 of 4 cases, not the mean of the categories' rates (1/3 and 1/1).
    assert success.rows[0][1:] == [Rate(1, 1), Rate(2, 4)]
    assert success.rows[1][1:] == [Rate(0, 0), Rate(1, 3)]
    assert success.rows[2][1:] == [Rate(1, 1), Rate(1, 1)]
    assert (0, 1) in success.bold and (0, 2) not in success.bold


def test_tokens_are_mean_per_episode_per_role() -> None:
    cases = [
        case(tokens={"policy": (100, 10), "belief": (300, 30), "sentinel": (50, 5)}),
        case(tokens={"policy": (200, 20), "belief": (100, 10), "sentinel": (150, 15)}),
        case("raw", tokens={"policy": (1000, 40)}),
        case("raw", status="infra_error", tokens={"policy": (9999, 99)}),  # not scored
    ]
    tokens = table(build_tables(aggregate(cases)), "tokens")
    assert tokens.columns[2:] == [
        "policy prompt",
        "policy completion",
        "belief prompt",
        "belief completion",
        "sentinel prompt",
        "sentinel completion",
        "total",
    ]
    assert tokens.rows[0] == ["raw", 1, 1000.0, 40.0, None, None, None, None, 1040.0]
    assert tokens.rows[1] == ["pos", 2, 150.0, 15.0, 200.0, 20.0, 100.0, 10.0, 495.0]


def test_trapping_incidence_and_pattern_distribution() -> None:
    cases = [
        case(trapped=3, patterns={"static": 2, "cycle": 1}, status="failure"),
        case(trapped=1, patterns={"drift": 1}),
        case(trapped=0),
        case(trapped=0),
        case("raw"),
    ]
    trapping = table(build_tables(aggregate(cases)), "trapping")
    pos = dict(zip(trapping.columns, trapping.rows[1], strict=True))
    assert pos["trapped episodes"] == Rate(2, 4)
    assert pos["trapped steps/episode"] == 1.0
    assert pos["static share"] == Rate(2, 4) and pos["cycle share"] == Rate(1, 4)
    assert pos["drift share"] == Rate(1, 4) and pos["none share"] == Rate(0, 4)
    assert pos["success if trapped"] == Rate(1, 2)
    assert pos["success if not trapped"] == Rate(2, 2)
    raw = dict(zip(trapping.columns, trapping.rows[0], strict=True))
    assert raw["trapped episodes"] == "n/a", "raw runs no health check: not 0%"


def test_success_against_context_length_when_the_suite_varies_it() -> None:
    assert "context_length" not in {t.name for t in build_tables(aggregate([case()]))}
    cases = [
        case(extra={"context_length": 8000}),
        case(extra={"context_length": 2000}, status="failure"),
        case(extra={"context_length": 2000}),
        case("raw", extra={"context_length": 8000}, status="failure"),
        case(extra={}),  # no value: left out of this table only
    ]
    context = table(build_tables(aggregate(cases)), "context_length")
    assert context.columns == ["context_length", "raw", "pos"]
    assert context.rows == [["2000", Rate(0, 0), Rate(1, 2)], ["8000", Rate(0, 1), Rate(1, 1)]]
    nested = aggregate([case(extra={"suite": {"tokens": 4}})], context_field="suite.tokens")
    assert nested.stats["pos"].by_context == {4.0: Rate(1, 1)}
    assert context_value({"context_length": "long"}, "context_length") == "long"
    assert context_value({"context_length": True}, "context_length") is None


def test_extra_metrics_are_averaged_per_method_without_new_code() -> None:
    cases = [
        case(env="rca", extra={"metrics": {"FT": 1, "RCL": 0, "Joint": False}}),
        case(env="rca", extra={"metrics": {"FT": 1, "RCL": 1, "Joint": True}}),
        case("raw", env="rca", extra={"metrics": {"FT": 0, "RCL": 0.5, "note": "text"}}),
        case(env="rca", status="infra_error", extra={"metrics": {"FT": 0}}),
    ]
    metrics = table(build_tables(aggregate(cases)), "metrics")
    assert metrics.columns == ["method", "benchmark", "episodes", "FT", "Joint", "RCL"]
    assert metrics.rows == [["raw", "rca", 1, 0.0, None, 0.5], ["pos", "rca", 2, 1.0, 0.5, 0.5]]


# -- text ----------------------------------------------------------------------------------------


def test_markdown_cells_and_escaping() -> None:
    assert format_cell(Rate(1, 3)) == "33.3% (1/3)"
    assert format_cell(Rate(0, 0)) == "-"
    assert format_cell(None) == "-"
    assert format_cell(12345.6) == "12346"
    assert format_cell(0.6666) == "0.667"
    text = render_table(Table("t", "T", ["a|b", "n"], [["x|y", 1]], "note"))
    assert "| a\\|b | n |" in text and "| x\\|y | 1 |" in text and "_note_" in text


def test_csv_expands_rates_into_fraction_count_and_n() -> None:
    t = Table("t", "T", ["method", "rate", "mean"], [["pos", Rate(1, 4), 2.5], ["raw", None, None]])
    rows = list(csv.reader(io.StringIO(table_csv(t))))
    assert rows[0] == ["method", "rate", "rate count", "rate n", "mean"]
    assert rows[1] == ["pos", "0.25", "1", "4", "2.5"]
    assert rows[2] == ["raw", "", "", "", ""]


def test_markdown_lists_unfinished_cases(tmp_path: Path) -> None:
    (tmp_path / "run" / "half").mkdir(parents=True)
    (tmp_path / "run" / "half" / "events.jsonl").write_text("{}\n")
    write_result(tmp_path / "run" / "done", case(name="done"))
    loaded = load_runs([tmp_path / "run"])
    text = render_markdown(build_tables(aggregate(loaded.cases)), loaded=loaded)
    assert "Unfinished" in text and "half" in text


# -- loading and files ---------------------------------------------------------------------------


def test_load_runs_reads_runs_folders_of_runs_and_case_folders(tmp_path: Path) -> None:
    write_result(tmp_path / "runs" / "a" / "c1", case(name="c1"))
    write_result(tmp_path / "runs" / "b" / "c2", case(name="c2"))
    (tmp_path / "runs" / "b" / "broken").mkdir()
    (tmp_path / "runs" / "b" / "broken" / "result.json").write_text("{not json")
    (tmp_path / "runs" / "b" / "half").mkdir()
    (tmp_path / "runs" / "b" / "half" / "events.jsonl").write_text("")
    everything = load_runs([tmp_path / "runs"])
    assert sorted(c.case for c in everything.cases) == ["c1", "c2"]
    assert [p.name for p in everything.unreadable] == ["broken"]
    assert [p.name for p in everything.unfinished] == ["half"]
    overlapping = load_runs(
        [tmp_path / "runs", tmp_path / "runs" / "a", tmp_path / "runs" / "a" / "c1"]
    )
    assert len(overlapping.cases) == 2, "a case is read once"
    with pytest.raises(ReportError, match="is not a folder"):
        load_runs([tmp_path / "missing"])


def test_write_report_writes_markdown_csv_and_png(tmp_path: Path) -> None:
    cases = [
        case(
            tokens={"policy": (10, 1)},
            trapped=2,
            patterns={"static": 2},
            extra={"context_length": 1},
        ),
        case("raw", tokens={"policy": (30, 1)}, status="failure", extra={"context_length": 2}),
        case(env="scienceworld", status="infra_error"),
    ]
    for i, c in enumerate(cases):
        write_result(tmp_path / "run" / f"case{i}", c)
    written = write_report([tmp_path / "run"], tmp_path / "out")
    names = {p.name for p in written.csv_paths}
    assert {
        "outcomes.csv",
        "success.csv",
        "tokens.csv",
        "trapping.csv",
        "context_length.csv",
    } <= names
    assert {p.name for p in written.plot_paths} == {
        "success.png",
        "pos_vs_baseline.png",
        "tokens.png",
        "trapping.png",
        "context_length.png",
    }
    for path in written.plot_paths:
        assert path.read_bytes()[:8] == PNG
    assert written.markdown_path.read_text() == written.markdown
    assert "![trapping](trapping.png)" in written.markdown


def test_cli_report_prints_markdown_and_fails_clearly_on_an_empty_folder(tmp_path: Path) -> None:
    import pos_agent.cli.report  # noqa: F401  (registers the commands)

    write_result(tmp_path / "run" / "c", case())
    done = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--no-plots"])
    assert done.exit_code == 0, done.output
    assert "Table 1: success rate per benchmark" in done.output
    assert (tmp_path / "run" / "report" / "report.md").is_file()
    assert not list((tmp_path / "run" / "report").glob("*.png"))
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(app, ["report", str(tmp_path / "empty")])
    assert empty.exit_code == 1
    assert "no finished case" in empty.output and "pos run" in empty.output


def test_report_of_real_runs_from_the_harness(tmp_path: Path) -> None:
    """Real `run_case` records (toy heat-mug): the expert and the raw baseline."""
    for agent in ("expert", "raw"):
        spec = CaseSpec(env="toy", task="heat-mug", agent=agent, model="scripted",
                        max_steps=8)  # fmt: skip
        result = run_case(spec, tmp_path / agent / spec.case_id, run_name=agent)
        assert result.status in ("success", "failure"), result.error
    written = write_report([tmp_path / "expert", tmp_path / "raw"], tmp_path / "out")
    data = aggregate(load_runs([tmp_path]).cases)
    assert data.methods == ["raw", "expert"]
    assert data.stats["expert"].success == Rate(1, 1)
    assert data.stats["raw"].tokens.prompt["policy"] > 0
    assert "| toy | Transform |" in written.markdown


def test_recorded_health_check_flag_decides_whether_trapping_was_measured() -> None:
    data = aggregate(
        [
            case("my_agent", extra={"health_checked": True}, trapped=2, patterns={"static": 2}),
            case("pos", extra={"health_checked": False}),
            case("raw"),
        ]
    )
    assert data.stats["my_agent"].trapping.measured
    assert not data.stats["pos"].trapping.measured, "the recorded flag wins over the method name"
    assert not data.stats["raw"].trapping.measured, "older results fall back to the method name"


def test_adding_a_method_or_a_table_is_one_entry() -> None:
    from pos_agent.bench.report import TABLES, ReportData

    data = aggregate([case("my_baseline"), case("pos"), case("raw")])
    assert data.methods == ["raw", "pos", "my_baseline"], "unknown methods after the paper's"

    def per_method_steps(data: ReportData) -> Table:
        rows: list[list[Any]] = [[m.label, m.steps.value] for m in data.stats.values()]
        return Table("steps", "Steps", ["method", "mean steps"], rows)

    TABLES.append(per_method_steps)
    try:
        assert table(build_tables(data), "steps").rows[0] == ["raw", 10.0]
    finally:
        TABLES.remove(per_method_steps)


def test_no_report_module_is_over_600_lines() -> None:
    import pos_agent.bench.report as report

    folder = Path(report.__file__).parent
    sizes = {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.py")}
    assert len(sizes) >= 5 and max(sizes.values()) <= 600, sizes


def test_baselines_split_their_cost_by_role_and_run_no_health_check() -> None:
    cases = [
        case("acon", tokens={"policy": (100, 10), "compressor": (400, 40)}),
        case("lh_harness", tokens={"manager": (50, 5), "executor": (30, 3), "auditor": (20, 2)}),
        case("pos", tokens={"policy": (10, 1), "belief": (20, 2), "sentinel": (30, 3)}),
    ]
    tables = build_tables(aggregate(cases))
    tokens = table(tables, "tokens")
    roles = [c.removesuffix(" prompt") for c in tokens.columns if c.endswith(" prompt")]
    assert roles == ["policy", "belief", "sentinel", "compressor", "manager", "executor", "auditor"]
    rows = {row[0]: dict(zip(tokens.columns, row, strict=True)) for row in tokens.rows}
    assert rows["acon"]["compressor prompt"] == 400.0 and rows["acon"]["total"] == 550.0
    assert rows["lh_harness"]["policy prompt"] is None and rows["lh_harness"]["total"] == 110.0
    trapping = table(tables, "trapping")
    assert [row[2] for row in trapping.rows][:2] == ["n/a", "n/a"], "baselines: no health check"


def test_the_best_value_is_bold_as_in_the_paper() -> None:
    cases = [
        case("raw", status="failure", tokens={"policy": (900, 10)}),
        case("raw", tokens={"policy": (900, 10)}),
        case("acon", tokens={"policy": (300, 10), "compressor": (50, 5)}),
        case("pos", tokens={"policy": (300, 10), "belief": (50, 5)}),
        case("pos", env="scienceworld", category=None, status="failure"),
    ]
    tables = {t.name: t for t in build_tables(aggregate(cases))}
    success = tables["success"]
    assert success.columns == ["benchmark", "raw", "acon", "pos"]
    # alfworld-mini: acon and pos both at 100% (bold, ties too); scienceworld has one method only.
    assert success.bold == {(0, 2), (0, 3), (2, 2)}, "row 'all': acon 1/1 is the best"
    text = render_table(success)
    assert "| alfworld-mini | 50.0% (1/2) | **100.0% (1/1)** | **100.0% (1/1)** |" in text
    tokens = tables["tokens"]
    policy_prompt = tokens.columns.index("policy prompt")
    bold_rows = {r for r, c in tokens.bold if c == policy_prompt}
    assert bold_rows == {2}, "fewest policy tokens per episode: pos's 150 (300 over 2 episodes)"
    assert tables["success_by_category"].bold == {(0, 3), (0, 4)}, "acon and pos on Transform"
    assert "**" not in render_table(tables["outcomes"]), "only Tables 1, 2 and 9"


def test_figure_1_pits_pos_against_the_strongest_baseline_per_benchmark_and_backbone(
    tmp_path: Path,
) -> None:
    cases = [
        case("raw", status="failure"),
        case("hiagent"),
        case("pace", status="failure"),
        case("pos"),
        case("pos", status="failure"),
        case("pos", model="openai:gpt-4o"),  # no baseline on this backbone: no row
        case("acon", env="scienceworld", category=None),
        case("pos", env="scienceworld", category=None, status="failure"),
    ]
    figure = {t.name: t for t in build_tables(aggregate(cases))}["pos_vs_baseline"]
    assert figure.rows == [
        ["alfworld-mini", "local", "pos · local", Rate(1, 2), "hiagent · local", Rate(1, 1), -50.0],
        ["scienceworld", "local", "pos · local", Rate(0, 1), "acon · local", Rate(1, 1), -100.0],
    ]
    assert "pos_vs_baseline" not in {t.name for t in build_tables(aggregate([case("pos")]))}
    for i, result in enumerate(cases):
        write_result(tmp_path / "run" / f"c{i}", result.model_copy(update={"case": f"c{i}"}))
    written = write_report([tmp_path / "run"], tmp_path / "out")
    png = tmp_path / "out" / "pos_vs_baseline.png"
    assert png in written.plot_paths and png.read_bytes()[:8] == PNG

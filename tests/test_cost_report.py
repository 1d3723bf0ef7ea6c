"""Prices and Table 2 in money (issue 24, item 2): a user-extendable YAML price table, shipped
examples each with the date taken, and `pos report --price-table` billing each method and
role with cached prompt tokens at their price."""

from __future__ import annotations

from pathlib import Path

import pytest

from extras import needs_alfworld
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.report import write_report
from pos_agent.cost import TokenCounts, load_prices
from pos_agent.llm import ScriptedModel
from pos_agent.trace import read_result

TABLE = """
currency: EUR
models:
  scripted:
    cache_rule: openai
    input: 2.0
    cached_input: 0.5
    cache_write: 2.0
    output: 8.0
    taken: "2026-12-01"
"""


def test_the_shipped_examples_carry_their_date_and_source() -> None:
    table = load_prices()
    assert {"gpt-4.1-mini", "claude-sonnet-5", "qwen-plus"} <= set(table.models)
    for price in table.models.values():
        assert price.taken and price.source, price.name
        assert price.cached_input <= price.input
    assert table.price("openai:gpt-4.1-mini") is table.models["gpt-4.1-mini"]
    assert table.price("openai:unknown") is None


def test_a_users_table_extends_and_overrides_the_examples(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(TABLE + "  gpt-4.1-mini: {input: 9, output: 9}\n", encoding="utf-8")
    table = load_prices(path)
    assert table.currency == "EUR" and table.models["gpt-4.1-mini"].input == 9
    assert table.models["gpt-4.1-mini"].cached_input == 9, "cached defaults to the input price"
    assert "claude-sonnet-5" in table.models
    counts = TokenCounts(prompt=1_000_000, completion=100_000, cached=600_000)
    assert table.cost("scripted", counts) == pytest.approx(0.8 + 0.3 + 0.8)
    assert table.billed("scripted", counts) == pytest.approx(400_000 + 150_000 + 400_000)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("models: {m: {input: -1, output: 1}}", "non-negative"),
        ("models: {m: {output: 1}}", "input"),
        ("models: {m: {input: 1, output: 1, cache_rule: magic}}", "cache_rule"),
        ("models: [1, 2]", "models"),
        (": : :", "YAML"),
    ],
)
def test_a_bad_price_table_is_a_clear_error(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=problem):
        load_prices(path)


@needs_alfworld
def test_report_table_2_gives_billed_tokens_and_cost_per_method_and_role(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r"
    for agent in ("pos", "raw"):
        spec = CaseSpec(
            env="alfworld-mini", task="heat-mug", agent=agent, model="scripted", max_steps=12
        )
        run_case(spec, run / spec.folder, run_name="r", load=lambda _s, _r: ScriptedModel())
        assert read_result(run / spec.folder) is not None
    prices = tmp_path / "prices.yaml"
    prices.write_text(TABLE, encoding="utf-8")
    written = write_report([run], tmp_path / "out", plots=False, prices=load_prices(prices))
    assert "Table 2 (cost)" in written.markdown
    lines = (tmp_path / "out" / "cost.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
    roles = {(r["method"], r["role"]) for r in rows}
    assert {("pos", "policy"), ("pos", "belief"), ("pos", "sentinel"), ("raw", "policy")} <= roles
    assert ("pos", "total") in roles and ("raw", "total") in roles
    for row in rows:
        prompt, completion = float(row["prompt"]), float(row["completion"])
        billed, cost = float(row["billed tokens"]), float(row["cost (EUR)"])
        assert billed <= prompt + 4 * completion + 1e-6
        assert cost == pytest.approx((billed * 2.0) / 1_000_000, rel=1e-3, abs=1e-6)
    without = write_report([run], tmp_path / "plain", plots=False)
    assert "Table 2 (cost)" not in without.markdown


def test_pos_report_takes_a_price_table(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pos_agent.cli import report  # noqa: F401  (registers the command)
    from pos_agent.cli.app import app

    run = tmp_path / "runs" / "r"
    spec = CaseSpec(
        env="alfworld-mini", task="heat-mug", agent="raw", model="scripted", max_steps=3
    )
    run_case(spec, run / spec.folder, run_name="r", load=lambda _s, _r: ScriptedModel())
    prices = tmp_path / "prices.yaml"
    prices.write_text(TABLE, encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "report",
            str(run),
            "--out",
            str(tmp_path / "o"),
            "--no-plots",
            "--price-table",
            str(prices),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "Table 2 (cost)" in done.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [1]", encoding="utf-8")
    failed = runner.invoke(app, ["report", str(run), "--no-plots", "--price-table", str(bad)])
    assert failed.exit_code == 1 and "price table" in failed.output

"""The baselines through `pos bench` and `pos report`: the paper's six methods side by side, the
suite's parameters reaching each case, the results' counts, and `--embed-model`."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from extras import needs_pyarrow
from pos_agent.agents.context import baseline_settings
from pos_agent.agents.context.settings import acon_settings, benchmark_family
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.suite import builtin_suites, load_suite
from pos_agent.trace import read_result

POS = str(Path(sys.executable).parent / "pos")
SIX = ["raw", "acon", "pace", "hiagent", "lh_harness", "pos"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [POS, *args], capture_output=True, text=True, timeout=600, env=env, check=False
    )


def test_the_six_methods_run_side_by_side_and_the_report_shows_them_in_order(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "six.yaml"
    suite.write_text(
        "name: six\nenv: toy\ntasks: [heat-mug]\nmax_steps: 4\n"
        "methods:\n  acon: {threshold_tokens: 20, summary_tokens: 32}\n"
        "  lh_harness: {max_rounds: 2}\n  hiagent: {summary_tokens: 40}\n"
    )
    done = run(
        "bench", str(suite), "--agents", ",".join(reversed(SIX)), "--model", "scripted",
        "--out", str(tmp_path), "--run", "b",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = {m: read_result(tmp_path / "b" / f"{m}__toy__heat-mug") for m in SIX}
    for method, result in results.items():
        assert result is not None and result.status in ("success", "failure"), method
        assert result.models == (
            {"policy": "scripted"}
            if method != "pos"
            else dict.fromkeys(("policy", "belief", "sentinel"), "scripted")
        )
    acon, pace, hiagent, lh = (results[m] for m in ("acon", "pace", "hiagent", "lh_harness"))
    assert acon is not None and pace is not None and hiagent is not None and lh is not None
    assert acon.settings["baseline"]["threshold_tokens"] == 20, "the suite's parameter"
    assert hiagent.settings["baseline"]["summary_tokens"] == 40
    assert lh.settings["baseline"]["max_rounds"] == 2
    # LongHorizon's roles write with the policy's budget: the paper's 512 on ALFWorld here.
    assert lh.settings["baseline"]["generation_tokens"] == lh.settings["policy"]["max_tokens"]
    assert lh.settings["baseline"]["generation_tokens"] == 512
    assert pace.settings["embed_model"] == "tfidf" and pace.extra["pace_scorer"] == {"tfidf": 1}
    for result in (acon, pace, hiagent):
        assert result.extra["environment_actions"] == result.steps == 4
    assert (
        pace.extra["internal_calls"]
        == {"summarizer": 2}
        == {role: t.calls for role, t in pace.tokens.items() if role != "policy"}
    )
    # The scripted manager never names a route, so both rounds end without an action.
    assert lh.extra["context"]["rounds"] == 2 and lh.extra["environment_actions"] == 0
    assert set(lh.tokens) == {"manager"}

    report = run("report", str(tmp_path / "b"), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stdout + report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    table1 = text.split("Table 1")[1].split("\n\n")[1].splitlines()[0]
    assert [c.strip() for c in table1.strip("|").split("|")] == ["benchmark", *SIX]
    tokens = text.split("Table 2")[1].split("\n\n")[1].splitlines()
    assert [row.split("|")[1].strip() for row in tokens[2:]] == SIX
    assert "summarizer prompt" in tokens[0] and "manager prompt" in tokens[0]


def test_builtin_suites_state_the_baseline_parameters_pos_run_uses() -> None:
    for name in builtin_suites():
        suite = load_suite(name)
        stated = {m: s.baseline_options() for m, s in suite.methods.items()}
        assert set(stated["acon"]) == {"threshold_tokens", "summary_tokens"}, name
        assert set(stated["pace"]) == {"t_max"} and set(stated["hiagent"]) == {"summary_tokens"}
        assert set(stated["lh_harness"]) == {"max_rounds"}, name
        # `pos run` has no suite: its defaults must be the values the suite states.
        defaults = baseline_settings(suite.env)
        assert stated["acon"] == {
            k: v for k, v in asdict(defaults.acon).items() if k in stated["acon"]
        }, name
        assert stated["pace"]["t_max"] == defaults.pace.t_max, name
        assert stated["hiagent"]["summary_tokens"] == defaults.hiagent.summary_tokens, name
        assert stated["lh_harness"]["max_rounds"] == defaults.long_horizon.max_rounds, name
    (case,) = load_suite("alfworld-mini").cases(["acon"], "local", limit=1)
    assert case.method_options == {"threshold_tokens": 512, "summary_tokens": 256}
    assert acon_settings(benchmark_family("rca-nezha")).threshold_tokens == 4096


def test_suite_baseline_parameters_are_checked_by_name_and_value(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    for methods, message in (
        ("{acon: {threshold: 3}}", "methods.acon: unknown acon parameter(s) threshold"),
        ("{acon: {threshold_tokens: 0}}", "must be positive"),
        ("{pace: {tau: hot}}", "pace parameters"),
        ("{raw: {max_rounds: 3}}", "methods.raw: unknown setting(s) max_rounds"),
    ):
        path.write_text(f"name: p\nenv: alfworld-mini\nmethods: {methods}\n")
        try:
            load_suite(str(path))
        except ValueError as exc:
            assert message in str(exc), str(exc)
        else:
            raise AssertionError(f"{methods} was accepted")


def test_embed_model_is_checked_and_a_missing_key_stops_before_any_case(tmp_path: Path) -> None:
    bad = run("run", "toy", "heat-mug", "--agent", "pace", "--embed-model", "bert")
    assert bad.returncode == 2 and "unknown embedding spec" in bad.stdout + bad.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    suite = tmp_path / "toy.yaml"
    suite.write_text("name: toy\nenv: toy\ntasks: [heat-mug]\n")
    for command in (
        ["run", "toy", "heat-mug", "--agent", "pace"],
        ["bench", str(suite), "--agents", "raw,pace", "--limit", "1"],
    ):
        done = run(
            *command, "--model", "scripted", "--embed-model", "openai:text-embedding-3-small",
            "--out", str(tmp_path), "--run", "e", env=env,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert "API key" in done.stdout + done.stderr and "OPENAI_API_KEY" in done.stderr
    assert not (tmp_path / "e").exists(), "nothing ran"
    # Methods that do not use it never need its key.
    fine = run(
        "run", "toy", "heat-mug", "--agent", "acon", "--model", "scripted",
        "--embed-model", "openai:text-embedding-3-small", "--max-steps", "1",
        "--out", str(tmp_path), "--run", "f", env=env,
    )  # fmt: skip
    assert fine.returncode == 0, fine.stdout + fine.stderr


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.mark.parametrize(
    ("env", "task", "data"),
    [
        pytest.param("rca-nezha", "nz-ob-001", "rca-nezha", marks=needs_pyarrow),
        ("clindiag", "10588413", "clindiag"),
    ],
)
def test_every_baseline_runs_on_the_diagnosis_environments(
    env: str, task: str, data: str, tmp_path: Path
) -> None:
    folder = SHARED_DATA / data
    if not folder.is_dir():
        message = f"{folder} is missing: this test needs ../shared/data/{data}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    for method in ("acon", "pace", "hiagent", "lh_harness"):
        spec = CaseSpec(
            env=env,
            task=task,
            agent=method,
            model="scripted",
            max_steps=3,
            env_options={"data_dir": folder},
        )
        result = run_case(spec, tmp_path / method, run_name="d")
        assert result.status in ("success", "failure"), (method, result.error)
        assert result.extra["environment_actions"] == result.steps >= 1, method
    # LongHorizon-Harness submits from verified state with the action it kept in reserve (the
    # scripted manager never plans, so the submission is its only action).
    lh = read_result(tmp_path / "lh_harness")
    assert lh is not None and lh.extra["context"]["final_action"] is not None
    assert lh.steps == 1 and set(lh.tokens) == {"manager"}


def test_long_horizon_roles_take_the_compact_profiles_policy_budget(tmp_path: Path) -> None:
    spec = CaseSpec(
        env="toy",
        task="heat-mug",
        agent="lh_harness",
        model="scripted",
        max_steps=2,
        profile="compact",
        method_options={"max_rounds": 1},
    )
    result = run_case(spec, tmp_path / spec.folder, run_name="t")
    assert result.settings["policy"]["profile"] == "compact"
    assert result.settings["baseline"]["generation_tokens"] == 128, "not the paper's 512"
    assert result.settings["baseline"]["repair_tokens"] == 128


def test_acon_compresses_within_the_clindiag_budget_on_the_offline_data() -> None:
    """ACON's ClinDiag threshold fires within the 30 calls on real cases (4096 never did, so
    ACON's row was Raw's)."""
    from benchmarks.acon_turns import case_turns, first_fire

    data = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "clindiag"
    if not data.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{data} is missing")
        pytest.skip(f"{data} is missing")
    from pos_agent.envs.clindiag.data import ClinDiagData

    for name in ("clindiag-common", "clindiag-rare", "clindiag-paper", "clindiag-all"):
        stated = load_suite(name).methods["acon"].baseline_options()
        assert stated == {"threshold_tokens": 512, "summary_tokens": 256}, name
    settings = acon_settings(benchmark_family("clindiag"))
    ids = ClinDiagData.locate(data).common_ids()[:8]
    fires = [
        first_fire(case_turns(case_id, str(data)), settings.threshold_tokens, 3) for case_id in ids
    ]
    # Within the budget: 29 questions before the submission; in every case, by mid-budget.
    assert all(f is not None and f <= 20 for f in fires), fires

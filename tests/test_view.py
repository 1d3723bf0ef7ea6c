"""`pos view`: trace -> one self-contained HTML page; belief replay; a real trace in Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_fixtures import Call, KitchenEnv, Script
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.view import (
    TraceNotFoundError,
    build_view,
    embed_json,
    find_trace,
    render_html,
    write_view,
)
from pos_agent.cli.app import app
from pos_agent.events import ActionEvent, ContextCutEvent, ObservationEvent
from pos_agent.trace import CaseResult, TraceWriter, read_events, read_result
from replay_fixtures import heat_mug_script, observed, observed_ops

REPO = Path(__file__).resolve().parents[1]

# -- a scripted but realistic PoS episode on the real alfworld-mini heat-mug task ----------------


def _update_ops(step: int, text: str) -> list[dict[str, Any]]:
    """The replayed episode's belief updates, plus a new active gap once the mug is hot."""
    ops = observed_ops(step, text)
    if "You heat the mug 1" in text:
        ops += [
            {"op": "resolve_gap", "id": "g1"},
            {"op": "add_gap", "kind": "achievement", "text": "put the hot mug 1 in cabinet 1",
             "refs": ["mug 1", "cabinet 1"], "activate": True},
        ]  # fmt: skip
    if "You move the mug 1 to the cabinet 1" in text:
        ops += [
            {"op": "upsert_state", "entity": "mug 1", "attribute": "location", "value": "in cabinet 1",
             "evidence": [step], "quote": "You move the mug 1 to the cabinet 1"},
        ]  # fmt: skip
    return ops


def view_heat_mug_script() -> Script:
    """The heat-mug episode of the replay test, with a gap switch once the mug is hot."""
    return heat_mug_script(
        goal_gap="heat the mug 1 with microwave 1",
        update_ops=_update_ops,
        audit_problem="the door state was already known; nothing new was learned",
    )


def run_heat_mug(out: Path, agent: str = "pos", max_steps: int = 20) -> Path:
    """A real `run_case` on alfworld-mini with the scripted models; returns the case folder."""
    script = view_heat_mug_script()
    spec = CaseSpec(env="alfworld-mini", task="heat-mug", agent=agent, model="scripted",
                    max_steps=max_steps)  # fmt: skip
    case_dir = out / spec.case_id
    result = run_case(
        spec, case_dir, run_name="view-test", load=lambda _spec, _role: script.model()
    )
    assert result.status in ("success", "failure"), result.error
    return case_dir


def view_of(case_dir: Path) -> dict[str, Any]:
    return build_view(read_events(case_dir / "events.jsonl"), read_result(case_dir))


def embedded_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)
    assert found, "the page embeds its data"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


# -- belief replay -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def heat_mug_case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The script reads alfworld-mini's own observation text: it needs that environment.
    pytest.importorskip(
        "alfworld", reason="needs the `envs` extra (alfworld): uv sync --extra envs"
    )
    return run_heat_mug(tmp_path_factory.mktemp("runs"))


def test_replayed_belief_equals_the_final_belief_of_a_real_episode(heat_mug_case: Path) -> None:
    view = view_of(heat_mug_case)
    result = read_result(heat_mug_case)
    assert result is not None and result.success, "the scripted episode wins after recovering"
    assert view["check"]["final_matches"] is True
    assert view["check"]["warnings"] == []
    last = view["steps"][-1]
    assert view["beliefs"][last["belief"]] == result.final_belief


def test_the_view_shows_trapping_recovery_findings_revision_and_rejection(
    heat_mug_case: Path,
) -> None:
    steps = {s["step"]: s for s in view_of(heat_mug_case)["steps"]}
    trapped = [n for n, s in steps.items() if s["health"] and s["health"]["trapped"]]
    assert trapped and trapped[0] == 8
    assert steps[8]["recovery"]["pattern"] == "static"
    assert all(steps[n]["recovery_active"] for n in range(8, 11))
    verdicts = {n: [v["kind"] for v in s["verdicts"]] for n, s in steps.items()}
    revised = [n for n, s in steps.items() if any(v.get("revised") for v in s["verdicts"])]
    rejected = [n for n, kinds in verdicts.items() if "reject" in kinds]
    assert len(revised) == 2 and len(rejected) == 1
    audited, heat = steps[revised[0]], steps[revised[1]]
    assert audited["step"] == 3 and audited["sentinel"][0]["audit"][0]["evidence_step"] == 3
    assert heat["action"] == "heat mug 1 with microwave 1"
    assert any(f["rule"] for x in heat["sentinel"] for f in x.get("rules", []))
    arrive = steps[rejected[0]]
    assert arrive["action"] == "go to microwave 1"
    assert arrive["diff"] == {"added": [], "changed": [], "removed": []}, "rejection keeps B_t"


def test_diff_marks_added_changed_and_removed_records(heat_mug_case: Path) -> None:
    view = view_of(heat_mug_case)
    steps = {s["step"]: s for s in view["steps"]}
    by_action = {s["action"]: s for s in steps.values() if s["action"]}
    take = by_action["take mug 1 from countertop 2"]
    removed = take["diff"]["removed"]
    assert removed and removed[0].startswith("r"), "the 'mug on countertop' relation is removed"
    went = by_action["go to countertop 2"]
    assert went["diff"]["changed"], "the agent's location changed"
    assert went["diff"]["added"], "countertop 2 and the relation were added"
    before = view["beliefs"][take["previous_belief"]]
    assert any(r["id"] == removed[0] for r in before["relations"])


def test_actions_are_shown_with_the_observation_they_led_to(heat_mug_case: Path) -> None:
    steps = view_of(heat_mug_case)["steps"]
    assert steps[0]["step"] == 0 and steps[0]["action"] is None
    assert steps[1]["action"] == "go to cabinet 1"
    assert steps[1]["observation"]["text"].startswith("You arrive at cabinet 1")
    policy_calls = [c for c in steps[1]["calls"] if c["role"] == "policy"]
    assert len(policy_calls) == 1, "the policy call that chose the action sits with it"


def test_no_consistency_commits_unaudited_and_the_view_replays_each_step(tmp_path: Path) -> None:
    def update(call: Call) -> list[dict[str, Any]]:
        step, _ = observed(call)
        return [
            {"op": "upsert_entity", "name": f"place {step}"},
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "seen",
                "value": str(step),
            },
        ]

    with TraceWriter(tmp_path) as trace:
        agent = PosAgent(
            RoleModels.single(Script(update=update).model()),
            PosConfig(variant="no_consistency"),
            trace=trace,
        )
        episode = agent.run(KitchenEnv(max_steps=5))
    view = build_view(read_events(tmp_path), None)
    verdicts = [v for s in view["steps"] for v in s["verdicts"]]
    assert len(verdicts) == 5, "one commit per step, no audit, no rejection"
    assert all(v["kind"] == "commit" and v["audited"] is False for v in verdicts)
    assert not any(s["sentinel"] for s in view["steps"])
    final = view["beliefs"][view["steps"][-1]["belief"]]
    assert {k: v for k, v in final.items() if k != "step"} == {
        k: v for k, v in (episode.final_belief or {}).items() if k != "step"
    }
    assert view["steps"][3]["diff"]["added"], "each step adds its place"


# -- traces without a belief, partial traces, escaping --------------------------------------------


def test_raw_agent_trace_has_steps_but_no_belief(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as trace:
        RawAgent(Script().model(), trace=trace).run(KitchenEnv(max_steps=3))
    view = build_view(read_events(tmp_path), None)
    assert view["has_belief"] is False and view["beliefs"] == []
    assert [s["action"] for s in view["steps"][1:]] == ["examine microwave 1"] * 3
    assert view["meta"]["finished"] is False
    assert view["tokens"]["policy"]["calls"] == 3
    assert "policy" in render_html(view)


def test_torn_trace_without_result_renders(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as trace:
        agent = PosAgent(RoleModels.single(Script().model()), trace=trace)
        agent.run(KitchenEnv(max_steps=4))
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    half = len(lines) // 2
    (tmp_path / "events.jsonl").write_text("\n".join(lines[:half]) + "\n" + lines[half][:20])
    page = write_view(tmp_path)
    assert page == tmp_path / "trace.html"
    data = embedded_data(page.read_text())
    assert data["meta"]["finished"] is False
    assert "no result.json" in data["meta"]["error"]
    assert data["steps"], "the readable prefix is shown"


def test_text_from_the_environment_cannot_inject_markup(tmp_path: Path) -> None:
    nasty = '</script><script>alert("x")</script> <b>bold</b> & "quotes" \u2028'
    events = [
        ObservationEvent(step=0, text=nasty),
        ActionEvent(step=0, action=nasty, thought=nasty),
        ObservationEvent(step=1, text=nasty, done=True),
    ]
    result = CaseResult(run=nasty, case=nasty, env="e", task=nasty, agent="raw", status="failure",
                        success=False, error=nasty)  # fmt: skip
    page = render_html(build_view(events, result))
    assert "<script>alert" not in page and "<b>bold" not in page
    assert page.count("</script>") == 2, "only the page's own two script tags close"
    assert embedded_data(page)["steps"][1]["observation"]["text"] == nasty
    assert "&lt;/script&gt;" in page.split("<title>")[1].split("</title>")[0]
    assert "\\u003c" in embed_json("<")


def test_unknown_kinds_and_newer_versions_are_reported_not_fatal(tmp_path: Path) -> None:
    lines = [
        {"v": 3, "event": "observation", "step": 0, "t": 0, "text": "hi", "extra_field": 1},
        {"v": 3, "event": "brand_new", "step": 0, "t": 0, "payload": [1, 2]},
    ]
    (tmp_path / "events.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    data = embedded_data(write_view(tmp_path).read_text())
    assert data["steps"][0]["observation"]["text"] == "hi"
    warnings = " ".join(data["check"]["warnings"])
    assert "newer than this viewer" in warnings and "1 unknown brand_new" in warnings


def test_context_cuts_and_other_kinds_are_listed_with_their_step(tmp_path: Path) -> None:
    events = [
        ObservationEvent(step=0, text="start"),
        ContextCutEvent(step=0, kept=3, dropped=2, context_window=4096),
    ]
    view = build_view(events, None)
    assert view["steps"][0]["other"] == [
        {"event": "context_cut", "role": "policy", "kept": 3, "dropped": 2, "context_window": 4096}
    ]


# -- finding the trace and the CLI ----------------------------------------------------------------


def test_find_trace_accepts_a_run_with_one_case_and_explains_otherwise(tmp_path: Path) -> None:
    case = tmp_path / "run" / "env__task"
    case.mkdir(parents=True)
    (case / "events.jsonl").write_text("")
    assert find_trace(tmp_path / "run") == case
    assert find_trace(case / "events.jsonl") == case
    (tmp_path / "run" / "other").mkdir()
    (tmp_path / "run" / "other" / "events.jsonl").write_text("")
    with pytest.raises(TraceNotFoundError, match="holds 2 traces"):
        find_trace(tmp_path / "run")
    with pytest.raises(TraceNotFoundError, match="does not exist"):
        find_trace(tmp_path / "missing")


def test_cli_writes_the_page_and_prints_its_path(heat_mug_case: Path, tmp_path: Path) -> None:
    import pos_agent.cli.report  # noqa: F401  (registers the commands)

    out = tmp_path / "page.html"
    done = CliRunner().invoke(app, ["view", str(heat_mug_case), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert done.output.strip() == str(out)
    assert out.read_text().startswith("<!doctype html>")
    missing = CliRunner().invoke(app, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_page_loads_nothing_from_the_network(heat_mug_case: Path) -> None:
    page = render_html(view_of(heat_mug_case))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "Content-Security-Policy" in page


# -- a real trace in headless Chromium ------------------------------------------------------------

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        return binary
    message = "chromium is not installed: run `apt-get install -y chromium` (Debian package)"
    if os.environ.get("CI"):
        pytest.fail(message + "; CI must install it")
    pytest.skip(message)


def test_real_trace_renders_in_headless_chromium(heat_mug_case: Path, tmp_path: Path) -> None:
    binary = chromium()
    page = write_view(heat_mug_case, tmp_path / "trace.html")
    url = page.resolve().as_uri()
    profile = [f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        # A short window: the selected step lies below the fold, and the page must not scroll.
        [binary, *CHROMIUM_FLAGS, *profile, "--window-size=1400,900", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-rendered="ok"' in dom.stdout, "the script ran to its end"
    assert "data-js-error" not in dom.stdout
    assert 'data-scroll-y="0"' in dom.stdout, "only the timeline panel scrolls to the step"
    health = re.search(r'<svg[^>]*id="health-svg"[^>]*data-points="(\d+)"', dom.stdout)
    assert health and int(health.group(1)) >= 5, "the H chart has its points"
    assert 'class="trap-mark"' in dom.stdout, "trapped steps are marked"
    # The health chart starts at the first assessed step and says so; its curves differ in
    # dash and marker; the tokens-per-step chart labels its steps.
    first = min(s["step"] for s in view_of(heat_mug_case)["steps"] if s.get("health"))
    assert first > 0 and f"from step {first}: health is assessed" in dom.stdout
    health_svg = dom.stdout.split('id="health-svg"', 1)[1].split("</svg>", 1)[0]
    ticks = re.findall(r'<text x="[\d.]+" y="222"[^>]*>(\d+)</text>', health_svg)
    assert ticks and int(ticks[0]) == first, ticks
    dashes = re.findall(r'class="curve curve-(\w+)"', health_svg)
    assert len(dashes) >= 4, "H, P and S/R curves drawn, each with its own class"
    tokens_svg = dom.stdout.split('id="tokens-step-svg"', 1)[1].split("</svg>", 1)[0]
    assert ">step</text>" in tokens_svg and ">0</text>" in tokens_svg
    assert 'id="tokens-svg"' in dom.stdout
    assert dom.stdout.count('class="tl-item') == len(view_of(heat_mug_case)["steps"])
    assert "Recovery applied: static pattern" in dom.stdout

    shot = tmp_path / "view.png"
    taken = subprocess.run(
        [binary, *CHROMIUM_FLAGS, *profile, "--window-size=1400,2000", f"--screenshot={shot}", url],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("POS_UPDATE_VIEW_SCREENSHOT"):
        target = REPO / "docs" / "img" / "view.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)


def test_the_view_replays_no_consistency_patches_with_only_the_schema_checked(
    tmp_path: Path,
) -> None:
    # An unknown end and an in-patch slot conflict: a checked replay would drop both.
    patch = [
        {"op": "upsert_relation", "src": "toaster 1", "type": "on", "dst": "shelf 1"},
        {"op": "upsert_state", "entity": "microwave 1", "attribute": "seen", "value": "1"},
        {"op": "upsert_state", "entity": "microwave 1", "attribute": "seen", "value": "2"},
    ]
    with TraceWriter(tmp_path) as trace:
        agent = PosAgent(
            RoleModels.single(Script(update=lambda call: patch).model()),
            PosConfig(variant="no_consistency"),
            trace=trace,
        )
        episode = agent.run(KitchenEnv(max_steps=2))
    view = build_view(read_events(tmp_path), None)
    final = view["beliefs"][view["steps"][-1]["belief"]]
    assert {e["name"] for e in final["entities"]} >= {"toaster 1", "shelf 1"}
    assert {k: v for k, v in final.items() if k != "step"} == {
        k: v for k, v in (episode.final_belief or {}).items() if k != "step"
    }


def test_a_belief_of_unreadable_text_is_said_to_be_unusable(tmp_path: Path) -> None:
    from pos_agent.belief import Belief, apply_patch
    from pos_agent.events import BeliefInitEvent

    junk = "1.1.1.1.1.1.1.1.1.1.1.1"

    def belief_of(name: str) -> dict[str, Any]:
        ops = [
            {"op": "upsert_entity", "name": name},
            {"op": "add_gap", "kind": "achievement", "text": junk, "activate": True},
        ]
        return apply_patch(Belief(goal="heat some mug", step=0), ops)[0].to_dict()

    belief = belief_of(junk)
    view = build_view([BeliefInitEvent(step=0, belief=belief)], None)
    assert view["belief_notes"] and view["belief_notes"][0]["unreadable"] == ["e1", "g1"]
    assert "named in words" in view["belief_notes"][0]["unusable"]
    assert any("no usable belief" in w for w in view["check"]["warnings"])
    fine = build_view([BeliefInitEvent(step=0, belief=belief_of("mug 1"))], None)
    assert fine["belief_notes"][0] == {"unreadable": ["g1"], "unusable": None}
    assert not any("no usable belief" in w for w in fine["check"]["warnings"])

"""The real corpus: its packaged records, the builder (`pos trapbench real build`) and
`pos trapbench eval --real`, on small source files written here (`real_samples.py` and the
runs below), never on the corpus's own sources."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import real_samples as samples
from pos_agent.cli.app import app
from pos_trapbench.real.build import BUILD_FILE, TRAJECTORIES_FILE, build_corpus
from pos_trapbench.real.formats import CONVERTERS, convert
from pos_trapbench.real.manifest import (
    PRODUCTIVE_TYPES,
    STUCK_TYPES,
    SourceEntry,
    TrajectoryLabels,
    load_labels,
    load_manifest,
    load_split_rule,
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def balrog_loop() -> str:
    """A text game: three rooms explored, then left/right turns in turn, then a way out."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["Step", "Action", "Observation", "Reward", "Done"])
    moves = [("go north", "the hall"), ("go east", "the kitchen"), ("go south", "the cellar")]
    moves += [("turn left", "a wall"), ("turn right", "a door")] * 3
    moves += [("open door", "the door opens"), ("go west", "the garden")]
    for step, (action, seen) in enumerate(moves):
        writer.writerow([step, action, seen, 0, False])
    return buffer.getvalue()


def tau_loop() -> str:
    """A tool agent: four reservations looked up, then one update sent five times, refused."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "change my flights"}]

    def tool_call(n: int, name: str, arguments: str, answer: str) -> None:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{n}", "function": {"name": name, "arguments": arguments}}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": answer})

    messages += [
        {"role": "assistant", "content": "Which reservation?"},
        {"role": "user", "content": "all of them"},
    ]
    for n, rid in enumerate(("R1", "R2", "R3", "R4")):
        tool_call(n, "get_reservation", json.dumps({"id": rid}), f"reservation {rid}: 2 flights")
    for n in range(4, 9):
        tool_call(n, "update_flights", '{"id": "R2", "flight": "HAT030"}', "Error: not available")
    messages.append({"role": "assistant", "content": "I cannot change it."})
    return json.dumps([{"traj": messages}])


def entry(
    id: str, repo: str, text: str, format: str, kind: str, split: str, commit: str | None = "a" * 40
) -> SourceEntry:
    steps = len(convert(format, text)[0].steps)
    return SourceEntry(
        id=id,
        repo=repo,
        path=f"runs/{id}.log",
        commit=commit,
        licence="MIT",
        sha256=sha(text),
        index=0,
        format=format,
        framework="test",
        model="none",
        kind=kind,
        steps=steps,
        split=split,
    )


SOURCES = {
    "game": ("test/games", balrog_loop(), "balrog_csv", "text-game", "dev"),
    "tool": ("test/tools", tau_loop(), "tau_bench", "tool", "dev"),
    "held": ("test/held", samples.MINI_SWE_AGENT_TEXT, "mini_swe_agent_traj", "tool", "test"),
    "zork": ("test/zork", samples.ZORK, "zorkgpt_episode_txt", "text-game", "dev"),
}
LABELS = {
    "game": [
        {"start": 0, "end": 2, "kind": "productive", "type": "exploration", "reason": "rooms"},
        {"start": 3, "end": 8, "kind": "stuck", "type": "alternation", "reason": "left/right"},
    ],
    "tool": [
        {"start": 1, "end": 4, "kind": "productive", "type": "search-sweep", "reason": "ids"},
        {"start": 5, "end": 9, "kind": "stuck", "type": "same-call", "reason": "same update"},
    ],
}


def manifest() -> list[SourceEntry]:
    return [entry(name, *source) for name, source in SOURCES.items()]


def labels() -> dict[str, TrajectoryLabels]:
    return {
        name: TrajectoryLabels.model_validate({"id": name, "stretches": LABELS.get(name, [])})
        for name in SOURCES
    }


def git_repository(folder: Path, files: dict[str, str]) -> str:
    """A bare repository at `folder` (as `fetch` leaves one) holding `files`; its commit."""
    work = folder.parent / f"{folder.parent.name}-work"
    work.mkdir(parents=True)
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "runs"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(folder)], check=True)
    shutil.rmtree(work)
    return commit


@pytest.fixture
def source_folder(tmp_path: Path) -> tuple[Path, list[SourceEntry]]:
    """Loose files under made-up names, and the zork run only in a git directory."""
    folder = tmp_path / "sources"
    (folder / "nested").mkdir(parents=True)
    entries = manifest()
    for n, item in enumerate(entries):
        if item.id != "zork":
            (folder / "nested" / f"file-{n}.bin").write_text(SOURCES[item.id][1])
    if shutil.which("git") is not None:
        commit = git_repository(folder / "test+zork" / "repo", {"runs/zork.log": samples.ZORK})
        entries[-1] = entries[-1].model_copy(update={"commit": commit})
    return folder, entries


@needs_git
def test_build_reads_loose_files_by_sha256_and_git_dirs_at_the_commit(
    source_folder: tuple[Path, list[SourceEntry]], tmp_path: Path
) -> None:
    folder, entries = source_folder
    report = build_corpus(folder, tmp_path / "real", entries, labels())
    assert report.complete and report.built == ["game", "tool", "held", "zork"]
    assert report.splits == {"dev": 3, "test": 1}
    lines = [
        json.loads(x) for x in (tmp_path / "real" / TRAJECTORIES_FILE).read_text().splitlines()
    ]
    for line, item in zip(lines, entries, strict=True):
        expected = convert(item.format, SOURCES[item.id][1])[0]
        assert line["id"] == item.id and line["goal"] == expected.goal
        assert line["steps"] == [s.as_dict() for s in expected.steps]
    built = load_manifest(tmp_path / "real" / "manifest.jsonl")
    assert [e.id for e in built] == report.built
    assert load_labels(tmp_path / "real" / "labels.jsonl")["tool"].stretches[1].type == "same-call"


@needs_git
def test_a_different_and_a_missing_file_are_listed_and_the_rest_is_built(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "sources"
    entries = manifest()
    changed = samples.ZORK.replace("open mailbox", "open the mailbox")
    commit = git_repository(folder / "test+zork" / "repo", {"runs/zork.log": changed})
    entries[-1] = entries[-1].model_copy(update={"commit": commit})
    for item in entries[:2]:  # "held" is nowhere
        (folder / item.id).write_text(SOURCES[item.id][1])
    report = build_corpus(folder, tmp_path / "real", entries, labels())
    assert report.built == ["game", "tool"]
    problems = {m.trajectories[0]: m for m in report.missing}
    assert problems["zork"].problem == "different"
    assert problems["zork"].found_sha256 == sha(changed)
    assert problems["held"].problem == "missing"
    assert "fetch" in problems["held"].how_to_get and "/test/held" in problems["held"].how_to_get
    assert f"show {'a' * 40}:runs/held.log" in problems["held"].how_to_get
    written = json.loads((tmp_path / "real" / BUILD_FILE).read_text())
    assert {m["problem"] for m in written["missing"]} == {"different", "missing"}


def test_an_issue_excerpt_is_found_only_by_its_sha256(tmp_path: Path) -> None:
    issue = entry("issue", "test/cli", samples.AUTOGPT, "autogpt_console", "tool", "dev", None)
    issue = issue.model_copy(update={"path": "issues/12"})
    report = build_corpus(tmp_path, tmp_path / "out", [issue], {})
    assert report.built == [] and "issues/12" in report.missing[0].how_to_get
    (tmp_path / "excerpt.txt").write_text(samples.AUTOGPT)
    report = build_corpus(tmp_path, tmp_path / "out", [issue], {})
    assert report.built == ["issue"]
    (line,) = (tmp_path / "out" / "labels.jsonl").read_text().splitlines()
    assert json.loads(line) == {"id": "issue", "stretches": []}


def test_a_trajectory_that_converts_otherwise_than_the_manifest_says_is_listed(
    tmp_path: Path,
) -> None:
    good = entry("good", "test/a", samples.ZORK, "zorkgpt_episode_txt", "text-game", "dev")
    wrong = entry("wrong", "test/b", samples.BALROG, "balrog_csv", "text-game", "dev")
    wrong = wrong.model_copy(update={"steps": 9})
    beyond = wrong.model_copy(update={"id": "beyond", "index": 3, "steps": 2})
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a").write_text(samples.ZORK)
    (tmp_path / "src" / "b").write_text(samples.BALROG)
    report = build_corpus(tmp_path / "src", tmp_path / "out", [good, wrong, beyond], {})
    assert report.built == ["good"]
    problems = {u.id: u.problem for u in report.unconverted}
    assert problems == {
        "wrong": "converted to 2 steps, the manifest says 9",
        "beyond": "balrog_csv found 1 trajectories, the manifest wants #3",
    }


def test_the_output_is_replaced_whole_or_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a").write_text(samples.ZORK)
    first = [entry("one", "test/a", samples.ZORK, "zorkgpt_episode_txt", "text-game", "dev")]
    out = tmp_path / "real"
    build_corpus(tmp_path / "src", out, first, {})
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    second = [first[0].model_copy(update={"id": "two"})]
    original = Path.write_text

    def failing(self: Path, text: str, *args: object, **kwargs: object) -> int:
        if self.name == "labels.jsonl":
            raise OSError(28, "No space left on device")
        return original(self, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", failing)
    with pytest.raises(OSError, match="No space"):
        build_corpus(tmp_path / "src", out, second, {})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real", "src"]  # no half-built folder
    monkeypatch.setattr(Path, "write_text", original)
    build_corpus(tmp_path / "src", out, second, {})
    assert json.loads((out / BUILD_FILE).read_text())["built"] == ["two"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real", "src"]


def test_build_leaves_a_folder_it_did_not_build_alone(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="left alone"):
        build_corpus(tmp_path, tmp_path / "mine", [], {})
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_build_command_lists_what_is_missing_and_how_to_get_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["trapbench", "real", "build", "--from", str(tmp_path), "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    assert "missing" in result.output and "get it:" in result.output
    assert "0 trajectories built" in result.output
    report = json.loads((tmp_path / "r" / BUILD_FILE).read_text())
    assert len({m["sha256"] for m in report["missing"]}) == len(report["missing"]) > 100


def _row(output: str, table: str, detector: str) -> list[str]:
    """The cells of one detector's row in the table printed after the heading `table`."""
    section = output.split(f"\n{table}  ", 1)[1]
    line = next(x for x in section.splitlines() if x.startswith(f"| {detector} |"))
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.fixture
def real_folder(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    entries = manifest()
    for item in entries:
        (tmp_path / "src" / item.id).write_text(SOURCES[item.id][1])
    build_corpus(tmp_path / "src", tmp_path / "real", entries, labels())
    return tmp_path / "real"


def test_eval_scores_the_real_dev_split_with_the_model_free_detectors(real_folder: Path) -> None:
    result = CliRunner().invoke(app, ["trapbench", "eval", "--real", str(real_folder)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "oracle belief" not in out and "warning" not in out
    header = "| detector | " + " | ".join(STUCK_TYPES) + " | all | median delay |"
    assert out.count(header) == 3  # the split, its text games, its tool agents
    assert "real dev: 3 trajectories" in out and "real dev · tool: 1 trajectories" in out
    hashed = _row(out, "real dev", "hashed-call proxy")
    # third identical call in ten: the update's third send, the third "turn left"
    assert hashed[1:8] == ["1.00", "1.00", "-", "-", "-", "-", "1.00"]
    assert hashed[8] == "3"  # delays 4 (game: 7 - 3) and 2 (tool: 7 - 5)
    assert _row(out, "real dev · tool", "hashed-call proxy")[1:3] == ["1.00", "-"]
    productive = f"| detector | {PRODUCTIVE_TYPES[0]} (1) | edit-test (0) |"
    assert productive in out
    assert _row(out, "real dev", "hashed-call proxy")[11] == "0%"
    assert "floor · real dev · improved · model-free: vs hashed-call proxy:" in out
    assert "floor · real dev · tool · improved · model-free: vs every anchor:" in out
    results = real_folder / "results-dev"
    for name in ("table.md", "table.csv", "table.png", "floor.csv", "productive.csv"):
        assert (results / name).stat().st_size > 0
    assert (results / "productive.png").stat().st_size > 0
    table_csv = (results / "table.csv").read_text()
    assert "real dev,hashed-call proxy,same-call,1.0," in table_csv
    assert (
        "real dev,hashed-call proxy,search-sweep,1,0,0.0"
        in (results / "productive.csv").read_text()
    )
    floor = list(csv.DictReader(io.StringIO((results / "floor.csv").read_text())))
    assert {r["anchor"] for r in floor} == {
        "OpenHands SDK rules",
        "Gemini CLI rules",
        "OpenRouter doomLoop",
        "hashed-call proxy",
        "AgentBoard rules",
    }


def test_eval_of_the_test_split_warns_and_scores_only_it(real_folder: Path) -> None:
    result = CliRunner().invoke(
        app, ["trapbench", "eval", "--real", str(real_folder), "--split", "test"]
    )
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "final measurement" in result.output
    assert "real test: 1 trajectories" in result.output and "real dev" not in result.output


def test_eval_needs_a_corpus_and_a_known_split(real_folder: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["trapbench", "eval"]).exit_code == 2
    wrong = runner.invoke(app, ["trapbench", "eval", "--real", str(real_folder), "--split", "x"])
    assert wrong.exit_code == 2 and "--split must be one of dev, test" in wrong.output
    empty = runner.invoke(app, ["trapbench", "eval", "--real", str(tmp_path / "none")])
    assert empty.exit_code == 2 and "pos trapbench real build" in empty.output


def test_eval_refuses_a_stretch_past_the_trajectory(real_folder: Path) -> None:
    path = real_folder / "labels.jsonl"
    lines = path.read_text().splitlines()
    broken = {"id": "zork", "stretches": [{**LABELS["game"][1], "end": 40}]}
    path.write_text("\n".join([*lines[:3], json.dumps(broken)]) + "\n")
    result = CliRunner().invoke(app, ["trapbench", "eval", "--real", str(real_folder)])
    assert result.exit_code == 2 and "zork: stretch 3-40 lies past its 2 steps" in result.output


def test_the_packaged_manifest_labels_and_split_agree() -> None:
    entries = load_manifest()
    found = load_labels()
    rule = load_split_rule()
    assert len(entries) >= 150 and len({e.id for e in entries}) == len(entries)
    assert set(found) == {e.id for e in entries}
    dev, test = set(rule["dev"]), set(rule["test"])  # type: ignore[call-overload]
    assert not dev & test
    for item in entries:
        assert item.repo in (dev if item.split == "dev" else test)
        assert item.format in CONVERTERS and len(item.sha256) == 64
        assert item.commit is None or len(item.commit) == 40
        assert all(s.end < item.steps for s in found[item.id].stretches)
    frameworks = {e.framework for e in entries}
    assert len(frameworks) >= 5 and {e.kind for e in entries} == {"text-game", "tool"}

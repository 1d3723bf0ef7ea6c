"""`pos data get` / `pos data list` offline, against local copies: fake upstream trees in each
source's shape (a folder, a git repository, an archive, a file:// or 127.0.0.1 URL), corrupted
and cut-short downloads, interrupted prepares, and the environments finding what was prepared."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from data_fakes import (
    CLINDIAG_CASES,
    git_commit,
    make_alfworld_archives,
    make_clindiag,
    make_loca,
    pin,
    serving,
    tarball,
)
from pos_agent.cli.app import app
from pos_agent.data import DataError, dataset_dir, get, gitobj, prepare, prepared, status
from pos_agent.data import clindiag as clindiag_data
from pos_agent.data.store import Manifest
from pos_agent.data.tree import FolderTree
from pos_agent.envs import EnvError, list_tasks
from pos_agent.envs.alfworld import alfworld_data_dir, official_games

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CLINDIAG_PINS = ["benchmark_dataset", "LICENSE"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty `pos data` folder, and no environment variable pointing anywhere else."""
    folder = tmp_path / "pos-data"
    monkeypatch.setenv("POS_DATA", str(folder))
    for name in ("POS_CLINDIAG_DATA", "POS_RCA_DATA", "POS_LOCA_ROOT", "ALFWORLD_DATA"):
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def fake_clindiag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_clindiag(tmp_path / "ClinDiag")
    pin(monkeypatch, "clindiag", root, CLINDIAG_PINS)
    monkeypatch.setattr(clindiag_data, "paper_common_ids", lambda: ["1002", "1001"])
    return root


def _nothing_left(home: Path, name: str) -> None:
    assert status(name).state == "missing"
    assert prepared(name) is None
    assert not list(home.glob(f".{name}.partial-*"))


# -- git ids -----------------------------------------------------------------------------------


def test_folder_ids_are_the_ones_git_computes(tmp_path: Path) -> None:
    root = make_clindiag(tmp_path / "repo")
    script = root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (root / "empty").mkdir()  # git records no empty folder
    git_commit(root)
    tree = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD^{tree}"],
        capture_output=True,
        text=True,
        check=True,
    )
    folder = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD:benchmark_dataset"],
        capture_output=True,
        text=True,
        check=True,
    )
    (root / ".git").rename(tmp_path / "git")  # the id of the files alone
    assert gitobj.tree_id(root) == tree.stdout.strip()
    assert gitobj.path_id(root / "benchmark_dataset") == folder.stdout.strip()
    script.chmod(0o644)
    assert gitobj.tree_id(root) != tree.stdout.strip(), "the executable bit is part of the id"


# -- ClinDiag from each kind of local source ---------------------------------------------------


def test_clindiag_from_a_folder_is_packed_marked_and_found_by_the_environment(
    home: Path, fake_clindiag: Path
) -> None:
    path = get("clindiag", str(fake_clindiag))
    assert path == dataset_dir("clindiag") and status("clindiag", verify=True).state == "ready"
    lines = [json.loads(line) for line in (path / "cases.jsonl").read_text().splitlines()]
    assert [line["case_id"] for line in lines] == sorted(CLINDIAG_CASES)
    assert [line["case_id"] for line in lines if line["in_paper_common_sample"]] == ["1001", "1002"]
    assert lines[0]["laboratory_test"] == [{"procedure_name": "CBC", "findings": "WBC 14"}]
    assert (path / "paper_common_sample.txt").read_text() == "1002\n1001\n"
    assert [line["case_id"] for line in lines if line["in_rare_subset"]] == ["rare0"]
    readme = (path / "README.md").read_text()
    assert "1 folders are named `rare<N>`" in readme and "not\n  the paper's Rare half" in readme
    # No option, no variable: the environment takes the prepared folder.
    assert [t.task_id for t in list_tasks("clindiag", "common")] == ["1002", "1001"]
    paper = [(t.task_id, t.category) for t in list_tasks("clindiag", "paper")]
    assert paper == [("1002", "common"), ("rare0", "rare"), ("1001", "common")]


def test_clindiag_from_a_git_directory_a_tarball_and_a_file_url(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_clindiag(tmp_path / "ClinDiag")
    monkeypatch.setattr(clindiag_data, "paper_common_ids", lambda: ["1001"])
    commit = git_commit(root)
    pin(monkeypatch, "clindiag", root, CLINDIAG_PINS, commit=commit)
    first = (get("clindiag", str(root / ".git")) / "cases.jsonl").read_bytes()
    archive = tarball(root, tmp_path / "clindiag.tar.gz", f"ClinDiag-{commit}")
    assert (get("clindiag", str(archive), force=True) / "cases.jsonl").read_bytes() == first
    assert (get("clindiag", archive.as_uri(), force=True) / "cases.jsonl").read_bytes() == first
    with pytest.raises(DataError, match="does not hold commit"):
        pin(monkeypatch, "clindiag", root, CLINDIAG_PINS, commit="1" * 40)
        get("clindiag", str(root / ".git"), force=True)


def test_a_copy_that_differs_from_the_pinned_commit_prepares_nothing(
    home: Path, fake_clindiag: Path
) -> None:
    (fake_clindiag / "benchmark_dataset" / "1001" / "diagnosis.json").write_text(
        '{"diagnosis": {"final_diagnosis": "x"}}'
    )
    with pytest.raises(DataError, match=r"benchmark_dataset .*not the pinned one"):
        get("clindiag", str(fake_clindiag))
    _nothing_left(home, "clindiag")


def test_an_interrupted_prepare_never_looks_ready_and_the_next_get_redoes_it(
    home: Path, fake_clindiag: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_pack = clindiag_data.pack

    def interrupted(tree: object, out: Path, common: list[str]) -> dict[str, int]:
        out.write_text('{"case_id": "1001"}\n')  # half written
        raise KeyboardInterrupt

    monkeypatch.setattr(clindiag_data, "pack", interrupted)
    with pytest.raises(KeyboardInterrupt):
        get("clindiag", str(fake_clindiag))
    _nothing_left(home, "clindiag")
    # A prepare killed outright leaves its temporary folder; it is not ready and is cleared.
    (home / ".clindiag.partial-killed").mkdir()
    (home / ".clindiag.partial-killed" / "cases.jsonl").write_text("{}\n")
    assert status("clindiag").state == "partial" and prepared("clindiag") is None
    with pytest.raises(EnvError, match="pos data get clindiag"):
        list_tasks("clindiag")
    monkeypatch.setattr(clindiag_data, "pack", real_pack)
    get("clindiag", str(fake_clindiag))
    assert status("clindiag").state == "ready" and not list(home.glob(".clindiag.partial-*"))


def test_a_prepared_file_that_changed_is_reported(home: Path, fake_clindiag: Path) -> None:
    path = get("clindiag", str(fake_clindiag))
    with (path / "cases.jsonl").open("r+b") as handle:
        handle.write(b"X")
    assert status("clindiag").state == "ready", "sizes alone do not see a changed byte"
    checked = status("clindiag", verify=True)
    assert checked.state == "partial" and checked.problems == [
        "cases.jsonl does not match its SHA-256"
    ]


# -- downloads ---------------------------------------------------------------------------------


def test_a_download_cut_short_prepares_nothing_and_the_next_get_completes(
    home: Path, tmp_path: Path, fake_clindiag: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    tarball(fake_clindiag, served / "archive.tar.gz", "ClinDiag-0000")
    with (
        serving(served, cut=100) as url,
        pytest.raises(DataError, match=r"stopped after 100 of \d+ bytes"),
    ):
        get("clindiag", f"{url}/archive.tar.gz")
    _nothing_left(home, "clindiag")
    assert not any((home / ".downloads").glob("*")), "no partial file is kept"
    with serving(served) as url:
        path = get("clindiag", f"{url}/archive.tar.gz")
    assert status("clindiag").state == "ready"
    assert (
        len(json.loads((path / "pos-data-manifest.json").read_text())["source"]["archive_sha256"])
        == 64
    )


def test_a_download_with_the_wrong_checksum_prepares_nothing(
    home: Path, tmp_path: Path, fake_clindiag: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from pos_agent.data import sources

    source = sources.SOURCES["clindiag"]
    assert source.pinned is not None
    monkeypatch.setitem(
        sources.SOURCES,
        "clindiag",
        replace(source, pinned=replace(source.pinned, archive_sha256="0" * 64)),
    )
    served = tmp_path / "served"
    served.mkdir()
    tarball(fake_clindiag, served / "archive.tar.gz", "ClinDiag-0000")
    with serving(served) as url, pytest.raises(DataError, match="not the pinned 0000"):
        get("clindiag", f"{url}/archive.tar.gz")
    _nothing_left(home, "clindiag")


def test_no_network_is_one_clear_line(home: Path, fake_clindiag: Path) -> None:
    with pytest.raises(DataError) as error:
        get("clindiag", "http://127.0.0.1:9/archive.tar.gz")  # nothing listens on port 9
    message = str(error.value)
    assert "\n" not in message and "Could not download" in message and "--from PATH" in message
    _nothing_left(home, "clindiag")


def test_the_default_source_is_the_pinned_github_archive() -> None:
    for name in ("clindiag", "rca-nezha", "loca"):
        pinned = prepare.source(name).pinned
        assert pinned is not None and len(pinned.commit) == 40
        # GitHub's archive of the pinned commit (the host is the source's, never reached here)
        archive = urlsplit(pinned.archive_url)
        assert archive.scheme == "https" and archive.netloc.endswith("github.com")
        assert archive.path == f"/{pinned.repository}/tar.gz/{pinned.commit}"


# -- ALFWorld ----------------------------------------------------------------------------------


def test_alfworld_from_the_release_archives_in_alfworld_downloads_layout(
    home: Path, tmp_path: Path
) -> None:
    archives = make_alfworld_archives(tmp_path / "archives")
    with serving(archives) as url:
        path = get("alfworld", url)
    game = (
        path / "json_2.1.1" / "valid_unseen" / "pick_and_place_simple-Mug-None-Desk-308" / "trial_1"
    )
    assert sorted(p.name for p in game.iterdir()) == [
        "game.tw-pddl",
        "initial_state.pddl",
        "traj_data.json",
    ]
    assert (path / "logic" / "alfred.pddl").is_file() and (path / "logic" / "alfred.twl2").is_file()
    assert set(
        json.loads((path / "pos-data-manifest.json").read_text())["source"]["archive_sha256"]
    ) == {"json_2.1.1_json.zip", "json_2.1.1_pddl.zip", "json_2.1.1_tw-pddl.zip"}
    assert alfworld_data_dir() == path
    assert [g.task_id for g in official_games("valid_unseen")] == [
        "pick_and_place_simple-Mug-None-Desk-308/trial_1"
    ]


def test_a_corrupt_alfworld_archive_prepares_nothing(home: Path, tmp_path: Path) -> None:
    archives = make_alfworld_archives(tmp_path / "archives")
    data = (archives / "json_2.1.1_pddl.zip").read_bytes()
    assert data.count(b"(define") == 1  # the stored member's bytes: its CRC no longer matches
    (archives / "json_2.1.1_pddl.zip").write_bytes(data.replace(b"(define", b"(defind"))
    with pytest.raises(DataError, match="fails its CRC check"):
        get("alfworld", str(archives))
    _nothing_left(home, "alfworld")
    with pytest.raises(DataError, match=r"json_2\.1\.1_json\.zip is not there"):
        get("alfworld", str(tmp_path))


# -- LOCA-Bench --------------------------------------------------------------------------------


def test_loca_checkout_from_a_folder_is_found_without_a_variable(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pos_agent.envs.loca.cases import locate_checkout

    with pytest.raises(EnvError, match="pos data get loca"):
        locate_checkout()
    root = make_loca(tmp_path / "LOCA-bench")
    pin(monkeypatch, "loca", root, ["gem", "task-configs", "LICENSE"])
    path = get("loca", str(root))
    assert locate_checkout() == path
    monkeypatch.setenv("POS_LOCA_ROOT", str(root))
    assert locate_checkout() == root.resolve(), "the variable wins over the prepared folder"


@pytest.mark.skipif(
    not (SHARED / "vendor" / "LOCA-bench").is_dir(), reason="no reference LOCA-Bench checkout"
)
def test_loca_from_the_reference_checkout_matches_the_pinned_commit(home: Path) -> None:
    path = get("loca", str(SHARED / "vendor" / "LOCA-bench"))
    assert status("loca", verify=True).state == "ready"
    assert len(list_tasks("loca", "8k")) == 15
    pinned = prepare.source("loca").pinned
    assert pinned is not None and all(
        gitobj.path_id(path / p) == oid for p, oid in pinned.pins.items()
    )


# -- the command line --------------------------------------------------------------------------


def test_pos_data_get_and_list(home: Path, fake_clindiag: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["data", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    for name in ("alfworld", "clindiag", "rca-nezha", "loca"):
        assert name in listed.output
    assert (
        "d9222f3" in listed.output and "Apache-2.0" in listed.output and "missing" in listed.output
    )
    assert "clindiag: Common: the paper's 302 ids" in listed.output
    assert "Rare: the same folder's rare0 .. rare301" in " ".join(listed.output.split())
    done = runner.invoke(app, ["data", "get", "clindiag", "--from", str(fake_clindiag)])
    assert done.exit_code == 0, done.output
    assert f"clindiag: ready at {dataset_dir('clindiag')}" in done.output
    listed = runner.invoke(app, ["data", "list", "--verify"], env={"COLUMNS": "200"})
    assert "ready (prepared" in listed.output
    bad = runner.invoke(
        app, ["data", "get", "clindiag", "--from", str(fake_clindiag / "nowhere"), "--force"]
    )
    assert bad.exit_code == 1 and "no such folder or archive" in bad.output
    unknown = runner.invoke(app, ["data", "get", "nope"])
    assert unknown.exit_code == 1 and "Unknown data set 'nope'" in unknown.output


def test_an_explicit_path_beats_the_variable_which_beats_the_prepared_folder(
    home: Path, fake_clindiag: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pos_agent.envs.clindiag import ClinDiagData

    cache = get("clindiag", str(fake_clindiag))
    assert ClinDiagData.locate().root == cache
    variable, explicit = tmp_path / "variable", tmp_path / "explicit"
    for folder in (variable, explicit):
        folder.mkdir()
        (folder / "cases.jsonl").write_text((cache / "cases.jsonl").read_text())
    monkeypatch.setenv("POS_CLINDIAG_DATA", str(variable))
    assert ClinDiagData.locate().root == variable.resolve()
    assert ClinDiagData.locate(explicit).root == explicit.resolve()


def test_pos_data_get_loca_without_its_runtime(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_loca(tmp_path / "LOCA-bench")
    pin(monkeypatch, "loca", root, ["gem", "task-configs", "LICENSE"])
    done = CliRunner().invoke(app, ["data", "get", "loca", "--from", root.as_uri(), "--no-runtime"])
    assert done.exit_code == 0, done.output
    assert "building LOCA's runtime" not in done.output
    assert (dataset_dir("loca") / "task-configs" / "final_8k_set_config.json").is_file()


# -- ClinDiag's Rare half, on the reference data ------------------------------------------------


def test_the_packer_marks_the_rare_half_of_the_reference_data(tmp_path: Path) -> None:
    """The reference pack (../shared, passed by conftest as POS_CLINDIAG_DATA) split back into
    upstream case folders (the Common 302, the rare* folders and a few others), packed again with
    the shipped Common list: ClinDiag's rare0 .. rare301 are marked as the paper's Rare half, and
    the environment's splits read the marks."""
    reference = os.environ.get("POS_CLINDIAG_DATA")
    if not reference or not (Path(reference) / "cases.jsonl").is_file():
        pytest.skip("the reference ClinDiag data (../shared/data/clindiag) is not here")
    common = set(clindiag_data.paper_common_ids())
    records = [json.loads(line) for line in (Path(reference) / "cases.jsonl").open()]
    others = [r for r in records if r["case_id"] not in common and "rare" not in r["case_id"]]
    kept = [r for r in records if r["case_id"] in common or r["case_id"].startswith("rare")]
    upstream = tmp_path / "ClinDiag"
    for record in [*kept, *others[:5]]:
        folder = upstream / "benchmark_dataset" / record["case_id"]
        folder.mkdir(parents=True)
        for section in clindiag_data.SECTIONS:
            if section in record:
                (folder / f"{section}.json").write_text(json.dumps({section: record[section]}))
    out = tmp_path / "pack"
    out.mkdir()
    manifest = Manifest("clindiag", {})
    clindiag_data.build(FolderTree(upstream), clindiag_data.PINNED, out, manifest)
    packed = [json.loads(line) for line in (out / "cases.jsonl").open()]
    rare = {r["case_id"] for r in packed if r["in_rare_subset"]}
    assert rare == {f"rare{i}" for i in range(302)}
    assert {r["case_id"] for r in packed if r["in_paper_common_sample"]} == common
    assert not any(r["in_rare_subset"] and r["in_paper_common_sample"] for r in packed)
    by_id = {r["case_id"]: r for r in records}
    assert all(
        r[s] == by_id[r["case_id"]][s] for r in packed for s in clindiag_data.SECTIONS if s in r
    )
    assert "302 cases of ClinDiag's Rare Disease subset" in (out / "README.md").read_text()
    assert "302 marked as its Rare half" in manifest.notes[0]
    paper = list_tasks("clindiag", "paper", data_dir=out)
    assert Counter(t.category for t in paper) == {"common": 302, "rare": 302}
    assert [t.task_id for t in list_tasks("clindiag", "rare", data_dir=out)][:3] == [
        "rare0",
        "rare1",
        "rare2",
    ]

"""LOCA tools are read-only from metadata: every tool of every LOCA task is classified, the
classification follows the servers' own `readOnlyHint` annotations where they give them, and
tools that write are never offered to LongHorizon-Harness's read-only auditor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pos_agent.agents.context.longhorizon import auditor_view
from pos_agent.envs import Observation
from pos_agent.envs.loca.tool_access import (
    ANNOTATED_SERVERS,
    READ,
    SUBMIT,
    WRITE,
    access,
    server_access,
    with_access,
)

REPO = Path(__file__).resolve().parents[1]
CHECKOUT = REPO / ".." / "shared" / "vendor" / "LOCA-bench"
# Listed from LOCA's own MCP servers (list_tools) at the pinned runtime: name -> readOnlyHint.
LISTED = json.loads((REPO / "tests" / "data" / "loca_tools.json").read_text())["servers"]


def task_servers() -> dict[str, set[str]]:
    """Task name -> the MCP servers its configs enable, over every length."""
    if not CHECKOUT.is_dir():
        pytest.skip(f"no LOCA checkout at {CHECKOUT}")
    found: dict[str, set[str]] = {}
    for config in sorted((CHECKOUT / "task-configs").glob("final_*_set_config.json")):
        for entries in json.loads(config.read_text()).values():
            for entry in entries:
                enabled = {
                    name for name, s in entry["mcp_servers"].items() if s.get("enabled", True)
                }
                found.setdefault(entry["name"], set()).update(enabled)
    return found


def test_every_tool_of_every_loca_task_is_classified() -> None:
    servers = task_servers()
    assert len(servers) == 15
    missing = [
        f"{task}: {server}_{tool}"
        for task, names in sorted(servers.items())
        for server in sorted(names)
        for tool in LISTED[server]["tools"]
        if server_access(server, tool) is None
    ]
    assert missing == []
    assert all(server in LISTED for names in servers.values() for server in names)


def test_the_table_lists_each_tool_once_and_nothing_the_servers_do_not_offer() -> None:
    for server, listed in LISTED.items():
        tables = [set(t.get(server, ())) for t in (READ, WRITE, SUBMIT)]
        assert sum(len(t) for t in tables) == len(set().union(*tables)), server
        assert set().union(*tables) == set(listed["tools"]), server


def test_the_classification_follows_the_servers_annotations() -> None:
    annotated = {s for s, v in LISTED.items() if any(h is not None for h in v["tools"].values())}
    assert annotated == ANNOTATED_SERVERS
    for server in annotated:
        for tool, read_only in LISTED[server]["tools"].items():
            assert (server_access(server, tool) == "read") is read_only, (server, tool)


@pytest.mark.parametrize(
    "name",
    [
        "python_execute_python_execute",
        "canvas_canvas_submit_grade",
        "canvas_canvas_publish_quiz",
        "canvas_canvas_enroll_user",
        "google_cloud_bigquery_load_csv_data",
        "google_cloud_bigquery_run_query",
        "email_reply_email",
        "email_forward_email",
        "email_save_draft",
        "google_sheet_share_spreadsheet",
        "google_cloud_storage_copy_object",
        "terminal_run_command",
        "filesystem_write_file",
    ],
)
def test_writers_are_not_read_only(name: str) -> None:
    assert access(name) == "write"
    assert with_access({"name": name, "description": "x"})["read_only"] is False


def test_unknown_tools_are_never_read_only_and_claim_done_submits() -> None:
    assert access("newserver_get_things", "[newserver] Get things.") == "write"
    assert access("claim_done_claim_done", "[claim_done] Done.") == "submit"
    assert access("filesystem_read_file", "[filesystem] Read a file.") == "read"
    assert access("canvas_canvas_list_courses", "[canvas] List courses.") == "read"


def test_the_auditor_view_offers_only_the_classified_readers() -> None:
    names = [
        ("filesystem_read_file", "filesystem"),
        ("filesystem_write_file", "filesystem"),
        ("email_get_emails", "email"),
        ("email_reply_email", "email"),
        ("python_execute_python_execute", "python_execute"),
        ("claim_done_claim_done", "claim_done"),
    ]
    tools = [with_access({"name": n, "description": f"[{s}] tool"}) for n, s in names]
    view = auditor_view(Observation(text="x", tools=tools), "loca")
    offered = [t["name"] for t in view.tools or []]
    assert offered == ["filesystem_read_file", "email_get_emails", "finish"]


def test_the_servers_own_annotation_wins_over_the_table() -> None:
    hinted = with_access(
        {"name": "filesystem_read_file", "description": "[filesystem] r", "read_only": False}
    )
    assert hinted["read_only"] is False
    assert with_access({"name": "claim_done_claim_done", "read_only": True})["read_only"] is False

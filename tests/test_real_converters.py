"""The real corpus's converters, each on a small file written here in its source's layout
(`real_samples.py`), and all of them on odd input."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

import real_samples as samples
from pos_trapbench.real.formats import CONVERTERS, convert
from pos_trapbench.real.steps import RealStep, RealTrajectory
from pos_trapbench.real.textgames import ZORK_GOAL

Row = tuple[str, str | None, str | None, str, bool | None]


def rows(trajectory: RealTrajectory) -> list[Row]:
    return [(s.action, s.tool, s.arguments, s.observation, s.error) for s in trajectory.steps]


def game(action: str, reply: str, refused: bool = False) -> Row:
    return (action, None, None, reply, refused)


def call(tool: str, arguments: Mapping[str, object], output: str, error: bool | None) -> Row:
    text = json.dumps(arguments, sort_keys=True)
    return (f"{tool} {text}", tool, text, output, error)


def test_react_webshop_episodes_and_their_instructions() -> None:
    first, second = convert("react_webshop_ipynb", samples.WEBSHOP)
    assert first.goal == "find a red mug under 20 dollars"
    assert rows(first) == [
        game("search[red mug]", "Page 1\nB01 red mug $12"),
        game("click[B01]", "Invalid action!", True),
        game("click[B01]", "Invalid action!", True),
    ]
    # no line break after the instruction: the reset's observation on one line stands in
    assert second.goal == "Instruction: buy socks"
    assert rows(second) == [game("search[socks]", "no results")]


def test_adapt_traces_join_the_executor_runs_and_skip_empty_ones() -> None:
    craft, sink = convert("adapt_results", samples.ADAPT)
    assert craft.goal == "Goal: craft a stick."
    assert rows(craft) == [
        game("get 2 planks", "Got 2 planks"),
        game("craft stick using 2 planks", "Could not find enough items", True),
        game("inventory", "Inventory: planks (2)"),
    ]
    assert sink.goal == "put a mug in the sink."
    assert rows(sink) == [game("go to sink 1", "On the sink 1, you see nothing.")]


def test_balrog_csv_reads_the_header_and_multiline_observations() -> None:
    (episode,) = convert("balrog_csv", samples.BALROG)
    assert episode.goal == ""
    notice = "Your previous output did not contain a valid action. Try again."
    assert rows(episode) == [
        game("turn left", "a wall 2 steps forward\na key 1 step left"),
        game("toggle", notice, True),
    ]


def test_zorkgpt_turns_with_both_reply_headers() -> None:
    (episode,) = convert("zorkgpt_episode_txt", samples.ZORK)
    assert episode.goal == ZORK_GOAL
    assert rows(episode) == [
        game("open mailbox", "Opening the small mailbox reveals a leaflet."),
        game("go north", "You can't go that way.", True),
    ]


def test_alfworld_act_obs_episodes_start_at_act_one() -> None:
    tomato, egg = convert("react_alfworld_actobs_ipynb", samples.ALFWORLD_ACT_OBS)
    assert (tomato.goal, egg.goal) == ("cool a tomato.", "heat an egg.")
    assert rows(tomato) == [
        game("go to fridge 1", "The fridge 1 is closed."),
        game("> open fridge 1", "Nothing happens.", True),
    ]
    assert rows(egg) == [game("go to microwave 1", "You arrive at it.")]


def test_llm_action_notebook() -> None:
    (episode,) = convert("llm_action_ipynb", samples.LLM_ACTION)
    assert episode.goal == "find a pen."
    assert rows(episode) == [
        game("examine desk 1", "Nothing happens.", True),
        game("go to shelf 1", "On the shelf 1, you see a pen 1."),
    ]


def test_swe_agent_interface_commands_shell_commands_and_failures() -> None:
    (run,) = convert("swe_agent_traj", samples.SWE_AGENT)
    assert run.goal == "The parser drops tabs."
    assert rows(run) == [
        call("find_file", {"args": "parser.py"}, "Found 1 matches", None),
        call("open", {"args": "parser.py"}, "[File: parser.py]\n1:import re", None),
        call(
            "edit",
            {"args": "3:3\n    x = 1\nend_of_edit"},
            "Your proposed edit has introduced new syntax error(s).",
            True,
        ),
        call("bash", {"command": "python -m pytest"}, "Traceback (most recent call last):", True),
        ("(no action)", None, None, "no command found in the reply", True),
    ]
    assert "\n" not in run.steps[2].action


def test_mini_swe_agent_text_replies_and_format_errors() -> None:
    (run,) = convert("mini_swe_agent_traj", samples.MINI_SWE_AGENT_TEXT)
    assert run.goal == "fix the date bug"
    assert rows(run) == [
        call("bash", {"command": "ls"}, "<returncode>0</returncode>\n<output>a.py</output>", False),
        ("(no action)", None, None, "Please always provide EXACTLY ONE action", True),
        call("bash", {"command": "python a.py"}, "<returncode>1</returncode>", True),
    ]


def test_mini_swe_agent_tool_calls_answered_by_tool_messages() -> None:
    (run,) = convert("mini_swe_agent_traj", samples.MINI_SWE_AGENT_TOOLS)
    assert run.goal == "add a flag"
    assert rows(run) == [
        call("bash", {"command": "ls"}, "<returncode>0</returncode>", False),
        call("bash", {"raw": "not json"}, "timed out\nnote", True),
    ]


def test_autocoderover_turns_read_from_their_replies() -> None:
    (run,) = convert("acr_conversation", samples.ACR)
    assert run.goal == "Crash on empty list"
    assert [(s.tool, s.arguments, s.error) for s in run.steps] == [
        ("search", '{"calls": ["search_class(Foo)"]}', None),
        ("search", '{"calls": ["search_method(bar)"]}', True),
        ("search", '{"calls": []}', True),
        ("report_bug_locations", "{}", False),
        ("analyse", "{}", None),
    ]


def test_openhands_events_by_cause_and_old_pairs() -> None:
    new, old = convert("openhands_output_jsonl", samples.OPENHANDS)
    assert new.goal == "Fix the overflow"
    edit = {"command": "str_replace", "new_str": "long", "old_str": "int", "path": "a.c"}
    assert rows(new) == [
        call("execute_bash", {"command": "make"}, "error: overflow", True),
        call("str_replace_editor", edit, "ERROR: No replacement was performed", True),
        call("message", {"content": "Done?"}, "Please continue", None),
        call("finish", {"final_thought": "fixed"}, "", None),
    ]
    assert old.goal == "Bug\n\nIt breaks"
    assert rows(old) == [call("run", {"command": "ls"}, "a b", False)]


def test_tau_bench_tool_calls_and_replies_to_the_user() -> None:
    (task,) = convert("tau_bench", samples.TAU_BENCH)
    assert task.goal == "I want to cancel my trip"
    assert rows(task) == [
        call("get_reservation", {"id": "R1"}, "Error: reservation not found", True),
        call("respond", {"content": "Could you check the id?"}, "It is R2", False),
    ]


def test_toolbench_tree_in_preorder() -> None:
    (task,) = convert("toolbench_dfs", samples.TOOLBENCH)
    assert task.goal == "Find the weather in Oslo"
    assert rows(task) == [
        call("weather_api", {"city": "Oslo"}, '{"error": "", "response": "5C"}', False),
        call("Finish", {"return_type": "give_up_and_restart"}, "", None),
    ]


def test_cline_tool_uses_and_their_results() -> None:
    (run,) = convert("cline_api", samples.CLINE)
    assert run.goal == "Add a button"
    assert rows(run) == [
        call("read_file", {"path": "app.js"}, "const a = 1;", None),
        call("bash", {"command": "npm test"}, "Error executing npm", True),
    ]


def test_autogen_code_blocks_and_plain_replies() -> None:
    (chat,) = convert("autogen_notebook", samples.AUTOGEN)
    assert chat.goal == "Plot a chart of the prices."
    failed = "exitcode: 1 (execution failed)\nCode output: ZeroDivisionError"
    assert rows(chat) == [
        call("python", {"code": "print(1/0)"}, failed, True),
        call("respond", {"content": "Sorry, let me explain instead."}, "", None),
    ]


def test_langgraph_tool_calls_get_their_tool_messages() -> None:
    (run,) = convert("langgraph_notebook", samples.LANGGRAPH)
    assert run.goal == "What is the weather in Paris?"
    assert rows(run) == [
        call("get_weather", {"city": "Paris"}, "Error: service down", True),
        call("respond", {"content": "The service is down."}, "ok thanks", None),
    ]


def test_webvoyager_numbered_actions() -> None:
    (run,) = convert("webvoyager_notebook", samples.WEBVOYAGER)
    assert run.goal == "Find the cheapest flight"
    assert rows(run) == [
        call("Click", {"args": ["12"]}, "", None),
        call("Type", {"args": ["3", "Oslo"]}, "", None),
        call("retry", {"note": "parse failure"}, "Could not parse LLM Output: xyz", True),
        call("ANSWER", {"args": ["$99"]}, "", None),
    ]


def test_claude_code_transcript() -> None:
    (run,) = convert("claude_code_transcript", samples.CLAUDE_CODE)
    assert run.goal == "Deploy the site to the server"
    updated = 'Updated package.json with 1 addition\n  "build": "vite build"'
    assert rows(run) == [
        call("bash", {"command": "npm run build"}, "Error: missing script build", True),
        call("Read", {"input": "package.json"}, "Read 20 lines", None),
        call("Update", {"input": "package.json"}, updated, None),
    ]


def test_smolagents_steps() -> None:
    (run,) = convert("smolagents_console", samples.SMOLAGENTS)
    assert run.goal == "Find the population of Oslo"
    code = 'result = search("Oslo population")\nprint(result)'
    assert rows(run) == [
        call("python", {"code": code}, "Execution logs:\nOslo has 700,000 people", None),
        call("python", {"code": "final_answer(1/0)"}, "Code execution failed at line 1", True),
    ]


def test_autogpt_console() -> None:
    (run,) = convert("autogpt_console", samples.AUTOGPT)
    assert run.goal == "write a poem to poem.txt"
    written = "Command write_to_file returned: File written to successfully."
    assert rows(run) == [
        call("write_to_file", {"file": "poem.txt", "text": "roses"}, written, None),
        call("do_nothing", {}, "Unknown command 'do_nothing'.", True),
    ]


def test_browser_use_log() -> None:
    (run,) = convert("browser_use_log", samples.BROWSER_USE)
    assert run.goal == "Open example.org and read the title"
    failed = "❌ Result failed 1/3 times:\n Element with index 99 does not exist"
    assert rows(run) == [
        call(
            "go_to_url",
            {"url": "https://example.org"},
            "🔗  Navigated to https://example.org",
            None,
        ),
        call("click_element", {"index": 99}, failed, True),
    ]


def test_gemini_cli_boxes() -> None:
    (run,) = convert("gemini_cli_screen", samples.GEMINI_CLI)
    assert run.goal == "I will fix the import in main.py."
    assert rows(run) == [
        call("ReadFile", {"input": "main.py"}, "import sys", None),
        call(
            "Edit",
            {"input": "main.py: import os => import sys"},
            "Failed to edit, could not find string",
            True,
        ),
        call("bash", {"command": "pytest -q"}, "2 passed", None),
    ]


ODD_INPUTS = [
    "",
    "\x00\x01 not a log \ufffd",
    "null",
    "[]",
    "{}",
    '[1, 2, {"role": 3, "content": {"x": 1}}]',
    '{"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream", "text": 5}]}]}',
    '{"trajectory": "not a list", "tree": {"tree": [1]}, "history": 7}',
    "[" * 50000,
    samples.GEMINI_CLI[:-40],
    samples.TAU_BENCH[: len(samples.TAU_BENCH) // 2],
]


@pytest.mark.parametrize("name", sorted(CONVERTERS))
def test_every_converter_reads_odd_input_without_raising(name: str) -> None:
    for text in ODD_INPUTS:
        found = CONVERTERS[name](text)
        assert isinstance(found, list)
        for trajectory in found:
            assert trajectory.steps and all(isinstance(s, RealStep) for s in trajectory.steps)
            assert all("\n" not in s.action for s in trajectory.steps)
    assert CONVERTERS[name](None) == []  # type: ignore[arg-type]


def test_converters_are_deterministic_and_unknown_formats_read_nothing() -> None:
    assert convert("openhands_output_jsonl", samples.OPENHANDS) == convert(
        "openhands_output_jsonl", samples.OPENHANDS
    )
    assert convert("no_such_format", samples.OPENHANDS) == []

"""Converters for text-game agents: commands in, the game's reply out (tool and arguments None).

`error` is True only when the reply is one of the games' own refusals (`FAILURE_REPLIES`), so a
move that changes nothing but is accepted (a BabyAI turn against a wall) is not an error.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from pos_trapbench.real.steps import (
    RealStep,
    RealTrajectory,
    joined,
    load_json,
    never_raise,
    notebook_code_cells,
    one_line,
    text_step,
)

FAILURE_REPLIES = (
    "nothing happens.",  # ALFWorld
    "could not find",  # TextCraft
    "could not execute",  # TextCraft
    "could not craft",  # TextCraft
    "you can't see any such thing.",  # TextWorld, Inform
    "you can't go that way.",  # TextWorld, Inform, Zork
    "that's not a verb i recognise.",  # Inform
    "i don't know the word",  # Zork
    "i don't understand that.",  # Zork
    "there is a wall there.",  # Zork
    "invalid action!",  # WebShop
    "i only understood you as far as",  # Inform's parser
    "i didn't understand that sentence.",  # Inform's parser
    "you must name something more substantial.",  # Inform's parser
    "your previous output did not contain a valid action",  # BALROG's wrapper
)
"""Prefixes (lower case) of the replies with which a game refuses a command."""


def is_refusal(reply: str | None) -> bool:
    return (reply or "").strip().lower().startswith(FAILURE_REPLIES)


def game_step(action: object, reply: object) -> RealStep:
    text = "" if reply is None else str(reply)
    return text_step(action, text, is_refusal(text))


def _cell_text(cell: dict[str, Any]) -> str:
    """Everything a notebook cell printed or displayed as text."""
    parts = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        text = output.get("text")
        if text is None and isinstance(output.get("data"), dict):
            text = output["data"].get("text/plain")
        parts.append(joined(text))
    return "".join(parts)


# ReAct's WebShop notebook prints each episode after a dashed line and its number: "Action:
# reset" (whose observation holds the instruction, the goal) and then Action/Observation pairs,
# closed by a line of running averages.
_WEBSHOP_EPISODE = re.compile(
    r"-----------------\n(\d+)\n(.*?)(?=\n-----------------\n\d+\n|\Z)", re.S
)
_WEBSHOP_PAIR = re.compile(
    r"Action: (.*?)\nObservation: (.*?)"
    r"(?=\n\nAction: |\n\d+ [0-9.]+ [0-9.]+ [0-9.]+\n|\Z)",
    re.S,
)


def _webshop_episode(body: str) -> RealTrajectory:
    goal, steps = "", []
    for pair in _WEBSHOP_PAIR.finditer(body):
        action, reply = pair.group(1).strip(), pair.group(2)
        if action == "reset":
            found = re.search(r"Instruction:\s*\n(.*?)\n", reply)
            goal = found.group(1).strip() if found else one_line(reply)[:300]
            continue
        steps.append(game_step(action, re.sub(r"\n-------------\s*$", "", reply).rstrip()))
    return RealTrajectory(goal, tuple(steps))


@never_raise
def convert_react_webshop_ipynb(text: str) -> list[RealTrajectory]:
    """ReAct's WebShop notebook: the printed episodes of its run cell, one trajectory each."""
    episodes = []
    for cell in notebook_code_cells(text):
        printed = _cell_text(cell)
        if "Action: reset" in printed:
            episodes += [_webshop_episode(m.group(2)) for m in _WEBSHOP_EPISODE.finditer(printed)]
    return episodes


def _adapt_steps(trace: object) -> list[RealStep]:
    """An ADaPT executor trace: `> action` lines, each followed by the reply's lines; the runs
    of successive sub-task executors are joined by a lone `>` and a blank line."""
    steps: list[RealStep] = []
    if not isinstance(trace, str) or not trace.strip():
        return steps
    for run in re.split(r"\n>[ \t]*\n\s*\n", trace):
        if not run.strip():
            continue
        run = run.lstrip("\n")
        run = run if run.startswith(">") else ">" + run
        action: str | None = None
        reply: list[str] = []
        for line in run.split("\n"):
            if line.startswith(">"):
                if action is not None:
                    steps.append(game_step(action, "\n".join(reply)))
                action, reply = line[1:].strip() or None, []
            elif action is not None:
                reply.append(line)
        if action is not None:
            steps.append(game_step(action, "\n".join(reply)))
    return steps


def _adapt_goal(problem: object) -> str:
    if not isinstance(problem, str):
        return ""
    found = re.search(r"Your task is to: (.*)", problem)
    return (found.group(1) if found else problem).strip()


@never_raise
def convert_adapt_results(text: str) -> list[RealTrajectory]:
    """ADaPT's results JSON: tasks with a `trace`, at the top level (TextCraft) or one level
    down under a category (ALFWorld). One trajectory per task with a non-empty trace: the
    sub-task executors all act in one episode."""
    data = load_json(text)
    if not isinstance(data, dict):
        return []
    tasks = []
    for value in data.values():
        if not isinstance(value, dict):
            continue
        if "trace" in value:
            tasks.append(value)
        else:
            tasks += [v for v in value.values() if isinstance(v, dict) and "trace" in v]
    found = [
        RealTrajectory(_adapt_goal(task.get("problem")), tuple(_adapt_steps(task.get("trace"))))
        for task in tasks
    ]
    return [t for t in found if t.steps]


@never_raise
def convert_balrog_csv(text: str) -> list[RealTrajectory]:
    """A BALROG episode CSV (columns named in its header, in any order): each row's Action and
    the Observation it led to. The mission is not in the file, so the goal is empty."""
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error:
        return []
    steps = [
        game_step(row.get("Action", ""), row.get("Observation", ""))
        for row in rows
        if isinstance(row, dict) and row.get("Action") is not None
    ]
    return [RealTrajectory("", tuple(steps))]


_ZORK_TURN = re.compile(r"^--- Turn \d+ ---$", re.M)
_ZORK_REPLY = re.compile(r"^(?:Zork response:|ZORK RESPONSE for .*?:)[ \t]*\n", re.M)
_ZORK_END = re.compile(
    r"^(Extracted Info:|Turn reward:|--- Turn \d+ ---|Game over|Episode finished)", re.M
)
ZORK_GOAL = "Play Zork (Dungeon): explore, collect treasures, maximise score."


def _zork_step(block: str) -> RealStep | None:
    proposed = re.search(r"^Agent proposes: ?(.*)$", block, re.M)
    if proposed is None:
        return None
    reply = ""
    start = _ZORK_REPLY.search(block)
    if start:
        rest = block[start.end() :]
        end = _ZORK_END.search(rest)
        reply = (rest[: end.start()] if end else rest).strip("\n")
        reply = reply[1:] if reply.startswith(">") else reply
    return game_step(proposed.group(1), reply)


@never_raise
def convert_zorkgpt_episode_txt(text: str) -> list[RealTrajectory]:
    """A ZorkGPT episode log: `--- Turn N ---` blocks, each with `Agent proposes:` and the
    game's reply after `Zork response:` (or `ZORK RESPONSE for '...':`)."""
    steps = [s for s in map(_zork_step, _ZORK_TURN.split(text)[1:]) if s is not None]
    return [RealTrajectory(ZORK_GOAL, tuple(steps))]


_ACT_OBS = re.compile(r"^Act (\d+): (.*)\nObs \1: (.*)$", re.M)


@never_raise
def convert_react_alfworld_actobs_ipynb(text: str) -> list[RealTrajectory]:
    """A ReAct-style ALFWorld notebook printing `Act i:` / `Obs i:` pairs; an episode starts
    at `Act 1`, its goal the last `Your task is to:` line printed before it."""
    episodes: list[tuple[str, list[RealStep]]] = []
    for cell in notebook_code_cells(text):
        printed = _cell_text(cell)
        if "Act 1: " not in printed:
            continue
        goals = [
            (m.start(), m.group(1).strip())
            for m in re.finditer(r"^Your task is to: (.*)$", printed, re.M)
        ]
        current: list[RealStep] | None = None
        for pair in _ACT_OBS.finditer(printed):
            if int(pair.group(1)) == 1 or current is None:
                goal = next((g for at, g in reversed(goals) if at < pair.start()), "")
                current = []
                episodes.append((goal, current))
            current.append(game_step(pair.group(2), pair.group(3)))
    return [RealTrajectory(goal, tuple(steps)) for goal, steps in episodes]


@never_raise
def convert_llm_action_ipynb(text: str) -> list[RealTrajectory]:
    """A notebook printing `LLM Action:` / `Observation:` pairs closed by a dashed line, one
    episode after each `=== ALFWorld + LLM Agent Started ===` banner."""
    episodes = []
    for cell in notebook_code_cells(text):
        printed = _cell_text(cell)
        if "LLM Action: " not in printed:
            continue
        for episode in printed.split("=== ALFWorld + LLM Agent Started ===")[1:]:
            goal = re.search(r"Your task is to: (.*)", episode)
            pairs = re.finditer(
                r"^LLM Action: ([^\n]*)\nObservation: (.*?)\n-{10,}", episode, re.M | re.S
            )
            steps = tuple(game_step(m.group(1), m.group(2)) for m in pairs)
            episodes.append(RealTrajectory(goal.group(1).strip() if goal else "", steps))
    return episodes

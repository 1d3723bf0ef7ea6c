"""Converters for agent sessions saved as console text: Claude Code transcripts, smolagents'
rich log, and the fragments pasted into issue threads (Auto-GPT, browser-use, Gemini CLI).
Each file is one trajectory."""

from __future__ import annotations

import ast
import re
from typing import Any

from pos_trapbench.real.steps import (
    ANSI_ESCAPE,
    RealStep,
    RealTrajectory,
    json_call_step,
    load_json,
    never_raise,
)

_SMOLAGENTS_STEP = re.compile(r"━+ Step (\d+) ━+")
_SMOLAGENTS_CODE = re.compile(r"Executing parsed code:[^\n]*\n(.*?)\n\s*─{5,}[^\n]*\n", re.S)
_SMOLAGENTS_CALL = re.compile(r"Calling tool: '([^']+)' with arguments: (.*?)│", re.S)
_SMOLAGENTS_FAILED = re.compile(r"Error in code|Code execution failed|Error:|Traceback")


def _smolagents_noise(line: str) -> bool:
    """Blank lines, the model client's log lines and the spinner: not the step's output."""
    s = line.strip()
    return (
        not s
        or "LiteLLM" in s
        or s.startswith(("INFO:", "⠋"))
        or ("Thinking..." in s and len(s) < 40)
    )


def _smolagents_step(body: str) -> RealStep:
    code, rest = "", body
    executed = _SMOLAGENTS_CODE.search(body)
    if executed:
        code = "\n".join(x.strip() for x in executed.group(1).splitlines() if x.strip())
        rest = body[executed.end() :]
    else:
        called = _SMOLAGENTS_CALL.search(body)
        if called:
            code = f"{called.group(1)}({called.group(2).strip()})"
    footer = re.search(r"\[Step \d+: Duration", rest)
    shown = rest[: footer.start()] if footer else rest
    output = "\n".join(x.rstrip() for x in shown.splitlines() if not _smolagents_noise(x))
    failed = bool(_SMOLAGENTS_FAILED.search(output)) or None
    return json_call_step("python", {"code": code}, output, failed)


@never_raise
def convert_smolagents_console(text: str) -> list[RealTrajectory]:
    """A smolagents CodeAgent console log: each `Step N` block is a step, the code under
    "Executing parsed code" (tool `python`) and what the block printed up to its footer."""
    text = ANSI_ESCAPE.sub("", text)
    task = re.search(r"New run[^\n]*\n(.*?)╰", text, re.S)
    goal = " ".join(x.strip(" │") for x in task.group(1).splitlines()).strip() if task else ""
    pieces = _SMOLAGENTS_STEP.split(text)  # text before, then (number, block) per step
    steps = tuple(_smolagents_step(pieces[j + 1]) for j in range(1, len(pieces) - 1, 2))
    return [RealTrajectory(goal, steps)]


_CLAUDE_TOOL = re.compile(r"^⏺ ([A-Z][A-Za-z]*)\((.*)$")
_CLAUDE_CALL_END = re.compile(r"\)…?\s*$")


def _claude_output(lines: list[str], i: int) -> tuple[str, int]:
    """The `⎿` block from line `i`: up to the next tool, prose, user turn or to-do list."""
    shown: list[str] = []
    started = False
    while i < len(lines):
        line = lines[i]
        if line.startswith(("⏺ ", "> ", "✻ ")):
            break
        if line.strip().startswith("⎿"):
            if started and ("☒" in line or "☐" in line):
                break
            started = True
            shown.append(re.sub(r"^\s*⎿\s?\s?", "", line))
        elif started:
            shown.append(line[5:] if line.startswith("     ") else line)
        i += 1
    return "\n".join(shown).strip("\n"), i


def _claude_call(lines: list[str], i: int, call: re.Match[str]) -> tuple[RealStep, int]:
    """The tool call at line `i` (its arguments may go on over indented lines) and its
    output; returns the step and the line after it."""
    head = call.group(2)
    while not _CLAUDE_CALL_END.search(head) and i + 1 < len(lines):
        if not lines[i + 1].startswith("      "):
            break
        i += 1
        head += "\n" + lines[i].strip()
    argument = _CLAUDE_CALL_END.sub("", head)
    output, after = _claude_output(lines, i + 1)
    failed = output.startswith("Error") or None
    if call.group(1) == "Bash":
        return json_call_step("bash", {"command": argument}, output, failed), after
    return json_call_step(call.group(1), {"input": argument}, output, failed), after


@never_raise
def convert_claude_code_transcript(text: str) -> list[RealTrajectory]:
    """A Claude Code terminal transcript (`⏺ Tool(args)`, then `  ⎿  output`): each tool line
    is a step (`Bash` is `bash`); other `⏺` lines are the agent's prose, `> ` lines the user's
    turns. The goal is the user's first turn when it comes before the first call, else the
    last prose line before the first call, else the first prose line."""
    lines = text.splitlines()
    steps: list[RealStep] = []
    goal, first_prose, lead = "", "", ""
    goal_before_first = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("> ") and not goal:
            goal, goal_before_first = line[2:].strip(), not steps
        call = _CLAUDE_TOOL.match(line)
        if call:
            step, i = _claude_call(lines, i, call)
            steps.append(step)
            continue
        if not steps and line.strip() and not line.startswith(("#", "  ⎿", "> ")):
            lead = line.lstrip("⏺ ").strip()
        if line.startswith("⏺ ") and not first_prose:
            first_prose = line[2:].strip()
        i += 1
    if not goal_before_first:
        goal = lead or first_prose or goal
    return [RealTrajectory(goal, tuple(steps))]


_AUTOGPT_ACTION = re.compile(r"NEXT ACTION:\s+COMMAND = (.*?)\s+ARGUMENTS = (\{.*?\})\s*$", re.M)
_AUTOGPT_GOALS = (r"```yaml\s*\n\s*(\S.*)", r"Goal 1:\s*(\S.*)", r"THOUGHTS:\s*(\S.*)", r"^# (.+)$")


def _first_match(patterns: tuple[str, ...], text: str, flags: int, usable: Any) -> str:
    for pattern in patterns:
        found = re.search(pattern, text, flags)
        if found and usable(found.group(1).strip()):
            return str(found.group(1).strip())
    return ""


def _python_dict(text: str) -> dict[str, Any]:
    try:
        value = ast.literal_eval(text)
    except Exception:  # literal_eval raises many kinds on odd text
        value = None
    return value if isinstance(value, dict) else {"raw": text}


@never_raise
def convert_autogpt_console(text: str) -> list[RealTrajectory]:
    """Auto-GPT console text as pasted in an issue: each `NEXT ACTION: COMMAND = x ARGUMENTS
    = {...}` line is a step, the `SYSTEM:` line after it its observation."""
    goal = _first_match(_AUTOGPT_GOALS, text, re.M, lambda g: not g.startswith("#"))
    actions = list(_AUTOGPT_ACTION.finditer(text))
    steps = []
    for k, action in enumerate(actions):
        end = actions[k + 1].start() if k + 1 < len(actions) else len(text)
        said = re.search(
            r"SYSTEM:\s+(.*?)(?=\n\s*THOUGHTS:|\n\S+ INFO|\Z)", text[action.end() : end], re.S
        )
        output = said.group(1).strip() if said else ""
        failed = ("Unknown command" in output or "Error" in output) or None
        arguments = _python_dict(action.group(2))
        steps.append(json_call_step(action.group(1).strip(), arguments, output, failed))
    return [RealTrajectory(goal, tuple(steps))]


_BROWSER_USE_ACTION = re.compile(
    r"🛠️\s+Action \d+/\d+: (\{.*?\})(?=\s*(?:INFO|ERROR|WARNING|DEBUG|\n|$))", re.S
)
_BROWSER_USE_GOALS = (
    r"🚀 Starting task:\s*(.*?)(?:\n\s*\n|INFO)",
    r"🧠 Memory:\s*(.*?)(?:\s+INFO|\n)",
    r"^# (.+)$",
)
_LOG_LEVEL = r"(?=\s*(?:INFO|ERROR|WARNING|DEBUG)\s|\Z)"


def _browser_use_step(action: str, after: str) -> RealStep:
    shown = re.split(r"📍 Step \d+", after)[0]
    said = re.findall(r"\[controller\]\s*(.*?)" + _LOG_LEVEL, shown, re.S)
    failures = re.findall(r"❌ Result failed.*?(?=\s*(?:INFO|WARNING|DEBUG)\s|\Z)", shown, re.S)
    output = "\n".join(p.strip() for p in said + failures if p.strip())
    call = load_json(action)
    if isinstance(call, dict) and len(call) == 1:
        name = next(iter(call))
        value = call[name]
        arguments = value if isinstance(value, dict) else {"value": value}
    else:
        name, arguments = "action", {"raw": action}
    return json_call_step(name, arguments, output, bool(failures) or None)


@never_raise
def convert_browser_use_log(text: str) -> list[RealTrajectory]:
    """A browser-use agent log (INFO lines, maybe flattened onto one line): each `🛠️ Action
    i/n: {json}` is a step, the controller's lines and any `❌ Result failed` after it, up to
    the next action or step, its observation."""
    goal = _first_match(_BROWSER_USE_GOALS, text, re.S | re.M, bool)
    actions = list(_BROWSER_USE_ACTION.finditer(text))
    steps = []
    for k, action in enumerate(actions):
        end = actions[k + 1].start() if k + 1 < len(actions) else len(text)
        steps.append(_browser_use_step(action.group(1), text[action.end() : end]))
    return [RealTrajectory(goal, tuple(steps))]


_GEMINI_BOX = re.compile(r"^\s*│\s*([✔x✕])\s+(\w+)\s+(.*?)\s*│?\s*$")
_NOT_PROSE = ("╭", "╰", "│", "```", "#", "[", "labels:")


def _gemini_box(lines: list[str], i: int, box: re.Match[str]) -> tuple[RealStep, int]:
    """The tool box whose title is line `i`: its body lines up to the box's end."""
    body = []
    i += 1
    while i < len(lines) and not lines[i].strip().startswith("╰"):
        line = lines[i].strip()
        if line.startswith("│"):
            if line.strip("│").strip():
                body.append(line.strip("│").strip())
        elif line.startswith("╭"):
            break
        i += 1
    output = "\n".join(body)
    status, name, argument = box.group(1), box.group(2), box.group(3).strip()
    failed = status != "✔" or output.startswith("Error") or None
    if name == "Shell":
        return json_call_step("bash", {"command": argument}, output, failed), i
    return json_call_step(name, {"input": argument}, output, failed), i


@never_raise
def convert_gemini_cli_screen(text: str) -> list[RealTrajectory]:
    """Gemini CLI's screen text as pasted in an issue: each tool box (`│ ✔  Edit path ... │`)
    is a step, its body the observation. The goal is the last prose line before the first box
    (else the first after it, else the issue's `# title`)."""
    lines = text.splitlines()
    steps: list[RealStep] = []
    goal = ""
    i = 0
    while i < len(lines):
        box = _GEMINI_BOX.match(lines[i])
        if box:
            step, i = _gemini_box(lines, i, box)
            steps.append(step)
            continue
        line = lines[i].strip()
        prose = line and not line.startswith(_NOT_PROSE) and " · " not in line
        if prose and (not steps or not goal):
            goal = line.lstrip("✦ ").strip()
        i += 1
    if not goal:
        title = re.search(r"^# (.+)$", text, re.M)
        goal = title.group(1).strip() if title else ""
    return [RealTrajectory(goal, tuple(steps))]

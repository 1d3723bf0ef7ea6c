"""Small source files in the layout of each real-corpus format, written for the tests (made-up
runs, not taken from any source), with the steps each converter must read from them."""

from __future__ import annotations

import json
from typing import Any

RUN = "-" * 80


def notebook(*cells: dict[str, Any]) -> str:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4})


def code_cell(*printed: str, source: str = "run()") -> dict[str, Any]:
    outputs = [{"output_type": "stream", "name": "stdout", "text": [t]} for t in printed]
    return {"cell_type": "code", "source": [source], "outputs": outputs}


WEBSHOP = notebook(
    {"cell_type": "markdown", "source": ["# runs"]},
    code_cell(
        "-----------------\n0\nAction: reset\nObservation: WebShop\nInstruction:\n"
        "find a red mug under 20 dollars\n[Search]\n\n"
        "Action: search[red mug]\nObservation: Page 1\nB01 red mug $12\n\n"
        "Action: click[B01]\nObservation: Invalid action!\n\n"
        "Action: click[B01]\nObservation: Invalid action!\n0 0.0 0.0 1.0\n-------------\n"
        "-----------------\n1\nAction: reset\nObservation: Instruction:\nbuy socks\n\n"
        "Action: search[socks]\nObservation: no results\n1 0.0 0.0 1.0\n"
    ),
)

ADAPT = json.dumps(
    {
        "env_0": {
            "problem": "Goal: craft a stick.",
            "trace": "> get 2 planks\nGot 2 planks\n> craft stick using 2 planks\n"
            "Could not find enough items\n>\n\n\n> inventory\nInventory: planks (2)",
        },
        "env_1": {"problem": "Goal: craft a torch.", "trace": ""},
        "pick": {
            "task-1": {
                "problem": "You are in a room. Your task is to: put a mug in the sink.",
                "trace": "> go to sink 1\nOn the sink 1, you see nothing.",
            }
        },
        "overall": 0.5,
    }
)

BALROG = (
    "Step,Action,Reasoning,Observation,Reward,Done\r\n"
    '0,turn left,,"a wall 2 steps forward\na key 1 step left",0,False\r\n'
    '1,toggle,,"Your previous output did not contain a valid action. Try again.",0,False\r\n'
)

ZORK = (
    "Episode log\n--- Turn 1 ---\nAgent proposes: open mailbox\nZork response:\n"
    ">Opening the small mailbox reveals a leaflet.\nExtracted Info: mailbox open\n"
    "--- Turn 2 ---\nAgent proposes: go north\nZORK RESPONSE for 'go north':\n"
    "You can't go that way.\nTurn reward: 0\n--- Turn 3 ---\nthe agent said nothing\n"
)

ALFWORLD_ACT_OBS = notebook(
    code_cell(
        "Your task is to: cool a tomato.\nAct 1: go to fridge 1\nObs 1: The fridge 1 is closed.\n"
        "Act 2: > open fridge 1\nObs 2: Nothing happens.\n"
        "Your task is to: heat an egg.\nAct 1: go to microwave 1\nObs 1: You arrive at it.\n"
    )
)

LLM_ACTION = notebook(
    code_cell(
        "=== ALFWorld + LLM Agent Started ===\nYour task is to: find a pen.\n"
        "LLM Action: examine desk 1\nObservation: Nothing happens.\n----------\n"
        "LLM Action: go to shelf 1\nObservation: On the shelf 1, you see a pen 1.\n----------\n"
    )
)

SWE_AGENT = json.dumps(
    {
        "history": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "a demonstration", "is_demo": True},
            {"role": "user", "content": "ISSUE:\nThe parser drops tabs.\n\nINSTRUCTIONS:\ngo"},
        ],
        "trajectory": [
            {"action": "find_file parser.py", "observation": "Found 1 matches"},
            {"action": "open parser.py", "observation": "[File: parser.py]\n1:import re"},
            {
                "action": "edit 3:3\n    x = 1\nend_of_edit",
                "observation": "Your proposed edit has introduced new syntax error(s).",
            },
            {"action": "python -m pytest", "observation": "Traceback (most recent call last):"},
            {"action": "", "observation": "no command found in the reply"},
        ],
    }
)

MINI_SWE_AGENT_TEXT = json.dumps(
    {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {
                "role": "user",
                "content": "<pr_description>\nConsider the following PR description:\n"
                "fix the date bug\n</pr_description>",
            },
            {"role": "assistant", "content": "THOUGHT: look\n```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>a.py</output>"},
            {"role": "assistant", "content": "I forgot the block"},
            {"role": "user", "content": "Please always provide EXACTLY ONE action"},
            {"role": "assistant", "content": "```bash\npython a.py\n```"},
            {"role": "user", "content": "<returncode>1</returncode>"},
        ]
    }
)

MINI_SWE_AGENT_TOOLS = json.dumps(
    [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Please solve this issue: add a flag\n\nYou can execute"}
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
                {"id": "c2", "function": {"name": "bash", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>"},
        {"role": "tool", "tool_call_id": "c2", "content": "timed out"},
        {"role": "user", "content": "note"},
    ]
)

ACR = json.dumps(
    [
        {"role": "system", "content": "You are a developer."},
        {"role": "user", "content": "<issue>Crash on empty list</issue>"},
        {"role": "assistant", "content": "Let me search."},
        {"role": "user", "content": "Result of search_class(Foo):\n\nclass Foo: ..."},
        {"role": "assistant", "content": "And the method."},
        {"role": "user", "content": "Result of search_method(bar):\n\nCould not find method bar"},
        {"role": "assistant", "content": "hmm"},
        {"role": "user", "content": "Your search API calls seem not valid."},
        {"role": "assistant", "content": "The bug is in foo.py."},
        {"role": "user", "content": "Here are the code in buggy locations: ..."},
        {"role": "assistant", "content": "Analysis done."},
        {"role": "user", "content": "Thanks."},
    ]
)

_OPENHANDS_EVENTS = [
    {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix the overflow"}},
    {
        "id": 1,
        "source": "agent",
        "action": "run",
        "args": {"command": "make", "thought": "build first", "blocking": False},
        "tool_call_metadata": {"function_name": "execute_bash"},
    },
    {
        "id": 2,
        "source": "agent",
        "observation": "run",
        "cause": 1,
        "content": "error: overflow",
        "extras": {"metadata": {"exit_code": 2}},
    },
    {
        "id": 3,
        "source": "agent",
        "action": "edit",
        "args": {"path": "a.c", "old_str": "int", "new_str": "long", "command": "str_replace"},
        "tool_call_metadata": {"function_name": "str_replace_editor"},
    },
    {
        "id": 4,
        "source": "agent",
        "observation": "edit",
        "cause": 3,
        "content": "ERROR: No replacement was performed",
    },
    {"id": 5, "source": "agent", "action": "message", "args": {"content": "Done?"}},
    {"id": 6, "source": "user", "action": "message", "args": {"content": "Please continue"}},
    {"id": 7, "source": "agent", "action": "finish", "args": {"final_thought": "fixed"}},
    {"id": 8, "source": "environment", "action": "change_agent_state", "args": {}},
]
OPENHANDS = "\n".join(
    [
        json.dumps(
            {"instance": {"problem_statement": "Fix the overflow"}, "history": _OPENHANDS_EVENTS}
        ),
        json.dumps(
            {
                "issue": {"title": "Bug", "body": "It breaks"},
                "history": [
                    [
                        {"action": "run", "args": {"command": "ls"}, "source": "agent"},
                        {"observation": "run", "content": "a b", "extras": {"exit_code": 0}},
                    ]
                ],
            }
        ),
        "not json",
        json.dumps({"history": []}),
    ]
)

TAU_BENCH = json.dumps(
    [
        {
            "traj": [
                {"role": "system", "content": "policy"},
                {"role": "user", "content": "I want to cancel my trip"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "t1",
                            "function": {"name": "get_reservation", "arguments": '{"id": "R1"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "t1", "content": "Error: reservation not found"},
                {"role": "assistant", "content": "Could you check the id?"},
                {"role": "user", "content": "It is R2"},
            ]
        },
        "not a task",
    ]
)

TOOLBENCH = json.dumps(
    {
        "answer_generation": {"query": "Find the weather in Oslo"},
        "tree": {
            "tree": {
                "node_type": "root",
                "children": [
                    {
                        "node_type": "Action",
                        "description": "weather_api",
                        "children": [
                            {
                                "node_type": "Action Input",
                                "description": '{"city": "Oslo"}',
                                "observation": '{"error": "", "response": "5C"}',
                                "children": [],
                            }
                        ],
                    },
                    {
                        "node_type": "Action",
                        "description": "Finish",
                        "children": [
                            {
                                "node_type": "Action Input",
                                "description": '{"return_type": "give_up_and_restart"}',
                                "observation": None,
                                "children": [],
                            }
                        ],
                    },
                ],
            }
        },
    }
)

CLINE = json.dumps(
    [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nAdd a button\n</task>"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I will read the file."},
                {
                    "type": "tool_use",
                    "name": "read_file",
                    "input": {"path": "app.js", "task_progress": "- [ ] read"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "[read_file for 'app.js'] Result:\nconst a = 1;"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "name": "execute_command", "input": {"command": "npm test"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "content": [{"type": "text", "text": "Error executing npm"}],
                }
            ],
        },
    ]
)

AUTOGEN = notebook(
    code_cell(
        f"user_proxy (to assistant):\n\nPlot a chart of the prices.\n\n{RUN}\n"
        f"assistant (to user_proxy):\n\n```python\nprint(1/0)\n```\n\n{RUN}\n\n"
        ">>>>>>>> EXECUTING CODE BLOCK 0 (inferred language is python)...\n"
        "user_proxy (to assistant):\n\nexitcode: 1 (execution failed)\n"
        f"Code output: ZeroDivisionError\n\n{RUN}\n"
        f"assistant (to user_proxy):\n\nSorry, let me explain instead.\n\n{RUN}\n"
    ),
    code_cell("just one line of output\n"),
)

LANGGRAPH = notebook(
    code_cell(
        "================================ Human Message =================================\n\n"
        "What is the weather in Paris?\n"
        "================================== Ai Message ==================================\n"
        "Tool Calls:\n  get_weather (call_1)\n Call ID: call_1\n  Args:\n    city: Paris\n"
        "================================= Tool Message =================================\n"
        "Name: get_weather\n\nError: service down\n"
        "================================== Ai Message ==================================\n\n"
        "The service is down.\n"
        "================================ Human Message =================================\n\n"
        "ok thanks\n"
    )
)

WEBVOYAGER = notebook(
    code_cell(
        "1. Click: ['12']\n2. Type: ['3', 'Oslo']\n3. retry: Could not parse LLM Output: xyz\n"
        "4. ANSWER;: ['$99']\n",
        "Final response: $99",
        source='res = await call_agent("Find the cheapest flight", page)',
    ),
    code_cell(source="print('nothing')"),
)

CLAUDE_CODE = """> Deploy the site to the server

⏺ I'll check the build first.

⏺ Bash(npm run build)
  ⎿  Error: missing script build

⏺ Read(package.json)
  ⎿  Read 20 lines

⏺ Update(package.json)
  ⎿  Updated package.json with 1 addition
       "build": "vite build"
"""

SMOLAGENTS = """╭──── New run ────╮
│                 │
│ Find the population of Oslo │
│                 │
╰─────────────────╯
━━━━━━━━━━━━━━━━━━━━━━ Step 1 ━━━━━━━━━━━━━━━━━━━━━━
 ─ Executing parsed code: ─────────────────────────
  result = search("Oslo population")
  print(result)
 ──────────────────────────────────────────────────
Execution logs:
Oslo has 700,000 people
[Step 1: Duration 1.2 seconds]
━━━━━━━━━━━━━━━━━━━━━━ Step 2 ━━━━━━━━━━━━━━━━━━━━━━
 ─ Executing parsed code: ─────────────────────────
  final_answer(1/0)
 ──────────────────────────────────────────────────
Code execution failed at line 1
[Step 2: Duration 0.5 seconds]
"""

AUTOGPT = """# The agent keeps writing the same file
Goal 1: write a poem to poem.txt
THOUGHTS: I will write the poem
NEXT ACTION:  COMMAND = write_to_file  ARGUMENTS = {'file': 'poem.txt', 'text': 'roses'}
SYSTEM:  Command write_to_file returned: File written to successfully.
THOUGHTS: once more
NEXT ACTION:  COMMAND = do_nothing  ARGUMENTS = {}
SYSTEM:  Unknown command 'do_nothing'.
"""

BROWSER_USE = """INFO     [agent] 🚀 Starting task: Open example.org and read the title

INFO     [agent] 📍 Step 1
INFO     [agent] 🛠️  Action 1/1: {"go_to_url":{"url":"https://example.org"}}
INFO     [controller] 🔗  Navigated to https://example.org
INFO     [agent] 📍 Step 2
INFO     [agent] 🛠️  Action 1/1: {"click_element":{"index":99}}
ERROR    [agent] ❌ Result failed 1/3 times:
 Element with index 99 does not exist
INFO     [agent] 📍 Step 3
"""

GEMINI_CLI = """# The CLI loops on edits
✦ I will fix the import in main.py.
╭──────────────────────────────────────────╮
│ ✔  ReadFile main.py                      │
│                                          │
│    import sys                            │
╰──────────────────────────────────────────╯
╭──────────────────────────────────────────╮
│ x  Edit main.py: import os => import sys │
│                                          │
│    Failed to edit, could not find string │
╰──────────────────────────────────────────╯
╭──────────────────────────────────────────╮
│ ✔  Shell pytest -q                       │
│    2 passed                              │
"""

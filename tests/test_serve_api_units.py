"""Units of the judged APIs: the tool calls read out of an agent's code, the Responses and
Messages histories as Chat Completions messages, the notes in each API's shape, and a streamed
smolagents answer ended with its own `final_answer` at the stop level."""

from __future__ import annotations

import json
from typing import Any

from pos_agent.adapters import code_blocks, code_calls
from pos_agent.monitor import MonitorReport, ToolCall, TrapMonitor
from pos_agent.serve.apis import History
from pos_agent.serve.messages_api import MessagesApi
from pos_agent.serve.policy import Judge, Verdict
from pos_agent.serve.responses_api import ResponsesApi
from pos_agent.serve.sessions import Note
from pos_agent.serve.streaming import StreamGuard, error_event, sse_fields


def test_the_tool_calls_in_code() -> None:
    code = (
        "def helper(x):\n    return x\n"
        "text = read_file(path='app.py')\n"
        "print(len(text), helper(1))\n"
        "grep('main', text, ignore_case=True)\n"
        "final_answer(text)\n"
    )
    assert code_calls(code) == [
        ToolCall("read_file", {"path": "app.py"}),
        ToolCall("grep", {"args": ["main", "text"], "ignore_case": True}),
    ]
    assert code_calls("this is not ( python") == []
    answer = "Thought: look.\n<code>\nread_file(path='a')\n</code>\nand ```py\nls()\n```"
    assert code_blocks(answer) == ["read_file(path='a')\n", "ls()\n"]
    assert code_blocks("Thought: <code>\nopen_door()") == ["open_door()"]  # no closing tag


def test_a_responses_request_as_chat_messages_and_its_notes() -> None:
    payload: dict[str, Any] = {
        "instructions": "You fix app.py.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "why does it fail?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "a", "name": "read_file", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "text"},
            {"type": "function_call_output", "call_id": "b", "output": "files"},
        ],
    }
    api = ResponsesApi()
    history = api.history(payload)
    assert history is not None
    roles = [m["role"] for m in history.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool"]
    assert [c["function"]["name"] for c in history.messages[2]["tool_calls"]] == ["read_file", "ls"]
    assert history.origin == [-1, 0, 3, 4, 5]
    verdict = Verdict(None, "s", notes=(Note(4, "[PoS monitor] Note: x"),))
    sent = api.with_notes(payload, history, verdict, "user")
    assert sent is not None
    assert sent["input"][-1] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "[PoS monitor] Note: x"}],
    }
    assert api.history({"input": 3}) is None


def test_a_messages_request_as_chat_messages_and_its_notes() -> None:
    payload: dict[str, Any] = {
        "system": [{"type": "text", "text": "You fix app.py."}],
        "messages": [
            {"role": "user", "content": "why does it fail?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "text"}],
            },
        ],
    }
    api = MessagesApi()
    history = api.history(payload)
    assert history is not None
    assert [m["role"] for m in history.messages] == ["system", "user", "assistant", "tool"]
    assert history.messages[2]["tool_calls"][0]["function"]["arguments"] == {"path": "a"}
    verdict = Verdict(None, "s", notes=(Note(3, "[PoS monitor] Note: x"),), extra_note="belief")
    sent = api.with_notes(payload, history, verdict, "system")
    assert sent is not None
    last = sent["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text", "text"]
    assert payload["messages"][-1]["content"][-1]["type"] == "tool_result"  # not changed in place


def _stopping(fmt: str | None) -> Judge:
    monitor = TrapMonitor("read app.py")
    report: MonitorReport | None = None
    for _ in range(14):
        report = monitor.observe(ToolCall("read_file", {"path": "app.py"}), "same text")
    assert report is not None and report.escalation == "stop"
    return Judge(Verdict(report, "s", stop=True), monitor, fmt)


STREAM = [
    b'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", '
    b'"function": {"name": "read_file", "arguments": "{}"}}]}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}\n\n',
    b"data: [DONE]\n\n",
]


def _deltas(out: list[bytes]) -> list[dict[str, Any]]:
    events = b"".join(out).split(b"\n\n")
    datas = [sse_fields(e)[1] for e in events if e.strip()]
    return [json.loads(d)["choices"][0] for d in datas if d and d != "[DONE]"]


def test_a_streamed_stop_ends_a_smolagents_run_with_its_final_answer() -> None:
    guard = StreamGuard(Verdict(None, "s"), None, _stopping("smolagents"))
    choices = _deltas([p for chunk in STREAM for p in guard.feed(chunk)] + guard.close())
    calls = [c for choice in choices for c in choice["delta"].get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["final_answer"]
    answer = json.loads(calls[0]["function"]["arguments"])["answer"]
    assert answer.startswith("[PoS monitor] Stop now.")
    assert choices[-1]["finish_reason"] == "tool_calls"
    # Any other agent reads the stop as the assistant's text.
    other = StreamGuard(Verdict(None, "s"), None, _stopping("tool_calls"))
    choices = _deltas([p for chunk in STREAM for p in other.feed(chunk)] + other.close())
    assert "".join(c["delta"].get("content") or "" for c in choices).startswith(
        "[PoS monitor] Stop now."
    )
    assert choices[-1]["finish_reason"] == "stop"


def test_the_error_event_carries_an_error_object_and_the_responses_fields() -> None:
    name, data = sse_fields(error_event("upstream_stream_broken", "PoS proxy: broke"))
    body = json.loads(data or "")
    assert name == "error" and body["type"] == "error"
    assert (
        body["error"]["message"] == "PoS proxy: broke" and body["code"] == "upstream_stream_broken"
    )


def test_history_origin_defaults_to_the_messages_themselves() -> None:
    assert History([{"role": "user", "content": "x"}]).origin == []

"""A scripted upstream for the three APIs `pos serve` judges (no tests here): OpenAI Chat
Completions, the OpenAI Responses API and the Anthropic Messages API, whole or streamed, each
in its own shape; a stream can be made to stall or to be cut after some events. And the tool
loops of the real clients (`openai`, `anthropic`) against it.

A script answers a request's body with `{"tool_calls": [(name, arguments)]}` or
`{"content": text}`, as in test_serve_fakes.py; `until(mark)` loops on one call until `mark`
appears anywhere in the request (a note or a refusal of the proxy).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pos_agent.serve import ServeConfig, create_app
from test_serve_fakes import KEY, ThreadServer, run_tool

Script = Callable[[dict[str, Any]], dict[str, Any]]
TASK = "Find out why app.py exits with status 1."
READ = {"path": "app.py"}


def until(mark: str, *, then: str = "I will stop repeating myself. Done.") -> Script:
    """Read app.py again and again until `mark` is in the request, then answer `then`."""

    def script(body: dict[str, Any]) -> dict[str, Any]:
        if mark in json.dumps(body):
            return {"content": then}
        return {"tool_calls": [("read_file", READ)]}

    return script


@dataclass
class ApiUpstream:
    """What the scripted upstream does and what it saw."""

    script: Script
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    breaks: str | None = None
    """"stall", "cut" (the connection dies) or "end" (a clean end) a stream after `break_after`
    events."""
    break_after: int = 2
    released: threading.Event = field(default_factory=threading.Event)
    ids: Iterator[int] = field(default_factory=itertools.count)


def _calls(reply: dict[str, Any], n: int) -> list[tuple[str, str, str]]:
    """(call id, name, arguments as JSON) of a reply's calls."""
    return [
        (f"call_{n}_{i}", name, json.dumps(args))
        for i, (name, args) in enumerate(reply.get("tool_calls", []))
    ]


# -- Chat Completions -----------------------------------------------------------------------------


def chat_answer(reply: dict[str, Any], n: int) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": name, "arguments": args}}
        for i, name, args in _calls(reply, n)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chat_events(reply: dict[str, Any], n: int) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data)}\n\n".encode()

    out = [chunk({"role": "assistant", "content": ""})]
    for index, (call_id, name, args) in enumerate(_calls(reply, n)):
        head = {"index": index, "id": call_id, "type": "function"}
        out.append(chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]}))
    for word in (reply.get("content") or "").split(" ") if reply.get("content") else []:
        out.append(chunk({"content": word + " "}))
    out.append(chunk({}, "tool_calls" if reply.get("tool_calls") else "stop"))
    out.append(b"data: [DONE]\n\n")
    return out


# -- Responses ------------------------------------------------------------------------------------


def _usage_responses() -> dict[str, Any]:
    return {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }


def responses_output(reply: dict[str, Any], n: int) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": name,
            "arguments": args,
            "status": "completed",
        }
        for call_id, name, args in _calls(reply, n)
    ]
    if reply.get("content"):
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply["content"], "annotations": []}],
            }
        )
    return output


def responses_answer(reply: dict[str, Any], n: int, status: str = "completed") -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "fake",
        "output": responses_output(reply, n) if status == "completed" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": _usage_responses() if status == "completed" else None,
    }


def responses_events(reply: dict[str, Any], n: int) -> list[bytes]:
    seq = itertools.count()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": responses_answer(reply, n, "in_progress")}
    ]
    for index, item in enumerate(responses_output(reply, n)):
        if item["type"] == "function_call":
            at = {"item_id": item["id"], "output_index": index}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                },
                {
                    "type": "response.function_call_arguments.delta",
                    **at,
                    "delta": item["arguments"],
                },
                {
                    "type": "response.function_call_arguments.done",
                    **at,
                    "arguments": item["arguments"],
                },
            ]
        else:
            text = item["content"][0]["text"]
            at = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": [], "status": "in_progress"},
                },
                {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []},
                {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": responses_answer(reply, n)})
    return [
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': next(seq)})}\n\n".encode()
        for e in events
    ]


# -- Anthropic Messages ---------------------------------------------------------------------------


def messages_answer(reply: dict[str, Any], n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.get("content"):
        content.append({"type": "text", "text": reply["content"]})
    content += [
        {"type": "tool_use", "id": f"toolu_{call_id}", "name": name, "input": json.loads(args)}
        for call_id, name, args in _calls(reply, n)
    ]
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "fake",
        "content": content,
        "stop_reason": "tool_use" if reply.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def messages_events(reply: dict[str, Any], n: int) -> list[bytes]:
    whole = messages_answer(reply, n)
    start = {**whole, "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            events += [
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": block["text"]},
                },
            ]
        else:
            partial = json.dumps(block["input"])
            events += [
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": partial},
                },
            ]
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


# -- the server -----------------------------------------------------------------------------------

SHAPES = {
    "chat/completions": (chat_answer, chat_events),
    "responses": (responses_answer, responses_events),
    "messages": (messages_answer, messages_events),
}


async def _stream(upstream: ApiUpstream, events: list[bytes]) -> AsyncIterator[bytes]:
    for index, event in enumerate(events):
        if upstream.breaks and index == upstream.break_after:
            if upstream.breaks == "cut":
                raise ConnectionResetError("the upstream died mid-stream")
            if upstream.breaks == "stall":
                await asyncio.to_thread(upstream.released.wait, 30)
            return  # "end": a clean end, before the stream's last event
        yield event


def api_upstream_app(upstream: ApiUpstream) -> Starlette:
    def handler(shape: str) -> Callable[[Request], Any]:
        whole, streamed = SHAPES[shape]

        async def answer(request: Request) -> Response:
            body = json.loads(await request.body())
            upstream.bodies.append(body)
            upstream.paths.append(request.url.path)
            n = next(upstream.ids)
            reply = upstream.script(body)
            if body.get("stream"):
                return StreamingResponse(
                    _stream(upstream, streamed(reply, n)), media_type="text/event-stream"
                )
            return JSONResponse(whole(reply, n))

        return answer

    return Starlette(
        routes=[Route(f"/v1/{shape}", handler(shape), methods=["POST"]) for shape in SHAPES]
    )


@contextmanager
def serving_apis(upstream: ApiUpstream, **settings: Any) -> Iterator[tuple[str, Any]]:
    """The scripted upstream and a proxy in front of it: the proxy's root URL and app."""
    with ThreadServer(api_upstream_app(upstream)) as up:
        app = create_app(ServeConfig(upstream=f"{up.url}/v1", **settings))
        try:
            with ThreadServer(app) as proxy:
                yield proxy.url, app
        finally:
            upstream.released.set()  # a stalled stream ends, so that the upstream can stop


# -- the clients' tool loops ----------------------------------------------------------------------


def responses_loop(
    root: str, *, stream: bool = False, max_turns: int = 20, session: str = "resp"
) -> tuple[list[dict[str, str]], list[Any], str | None]:
    """The `openai` client's Responses tool loop: each response's headers, the input items at
    the end, and the last answer's text (None: it ended on a call)."""
    from openai import OpenAI

    client: Any = OpenAI(
        base_url=f"{root}/v1",
        api_key=KEY,
        max_retries=0,
        default_headers={"X-PoS-Session": session},
    )
    items: list[Any] = [{"role": "user", "content": TASK}]
    clock = itertools.count()
    seen: list[dict[str, str]] = []
    text = None
    tools = [
        {
            "type": "function",
            "name": "read_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    for _ in range(max_turns):
        raw = client.responses.with_raw_response.create(
            model="fake", input=items, tools=tools, stream=stream, instructions="You fix app.py."
        )
        seen.append(dict(raw.headers))
        if stream:
            events = list(raw.parse())
            response = next(e.response for e in events if e.type == "response.completed")
        else:
            response = raw.parse()
        calls = [o for o in response.output if o.type == "function_call"]
        items += [o.model_dump(exclude_none=True) for o in response.output]
        text = response.output_text or None
        if not calls:
            break
        for call in calls:
            output = run_tool(call.name, call.arguments, clock)
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": output}
            )
    return seen, items, text


def messages_loop(
    root: str, *, stream: bool = False, max_turns: int = 20, session: str = "msgs"
) -> tuple[list[dict[str, str]], list[Any], str | None]:
    """The `anthropic` client's tool loop, as `responses_loop`."""
    import anthropic

    client = anthropic.Anthropic(
        base_url=root, api_key=KEY, max_retries=0, default_headers={"X-PoS-Session": session}
    )
    messages: list[Any] = [{"role": "user", "content": TASK}]
    clock = itertools.count()
    seen: list[dict[str, str]] = []
    text = None
    tools: Any = [
        {
            "name": "read_file",
            "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    for _ in range(max_turns):
        arguments: Any = {
            "model": "fake",
            "max_tokens": 256,
            "system": "You fix app.py.",
            "messages": messages,
            "tools": tools,
        }
        if stream:
            with client.messages.stream(**arguments) as events:
                seen.append(dict(events.response.headers))
                message = events.get_final_message()
        else:
            raw = client.messages.with_raw_response.create(**arguments)
            seen.append(dict(raw.headers))
            message = raw.parse()
        blocks = [b.model_dump(exclude_none=True) for b in message.content]
        messages.append({"role": "assistant", "content": blocks})
        uses = [b for b in message.content if b.type == "tool_use"]
        text = "".join(b.text for b in message.content if b.type == "text") or None
        if not uses:
            break
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use.id,
                "content": run_tool(use.name, json.dumps(use.input), clock),
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})
    return seen, messages, text

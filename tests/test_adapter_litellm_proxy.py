"""The LiteLLM guardrail inside LiteLLM's own proxy server (litellm 1.110.2 from PyPI, its
`litellm` command) on 127.0.0.1, in front of a scripted upstream, configured as
docs/serve.md shows: the real `openai` client's tool loop through the proxy. A stuck loop gets
the monitor's note first, then a 400 refusal; a productive run gets neither."""

from __future__ import annotations

import itertools
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test_serve_fakes import (
    BLOCK_MARK,
    NOTE_PREFIX,
    NUDGE_MARK,
    READ_TOOL,
    ThreadServer,
    Upstream,
    history_text,
    loops_until,
    productive,
    run_tool,
    upstream_app,
)

pytest.importorskip("litellm.proxy.proxy_server", exc_type=ImportError)
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

TASK = "Find out why app.py exits with status 1."
LITELLM = Path(sys.executable).with_name("litellm")
CONFIG = """
model_list:
  - model_name: fake
    litellm_params:
      model: openai/fake
      api_base: {upstream}/v1
      api_key: sk-upstream
guardrails:
  - guardrail_name: pos
    litellm_params:
      guardrail: pos_agent.serve.litellm.PosGuardrail
      mode: [pre_call, post_call]
      default_on: true
      policy: block
"""


class Scripted:
    """The upstream's script, switched by each test (one proxy serves them all)."""

    def __init__(self) -> None:
        self.script: Any = loops_until("never")

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.script(body))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def litellm_proxy(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, str, Upstream, Scripted]]:
    """LiteLLM's proxy on 127.0.0.1 with the guardrail, in front of a scripted upstream:
    its URL, its master key, the upstream and its script. Stopped by its process handle."""
    if not LITELLM.exists():
        pytest.skip("the litellm command is not installed")
    scripted = Scripted()
    upstream = Upstream(scripted)
    folder = tmp_path_factory.mktemp("litellm")
    with ThreadServer(upstream_app(upstream)) as up:
        config = folder / "config.yaml"
        config.write_text(CONFIG.format(upstream=up.url), encoding="utf-8")
        port, key = _free_port(), "sk-" + secrets.token_hex(32)
        env = {**os.environ, "LITELLM_MASTER_KEY": key, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        log = (folder / "proxy.log").open("w", encoding="utf-8")
        command = [str(LITELLM), "--config", str(config), "--host", "127.0.0.1"]
        proc = subprocess.Popen(
            [*command, "--port", str(port)], cwd=folder, env=env, stdout=log, stderr=log
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    tail = (folder / "proxy.log").read_text(encoding="utf-8")[-3000:]
                    raise RuntimeError(f"LiteLLM's proxy did not start:\n{tail}")
                try:
                    if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
            yield url, key, upstream, scripted
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
            log.close()


def _streamed(client: Any, history: list[dict[str, Any]]) -> dict[str, Any]:
    """One streamed answer, put together as the message an agent keeps."""
    content, calls = "", dict[int, dict[str, str]]()
    stream = client.chat.completions.create(
        model="fake", messages=history, tools=[READ_TOOL], stream=True
    )
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for part in delta.tool_calls or []:
            call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = part.id or call["id"]
            call["name"] += (part.function and part.function.name) or ""
            call["arguments"] += (part.function and part.function.arguments) or ""
    message: dict[str, Any] = {"role": "assistant", "content": content.strip() or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls.values()
        ]
    return message


def _loop(
    url: str, key: str, session: str, *, stream: bool = False
) -> tuple[list[str], Exception | None]:
    """The `openai` client's tool loop through the proxy: the content of each answer, and the
    error that ended it (None: it answered without a call)."""
    client = openai.OpenAI(
        base_url=f"{url}/v1",
        api_key=key,
        max_retries=0,
        default_headers={"X-PoS-Session": session},
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    clock = itertools.count()
    answers: list[str] = []
    for _ in range(20):
        try:
            reply = client.chat.completions.create(
                model="fake", messages=history, tools=[READ_TOOL]
            )
        except openai.APIStatusError as error:
            return answers, error
        message = reply.choices[0].message
        answers.append(message.content or "")
        history.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return answers, None
        for call in message.tool_calls:
            output = run_tool(call.function.name, call.function.arguments, clock)
            history.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return answers, None


def test_a_stuck_loop_is_nudged_then_refused(
    litellm_proxy: tuple[str, str, Upstream, Scripted],
) -> None:
    url, key, upstream, scripted = litellm_proxy
    scripted.script = loops_until("never")
    first = len(upstream.bodies)
    _, error = _loop(url, key, "stuck")
    sent = [history_text(body["messages"]) for body in upstream.bodies[first:]]
    assert isinstance(error, openai.BadRequestError), f"no refusal in 20 turns: {error!r}"
    assert BLOCK_MARK in str(error) and "read_file" in str(error)
    nudged = next(i for i, text in enumerate(sent) if NUDGE_MARK in text)
    assert 0 < nudged < len(sent) - 1, "the note went upstream on a turn before the refusal"


def test_a_streamed_stuck_loop_is_nudged_then_refused(
    litellm_proxy: tuple[str, str, Upstream, Scripted],
) -> None:
    url, key, upstream, scripted = litellm_proxy
    scripted.script = loops_until("never")
    first = len(upstream.bodies)
    _, error = _loop(url, key, "stuck-stream", stream=True)
    sent = [history_text(body["messages"]) for body in upstream.bodies[first:]]
    # The client streams; LiteLLM's proxy, with a post-call guardrail, takes each answer whole
    # from the upstream, runs the hook, then streams it: the refusal comes as a 400.
    assert isinstance(error, openai.BadRequestError), f"no refusal in 20 turns: {error!r}"
    assert BLOCK_MARK in str(error) and "read_file" in str(error)
    nudged = next(i for i, text in enumerate(sent) if NUDGE_MARK in text)
    assert 0 < nudged < len(sent) - 1


def test_a_productive_run_is_left_alone(litellm_proxy: tuple[str, str, Upstream, Scripted]) -> None:
    url, key, upstream, scripted = litellm_proxy
    scripted.script = productive(paths=10)
    first = len(upstream.bodies)
    answers, error = _loop(url, key, "productive")
    assert error is None
    assert answers[-1] == "All files read. Done."
    assert len(upstream.bodies) - first == 11
    assert not any(NOTE_PREFIX in json.dumps(body) for body in upstream.bodies[first:])

"""Secrets and access in `pos serve`: every common credential form masked in traces and logs,
tool outputs kept out of traces unless asked for, paths that would leave the upstream's base
refused, and the `/pos` endpoints behind a token (a non-loopback bind refused without one)."""

from __future__ import annotations

import http.client
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from typer.testing import CliRunner

from pos_agent.cli.app import app as cli_app
from pos_agent.redaction import REDACTED, RedactingFilter, redact_record, redact_text
from pos_agent.serve import ServeConfig, create_app
from test_serve_fakes import ThreadServer, Upstream, productive, serving

# (what the text says, the secret in it that must not be written)
CREDENTIALS = [
    ("OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"),
    ("key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4"),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        'AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        '{"AccessKeyId": "ASIAY34FZKBOKMUTVV7A", "SecretAccessKey": "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"}',
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    ),
    (
        "remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "GITHUB_TOKEN=github_pat_11ABCDEFG0aBcDeFgHiJkL_MnOpQrStUvWxYz0123456789",
        "github_pat_11ABCDEFG0aBcDeFgHiJkL_MnOpQrStUvWxYz0123456789",
    ),
    ("gitlab token glpat-xR4nD0mT0k3nV4lu3zzz", "glpat-xR4nD0mT0k3nV4lu3zzz"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("curl -H 'Authorization: Bearer abc123DEF456ghi789'", "abc123DEF456ghi789"),
    ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
    ("{'authorization': 'Token 9f8e7d6c5b4a39281706'}", "9f8e7d6c5b4a39281706"),
    ("x-api-key: anthropic-key-7f6e5d4c3b2a", "anthropic-key-7f6e5d4c3b2a"),
    ("DATABASE_URL=postgres://app:hunter2pass@db.internal:5432/prod", "hunter2pass"),
    ("GET https://api.example.com/v1/x?api_key=q1w2e3r4t5y6&page=2", "q1w2e3r4t5y6"),
    ("xoxb-2048-4096-AbCdEfGhIjKlMnOp is the bot token", "xoxb-2048-4096-AbCdEfGhIjKlMnOp"),
    (
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q in config.js",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    ),
    ("password: correct-horse-battery", "correct-horse-battery"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACD\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7", "MIIEowIBAAKCAQEA7"),
]


@pytest.mark.parametrize(("text", "secret"), CREDENTIALS, ids=[c[1][:12] for c in CREDENTIALS])
def test_each_credential_form_is_masked(text: str, secret: str) -> None:
    masked = redact_text(text)
    assert secret not in masked and REDACTED in masked
    assert secret not in json.dumps(redact_record({"output": text, "nested": [text]}))


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "the bearer of bad news",
        "max_tokens=100, temperature=0.2",
        "tests/test_app.py: 12 passed, 1 failed",
        "def tokenize(text): return text.split()",
    ):
        assert redact_text(text) == text


def test_log_records_are_masked() -> None:
    record = logging.LogRecord(
        "pos_agent.serve", logging.INFO, __file__, 1, "upstream said %s", (CREDENTIALS[6][0],), None
    )
    assert RedactingFilter().filter(record)
    assert CREDENTIALS[6][1] not in record.getMessage() and REDACTED in record.getMessage()


def _leaky_history() -> list[dict[str, Any]]:
    output = "\n".join(text for text, _ in CREDENTIALS)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "sh", "arguments": '{"cmd":"env"}'},
    }
    return [
        {"role": "user", "content": "Why does the deploy fail?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": f"MARKER-OUTPUT\n{output}"},
    ]


@pytest.mark.parametrize("outputs", [False, True])
def test_traces_hold_tool_outputs_only_when_asked_and_never_a_secret(
    tmp_path: Path, outputs: bool
) -> None:
    upstream = Upstream(productive(1))
    with serving(upstream, trace_dir=tmp_path, trace_outputs=outputs) as (url, _):
        answer = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": _leaky_history()},
            headers={"X-PoS-Session": "leaky"},
        )
    assert answer.status_code == 200
    written = (tmp_path / "leaky" / "events.jsonl").read_text()
    observations = [json.loads(line) for line in written.splitlines() if '"observation"' in line]
    assert observations
    assert ("MARKER-OUTPUT" in written) is outputs
    for _, secret in CREDENTIALS:
        assert secret not in written
    if not outputs:
        assert "not traced" in observations[0]["text"]


def _recording_upstream(paths: list[str]) -> Starlette:
    async def anything(request: Request) -> Response:
        paths.append(request.url.path)
        return JSONResponse({"path": request.url.path})

    return Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST"])])


ESCAPES = [
    "/v1/../x",
    "/v1/../../x",
    "/v1/%2e%2e/x",
    "/v1/%2E%2E/x",
    "/v1/.%2e/x",
    "/v1/%2e./x",
    "/v1/..%2fx",
    "/v1/%2e%2e%2fx",
    "/v1/%252e%252e/x",
    "/v1/%25252e%25252e/x",
    "/v1/models/..%5c..%5cx",
    "/v1/a/./../../x",
    "/../x",
]


def test_no_path_reaches_the_upstream_outside_its_base() -> None:
    paths: list[str] = []
    with ThreadServer(_recording_upstream(paths)) as up:
        config = ServeConfig(upstream=f"{up.url}/v1")
        with ThreadServer(create_app(config)) as proxy:
            host, port = proxy.url.removeprefix("http://").split(":")
            statuses = {}
            for path in [*ESCAPES, "/v1/models"]:
                connection = http.client.HTTPConnection(host, int(port), timeout=10)
                connection.request("GET", path)  # sent as written: no client-side clean-up
                statuses[path] = connection.getresponse().status
                connection.close()
    assert statuses.pop("/v1/models") == 200
    assert all(status in (400, 404) for status in statuses.values()), statuses
    assert paths == ["/v1/models"]  # the one clean path, and nothing outside /v1


def test_pos_endpoints_need_the_token() -> None:
    upstream = Upstream(productive(1))
    with serving(upstream, pos_token="s3cret-t0ken-for-tests") as (url, _):
        base = url.removesuffix("/v1")
        bare = httpx.get(f"{base}/pos/sessions")
        wrong = httpx.get(f"{base}/pos/sessions", headers={"Authorization": "Bearer nope"})
        bearer = httpx.get(
            f"{base}/pos/sessions", headers={"Authorization": "Bearer s3cret-t0ken-for-tests"}
        )
        header = httpx.get(
            f"{base}/pos/sessions", headers={"X-PoS-Token": "s3cret-t0ken-for-tests"}
        )
        made = ServeConfig(upstream="http://127.0.0.1:9/v1").pos_token
    assert bare.status_code == 401 and "token" in bare.json()["error"]["message"]
    assert wrong.status_code == 401
    assert bearer.status_code == 200 and header.status_code == 200
    assert made and len(made) >= 24 and made != ServeConfig(upstream="http://x/v1").pos_token


def test_a_non_loopback_bind_without_a_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POS_SERVE_TOKEN", raising=False)
    result = CliRunner().invoke(
        cli_app, ["serve", "--upstream", "http://127.0.0.1:9/v1", "--host", "0.0.0.0"]
    )
    assert result.exit_code == 2
    assert "--pos-token" in result.output and "POS_SERVE_TOKEN" in result.output


def test_serve_help_names_the_three_apis() -> None:
    result = CliRunner().invoke(cli_app, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "Responses" in text and "Anthropic Messages" in text
    assert "--max-body-mb" in text and "--trace-outputs" in text and "--pos-token" in text


def test_a_password_in_the_upstream_url_is_never_shown() -> None:
    config = ServeConfig(upstream="http://agent:pw-s3cret-99@127.0.0.1:9/v1", pos_token="t0ken-xyz")
    with ThreadServer(create_app(config)) as proxy:
        failed = httpx.post(
            f"{proxy.url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            timeout=20,
        )
        status = httpx.get(f"{proxy.url}/pos/sessions", headers={"X-PoS-Token": "t0ken-xyz"})
    assert failed.status_code == 502 and "upstream_unreachable" in failed.text
    assert status.status_code == 200 and "agent:" in status.json()["upstream"]
    for text in (failed.text, status.text):
        assert "pw-s3cret-99" not in text


def test_a_masked_record_keeps_its_arguments_for_formatters_that_unpack_them() -> None:
    # uvicorn's access formatter unpacks (client, method, path, version, status) from the args.
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/v1/models?api_key={CREDENTIALS[0][1]}", "1.1", 200),
        None,
    )
    assert RedactingFilter().filter(record)
    assert isinstance(record.args, tuple) and len(record.args) == 5 and record.args[4] == 200
    path = record.args[2]
    assert isinstance(path, str)
    assert CREDENTIALS[0][1] not in path and REDACTED in path
    assert CREDENTIALS[0][1] not in record.getMessage()

"""Each model's server and key are its own: `--base-url` and the key are the policy's, and a
judge of another provider (`dashscope:`) never takes them; credentials in a URL are sent as a
header, the Bearer key still goes, and neither lands in a record."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from llm_fakes import FakeServer, chat
from pos_agent.bench.identity import result_options
from pos_agent.events import ObservationEvent
from pos_agent.llm import (
    Message,
    ModelOptions,
    load_model,
    mask_key_like,
    owned_by_policy,
    url_secrets,
)
from pos_agent.trace import TraceWriter

pytest_plugins = ["llm_fixtures"]

ASK = [Message("user", "Is it the flu?")]


@pytest.fixture
def second() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.thread.start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def policy_options(server: FakeServer) -> ModelOptions:
    options = ModelOptions(base_url=server.base_url, api_key=SecretStr("sk-policy-1111"))
    return owned_by_policy(options, ["openai:policy-model"])


def test_the_base_url_and_key_belong_to_the_policys_provider(server: FakeServer) -> None:
    assert policy_options(server).endpoint_provider == "openai"
    assert owned_by_policy(ModelOptions(), ["openai:m"]).endpoint_provider is None
    mixed = owned_by_policy(ModelOptions(base_url=server.base_url), ["openai:a", "dashscope:b"])
    assert mixed.endpoint_provider is None


def test_a_dashscope_judge_keeps_its_own_endpoint_and_key(
    server: FakeServer, second: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_BASE_URL", second.base_url)
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-dash-2222")
    options = policy_options(server)
    second.queue(chat("yes"))
    judge = load_model("dashscope:qwen-judge", options)
    assert judge.complete(ASK).text == "yes"
    assert not server.seen, "the judge was sent to the policy's server"
    assert second.seen[0].headers["authorization"] == "Bearer sk-dash-2222"
    server.queue(chat("act"))
    load_model("openai:policy-model", options).complete(ASK)
    assert server.seen[0].headers["authorization"] == "Bearer sk-policy-1111"


def test_the_identity_records_each_models_own_server(
    server: FakeServer, second: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_BASE_URL", second.base_url)
    recorded = result_options(policy_options(server), ["openai:policy-model", "dashscope:q"])
    assert recorded["servers"] == {
        "openai:policy-model": server.base_url,
        "dashscope:q": second.base_url,
    }
    plain = result_options(ModelOptions(base_url=server.base_url), ["openai:policy-model"])
    assert plain["base_url"] == server.base_url and "servers" not in plain


# -- credentials in the base URL ------------------------------------------------------------------


def with_userinfo(url: str, userinfo: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{userinfo}@{rest}"


BASIC = "Basic " + base64.b64encode(b"alice:s3cret p@ss").decode()


def test_a_password_in_the_url_goes_in_a_header_and_the_key_still_goes(
    server: FakeServer,
) -> None:
    url = with_userinfo(server.base_url, "alice:s3cret%20p%40ss")
    server.queue(chat("ok"), chat("ok"))
    keyed = ModelOptions(base_url=url, api_key=SecretStr("sk-policy-1111"))
    load_model("openai:m", keyed).complete(ASK)
    sent = server.seen[0].headers
    assert sent["authorization"] == "Bearer sk-policy-1111"
    assert sent["proxy-authorization"] == BASIC
    load_model("openai:m", ModelOptions(base_url=url)).complete(ASK)
    assert server.seen[1].headers["authorization"] == BASIC
    assert "proxy-authorization" not in server.seen[1].headers


def test_an_echoed_basic_header_never_reaches_the_records(
    server: FakeServer, tmp_path: Path
) -> None:
    """A server that echoes its request headers: the Basic credentials (base64 or not) and
    the key are redacted from the reply text, the failure message and the trace."""
    url = with_userinfo(server.base_url, "alice:s3cret%20p%40ss")
    options = ModelOptions(base_url=url, api_key=SecretStr("sk-policy-1111"), max_repairs=0)
    echo = f"you sent proxy-authorization: {BASIC} and authorization: Bearer sk-policy-1111"
    server.queue(chat(echo))
    answer = load_model("openai:m", options).complete(ASK)
    assert "s3cret" not in answer.text and BASIC.split()[1] not in answer.text
    assert "sk-policy-1111" not in answer.text
    with TraceWriter(tmp_path) as trace:
        trace.emit(ObservationEvent(step=1, text=f"Authorization: {BASIC}"))
    written = (tmp_path / "events.jsonl").read_text(encoding="utf-8")
    assert BASIC.split()[1] not in written


def test_url_secrets_include_the_base64_header_form() -> None:
    secrets = url_secrets("http://alice:s3cret%20p%40ss@127.0.0.1:1/v1")
    assert BASIC.split()[1] in secrets
    assert mask_key_like("a Basic approach") == "a Basic approach"


def test_a_case_loads_its_dashscope_judge_with_its_own_endpoint(
    server: FakeServer,
    second: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through run_case and its default loader, as `pos bench --base-url` runs it: the policy
    takes --base-url and the key, the `dashscope:` judge DashScope's endpoint and key."""
    from pos_agent.bench import case as case_module
    from pos_agent.bench.case import CaseSpec, run_case
    from test_envs_clindiag import RECORD

    monkeypatch.setenv("DASHSCOPE_BASE_URL", second.base_url)
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-dash-2222")
    (tmp_path / "cases.jsonl").write_text(json.dumps(RECORD) + "\n")
    loaded: dict[str, tuple[str | None, str]] = {}
    real_load = case_module.load_model

    def noting(spec: str, options: ModelOptions) -> Any:
        model = real_load(spec, options)
        backend: Any = model.backend  # an OpenAICompatibleBackend: its headers as sent
        loaded[spec] = (backend.base_url, backend._headers["authorization"])
        return model

    monkeypatch.setattr(case_module, "load_model", noting)
    spec = CaseSpec(
        env="clindiag",
        task="demo-1",
        agent="raw",
        model="openai:policy-model",
        max_steps=1,
        env_options={"data_dir": str(tmp_path)},
        env_models={"judge": "dashscope:qwen-judge"},
    )
    options = ModelOptions(base_url=server.base_url, api_key=SecretStr("sk-policy-1111"))
    run_case(spec, tmp_path / "case", run_name="r", options=options)
    assert loaded["dashscope:qwen-judge"] == (second.base_url, "Bearer sk-dash-2222")
    assert loaded["openai:policy-model"] == (server.base_url, "Bearer sk-policy-1111")

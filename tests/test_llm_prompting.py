"""Where the schema goes (prompt or grammar) and one llama.cpp context per role."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from pos_agent.llm import Message, ModelOptions, ScriptedModel, load_model
from pos_agent.llm._local import _LOADED


class Answer(BaseModel):
    action: str


def system_of(model: ScriptedModel) -> str:
    return model.requests[-1].messages[0].content


def test_schema_goes_into_the_prompt_for_unconstrained_backends() -> None:
    model = ScriptedModel([{"action": "look"}])
    model.complete([Message("system", "Act."), Message("user", "go")], schema=Answer)
    assert "JSON schema" in system_of(model) and '"action"' in system_of(model)


def test_schema_stays_out_of_the_prompt_when_decoding_is_constrained() -> None:
    model = ScriptedModel([{"action": "look"}])
    model.backend.constrains_output = True  # type: ignore[attr-defined]
    model.complete([Message("system", "Act."), Message("user", "go")], schema=Answer)
    assert system_of(model) == "Act."


def test_schema_in_prompt_option_overrides_the_default() -> None:
    model = ScriptedModel([{"action": "look"}], options=ModelOptions(schema_in_prompt=False))
    model.complete([Message("system", "Act."), Message("user", "go")], schema=Answer)
    assert system_of(model) == "Act."


@pytest.mark.slow
def test_each_context_slot_gets_its_own_llama_context() -> None:
    policy = load_model("local", ModelOptions(context_slot="policy", n_ctx=1024))
    belief = load_model("local", ModelOptions(context_slot="belief", n_ctx=1024))
    for model in (policy, belief):
        model.complete([Message("user", "Say ok.")], schema=Answer, max_tokens=16)
    slots = {key[2]: loaded.llama for key, loaded in _LOADED.items() if key[1] == 1024}
    assert {"policy", "belief"} <= set(slots)
    assert slots["policy"] is not slots["belief"]

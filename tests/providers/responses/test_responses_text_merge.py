"""``text`` holds independent settings (``format``, gpt-5's ``verbosity``): a request's ``text`` is merged key
by key over the model's default ``text`` and over an ``extra_body`` ``text``, so an agent's output type (a
``format``) no longer drops the ``verbosity`` given elsewhere. An override keyword still replaces it."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.options import ModelSettings
from agentflow.providers.openai.responses_codec import encode_request
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesRequest
from agentflow.testing import Reply, ScriptedServer

FORMAT = {"format": {"type": "json_object"}}


def test_a_request_text_keeps_the_models_default_verbosity() -> None:
    model = OpenAIResponsesModel(model="gpt-5", text={"verbosity": "low", "format": {"type": "text"}})
    request = model.build_request(ResponsesRequest("hi", text=FORMAT))
    assert request.text == {"verbosity": "low", "format": {"type": "json_object"}}
    assert model.build_request("hi").text == {"verbosity": "low", "format": {"type": "text"}}


def test_an_override_keyword_replaces_the_text() -> None:
    model = OpenAIResponsesModel(model="gpt-5", text={"verbosity": "low"})
    assert model.build_request(ResponsesRequest("hi"), text=FORMAT).text == FORMAT


def test_a_request_text_is_written_over_an_extra_body_text() -> None:
    request = ResponsesRequest("hi", model="gpt-5", text=FORMAT, extra_body={"text": {"verbosity": "high"}})
    assert encode_request(request, stream=False)["text"] == {"verbosity": "high", **FORMAT}
    alone = ResponsesRequest("hi", model="gpt-5", extra_body={"text": {"verbosity": "high"}})
    assert encode_request(alone, stream=False)["text"] == {"verbosity": "high"}
    odd = ResponsesRequest("hi", model="gpt-5", text=FORMAT, extra_body={"text": "?"})
    assert encode_request(odd, stream=False)["text"] == FORMAT  # not an object: the standard field wins


@attrs.frozen
class City:
    name: str


@pytest.mark.parametrize(
    ("model_options", "settings"),
    [
        ({"text": {"verbosity": "low"}}, ModelSettings()),
        ({"custom_parameters": {"text": {"verbosity": "low"}}}, ModelSettings()),
        ({}, ModelSettings(extra_body={"text": {"verbosity": "low"}})),
    ],
    ids=["model-default", "model-custom-parameters", "settings-extra-body"],
)
async def test_an_output_type_keeps_the_verbosity_given_elsewhere(
    model_options: dict[str, Any], settings: ModelSettings
) -> None:
    async with ScriptedServer([Reply(text='{"name": "Paris"}')]) as server:
        model = OpenAIResponsesModel(
            base_url=server.base_url, api_key="sk-test", model="gpt-5", **model_options
        )
        async with Agent(model, settings=settings, output_type=City) as agent:
            result = await agent.run("Capital of France?")
    assert result.output == City("Paris")
    text = server.requests[0].body["text"]
    assert text["verbosity"] == "low"
    assert text["format"]["type"] == "json_schema"
    assert text["format"]["name"] == "City"

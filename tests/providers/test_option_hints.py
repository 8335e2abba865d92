"""Options an openai SDK user tries, on a call or on a model: accepted where that is clean, otherwise refused
with a hint that names what works *there* (following it must not fail the same way).

- ``extra_body={...}`` (the SDK's name) is accepted per call, and on the Chat model, as provider-specific
  body fields (``ChatParameters.custom``).
- ``custom_parameters=`` / ``custom=`` on a call point to ``extra_body=`` and ``ChatParameters(custom=...)``;
  ``extra_headers=`` on a call to the model's ``custom_headers=``.
- On a model, ``extra_headers=``, ``organization=``, ``project=``, the Azure client's options… point to
  ``custom_headers=`` and the base URL, never to the body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentflow import ChatParameters, ChatRequest, UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer

HI = [UserMessage("hi")]
Model = OpenAIChatModel | OpenAIResponsesModel
BUILDERS = pytest.mark.parametrize(
    "build", [OpenAIChatModel, OpenAIResponsesModel], ids=["chat", "responses"]
)


@BUILDERS
async def test_extra_body_on_a_call_goes_into_the_body(build: Callable[..., Model]) -> None:
    async with (
        ScriptedServer([Reply(text="ok")] * 2) as server,
        build(base_url=server.base_url, model="m") as model,
    ):
        await model.chat(HI, extra_body={"top_k": 3})
        await model.stream(HI, extra_body={"top_k": 4}).collect()
    assert [r.body["top_k"] for r in server.requests] == [3, 4]


async def test_extra_body_on_the_chat_model_joins_its_custom_parameters() -> None:
    async with (
        ScriptedServer([Reply(text="ok")] * 2) as server,
        OpenAIChatModel(
            base_url=server.base_url,
            model="m",
            custom_parameters={"top_k": 1, "min_p": 0.1},
            extra_body={"top_k": 2},
        ) as model,
    ):
        assert model.defaults.custom == {"top_k": 2, "min_p": 0.1}
        await model.chat(HI)
        # The per-call form the hints name works too, and merges key by key.
        await model.chat(ChatRequest(HI, ChatParameters(custom={"min_p": 0.2})))
    assert (server.requests[0].body["top_k"], server.requests[0].body["min_p"]) == (2, 0.1)
    assert (server.requests[1].body["top_k"], server.requests[1].body["min_p"]) == (2, 0.2)


@BUILDERS
async def test_extra_body_must_be_a_mapping(build: Callable[..., Model]) -> None:
    async with build(base_url="http://127.0.0.1:8000", model="m") as model:
        with pytest.raises(
            TypeError, match=r"^extra_body must be a mapping of provider-specific body fields"
        ):
            await model.chat(HI, extra_body=["top_k", 3])


@BUILDERS
@pytest.mark.parametrize("name", ["custom_parameters", "custom"])
async def test_custom_fields_on_a_call_point_to_extra_body(build: Callable[..., Model], name: str) -> None:
    async with build(base_url="http://127.0.0.1:8000", model="m") as model:
        with pytest.raises(TypeError) as caught:
            await model.chat(HI, **{name: {"top_k": 3}})
    message = str(caught.value)
    assert f"[{name!r}]" in message
    assert "extra_body={...}" in message
    assert "ChatParameters(custom={...}) in a ChatRequest" in message
    assert "(put provider-specific fields in custom_parameters)" not in message


@BUILDERS
async def test_the_sdk_s_header_names_on_a_call_point_to_extra_headers(build: Callable[..., Model]) -> None:
    async with build(base_url="http://127.0.0.1:8000", model="m") as model:
        for name in ("custom_headers", "default_headers"):
            with pytest.raises(TypeError, match=r"headers for one call go in extra_headers=\{\.\.\.\}"):
                await model.chat(HI, **{name: {"X-Trace": "1"}})
        with pytest.raises(TypeError, match=r"query parameters go in the model's base_url"):
            model.stream(HI, extra_query={"api-version": "1"})


async def test_a_misspelt_parameter_gets_a_suggestion() -> None:
    async with OpenAIChatModel(base_url="http://127.0.0.1:8000", model="m") as model:
        with pytest.raises(TypeError, match=r"\['temprature'\] \(did you mean 'temperature'\?\)"):
            await model.chat(HI, temprature=0)
    with pytest.raises(
        TypeError, match=r"\['temprature'\] \(did you mean 'temperature'\?\).*custom_parameters="
    ):
        OpenAIChatModel(base_url="http://127.0.0.1:8000", model="m", temprature=0)


async def test_responses_native_calls_name_where_headers_go() -> None:
    async with OpenAIResponsesModel(base_url="http://127.0.0.1:8000", model="m") as model:
        with pytest.raises(TypeError, match=r"headers for one call go in extra_headers=\{\.\.\.\}"):
            await model.create("hi", custom_headers={"X-Trace": "1"})
        with pytest.raises(TypeError, match=r"\['max_tokens'\] \(did you mean 'max_output_tokens'\?\)"):
            await model.create("hi", max_tokens=5)


@BUILDERS
@pytest.mark.parametrize(
    ("option", "value", "use"),
    [
        ("extra_headers", {"X": "1"}, "custom_headers="),
        ("organization", "org-1", "custom_headers={'OpenAI-Organization': ...}"),
        ("project", "proj-1", "custom_headers={'OpenAI-Project': ...}"),
        ("default_query", {"api-version": "1"}, "a query string in base_url"),
        ("azure_endpoint", "https://r.openai.azure.com", "custom_headers={'api-key': ...}"),
        ("api_version", "2024-10-21", "?api-version=..."),
        ("http_client", object(), "transport=AiohttpTransport(...)"),
    ],
)
def test_openai_sdk_client_options_point_to_their_agentflow_form(
    build: Callable[..., Model], option: str, value: Any, use: str
) -> None:
    with pytest.raises(TypeError) as caught:
        build(base_url="http://127.0.0.1:8000", model="m", **{option: value})
    message = str(caught.value)
    assert message.startswith(f"{build.__name__} takes no {option}= (an openai SDK option): use ")
    assert use in message
    assert "custom_parameters" not in message

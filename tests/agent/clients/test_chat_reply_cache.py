"""The caches of the Chat path give what building anew gives (``ChatModelClient``, ``OpenAIChatModel``)."""

from __future__ import annotations

import itertools

import pytest

from agentflow.agent.chat_client import ChatModelClient, _remember_reply, chat_result, to_chat_request
from agentflow.agent.items import to_chat_messages
from agentflow.agent.prompt import AgentPrompt
from agentflow.model.messages import AiMessage, ToolCall, UserMessage
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.model.response import ChatResponse
from agentflow.model.tools import ToolChoice, ToolSpec
from agentflow.providers.openai.chat_codec import encode_chat_request
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing.fake import FakeChatModel

CALLS = [(), (ToolCall("c1", "f", "{}"),), (ToolCall("", " g ", ""), ToolCall("c2", "h", '{"a":1}'))]


@pytest.mark.parametrize(
    ("text", "calls", "reasoning", "refusal"),
    list(itertools.product([None, "", "hi", "  "], CALLS, [None, "think"], [None, "", "no"])),
)
def test_the_noted_message_of_a_reply_is_what_converting_its_memory_item_gives(
    text: str | None, calls: tuple[ToolCall, ...], reasoning: str | None, refusal: str | None
) -> None:
    result = chat_result(
        ChatResponse(AiMessage(text=text, tool_calls=calls, reasoning=reasoning, refusal=refusal))
    )
    cache: dict[str, object] = {}
    _remember_reply(AgentPrompt(cache=cache), result)
    noted = cache.get("chat_messages", {})
    assert isinstance(noted, dict)
    if not result.memory_items:
        assert not noted
        return
    (item,) = result.memory_items
    assert to_chat_messages([item]) == [noted[id(item)][1]]


def test_the_merge_is_reused_only_for_the_same_parameters_without_custom() -> None:
    model = OpenAIChatModel(base_url="http://127.0.0.1:9", model="m", temperature=0.5)
    same = ChatParameters(top_p=0.9)
    first = model._request(ChatRequest([UserMessage("a")], same), {})
    again = model._request(ChatRequest([UserMessage("b")], same), {})
    assert again.parameters is first.parameters
    assert (again.parameters.model, again.parameters.temperature, again.parameters.top_p) == ("m", 0.5, 0.9)
    other = model._request(ChatRequest([UserMessage("c")], ChatParameters(top_p=0.1)), {})
    assert other.parameters.top_p == 0.1
    custom = ChatParameters(custom={"k": 1})
    one = model._request(ChatRequest([UserMessage("d")], custom), {})
    two = model._request(ChatRequest([UserMessage("e")], custom), {})
    assert one.parameters.custom == two.parameters.custom == {"k": 1}
    assert one.parameters.custom is not two.parameters.custom  # a mutable map is copied anew each time
    overridden = model._request(ChatRequest([UserMessage("f")], same), {"temperature": 0})
    assert overridden.parameters.temperature == 0


def test_the_encoded_parameters_are_reused_only_for_the_same_parameters_and_equal_building_anew() -> None:
    model = OpenAIChatModel(base_url="http://127.0.0.1:9", model="m", temperature=0.5)
    spec = ToolSpec(name="f", description="d", parameters={"type": "object", "properties": {}})
    same = ChatParameters(tools=(spec,), tool_choice=ToolChoice.required(), parallel_tool_calls=True)
    for text, stream in [("a", False), ("b", True), ("c", False)]:
        request = model._request(ChatRequest([UserMessage(text)], same), {})
        assert model._encode(request, stream=stream) == encode_chat_request(request, stream=stream)
    # The memo is for the same parameters object only, and never with the mutable maps.
    other = model._request(ChatRequest([UserMessage("d")], ChatParameters(top_p=0.1)), {})
    assert model._encode(other, stream=False)["top_p"] == 0.1
    assert "tools" not in model._encode(other, stream=False)
    shaped = ChatParameters(response_format={"type": "json_object"})
    first = model._request(ChatRequest([UserMessage("e")], shaped), {})
    body = model._encode(first, stream=False)
    assert body["response_format"] == {"type": "json_object"}
    assert model._last_encoding is None or model._last_encoding[0] is not first.parameters
    overridden = model._request(ChatRequest([UserMessage("f")], same), {"temperature": 0})
    assert model._encode(overridden, stream=False)["temperature"] == 0


def test_the_client_reuses_parameters_only_while_the_prompt_carries_the_same_settings() -> None:
    client = ChatModelClient(FakeChatModel([]))
    spec = ToolSpec(name="f", description="d", parameters={"type": "object", "properties": {}})
    reasoning = {"effort": "low"}
    settings = {"model": "m", "tools": (spec,), "temperature": 0.3, "tool_choice": "required"}

    def parameters(**extra: object) -> ChatParameters:
        prompt = AgentPrompt(items=[{"role": "user", "content": "hi"}], **{**settings, **extra})  # type: ignore[arg-type]
        made = client._request(prompt).parameters
        assert made == to_chat_request(prompt).parameters  # whatever is reused equals building anew
        return made

    first = parameters(reasoning=reasoning)
    assert parameters(reasoning=reasoning) is first
    reasoning["effort"] = "high"  # a mutable map is read anew every time
    assert parameters(reasoning=reasoning).reasoning_effort == "high"
    assert parameters(temperature=0.9).temperature == 0.9
    # With extra_body or a map tool_choice, nothing is reused (their maps are copied into the parameters).
    body = {"seed": 7}
    one, two = parameters(extra_body=body), parameters(extra_body=body)
    assert one is not two
    assert one.custom == two.custom == {"seed": 7}
    choice = {"type": "function", "function": {"name": "f"}}
    assert parameters(tool_choice=choice) is not parameters(tool_choice=choice)

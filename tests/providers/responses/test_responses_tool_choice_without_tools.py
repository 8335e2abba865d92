"""The Chat view of Responses (``request_from_chat``) sends ``tool_choice`` and ``parallel_tool_calls`` only
with tools, as the Chat encoder does: OpenAI rejects them without ("only allowed when 'tools' are
specified")."""

from __future__ import annotations

from agentflow import UserMessage
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.model.tools import ToolChoice, ToolSpec
from agentflow.providers.openai.chat_codec import encode_chat_request
from agentflow.providers.openai.responses_codec import encode_request, request_from_chat

CHOICES = ChatParameters(model="gpt-5", tool_choice=ToolChoice.coerce("required"), parallel_tool_calls=False)


def test_without_tools_neither_is_sent_as_on_chat() -> None:
    request = ChatRequest([UserMessage("hi")], CHOICES)
    body = encode_request(request_from_chat(request), stream=False)
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    chat = encode_chat_request(request)
    assert "tool_choice" not in chat
    assert "parallel_tool_calls" not in chat


def test_with_tools_both_are_sent() -> None:
    tool = ToolSpec("f", "does f", {"type": "object", "properties": {}})
    request = ChatRequest([UserMessage("hi")], CHOICES.merged(ChatParameters(tools=[tool])))
    body = encode_request(request_from_chat(request), stream=False)
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", False)


def test_a_custom_tools_field_counts_as_tools() -> None:
    custom = CHOICES.merged(ChatParameters(custom={"tools": [{"type": "web_search"}]}))
    body = encode_request(request_from_chat(ChatRequest([UserMessage("hi")], custom)), stream=False)
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", False)
    assert body["tools"] == [{"type": "web_search"}]

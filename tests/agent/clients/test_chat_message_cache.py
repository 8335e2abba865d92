"""A run converts each memory item to a Chat message once: later steps reuse it and convert only new items."""

from __future__ import annotations

from agentflow.agent.agent import Agent
from agentflow.agent.items import (
    ChatMessageCache,
    assistant_item,
    function_call_item,
    function_call_output_item,
    to_chat_messages,
    user_item,
)
from agentflow.model.messages import AiMessage, SystemMessage, ToolCall, UserMessage
from agentflow.testing.fake import FakeChatModel, chat_reply
from agentflow.tools import tool


def conversation() -> list[object]:
    call = ToolCall("c1", "f", "{}")
    return [
        user_item("hi"),
        assistant_item("", [call]),
        function_call_output_item("c1", "42"),
        assistant_item("Looking."),
        function_call_item("c2", "g", "{}"),
        {"type": "reasoning", "summary": []},
        function_call_output_item("c2", "ok"),
    ]


def test_a_cached_conversion_gives_the_same_messages_and_reuses_them() -> None:
    items = conversation()
    cache: ChatMessageCache = {}
    first = to_chat_messages(items, cache=cache)
    second = to_chat_messages(items, cache=cache)
    assert first == second == to_chat_messages(items)
    # Message and tool-output dicts are converted once; the function_call joins the message before it anew.
    assert [a is b for a, b in zip(first, second, strict=True)] == [True, True, True, False, True]
    assert len(cache) == 5


def test_a_function_call_never_changes_the_cached_message_it_joins() -> None:
    head = assistant_item("Looking.")
    cache: ChatMessageCache = {}
    merged = to_chat_messages([head, function_call_item("c2", "g", "{}")], cache=cache)
    assert [c.id for c in merged[0].tool_calls] == ["c2"]  # type: ignore[union-attr]
    assert to_chat_messages([head], cache=cache) == [AiMessage(text="Looking.")]


def test_an_entry_for_another_object_with_the_same_id_is_not_used() -> None:
    item = user_item("real")
    stale = user_item("stale")
    cache: ChatMessageCache = {id(item): (stale, UserMessage("stale"))}
    assert to_chat_messages([item], cache=cache) == [UserMessage("real")]
    assert cache[id(item)][0] is item


async def test_a_run_converts_each_memory_item_once_and_sends_the_same_requests() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key.upper()

    model = FakeChatModel(
        [
            chat_reply(tool_calls=[("lookup", {"key": "a"})]),
            chat_reply(tool_calls=[("lookup", {"key": "b"})]),
            chat_reply("done"),
        ]
    )
    result = await Agent(model, tools=[lookup]).run("go")
    assert result.output_text == "done"
    first, second, third = (request.messages for request in model.requests)
    # The system prompt, then the memory: each step's request starts with the previous one's messages.
    assert isinstance(first[0], SystemMessage)
    assert second[: len(first)] == first
    assert third[: len(second)] == second
    # Converted once per run: the later requests carry the very same message objects.
    assert all(a is b for a, b in zip(first[1:], second[1:], strict=False))
    assert all(a is b for a, b in zip(second[1:], third[1:], strict=False))
    assert [type(m).__name__ for m in third] == [
        "SystemMessage",
        "UserMessage",
        "AiMessage",
        "ToolResultMessage",
        "AiMessage",
        "ToolResultMessage",
    ]

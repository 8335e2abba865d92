"""``Message`` values kept as plain items: ``message_to_item`` sends exactly what the ``Message`` did, on both
protocols, and a run writes its ``Message`` input to memory as such an item (so memory is JSON)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.items import (
    message_to_item,
    to_chat_messages,
    to_items,
    to_responses_input,
    user_item,
)
from agentflow.agent.memory import InMemoryMemory
from agentflow.model.messages import (
    AiMessage,
    DeveloperMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentflow.providers.openai.chat_codec import encode_message
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply

CALL = ToolCall("c1", "lookup", '{"q":"x"}')

# Every shape a Message takes that a conversation may hold, with an exact item form.
EXACT: list[Message] = [
    SystemMessage("be brief"),
    DeveloperMessage("rules"),
    UserMessage("hello"),
    UserMessage("hello", name="ada"),
    UserMessage([TextPart("look"), ImagePart("https://x/cat.png")]),
    UserMessage([TextPart("look"), ImagePart("data:image/png;base64,AAAA", detail="low"), TextPart("and")]),
    UserMessage([ImagePart("https://x/a.png", detail="high")]),
    AiMessage("4"),
    AiMessage(None, [CALL]),
    AiMessage("let me look", [CALL, ToolCall("c2", "other", "")]),
    AiMessage(None, [CALL], reasoning="need a lookup", reasoning_field="reasoning_content"),
    AiMessage(None, [CALL], reasoning_field="reasoning_content"),  # DeepSeek: sent back empty
    AiMessage("4", reasoning="2+2", reasoning_field="reasoning"),
    AiMessage("4", reasoning="2+2", reasoning_field="reasoning_content"),
    AiMessage(None, refusal="no"),
    AiMessage("partly", refusal="no"),
    AiMessage(""),
    AiMessage(None),
    ToolResultMessage("c1", "42"),
    ToolResultMessage("c1", 'TOOL_ERROR: {"errorType":"exception","error":"boom"}', name="lookup"),
]


def _chat_bytes(items: list[Any]) -> bytes:
    return orjson.dumps([encode_message(m) for m in to_chat_messages(items)])


def _responses_bytes(items: list[Any]) -> bytes:
    return orjson.dumps(to_responses_input(items))


@pytest.mark.parametrize("message", EXACT, ids=repr)
def test_a_message_item_sends_what_the_message_sent_on_chat(message: Message) -> None:
    item = message_to_item(message)
    assert type(item) is dict
    assert _chat_bytes([item]) == _chat_bytes([message])


@pytest.mark.parametrize(
    "message", [m for m in EXACT if m != AiMessage("") and m != AiMessage(None)], ids=repr
)
def test_a_message_item_sends_what_the_message_sent_on_responses(message: Message) -> None:
    assert _responses_bytes([message_to_item(message)]) == _responses_bytes([message])


@pytest.mark.parametrize("message", [AiMessage(""), AiMessage(None)], ids=repr)
def test_an_empty_assistant_message_is_an_item_responses_accepts(message: Message) -> None:
    # The Message sent nothing on Responses; its item sends an assistant message with empty text (a message
    # without content would be refused), and on Chat the same ``content: ""`` the Message sends.
    assert to_responses_input([message_to_item(message)]) == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ""}]}
    ]


def test_a_whole_conversation_converts_exactly_and_is_json() -> None:
    items = to_items(EXACT)
    assert all(type(item) is dict for item in items)
    assert orjson.loads(orjson.dumps(items)) == items
    assert _chat_bytes(items) == _chat_bytes(EXACT)


def test_the_reasoning_a_chat_server_needs_back_is_kept() -> None:
    # What the documented ``to_responses_input`` conversion used to drop: DeepSeek's reasoning_content.
    message = AiMessage(None, [CALL], reasoning="why", reasoning_field="reasoning_content")
    item = message_to_item(message)
    assert item["reasoning_content"] == "why"
    assert to_chat_messages([item]) == [message]


def test_to_items_leaves_item_dicts_as_they_are() -> None:
    mine = user_item("hi")
    assert to_items([mine])[0] is mine


def test_message_to_item_refuses_what_is_not_a_message() -> None:
    with pytest.raises(TypeError, match="takes a Message"):
        message_to_item({"role": "user"})  # type: ignore[arg-type]


# --- runs write Message input as items ---------------------------------------------------------------------


async def test_a_message_input_enters_memory_as_a_json_item() -> None:
    model = FakeModelClient([reply("ok")])
    chat = Agent(model).session()

    result = await chat.run(UserMessage([TextPart("what is it?"), ImagePart("https://x/cat.png")]))

    assert all(type(item) is dict for item in chat.items)
    orjson.dumps(list(chat.items))  # raised TypeError for the UserMessage before
    assert result.new_items[0] == message_to_item(
        UserMessage([TextPart("what is it?"), ImagePart("https://x/cat.png")])
    )


async def test_a_list_input_of_messages_enters_memory_as_items() -> None:
    model = FakeModelClient([reply("ok")])
    chat = Agent(model).session()
    history: list[Message] = [
        UserMessage("q"),
        AiMessage(None, [CALL], reasoning="why", reasoning_field="reasoning_content"),
        ToolResultMessage("c1", "42"),
        UserMessage("and now?"),
    ]

    await chat.run(history)

    assert list(chat.items[:4]) == to_items(history)


def _history() -> list[Message]:
    return [
        SystemMessage("earlier rules"),
        UserMessage([TextPart("look"), ImagePart("data:image/png;base64,AAAA")], name="ada"),
        AiMessage(
            None, [ToolCall("call_1", "lookup", '{"q":"x"}')], reasoning="hm", reasoning_field="reasoning"
        ),
        ToolResultMessage("call_1", "42"),
        AiMessage("It is 42.", reasoning="done", reasoning_field="reasoning_content"),
        UserMessage("and then?"),
    ]


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_the_request_is_unchanged_byte_for_byte(protocol: str) -> None:
    # One conversation three ways: Message values in memory (what a run stored before), their items in
    # memory, and Message values as the run's input (which the run now writes as items). Same bytes.
    async with ScriptedServer([Reply(text="ok")] * 3) as server:
        if protocol == "chat":
            model: Any = OpenAIChatModel(base_url=server.base_url, model="m")
        else:
            model = OpenAIResponsesModel(base_url=server.base_url, model="m")
        agent = Agent(model, system_prompt="sys")
        async with agent:
            *earlier, question = _history()
            await agent.session(InMemoryMemory(earlier)).run([question])  # Message values kept as given
            await agent.session(InMemoryMemory(to_items(earlier))).run([question])
            await agent.run(_history())

    first, second, third = (request.raw_body for request in server.requests)
    assert first == second == third

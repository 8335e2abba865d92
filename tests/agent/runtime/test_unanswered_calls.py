"""A conversation holding a tool call without its result (a process died mid-tool) is repaired when a
run starts: the call gets a synthetic ``cancelled`` TOOL_ERROR output right after its turn, so both APIs
accept it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from runtime_support import assert_memory_valid

from agentflow import OpenAIChatModel, OpenAIResponsesModel
from agentflow.agent.agent import Agent
from agentflow.agent.items import (
    assistant_item,
    function_call_item,
    function_call_output_item,
    tool_output_call_id,
    user_item,
)
from agentflow.agent.memory import InMemoryMemory, WindowedMemory
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.runtimes.calls import answer_unanswered_calls
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply


def kinds(items: Any) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, dict):
            kind = item.get("type") or "message"
            out.append(
                f"{kind}:{item.get('role') or item.get('call_id')}" if kind != "function_call" else kind
            )
        else:
            out.append(type(item).__name__)
    return out


def error_of(output: str) -> dict[str, Any]:
    assert output.startswith("TOOL_ERROR: ")
    decoded: dict[str, Any] = orjson.loads(output.removeprefix("TOOL_ERROR: "))
    return decoded


# -- the pure repair ------------------------------------------------------------------------------------


def test_a_conversation_whose_calls_all_have_results_is_left_alone() -> None:
    items = [
        user_item("q"),
        assistant_item("", [ToolCall("c1", "f", "{}")]),
        function_call_output_item("c1", "ok"),
        assistant_item("done"),
    ]
    assert answer_unanswered_calls(items) is None
    assert answer_unanswered_calls([]) is None
    assert answer_unanswered_calls([user_item("q")]) is None


def test_a_trailing_call_gets_a_cancelled_result_naming_its_tool() -> None:
    items = [user_item("q"), function_call_item("c1", "lookup", '{"x":1}')]

    fixed = answer_unanswered_calls(items)

    assert fixed is not None
    assert fixed[0] is items[0]
    assert fixed[1] is items[1]
    assert (fixed[2]["type"], fixed[2]["call_id"]) == ("function_call_output", "c1")
    error = error_of(fixed[2]["output"])
    assert (error["errorType"], error["tool"], error["callId"]) == ("cancelled", "lookup", "c1")
    assert "ended before the call finished" in error["error"]
    assert len(items) == 2  # not mutated


def test_the_missing_outputs_go_after_their_turn_and_its_other_outputs() -> None:
    # Chat needs a turn's tool messages right after it, before the next user message.
    turn = assistant_item(
        "", [ToolCall("c1", "f", "{}"), ToolCall("c2", "g", "{}"), ToolCall("c3", "h", "{}")]
    )
    items = [user_item("q"), turn, function_call_output_item("c2", "ok"), user_item("next")]

    fixed = answer_unanswered_calls(items)

    assert fixed is not None
    assert [tool_output_call_id(item) for item in fixed] == [None, None, "c2", "c1", "c3", None]
    assert fixed[-1] is items[-1]
    assert_memory_valid(fixed)


def test_responses_call_items_and_message_values_are_answered_too() -> None:
    items = [
        UserMessage("q"),
        function_call_item("r1", "f", "{}"),
        function_call_item("r2", "g", "{}"),
        function_call_output_item("r1", "ok"),
        user_item("again"),
        AiMessage(tool_calls=[ToolCall("m1", "h", "{}")]),
        ToolResultMessage("m0", "stray"),
    ]

    fixed = answer_unanswered_calls(items)

    assert fixed is not None
    assert [tool_output_call_id(item) for item in fixed] == [
        None,
        None,
        None,
        "r1",
        "r2",
        None,
        None,
        "m0",
        "m1",
    ]


def test_an_output_answers_the_oldest_open_call_with_its_id() -> None:
    # Fallback ids (``tool_step_0_0``) repeat from one run to the next: the first pair is complete.
    items = [
        function_call_item("tool_step_0_0", "f", "{}"),
        function_call_output_item("tool_step_0_0", "ok"),
        user_item("again"),
        function_call_item("tool_step_0_0", "f", "{}"),
    ]

    fixed = answer_unanswered_calls(items)

    assert fixed is not None
    assert [tool_output_call_id(item) for item in fixed] == [
        None,
        "tool_step_0_0",
        None,
        None,
        "tool_step_0_0",
    ]
    assert error_of(fixed[-1]["output"])["errorType"] == "cancelled"


def test_a_call_without_an_id_is_not_answered() -> None:
    assert answer_unanswered_calls([assistant_item("", [ToolCall("", "f", "{}")])]) is None


# -- runs over a stored conversation --------------------------------------------------------------------

STORED = [
    user_item("What is the weather in Paris?"),
    assistant_item("", [ToolCall("call_1", "get_weather", '{"city":"Paris"}')]),
]
"""What a process that died while ``get_weather`` ran leaves in its store."""


async def test_a_session_over_a_conversation_cut_mid_tool_completes_the_call_and_goes_on() -> None:
    model = FakeModelClient([reply("It is sunny.")])
    chat = Agent(model).session(InMemoryMemory(STORED))

    result = await chat.run("And now?")

    sent = model.prompts[0].items
    assert kinds(sent) == ["message:user", "message:assistant", "function_call_output:call_1", "message:user"]
    assert error_of(sent[2]["output"])["callId"] == "call_1"
    assert_memory_valid(chat.items)
    # The synthetic output is one of the run's new items, ahead of its input: a store that appends
    # ``new_items`` ends up valid too.
    assert kinds(result.new_items) == ["function_call_output:call_1", "message:user", "message:assistant"]


async def test_a_call_left_inside_the_conversation_is_answered_in_place() -> None:
    stored = [*STORED, user_item("hello?"), assistant_item("Hi.")]
    memory = WindowedMemory(20, stored)
    model = FakeModelClient([reply("Sure.")])

    result = await Agent(model).session(memory).run("Go on.")

    assert kinds(model.prompts[0].items) == [
        "message:user",
        "message:assistant",
        "function_call_output:call_1",
        "message:user",
        "message:assistant",
        "message:user",
    ]
    assert_memory_valid(memory.items)
    assert kinds(result.new_items) == ["function_call_output:call_1", "message:user", "message:assistant"]


async def test_a_whole_conversation_given_as_input_is_repaired_too() -> None:
    model = FakeModelClient([reply("Done.")])

    result = await Agent(model).run([*STORED, user_item("And now?")])

    assert kinds(model.prompts[0].items)[2] == "function_call_output:call_1"
    assert_memory_valid(result.new_items)


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_stored_conversation_cut_mid_tool_is_sent_paired_on_the_wire(protocol: str) -> None:
    async with ScriptedServer([Reply(text="It is sunny.")]) as server:
        model: Any
        if protocol == "chat":
            model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        else:
            model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        agent = Agent(model)
        try:
            await agent.session(InMemoryMemory(STORED)).run("And now?")
        finally:
            await agent.aclose()

    body = server.requests[0].body
    if protocol == "chat":
        roles = [(m["role"], m.get("tool_call_id")) for m in body["messages"][1:]]
        assert roles == [("user", None), ("assistant", None), ("tool", "call_1"), ("user", None)]
    else:
        entries = [(i.get("type"), i.get("call_id")) for i in body["input"]]
        assert ("function_call", "call_1") in entries
        assert (
            entries.index(("function_call_output", "call_1"))
            == entries.index(("function_call", "call_1")) + 1
        )

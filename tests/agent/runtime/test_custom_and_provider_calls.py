"""Calls that are more than a function name and JSON arguments, through the runtime: GPT-5 custom tool calls
(``ToolCall.kind == "custom"``) and calls carrying provider fields (Gemini's ``extra_content``).

When the runtime completes a turn's call ids and names, the memory items keep each call's own shape: a Chat
``{"type": "custom", "custom": {"name", "input"}}`` entry gets no stray ``function`` key, a Responses
``custom_tool_call`` item is patched in place (not doubled by an extra assistant item), and an eager call
renamed or given a stripped id keeps its provider fields, so the completed turn still holds it. A custom call
never starts early: its input is no JSON arguments for a function tool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
from runtime_support import assert_memory_valid

from agentflow.agent.agent import Agent
from agentflow.agent.items import assistant_item, tool_call_ids, user_item
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import ToolFailed, ToolStarted
from agentflow.model.events import Event, ModelCompleted, ModelEvent, ToolCallReady, ToolCallStarted
from agentflow.model.messages import ToolCall
from agentflow.runtimes.calls import answer_unanswered_calls, complete_tool_calls, patch_memory_items
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

SIGNATURE = {"extra_content": {"google": {"thought_signature": "CvcBAY8a…sig=="}}}


# -- patching memory items -----------------------------------------------------------------------------------


def test_a_chat_custom_call_entry_is_patched_in_its_own_shape() -> None:
    raw = [ToolCall("", " code_exec ", "print(1)", "custom")]
    completed = complete_tool_calls(raw, step=2)
    (item,) = patch_memory_items([assistant_item(None, raw)], raw, completed)
    assert item["tool_calls"] == [
        {"id": "tool_step_2_0", "type": "custom", "custom": {"name": "code_exec", "input": "print(1)"}}
    ]


def test_a_chat_custom_call_entry_that_already_agrees_is_kept_as_it_is() -> None:
    calls = [ToolCall("call_1", "code_exec", "print(1)", "custom")]
    items = [assistant_item(None, calls)]
    patched = patch_memory_items(items, calls, complete_tool_calls(calls, step=0))
    assert patched[0] is items[0]


def test_a_function_call_entry_keeps_its_provider_fields_when_patched() -> None:
    raw = [ToolCall("", "get_weather", "{}", provider_fields=SIGNATURE)]
    (item,) = patch_memory_items([assistant_item(None, raw)], raw, complete_tool_calls(raw, step=0))
    (entry,) = item["tool_calls"]
    assert entry["id"] == "tool_step_0_0"
    assert entry["extra_content"] == SIGNATURE["extra_content"]
    assert "custom" not in entry


def test_a_responses_custom_tool_call_item_is_patched_in_place() -> None:
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": " ", "name": "sql", "input": "SELECT 1"}
    raw = [ToolCall(" ", "sql", "SELECT 1", "custom")]
    completed = complete_tool_calls(raw, step=1)
    patched = patch_memory_items([item], raw, completed)
    # One item, patched: no assistant item added beside it (the call would be in memory twice).
    assert patched == ({**item, "call_id": "tool_step_1_0"},)
    assert item["call_id"] == " "  # never mutated


def test_a_custom_call_without_a_result_gets_a_cancelled_one() -> None:
    chat_shape = assistant_item(None, [ToolCall("c1", "code_exec", "print(1)", "custom")])
    responses_shape = {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"}
    fixed = answer_unanswered_calls([chat_shape, responses_shape, user_item("next")])
    assert fixed is not None
    assert [item.get("call_id") for item in fixed] == [None, "c2", "c1", "c2", None]
    assert fixed[2]["output"].startswith('TOOL_ERROR: {"errorType":"cancelled"')
    assert_memory_valid(fixed[:4])


# -- eager start ---------------------------------------------------------------------------------------------


class Lookups:
    """An eager ``lookup`` tool that records the keys it was called with."""

    def __init__(self) -> None:
        self.started: list[str] = []

        @tool(eager=True)
        async def lookup(key: str) -> str:
            """Look a key up (no side effects)."""
            self.started.append(key)
            return f"value of {key}"

        self.tool = lookup


def streamed_turn(call: ToolCall) -> Any:
    """A scripted streamed turn making ``call``, whose ``ModelCompleted`` comes after a checkpoint (an early
    call has started by then)."""

    async def turn(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
        yield ToolCallStarted(0, call.id, call.name)
        yield ToolCallReady(0, call)
        await anyio.lowlevel.checkpoint()
        yield ModelCompleted(reply(tool_calls=[call], usage=(10, 5)))

    return turn


async def stream_run(agent: Agent, prompt: str) -> tuple[list[Event], Any]:
    events: list[Event] = []
    with anyio.fail_after(10):
        async with agent.stream(prompt) as run:
            async for event in run:
                events.append(event)
    return events, run


async def test_an_eager_call_renamed_and_given_its_id_keeps_its_provider_fields_and_runs_once() -> None:
    lookups = Lookups()
    # A prefixed name and an id with blanks: both completed before the turn is stored.
    call = ToolCall(" c1 ", "functions.lookup", '{"key":"a"}', provider_fields=SIGNATURE)
    agent = Agent(FakeModelClient([streamed_turn(call), reply("Done.")]), tools=[lookups.tool])
    events, run = await stream_run(agent, "Look a up.")

    assert run.result.output_text == "Done."
    assert lookups.started == ["a"]
    assert not [e for e in events if isinstance(e, ToolFailed)]
    (started,) = [e for e in events if isinstance(e, ToolStarted)]
    assert started.call == ToolCall("c1", "lookup", '{"key":"a"}', provider_fields=SIGNATURE)
    assert started.call.provider_fields == SIGNATURE
    # It started before the turn was complete.
    assert events.index(started) < next(i for i, e in enumerate(events) if isinstance(e, ModelCompleted))
    (turn,) = [item for item in run.result.new_items if tool_call_ids(item)]
    assert turn["tool_calls"][0]["extra_content"] == SIGNATURE["extra_content"]
    assert_memory_valid(run.result.new_items)


async def test_a_custom_call_never_starts_early() -> None:
    lookups = Lookups()
    # Even an input that happens to be JSON the tool would take: it is free-form text, not arguments.
    call = ToolCall("c1", "lookup", '{"key":"a"}', "custom")
    agent = Agent(FakeModelClient([streamed_turn(call), reply("Done.")]), tools=[lookups.tool])
    events, run = await stream_run(agent, "Look a up.")

    assert run.result.output_text == "Done."
    completed_at = next(i for i, e in enumerate(events) if isinstance(e, ModelCompleted))
    (started,) = [e for e in events if isinstance(e, ToolStarted)]
    assert events.index(started) > completed_at
    assert_memory_valid(run.result.new_items)

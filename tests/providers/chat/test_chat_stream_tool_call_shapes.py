"""Tool-call shapes of compatible servers while streaming: parallel calls all at ``index: 0`` told apart by
their ids (Ollama), index-less fragments side by side in one delta, calls without ids, and the legacy
``delta.function_call`` — pure decoder, then over HTTP against the blocking answer."""

from __future__ import annotations

import re
from typing import Any

import orjson
from chat_local_server import LocalServer, json_reply, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseEvent
from agentflow.model.events import (
    ModelCompleted,
    ModelEvent,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import ToolCall
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder


def delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "s1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def calls(*fragments: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A chunk whose delta holds ``fragments`` (and ``fields``)."""
    return delta({**fields, "tool_calls": list(fragments)})


def fragment(
    index: int | None = None, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    """A tool-call fragment with the keys given (none of them is required on the wire)."""
    out: dict[str, Any] = {"function": {}}
    for key, value in (("index", index), ("id", id)):
        if value is not None:
            out[key] = value
    for key, value in (("name", name), ("arguments", args)):
        if value is not None:
            out["function"][key] = value
    return out


def decode(*payloads: dict[str, Any]) -> list[ModelEvent]:
    decoder = ChatStreamDecoder()
    events: list[ModelEvent] = []
    for payload in payloads:
        events += decoder.feed(SseEvent(orjson.dumps(payload).decode()))
    events += decoder.feed(SseEvent("[DONE]"))
    return events + decoder.finish()


def calls_of(events: list[ModelEvent]) -> tuple[ToolCall, ...]:
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    return completed.response.message.tool_calls


# Ollama (ollama/ollama#15457): each call complete in its own chunk, every one at index 0 with its own id.
OLLAMA = (
    calls(fragment(0, "call_a", "write", '{"p":1}'), role="assistant", content=""),
    calls(fragment(0, "call_b", "write", '{"p":2}'), role="assistant", content=""),
    delta({}, "tool_calls"),
)
A, B = ToolCall("call_a", "write", '{"p":1}'), ToolCall("call_b", "write", '{"p":2}')


def test_a_new_id_at_a_used_index_starts_a_new_call() -> None:
    events = decode(*OLLAMA)
    assert events[:-1] == [
        ToolCallStarted(0, "call_a", "write"),
        ToolCallArgumentsDelta(0, '{"p":1}'),
        ToolCallReady(0, A),
        ToolCallStarted(1, "call_b", "write"),
        ToolCallArgumentsDelta(1, '{"p":2}'),
        ToolCallReady(1, B),
    ]
    assert calls_of(events) == (A, B)


def test_fragments_after_a_displacing_call_continue_it_and_event_indices_stay_unique() -> None:
    events = decode(
        calls(fragment(0, "a", "f", "{")),
        calls(fragment(0, args="}")),
        calls(fragment(0, "b", "g", "[")),
        calls(fragment(0, args="]")),  # continues b, not a
        calls(fragment(1, "c", "h", "1")),
        delta({}, "tool_calls"),
    )
    assert calls_of(events) == (ToolCall("a", "f", "{}"), ToolCall("b", "g", "[]"), ToolCall("c", "h", "1"))
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    # Wire index 1 is taken in events by "b": "c" gets the next free one.
    assert [(e.index, e.id) for e in started] == [(0, "a"), (1, "b"), (2, "c")]
    assert ToolCallArgumentsDelta(1, "]") in events


def test_the_id_repeated_on_every_fragment_continues_the_call() -> None:
    events = decode(
        calls(fragment(0, "a", "f", '{"x"')),
        calls(fragment(0, "a", args=":1}")),
        delta({}, "tool_calls"),
    )
    assert calls_of(events) == (ToolCall("a", "f", '{"x":1}'),)


def test_index_less_fragments_in_one_delta_are_separate_calls() -> None:
    events = decode(
        calls(fragment(name="f", args="{}"), fragment(name="g", args="[]")),
        delta({}, "tool_calls"),
    )
    first, second = calls_of(events)
    assert (first.name, first.arguments, second.name, second.arguments) == ("f", "{}", "g", "[]")
    assert SYNTHETIC.fullmatch(first.id)
    assert first.id.endswith("_0")
    assert second.id == first.id.removesuffix("0") + "1"  # one prefix per response, then the index


SYNTHETIC = re.compile(r"call_[0-9a-f]{12}_\d+")
"""A made-up call id: ``call_<random>_<index>``."""


def test_a_call_without_id_has_the_same_synthetic_id_in_every_event() -> None:
    events = decode(
        calls(fragment(0, name="f", args='{"a"')),
        calls(fragment(0, args=":1}")),
        delta({}, "tool_calls"),
    )
    started = events[0]
    assert isinstance(started, ToolCallStarted)
    assert SYNTHETIC.fullmatch(started.id)
    made_up = started.id
    assert events[:-1] == [
        ToolCallStarted(0, made_up, "f"),
        ToolCallArgumentsDelta(0, '{"a"'),
        ToolCallArgumentsDelta(0, ":1}"),
        ToolCallReady(0, ToolCall(made_up, "f", '{"a":1}')),
    ]


def test_made_up_ids_differ_from_one_response_to_the_next() -> None:
    turn = (calls(fragment(0, name="f", args="{}")), delta({}, "tool_calls"))
    first, second = calls_of(decode(*turn))[0].id, calls_of(decode(*turn))[0].id
    assert first != second  # a conversation's memory pairs calls with results by id


def test_an_id_arriving_after_the_start_of_an_id_less_call_replaces_the_made_up_one() -> None:
    events = decode(
        calls(fragment(0, name="f", args="{")),
        calls(fragment(0, "late", args="}")),
        delta({}, "tool_calls"),
    )
    # One call, not two; ``ToolCallReady`` and the response carry the server's id.
    assert calls_of(events) == (ToolCall("late", "f", "{}"),)
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert [e.call.id for e in ready] == ["late"]


def test_a_late_id_after_the_name_and_arguments_is_the_call_id() -> None:
    # LiteLLM-bridged providers: arguments first, then the name, then the id on a fragment of its own.
    events = decode(
        calls(fragment(0, args='{"a"')),
        calls(fragment(0, name="f", args=":1}")),
        calls({"index": 0, "id": "call_REAL", "type": "function"}),
        delta({}, "tool_calls"),
    )
    assert calls_of(events) == (ToolCall("call_REAL", "f", '{"a":1}'),)
    assert [e.call.id for e in events if isinstance(e, ToolCallReady)] == ["call_REAL"]


def test_a_late_id_after_the_call_is_ready_does_not_change_it() -> None:
    events = decode(
        calls(fragment(0, name="f", args="{}")),
        calls(fragment(1, "b", "g", "{}")),  # the first call is complete: ready now
        calls(fragment(0, "late")),
        delta({}, "tool_calls"),
    )
    first, second = calls_of(events)
    assert SYNTHETIC.fullmatch(first.id)
    assert second.id == "b"
    assert [e.call.id for e in events if isinstance(e, ToolCallReady)] == [first.id, "b"]


def test_a_new_id_naming_another_function_after_an_id_less_call_is_a_new_call() -> None:
    events = decode(
        calls(fragment(0, name="f", args="{}")),
        calls(fragment(0, "b", "g", "[]")),
        delta({}, "tool_calls"),
    )
    first, second = calls_of(events)
    assert (first.name, second.id, second.name, second.arguments) == ("f", "b", "g", "[]")


LEGACY = (
    delta({"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": ""}}),
    delta({"function_call": {"arguments": '{"city":'}}),
    delta({"function_call": {"arguments": '"hz"}'}}),
    delta({}, "function_call"),
)


def test_legacy_function_call_deltas_become_one_tool_call() -> None:
    events = decode(*LEGACY)
    call = ToolCall("function_call", "get_weather", '{"city":"hz"}')
    assert events[:-1] == [
        ToolCallStarted(0, "function_call", "get_weather"),
        ToolCallArgumentsDelta(0, '{"city":'),
        ToolCallArgumentsDelta(0, '"hz"}'),
        ToolCallReady(0, call),
    ]
    assert calls_of(events) == (call,)


async def test_ollama_parallel_calls_over_http(server: LocalServer) -> None:
    server.add(sse_reply([sse_body(*OLLAMA)]))
    async with OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none()) as model:
        response = await model.stream([UserMessage("hi")]).collect()
    assert [(c.id, c.arguments) for c in response.message.tool_calls] == [
        ("call_a", '{"p":1}'),
        ("call_b", '{"p":2}'),
    ]
    assert [c.parse_arguments() for c in response.message.tool_calls] == [{"p": 1}, {"p": 2}]


async def test_legacy_function_call_streamed_equals_the_blocking_answer(server: LocalServer) -> None:
    blocking = {
        "id": "c",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "get_weather", "arguments": '{"city":"hz"}'},
                },
                "finish_reason": "function_call",
            }
        ],
    }
    server.add(sse_reply([sse_body(*LEGACY)]), json_reply(blocking))
    async with OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none()) as model:
        streamed = await model.stream([UserMessage("hi")]).collect()
        answered = await model.chat([UserMessage("hi")])
    assert streamed.message.tool_calls == answered.message.tool_calls
    assert streamed.finish_reason == answered.finish_reason

"""``agentflow.sse``: frames that parse back with ``SseDecoder``, order, heartbeats, errors, early close."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import attrs
import orjson
import pytest
from web_support import EXAMPLES

import agentflow.events
import agentflow.model.events
from agentflow.events import RunFinished, ToolProgress, ToolSucceeded
from agentflow.http.sse import SseDecoder
from agentflow.model.events import Event, TextDelta, ToolCallReady, UsageReported
from agentflow.model.messages import ToolCall
from agentflow.model.response import TokenUsage
from agentflow.result import AgentResult, StopReason, ToolResult
from agentflow.sse import HEARTBEAT, encode_comment, encode_sse, sse_stream


def sample_events() -> list[Event]:
    call = ToolCall("call_1", "search", '{"q":"naïve\\nline"}')
    result = AgentResult("run_1", "Two\nlines, «quoted» 🚀", StopReason.FINAL_ANSWER, steps=2)
    events: list[Event] = [
        TextDelta("first line\nsecond line\r\nthird\rfourth"),
        TextDelta("data: not a field\n\nevent: nor this"),
        ToolCallReady(0, call),
        ToolSucceeded(call=call, result=ToolResult("call_1", "search", "ok", value={"x": 1})),
        UsageReported(TokenUsage(10, 5, 15, cached_input_tokens=4)),
        ToolProgress(call_id="call_1", tool="search", message="50%", data={"done": 0.5}),
        RunFinished(result=result),
    ]
    return [_stamp(event, seq) for seq, event in enumerate(events, start=1)]


def _stamp(event: Event, seq: int) -> Event:
    import attrs

    return attrs.evolve(event, run_id="run_1", step=seq // 3, seq=seq)


async def from_list(events: list[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


def test_frames_parse_back_with_the_sse_decoder_under_any_chunking() -> None:
    events = sample_events()
    body = b"".join(encode_sse(e) for e in events)
    for size in (1, 2, 7, len(body)):
        decoder = SseDecoder()
        parsed = [ev for i in range(0, len(body), size) for ev in decoder.feed(body[i : i + size])]
        parsed += decoder.close()
        assert [p.event for p in parsed] == [e.type for e in events]
        assert [p.id for p in parsed] == [str(e.seq) for e in events]
        assert [orjson.loads(p.data) for p in parsed] == [
            orjson.loads(orjson.dumps(e.to_dict())) for e in events
        ]


def test_frame_is_event_id_data_and_a_blank_line() -> None:
    frame = encode_sse(TextDelta("a\nb", run_id="r", seq=9))
    data = b'{"type":"text_delta","run_id":"r","step":0,"seq":9,"text":"a\\nb"}'
    assert frame == b"event: text_delta\nid: 9\ndata: " + data + b"\n\n"


def test_an_event_holding_what_json_cannot_carry_is_still_written() -> None:
    # The stream must go on to its terminal event: a value of one's own event class becomes its repr, text
    # with a lone surrogate (os.fsdecode of a non-UTF-8 name) keeps the surrogate escaped.
    @attrs.frozen
    class Handle(ToolProgress):
        def to_dict(self) -> dict[str, Any]:
            return {**super().to_dict(), "data": Opaque()}

    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    frame = encode_sse(Handle(call_id="c", tool="t", message="m", seq=4))
    assert frame.startswith(b"event: handle\nid: 4\ndata: ")
    assert orjson.loads(frame.split(b"data: ", 1)[1])["data"] == "<opaque>"
    name = os.fsdecode(b"caf\xe9.txt")
    frame = encode_sse(ToolProgress(call_id="c", tool="t", message=name, seq=5))
    assert orjson.loads(frame.split(b"data: ", 1)[1])["message"] == "caf\\udce9.txt"


def test_an_event_whose_to_dict_fails_is_written_as_its_stamps_and_an_error() -> None:
    @attrs.frozen
    class Broken(ToolProgress):
        def to_dict(self) -> dict[str, Any]:
            raise RecursionError("a cycle")

    frame = encode_sse(Broken(call_id="c", tool="t", message="m", run_id="run_1", seq=6))
    data = orjson.loads(frame.split(b"data: ", 1)[1])
    assert data == {
        "type": "broken",
        "run_id": "run_1",
        "step": 0,
        "seq": 6,
        "error": "this Broken could not be written as JSON: RecursionError",
    }


class DetachedInstanceError(Exception):
    """What an ORM raises when a row is read after its session closed."""


class OrmRow:
    def to_dict(self) -> dict[str, Any]:
        raise DetachedInstanceError("Instance <OrmRow> is not bound to a Session")

    def __repr__(self) -> str:
        raise DetachedInstanceError("Instance <OrmRow> is not bound to a Session")

    def __str__(self) -> str:
        return "OrmRow(7)"


class NeedsArguments:
    def to_dict(self, orient: str) -> dict[str, Any]:  # pandas' DataFrame.to_dict takes arguments
        return {"orient": orient}


def test_a_value_whose_own_methods_fail_still_leaves_its_event_whole() -> None:
    for value, shown in [(OrmRow(), "<OrmRow object>"), (NeedsArguments(), "NeedsArguments")]:
        event = ToolProgress(call_id="c", tool="t", message="m", data={"row": value}, run_id="run_1", seq=3)
        data = orjson.loads(encode_sse(event).split(b"data: ", 1)[1])
        assert data["message"] == "m"
        assert data["seq"] == 3
        assert shown in data["data"]["row"]


@pytest.mark.parametrize("heartbeat", [None, 30.0])
async def test_a_tool_value_json_cannot_carry_never_stops_the_stream_before_its_answer(
    heartbeat: float | None,
) -> None:
    import pydantic

    from agentflow import Agent, tool
    from agentflow.testing.fake import FakeModelClient, reply

    class Weather(pydantic.BaseModel):
        city: str
        temp: float

    @tool
    def lookup() -> object:
        """Look up a row."""
        return OrmRow()

    @tool
    def weather() -> object:
        """Today's weather."""
        return Weather(city="Paris", temp=21.5)

    @tool
    def raw() -> bytes:
        """Raw bytes."""
        return b"hello"

    model = FakeModelClient(
        [reply(tool_calls=[("lookup", {}), ("weather", {}), ("raw", {})]), reply("found")]
    )
    agent = Agent(model, tools=[lookup, weather, raw])
    frames: list[dict[str, Any]] = []
    async with agent.stream("go") as run, aclosing(sse_stream(run, heartbeat=heartbeat)) as stream:
        async for frame in stream:
            frames.append(orjson.loads(frame.split(b"data: ", 1)[1]))
    assert frames[-1]["type"] == "run_finished"
    assert frames[-1]["result"]["output_text"] == "found"
    values = {f["call"]["name"]: f["result"]["value"] for f in frames if f["type"] == "tool_succeeded"}
    # As the model read them: the pydantic model as its JSON, bytes as their text.
    assert values["weather"] == {"city": "Paris", "temp": 21.5}
    assert values["raw"] == "hello"
    assert values["lookup"] == "<OrmRow object>"
    outputs = {r.name: r.output for r in run.result.tool_results}
    assert outputs["weather"] == '{"city":"Paris","temp":21.5}'
    assert outputs["raw"] == '"hello"'


def test_integers_beyond_64_bits_keep_every_digit() -> None:
    frame = encode_sse(ToolProgress(call_id="c", tool="t", message="m", data=2**70, seq=4))
    assert b'"data":1180591620717411303424' in frame


def test_comment_frames() -> None:
    assert encode_comment() == b":\n\n"
    assert encode_comment("a\nb") == b": a\n: b\n\n"
    assert SseDecoder().feed(encode_comment("ignored") + HEARTBEAT) == []


async def test_stream_yields_one_frame_per_event_in_order_and_ends() -> None:
    events = sample_events()
    frames = [frame async for frame in sse_stream(from_list(events))]
    assert frames == [encode_sse(e) for e in events]


class Ticks:
    """An injectable ``sleep``: each call returns when the test sends a tick (no real time passes)."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[None](0)

    async def sleep(self, seconds: float) -> None:
        assert seconds == 15.0
        await self.receive.receive()


async def test_heartbeat_is_sent_only_after_a_quiet_interval() -> None:
    release = anyio.Event()

    async def source() -> AsyncIterator[Event]:
        yield TextDelta("a", seq=1)
        await release.wait()
        yield TextDelta("b", seq=2)

    ticks = Ticks()
    async with aclosing(sse_stream(source(), heartbeat=15.0, sleep=ticks.sleep)) as frames:
        assert await anext(frames) == encode_sse(TextDelta("a", seq=1))
        await ticks.send.send(None)  # an event went out in this interval: no heartbeat
        await ticks.send.send(None)  # a quiet interval
        assert await anext(frames) == HEARTBEAT
        release.set()
        assert await anext(frames) == encode_sse(TextDelta("b", seq=2))
        with pytest.raises(StopAsyncIteration):
            await anext(frames)


async def test_heartbeat_stream_raises_the_source_error_unchanged() -> None:
    async def source() -> AsyncIterator[Event]:
        yield TextDelta("a", seq=1)
        raise LookupError("boom")

    ticks = Ticks()
    async with aclosing(sse_stream(source(), heartbeat=15.0, sleep=ticks.sleep)) as frames:
        assert await anext(frames) == encode_sse(TextDelta("a", seq=1))
        with pytest.raises(LookupError, match="boom"):
            await anext(frames)


async def test_closing_a_heartbeat_stream_early_stops_reading_the_source() -> None:
    source_closed = anyio.Event()

    async def source() -> AsyncIterator[Event]:
        try:
            yield TextDelta("a", seq=1)
            await anyio.Event().wait()
            yield TextDelta("never", seq=2)
        finally:
            source_closed.set()

    ticks = Ticks()
    async with aclosing(sse_stream(source(), heartbeat=15.0, sleep=ticks.sleep)) as frames:
        await anext(frames)
    assert source_closed.is_set()


async def test_heartbeat_must_be_positive() -> None:
    with pytest.raises(ValueError, match="heartbeat"):
        await anext(sse_stream(from_list([]), heartbeat=0))


def _event_types() -> set[str]:
    found: set[str] = set()
    pending: list[type[Event]] = [Event]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("agentflow.") and cls not in (
            Event,
            agentflow.model.events.ModelEvent,
            agentflow.events.RunEvent,
        ):
            found.add(cls.type)
    return found


def test_the_example_page_listens_to_every_event_type() -> None:
    page = (EXAMPLES / "static" / "index.html").read_text()
    listed = set(re.findall(r'"([a-z_]+)"', page.split("const EVENT_TYPES = [")[1].split("];")[0]))
    missing = _event_types() - listed
    assert not missing, f"add these event types to EVENT_TYPES in docs/examples/static/index.html: {missing}"

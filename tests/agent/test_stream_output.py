"""``AgentRun.stream_output`` / ``stream_json`` / ``output_reader``: the output while the answer streams, end
to end over HTTP (``ScriptedServer``, both protocols), and the ``OutputReader`` state machine on its own."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, Literal, TypeAlias

import anyio
import attrs
import pytest

from agentflow import (
    Agent,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputRejected,
    OutputType,
    OutputValidationError,
    StopReason,
)
from agentflow.agent.output_stream import OutputReader, streams_answer
from agentflow.events import RunCancelled, RunFinished, StepStarted
from agentflow.model.events import Event, RefusalDelta, TextDelta, ToolCallStarted
from agentflow.runtimes.codeact import CodeActRuntime
from agentflow.runtimes.partial_json import is_prefix
from agentflow.runtimes.react import ReActRuntime
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.tools import tool

Protocol: TypeAlias = Literal["chat", "responses"]
PROTOCOLS: tuple[Protocol, ...] = ("chat", "responses")


@attrs.frozen
class City:
    name: str
    population: int


@attrs.frozen
class Stop:
    sight: str
    hours: float


@attrs.frozen
class Trip:
    city: str
    stops: list[Stop] = attrs.Factory(list)
    note: str | None = None


TRIP = {
    "city": "Paris",
    "stops": [{"sight": "Louvre", "hours": 3}, {"sight": "Musée d'Orsay", "hours": 2.5}],
    "note": 'Book "skip the line" tickets.\nEnjoy!',
}


@tool
async def sights(city: str) -> list[str]:
    """The sights of a city."""
    return ["Louvre", "Orsay"]


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


def task_count() -> int:
    return len(asyncio.all_tasks())


async def collect(agent: Agent[Any], method: str) -> list[Any]:
    """What ``run.stream_output()`` or ``run.stream_json()`` yields for a run of ``agent``, undebounced."""
    async with agent.stream("?") as run:
        return [value async for value in getattr(run, method)(debounce=None)]


def assert_prefixes(values: list[Any], whole: Any) -> None:
    """Every JSON value is a prefix of the whole answer's, and of the next value."""
    for before, after in itertools.pairwise(values):
        assert is_prefix(before, after), (before, after)
    for value in values:
        assert is_prefix(value, whole), (value, whole)


def assert_trips_grow(trips: list[Trip], whole: Trip) -> None:
    """Each partial trip is a prefix of the next and of the whole: texts cut, stops whole and in order."""
    for before, after in itertools.pairwise([*trips, whole]):
        assert after.city.startswith(before.city)
        assert before.stops == after.stops[: len(before.stops)]  # a Stop reads only once whole
        assert before.note is None or (after.note or "").startswith(before.note)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_typed_partials_after_a_tool_step_then_the_output(protocol: Protocol) -> None:
    turns = [
        Reply(text="Let me look the sights up.", tool_calls=[("sights", {"city": "Paris"})]),
        Reply(text=json.dumps(TRIP), chunk_size=3),
    ]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for(protocol, server), tools=[sights], output_type=Trip) as agent,
    ):
        with anyio.fail_after(10):
            async with agent.stream("A day in Paris?") as run:
                values = [value async for value in run.stream_output(debounce=None)]
    final = run.result.output
    assert final == Trip("Paris", [Stop("Louvre", 3.0), Stop("Musée d'Orsay", 2.5)], TRIP["note"])
    assert values[-1] == final
    assert all(isinstance(v, Trip) for v in values)
    assert len(values) > 10  # it streamed
    assert values[0] == Trip("Pa")  # a string being written is cut where the text stops; defaults fill in
    assert Trip("Paris", [Stop("Louvre", 3.0)]) in values  # the stop being written waits until it reads
    assert_trips_grow(values[:-1], final)
    assert all(a != b for a, b in itertools.pairwise(values[:-1]))  # each differs from the one before
    assert values[-2] == values[-1]  # the final value always comes, though the last partial one was whole


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_stream_json_shows_a_type_with_required_fields_field_by_field(protocol: Protocol) -> None:
    answer = {"name": "Paris", "population": 2102650}
    replies = [Reply(text=json.dumps(answer), chunk_size=2), Reply(text=json.dumps(answer), chunk_size=2)]
    async with (
        ScriptedServer(replies) as server,
        Agent(model_for(protocol, server), output_type=City) as agent,
    ):
        typed = await collect(agent, "stream_output")
        data = await collect(agent, "stream_json")
    # A City reads only once its last field is there; as JSON it shows from the first letters of its name.
    assert typed == [City("Paris", 2102650), City("Paris", 2102650)]
    assert {"name": "Pa"} in data
    assert {"name": "Paris"} in data
    assert data[-1] == answer
    assert_prefixes(data[:-1], answer)


async def test_prompted_mode_in_a_fence_after_prose() -> None:
    text = "Sure! Here it is:\n```json\n" + json.dumps(TRIP, indent=2) + "\n```\nAnything else?"
    async with (
        ScriptedServer([Reply(text=text, chunk_size=5)]) as server,
        Agent(model_for("chat", server), output_type=OutputType(Trip, mode="prompted")) as agent,
        agent.stream("A day in Paris?") as run,
    ):
        values = [value async for value in run.stream_output(debounce=None)]
    assert "response_format" not in server.requests[0].body
    assert values[-1] == run.result.output
    assert len(values) > 5
    assert "Paris".startswith(values[0].city)
    assert_trips_grow(values[:-1], values[-1])


@pytest.mark.parametrize("bare", [False, True])
async def test_a_wrapped_type_streams_its_value_unwrapped(bare: bool) -> None:
    cities = [{"name": "Paris", "population": 2102650}, {"name": "Lyon", "population": 522250}]
    text = json.dumps(cities if bare else {"result": cities})  # a server that ignored the schema: bare
    replies = [Reply(text=text, chunk_size=4), Reply(text=text, chunk_size=4)]
    async with (
        ScriptedServer(replies) as server,
        Agent(model_for("chat", server), output_type=list[City]) as agent,
    ):
        typed = await collect(agent, "stream_output")
        data = await collect(agent, "stream_json")
    assert typed[-1] == [City("Paris", 2102650), City("Lyon", 522250)]
    assert [City("Paris", 2102650)] in typed  # city by city
    assert all(isinstance(v, list) for v in typed)
    assert data[-1] == cities
    assert any(len(v) == 1 and "Paris".startswith(v[0].get("name", "-")) for v in data)
    assert all(isinstance(v, list) for v in data)
    assert_prefixes(data[:-1], cities)


async def test_a_plain_run_streams_its_text() -> None:
    async with (
        ScriptedServer([Reply(text="Paris is the capital of France.", chunk_size=4)]) as server,
        Agent(model_for("responses", server)) as agent,
        agent.stream("Capital?") as run,
    ):
        with pytest.raises(TypeError, match="no output type"):
            run.stream_json()
        values = [value async for value in run.stream_output(debounce=None)]
    assert values[0] == "Pari"
    assert values[-1] == values[-2] == run.result.output_text == "Paris is the capital of France."
    assert all(values[-1].startswith(v) for v in values)


async def test_a_rejected_answer_is_followed_by_the_next_answer_s_values() -> None:
    first = {"city": "Lyon", "stops": [{"sight": "Fourvière", "hours": "two"}]}  # hours is not a number
    turns = [Reply(text=json.dumps(first), chunk_size=6), Reply(text=json.dumps(TRIP), chunk_size=6)]
    async with ScriptedServer(turns) as server, Agent(model_for("chat", server), output_type=Trip) as agent:
        rejected: list[OutputRejected] = []
        agent.on(OutputRejected, rejected.append)
        async with agent.stream("A day out?") as run:
            values = [value async for value in run.stream_output(debounce=None)]
    assert len(rejected) == 1
    assert Trip("Lyon") in values  # the rejected answer showed while it streamed
    assert values[-1] == run.result.output
    assert values[-1].city == "Paris"


async def test_a_failed_run_raises_its_error_at_the_end() -> None:
    async with (
        ScriptedServer([Reply(text='{"name": "Paris", "population": "many"}', chunk_size=5)]) as server,
        Agent(model_for("chat", server), output_type=OutputType(City, retries=0)) as agent,
        agent.stream("Paris?") as run,
    ):
        with pytest.raises(OutputValidationError):
            async for _ in run.stream_json(debounce=None):
                pass
    assert isinstance(run.error, OutputValidationError)


async def test_the_debounce_holds_values_back_and_the_final_one_always_comes() -> None:
    async with (
        ScriptedServer([Reply(text=json.dumps(TRIP), chunk_size=3)]) as server,
        Agent(model_for("chat", server), output_type=Trip) as agent,
        agent.stream("A day in Paris?") as run,
    ):
        for wrong in (-1, "0.1", True, float("nan")):
            with pytest.raises(ValueError, match="debounce"):
                run.stream_output(debounce=wrong)  # type: ignore[arg-type]
        # The first value comes at once; the next ones wait an hour, longer than the run lasts.
        values = [value async for value in run.stream_output(debounce=3600)]
    assert values == [Trip("Pa"), run.result.output]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_cancelling_mid_answer_ends_the_stream_without_an_output(protocol: Protocol) -> None:
    after = 6 if protocol == "chat" else 10  # a few deltas in, then the server stalls
    stalled = Fault.stall(after_chunks=after, reply=Reply(text=json.dumps(TRIP), chunk_size=3))
    before = task_count()
    async with (
        ScriptedServer([stalled]) as server,
        Agent(model_for(protocol, server), output_type=Trip) as agent,
    ):
        terminals: list[Event] = []
        agent.on((RunCancelled, RunFinished), terminals.append)
        with anyio.fail_after(10):
            async with agent.stream("A day in Paris?") as run:
                values = []
                async for value in run.stream_output(debounce=None):
                    values.append(value)
                    await run.cancel()
    # What the run had published before the cancel still comes; then no final value: it has none.
    assert values[0] == Trip("Pa")
    assert_trips_grow(values, Trip("Paris", [Stop("Louvre", 3.0), Stop("Musée d'Orsay", 2.5)], TRIP["note"]))
    assert run.result.output is None
    assert run.result.stop_reason is StopReason.CANCELLED
    assert [type(e) for e in terminals] == [RunCancelled]
    assert task_count() == before


async def test_cancelling_the_reading_task_cancels_the_run_cleanly() -> None:
    stalled = Fault.stall(after_chunks=6, reply=Reply(text=json.dumps(TRIP), chunk_size=3))
    before = task_count()
    async with (
        ScriptedServer([stalled]) as server,
        Agent(model_for("chat", server), output_type=Trip) as agent,
    ):
        with anyio.fail_after(10):
            with anyio.CancelScope() as scope:
                async with agent.stream("A day in Paris?") as run:
                    async for _ in run.stream_output(debounce=None):
                        scope.cancel()  # lands at the next wait: inside the stream's read of the events
            assert scope.cancelled_caught
    assert run.result.stop_reason is StopReason.CANCELLED
    assert task_count() == before


async def test_events_and_partial_values_together_with_an_output_reader() -> None:
    turns = [Reply(tool_calls=[("sights", {"city": "Paris"})]), Reply(text=json.dumps(TRIP), chunk_size=4)]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for("chat", server), tools=[sights], output_type=Trip) as agent,
        agent.stream("A day in Paris?") as run,
    ):
        reader = run.output_reader()
        kinds: set[str] = set()
        partials: list[Trip] = []
        data: list[Any] = []
        async for event in run:
            kinds.add(type(event).__name__)
            if reader.feed(event) and (partial := reader.partial()) is not None:
                partials.append(partial)
                data.append(reader.partial_json())
    assert {"ToolSucceeded", "TextDelta", "RunFinished"} <= kinds
    assert partials[0] == Trip("Pa")
    assert partials[-1] == run.result.output
    assert data[-1] == TRIP
    assert reader.ended
    assert reader.partial() is None  # the run has ended: nothing is being written


async def test_stream_output_goes_on_where_the_event_loop_stopped() -> None:
    turns = [Reply(tool_calls=[("sights", {"city": "Paris"})]), Reply(text=json.dumps(TRIP), chunk_size=4)]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for("chat", server), tools=[sights], output_type=Trip) as agent,
        agent.stream("A day in Paris?") as run,
    ):
        async for event in run:
            if type(event).__name__ == "ToolSucceeded":
                break
        values = [value async for value in run.stream_output(debounce=None)]
    assert values[0] == Trip("Pa")
    assert values[-1] == run.result.output


@pytest.mark.parametrize(
    "stream_options",
    [{"types": (StepStarted, ToolCallStarted, RunFinished)}, {"policy": "drop_deltas"}],
)
async def test_a_run_whose_events_may_miss_text_yields_its_output_alone(
    stream_options: dict[str, Any],
) -> None:
    async with (
        ScriptedServer([Reply(text=json.dumps(TRIP), chunk_size=3)]) as server,
        Agent(model_for("chat", server), output_type=Trip) as agent,
        agent.stream("A day in Paris?", **stream_options) as run,
    ):
        values = [value async for value in run.stream_output(debounce=None)]
    assert values == [run.result.output]


async def test_merged_deltas_read_the_same() -> None:
    # A run streamed with coalesce_deltas and the smallest buffer: the answer's pieces arrive merged.
    async with (
        ScriptedServer([Reply(text=json.dumps(TRIP), chunk_size=2)]) as server,
        Agent(model_for("chat", server), output_type=Trip) as agent,
        agent.stream("A day in Paris?", policy="coalesce_deltas", buffer=1) as run,
    ):
        values = [value async for value in run.stream_output(debounce=None)]
    assert (
        values[-1]
        == run.result.output
        == Trip("Paris", [Stop("Louvre", 3.0), Stop("Musée d'Orsay", 2.5)], TRIP["note"])
    )
    assert_trips_grow(values[:-1], values[-1])


async def test_reading_needs_an_entered_run() -> None:
    async with (
        ScriptedServer([Reply(text="{}")]) as server,
        Agent(model_for("chat", server), output_type=Trip) as agent,
    ):
        run = agent.stream("?")
        with pytest.raises(RuntimeError, match="enter the run first"):
            run.stream_output()


# -- the reader on its own ---------------------------------------------------------------------------------


def events(*pieces: Event | str, step: int = 0) -> list[Event]:
    return [TextDelta(p, step=step) if isinstance(p, str) else p for p in pieces]


def test_a_step_s_text_stops_counting_once_it_calls_a_tool_or_refuses() -> None:
    for stop in (ToolCallStarted(0, "c1", "sights", step=0), RefusalDelta("No.", step=0)):
        reader = OutputReader(OutputType(City))
        fed = [reader.feed(e) for e in events(StepStarted(step=0), '{"name": "Pa', stop, 'ris"', step=0)]
        assert fed == [False, True, False, False]
        assert reader.partial() is None
        assert reader.partial_json() is None
        # The next step starts afresh.
        for event in events(StepStarted(step=1), '{"name": "Lyon", "population": 5}', step=1):
            reader.feed(event)
        assert reader.partial() == City("Lyon", 5)


def test_text_before_a_step_s_start_is_not_read() -> None:
    reader = OutputReader(OutputType(City))
    assert not reader.feed(TextDelta('{"name": "Pa', step=0))  # joined mid-step: waits for the next one
    assert reader.partial_json() is None
    reader.feed(StepStarted(step=1))
    assert not reader.feed(TextDelta('{"name": "Pa', step=0))  # another step's text
    assert reader.feed(TextDelta('{"name": "Ly', step=1))
    assert reader.partial_json() == {"name": "Ly"}
    assert reader.partial() is None  # a City needs its population


def test_codeact_answers_are_not_the_output() -> None:
    assert streams_answer(ReActRuntime())
    assert not streams_answer(CodeActRuntime())
    reader = OutputReader(OutputType(City), partials=False)
    for event in events(StepStarted(step=0), '{"name": "Paris", "population": 5}'):
        assert not reader.feed(event)
    assert reader.partial() is None
    text = OutputReader(None)
    with pytest.raises(TypeError, match="text"):
        text.partial_json()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_remembered_reads_match_reading_every_cut_afresh(size: int) -> None:
    spec = OutputType(Trip)
    text = json.dumps(TRIP, indent=1)
    reader = OutputReader(spec)
    reader.feed(StepStarted(step=0))
    for start in range(0, len(text), size):
        reader.feed(TextDelta(text[start : start + size], step=0))
        partial_json = reader._json
        assert partial_json is not None
        expected = None
        for cut in partial_json.cuts():
            try:
                expected = spec.read_partial(partial_json.value(cut))
            except ValueError:
                continue
            break
        assert reader.partial() == expected
    assert reader.partial() == spec.parse(text)


def test_a_constrained_string_shows_once_it_reads() -> None:
    @attrs.frozen
    class Weather:
        city: str
        sky: Literal["sunny", "cloudy"] = "cloudy"

    reader = OutputReader(OutputType(Weather))
    reader.feed(StepStarted(step=0))
    seen = []
    for piece in ['{"city": "Paris", "sky": "su', "nn", 'y"}']:
        reader.feed(TextDelta(piece, step=0))
        seen.append(reader.partial())
    assert seen == [Weather("Paris"), Weather("Paris"), Weather("Paris", "sunny")]

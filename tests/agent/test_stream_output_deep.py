"""``AgentRun.stream_output`` / ``stream_json`` over an answer nested thousands of levels deep (say, a
prompt-injected one): the partial values stay shallow, nothing escapes to the consumer's loop, and the run
ends as it would without streaming its output (its final output, or its error)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, TypeAlias

import anyio
import attrs
import pytest

from agentflow import (
    Agent,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputType,
    OutputValidationError,
    StopReason,
)
from agentflow.agent.output_stream import OutputReader, partial_values
from agentflow.events import StepStarted
from agentflow.model.events import Event, TextDelta
from agentflow.runtimes.partial_json import MAX_CUTS, MAX_DEPTH, NO_VALUE
from agentflow.testing import Reply, ScriptedServer

Protocol: TypeAlias = Literal["chat", "responses"]


@attrs.frozen
class City:
    name: str
    tags: list[Any] = attrs.Factory(list)


def deep_answer(depth: int) -> str:
    return '{"name": "x", "tags": ' + "[" * depth + "]" * depth + "}"


def nesting(value: Any) -> int:
    """How many arrays and objects deep ``value`` nests (a ``City`` counts as one), without recursing."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, City):
            item = attrs.asdict(item, recurse=False)
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (member, depth + 1) for member in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


@pytest.mark.parametrize("protocol", ["chat", "responses"])
@pytest.mark.parametrize("method", ["stream_output", "stream_json"])
async def test_a_deep_answer_streams_to_the_runs_output(protocol: Protocol, method: str) -> None:
    # 1000 levels: orjson reads it, so it is the run's output; comparing such values recurses too deeply.
    async with (
        ScriptedServer([Reply(text=deep_answer(1000), chunk_size=20)]) as server,
        Agent(model_for(protocol, server), output_type=City) as agent,
    ):
        with anyio.fail_after(30):
            async with agent.stream("?") as run:
                values = [value async for value in getattr(run, method)(debounce=None)]
    assert run.result.stop_reason is StopReason.FINAL_ANSWER
    output = run.result.output
    assert output is not None
    assert output.name == "x"
    assert nesting(output.tags) == 1000
    assert values[-1] is output if method == "stream_output" else values[-1]["name"] == "x"
    partials = values[:-1]
    assert partials  # the answer's start showed
    assert all(nesting(value) <= MAX_DEPTH + 1 for value in partials[:-1])


@pytest.mark.parametrize("method", ["stream_output", "stream_json"])
async def test_an_answer_too_deep_to_read_is_rejected_and_the_next_one_is_the_output(method: str) -> None:
    # 5000 levels: no JSON reader takes it (orjson stops at 1024), so the run asks again.
    replies = [Reply(text=deep_answer(5000), chunk_size=20), Reply(text='{"name": "y"}', chunk_size=4)]
    async with (
        ScriptedServer(replies) as server,
        Agent(model_for("chat", server), output_type=City) as agent,
    ):
        with anyio.fail_after(30):
            async with agent.stream("?") as run:
                values = [value async for value in getattr(run, method)(debounce=None)]
    assert run.result.output == City("y")
    assert values[-1] == (City("y") if method == "stream_output" else {"name": "y", "tags": []})
    assert all(nesting(value) <= MAX_DEPTH + 1 for value in values)


async def test_a_deep_answer_the_run_rejects_raises_the_runs_error() -> None:
    async with (
        ScriptedServer([Reply(text=deep_answer(5000), chunk_size=20)]) as server,
        Agent(model_for("chat", server), output_type=OutputType(City, retries=0)) as agent,
    ):
        with anyio.fail_after(30):
            async with agent.stream("?") as run:
                with pytest.raises(OutputValidationError):
                    async for _ in run.stream_output(debounce=None):
                        pass
    assert isinstance(run.error, OutputValidationError)


def test_reading_a_deep_answer_tries_a_bounded_number_of_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded = 0
    from agentflow.runtimes import partial_json

    decode = partial_json._decode

    def counting(text: str) -> Any:
        nonlocal decoded
        decoded += 1
        return decode(text)

    monkeypatch.setattr(partial_json, "_decode", counting)

    @attrs.frozen
    class Strict:
        name: str
        tags: str  # never reads before the answer is whole: every cut is tried

    reader = OutputReader(OutputType(Strict))
    reader.feed(StepStarted(step=0))
    text = '{"name": "x", "tags": ' + "[" * 5000
    for start in range(0, len(text), 20):
        reader.feed(TextDelta(text[start : start + 20], step=0))
        decoded = 0
        assert reader.partial() is None
        assert decoded <= MAX_CUTS + 2


class _Unequal:
    """A value that cannot be compared: as a value nested too deeply for Python's recursion."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Unequal):
            raise RecursionError("maximum recursion depth exceeded in comparison")
        return False

    __hash__ = None  # type: ignore[assignment]


class _Reader:
    """An ``OutputReader`` stand-in whose reads are scripted: a value, or an error to raise."""

    def __init__(self, reads: list[Any]) -> None:
        self.reads = reads
        self.ended = False
        self.count = 0

    def feed(self, event: Event) -> bool:
        return True

    @property
    def version(self) -> int:
        return self.count

    def read(self, *, json: bool = False) -> Any:
        self.count += 1
        item = self.reads.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


async def test_a_partial_value_that_cannot_be_read_or_compared_is_skipped() -> None:
    first, second = _Unequal(), _Unequal()
    reads = [first, second, RecursionError("too deep"), ValueError("odd"), "last"]

    async def events() -> AsyncIterator[Event]:
        for _ in range(len(reads)):
            yield TextDelta("x", step=0)

    reader: Any = _Reader(reads)
    values = [value async for value in partial_values(events(), reader, debounce=None)]
    # The second could not be compared to the first, the next two not read: passed over.
    assert len(values) == 2
    assert values[0] is first
    assert values[1] == "last"
    assert reader.count == 5
    assert NO_VALUE not in values

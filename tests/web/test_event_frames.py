"""What a browser receives of a run: no memory items in any frame, no answer sent twice in one.

``RunFinished``/``RunFailed``/``RunCancelled`` carry the result without ``new_items`` (an input image is
there whole, reasoning as ``encrypted_content``); ``ModelCompleted`` carries the turn without
``memory_items``; and a plain agent's ``output`` (the answer's text again) is left out beside ``output_text``.
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import attrs
import orjson
import pytest

from agentflow import Agent, AgentOptions, ModelSettings, OpenAIResponsesModel
from agentflow.agent.items import user_item
from agentflow.events import ModelCompleted, RunCancelled, RunFailed, RunFinished, TextDelta
from agentflow.http.sse import SseDecoder
from agentflow.model.errors import BadRequestError
from agentflow.model.events import Event
from agentflow.result import AgentResult, StopReason
from agentflow.sse import encode_sse
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply

IMAGE = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + b"\0" * 60_000).decode()


def frames(events: list[Event]) -> dict[str, list[tuple[bytes, dict[str, Any]]]]:
    """Each event type's frames and their decoded ``data``."""
    out: dict[str, list[tuple[bytes, dict[str, Any]]]] = {}
    for event in events:
        frame = encode_sse(event)
        [parsed] = SseDecoder().feed(frame)
        out.setdefault(event.type, []).append((frame, orjson.loads(parsed.data)))
    return out


async def test_no_frame_echoes_the_input_image_or_the_encrypted_reasoning() -> None:
    async with ScriptedServer([Reply(reasoning="It looks like a cat.", text="A cat.")]) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="o4-mini")
        agent = Agent(model, settings=ModelSettings(store=False))
        async with agent, agent.stream(user_item("What is it?", [IMAGE])) as run:
            events = [event async for event in run]
    # Memory does hold both: what the frames leave out is still on the result for the server to persist.
    assert IMAGE in str(run.result.new_items)
    assert "encrypted_content" in str(run.result.new_items)

    sent = frames(events)
    for type_, found in sent.items():
        for frame, _ in found:
            assert IMAGE[30:90].encode() not in frame, type_
            assert b"encrypted_content" not in frame, type_
            assert len(frame) < 2_000, type_
    [(_, finished)] = sent["run_finished"]
    assert "new_items" not in finished["result"]
    assert "output" not in finished["result"]  # a plain agent's output is its text: sent once
    assert finished["result"]["output_text"] == "A cat."
    [(_, completed)] = sent["model_completed"]
    assert "memory_items" not in completed["response"]
    assert completed["response"]["output_text"] == "A cat."
    assert completed["response"]["reasoning_text"] == "It looks like a cat."


@attrs.frozen
class City:
    name: str


async def test_a_typed_output_is_sent_beside_the_text() -> None:
    agent = Agent(FakeModelClient([reply('{"name": "Paris"}')]), output_type=City)
    async with agent.stream("Capital of France?") as run:
        events = [event async for event in run]
    [(_, finished)] = frames(events)["run_finished"]
    assert finished["result"]["output"] == {"name": "Paris"}
    assert finished["result"]["output_text"] == '{"name": "Paris"}'


async def test_cut_and_failed_runs_send_their_partial_result_without_memory_items() -> None:
    gate, reached = anyio.Event(), anyio.Event()

    async def slow(_prompt: Any) -> Any:
        yield TextDelta("Half an ans")
        reached.set()
        await gate.wait()

    cancelled = Agent(FakeModelClient([slow]), options=AgentOptions(stream=True))
    async with cancelled.stream("?") as run:
        await reached.wait()
        await run.cancel()
        cut_events = [event async for event in run]
    failed = Agent(FakeModelClient([reply(tool_calls=[("nope", {})]), BadRequestError("no")]))
    async with failed.stream("?") as run:
        failed_events = [event async for event in run]

    [(_, cut)] = frames(cut_events)["run_cancelled"]
    assert isinstance(cut_events[-1], RunCancelled)
    assert cut["partial"]["output_text"] == "Half an ans"
    assert cut["partial"]["output"] is None  # not an answer: it stays, as null
    assert "new_items" not in cut["partial"]
    [(_, fail)] = frames(failed_events)["run_failed"]
    assert isinstance(failed_events[-1], RunFailed)
    assert fail["partial"]["steps"] == 1
    assert "new_items" not in fail["partial"]


@pytest.mark.parametrize(
    ("output", "sent"),
    [("Hi.", False), ("Other.", True), (None, True), ({"a": 1}, True)],
)
def test_output_is_left_out_only_when_it_is_the_answer_s_text(output: Any, sent: bool) -> None:
    result = AgentResult("run_1", "Hi.", StopReason.FINAL_ANSWER, output=output, new_items=({"x": 1},))
    data = result.to_dict()
    assert ("output" in data) is sent
    assert "new_items" not in data
    assert data["output_text"] == "Hi."
    assert RunFinished(result=result).to_dict()["result"] == data


def test_a_model_completed_without_its_memory_items() -> None:
    turn = reply("Hello.", tool_calls=[("add", {"a": 1})])
    assert turn.memory_items  # what the run writes to memory
    data = ModelCompleted(turn).to_dict()["response"]
    assert "memory_items" not in data
    assert data["output_text"] == "Hello."
    assert [call["name"] for call in data["tool_calls"]] == ["add"]


async def test_a_stream_failing_mid_answer_sends_its_text_in_run_failed() -> None:
    # A Responses stream whose connection drops mid-answer: the partial result has the text streamed so far.
    dropped = Fault.disconnect(after_chunks=6, reply=Reply(text="one two three four", chunk_size=4))
    async with ScriptedServer([dropped]) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="m")
        agent = Agent(model)
        async with agent, agent.stream("count") as run:
            events = [event async for event in run]
    [(_, fail)] = frames(events)["run_failed"]
    assert fail["partial"]["output_text"]
    assert "one two three four".startswith(fail["partial"]["output_text"])

"""A Responses turn's memory items hold only what the API takes back as input.

An incomplete response (``on_incomplete="return"``, cut at ``max_output_tokens``) may end in a truncated
``function_call`` (not a call: not in ``tool_calls``, so not in memory either) or in a lone reasoning item
(the API rejects "Item 'rs_…' of type 'reasoning' was provided without its required following item"). The
turn still says why it stopped: ``finish_reason`` is ``LENGTH``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agentflow.agent.agent import Agent
from agentflow.agent.prompt import AgentModelResult
from agentflow.agent.responses_client import replayable_items, responses_result
from agentflow.model.events import ModelCompleted
from agentflow.model.response import FinishReason
from agentflow.providers.openai.responses_codec import decode_response
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

REASONING = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc"}
DONE_CALL = {
    "id": "fc_1",
    "type": "function_call",
    "status": "completed",
    "call_id": "call_1",
    "name": "echo",
    "arguments": '{"x":"a"}',
}
CUT_CALL = {
    "id": "fc_2",
    "type": "function_call",
    "status": "incomplete",
    "call_id": "call_2",
    "name": "echo",
    "arguments": '{"x":"b',
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "done", "annotations": []}],
}


def _envelope(status: str, output: Sequence[dict[str, Any]], rid: str = "resp_1") -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "id": rid,
        "object": "response",
        "status": status,
        "model": "gpt-5",
        "output": list(output),
        "usage": {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10},
    }
    if status == "incomplete":
        envelope["incomplete_details"] = {"reason": "max_output_tokens"}
    return envelope


CUT_TURN = _envelope("incomplete", [REASONING, DONE_CALL, CUT_CALL])
FINAL_TURN = _envelope("completed", [MESSAGE], "resp_2")


# --- the pure projection ----------------------------------------------------------------------------------


def test_a_truncated_call_is_neither_a_tool_call_nor_a_memory_item() -> None:
    result = responses_result(decode_response(CUT_TURN))
    assert [call.id for call in result.tool_calls] == ["call_1"]
    assert list(result.memory_items) == [REASONING, DONE_CALL]
    assert result.finish_reason is FinishReason.LENGTH


def test_a_lone_reasoning_item_is_not_kept() -> None:
    result = responses_result(decode_response(_envelope("incomplete", [REASONING])))
    assert result.memory_items == ()
    assert result.finish_reason is FinishReason.LENGTH


def test_reasoning_before_a_truncated_call_goes_with_it() -> None:
    assert replayable_items([REASONING, CUT_CALL]) == ()


def test_reasoning_followed_by_an_item_is_kept_and_trailing_reasoning_is_not() -> None:
    trailing = {**REASONING, "id": "rs_2"}
    assert replayable_items([REASONING, MESSAGE, trailing]) == (REASONING, MESSAGE)
    assert replayable_items([REASONING, trailing, DONE_CALL]) == (REASONING, trailing, DONE_CALL)


def test_a_completed_turn_keeps_every_item_verbatim() -> None:
    output = [REASONING, DONE_CALL, MESSAGE]
    assert responses_result(decode_response(_envelope("completed", output))).memory_items == tuple(output)


# --- over HTTP, in an agent run ---------------------------------------------------------------------------


def _sse(envelope: dict[str, Any]) -> bytes:
    """A stream of ``envelope``: its items added and done, then ``response.incomplete``/``.completed``."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {**envelope, "output": []}}]
    for index, item in enumerate(envelope["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": f"response.{envelope['status']}", "response": envelope})
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


class Bodies:
    """Answers each ``POST`` with the next envelope, as JSON or as an event stream; records the requests."""

    def __init__(self, *envelopes: dict[str, Any]) -> None:
        self.envelopes = list(envelopes)
        self.requests: list[Any] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.requests.append(body)
        envelope = self.envelopes[len(self.requests) - 1]
        if body.get("stream"):
            return web.Response(body=_sse(envelope), content_type="text/event-stream")
        return web.Response(body=orjson.dumps(envelope), content_type="application/json")


@asynccontextmanager
async def serving(*envelopes: dict[str, Any]) -> AsyncIterator[tuple[str, Bodies]]:
    bodies = Bodies(*envelopes)
    app = web.Application()
    app.router.add_post("/v1/responses", bodies.handle)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield str(server.make_url("/v1")), bodies
    finally:
        await server.close()


@tool
def echo(x: str) -> str:
    """Echo the text back."""
    return x


async def _run(runner: Any, text: str, streamed: bool) -> Any:
    """One run of an agent or a session: ``run()``, or ``stream()`` read to the end."""
    if not streamed:
        return await runner.run(text)
    async with runner.stream(text) as run:
        async for _ in run:
            pass
    return run.result


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_incomplete_turn_with_a_truncated_call_runs_only_the_finished_call(streamed: bool) -> None:
    async with serving(CUT_TURN, FINAL_TURN) as (url, bodies):
        model = OpenAIResponsesModel(base_url=url, api_key="sk-test", model="gpt-5", on_incomplete="return")
        async with Agent(model, tools=[echo]) as agent:
            result = await _run(agent, "go", streamed)
    assert result.output_text == "done"
    assert [r.call_id for r in result.tool_results] == ["call_1"]
    replayed = bodies.requests[1]["input"]
    assert [item.get("id") for item in replayed if item.get("type") != "message"] == ["rs_1", "fc_1", None]
    assert replayed[-1] == {"type": "function_call_output", "call_id": "call_1", "output": "a"}


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_turn_cut_while_reasoning_is_not_replayed_and_says_length(streamed: bool) -> None:
    turns = [Reply(reasoning="thinking", finish_reason="length"), Reply(text="hi")]
    async with ScriptedServer(turns) as server:
        model = OpenAIResponsesModel(
            base_url=server.base_url, api_key="sk-test", model="gpt-5", on_incomplete="return"
        )
        async with Agent(model) as agent:
            completed: list[ModelCompleted[Any]] = []
            agent.on(ModelCompleted, completed.append)
            session = agent.session()
            first = await _run(session, "solve this", streamed)
            await _run(session, "and?", streamed)
    assert first.stop_reason is StopReason.TRUNCATED  # cut at the output-token limit: no final answer
    cut = completed[0].response
    assert isinstance(cut, AgentModelResult)
    assert cut.finish_reason is FinishReason.LENGTH
    assert cut.memory_items == ()
    replayed = server.requests[1].body["input"]
    assert [item.get("type") for item in replayed] == ["message", "message"]

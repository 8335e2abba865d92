"""A stream's read deadline runs from the server's last progress before the answer, not from any byte.

A Responses call busy with hosted tools (web searches, file searches, code runs, MCP calls) sends their
items and statuses before its first model event; each is progress and gives the model ``read`` again from
there, so a call whose tools take longer than ``read`` in all succeeds. What is no progress does not move the
deadline: keep-alive comments (``: ping``), and the Responses envelope (``response.created``,
``response.in_progress``), which says the response exists, not that it moves.

These tests let short real intervals pass; what they assert is the outcome, never a duration.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import orjson
import pytest
from aiohttp import web
from local_app import serving

from agentflow import ModelTimeoutError, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

Handler = Callable[[web.Request, web.StreamResponse], Awaitable[None]]
HI = [UserMessage("hi")]
READ = 0.4  # the read limit; the server's whole work before the answer takes several times that
STEP = READ / 4  # the pause before each progress event: well under ``read``
ENVELOPE = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "done", "annotations": []}],
}
HOSTED = [
    {"type": "web_search_call", "id": "ws_1", "action": {"type": "search", "query": "q"}},
    {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "results": None},
    {"type": "code_interpreter_call", "id": "ci_1", "code": "1", "container_id": "c", "outputs": None},
    {"type": "mcp_call", "id": "mcp_1", "name": "f", "server_label": "s", "arguments": "{}"},
]


def sse(payload: dict[str, object], *, named: bool = True) -> bytes:
    head = b"event: " + str(payload["type"]).encode() + b"\n" if named else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


async def answer(response: web.StreamResponse, *, index: int) -> None:
    added = {**MESSAGE, "content": [], "status": "in_progress"}
    await response.write(sse({"type": "response.output_item.added", "output_index": index, "item": added}))
    delta = {"output_index": index, "item_id": "msg_1", "content_index": 0, "delta": "done"}
    await response.write(sse({"type": "response.output_text.delta", **delta}))
    await response.write(sse({"type": "response.output_item.done", "output_index": index, "item": MESSAGE}))
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    done = {**ENVELOPE, "status": "completed", "output": [MESSAGE], "usage": usage}
    await response.write(sse({"type": "response.completed", "response": done}))


class Server:
    """A local aiohttp server streaming what the test's handler writes; ``stop`` ends what still runs."""

    def __init__(self) -> None:
        self.handler: Handler | None = None
        self.stop = anyio.Event()
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        assert self.handler is not None
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):  # the client left (a timeout)
            await self.handler(request, response)
            await response.write_eof()
        return response


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    local = Server()
    async with serving("/v1/responses", local.handle) as origin:
        local.base_url = origin + "/v1"
        try:
            yield local
        finally:
            local.stop.set()


def model_for(server: Server, *, idle: float | None = None) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        base_url=server.base_url,
        api_key="sk-test",
        model="m",
        timeout=Timeout(read=READ, idle=idle),
        retry=RetryPolicy.none(),
    )


@pytest.mark.parametrize("named", [True, False], ids=["event-lines", "type-in-data-only"])
async def test_hosted_tools_for_longer_than_read_before_the_answer_succeed(
    server: Server, named: bool
) -> None:
    async def hosted_tools_then_answer(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(sse({"type": "response.created", "response": ENVELOPE}, named=named))
        for index, item in enumerate(HOSTED * 2):  # 8 items, 16 pauses of STEP: 4 x READ in all
            kind = str(item["type"])
            running = {**item, "status": "in_progress"}
            await anyio.sleep(STEP)
            added = {"type": "response.output_item.added", "output_index": index, "item": running}
            await response.write(sse(added, named=named))
            progress = {"type": f"response.{kind}.in_progress", "output_index": index, "item_id": item["id"]}
            await response.write(sse(progress, named=named))
            await anyio.sleep(STEP)
            done = {**item, "status": "completed"}
            await response.write(
                sse({"type": "response.output_item.done", "output_index": index, "item": done}, named=named)
            )
        await answer(response, index=len(HOSTED) * 2)

    server.handler = hosted_tools_then_answer
    async with model_for(server) as model:
        with anyio.fail_after(20):
            result = await model.stream(HI).collect()
    assert result.message.text == "done"


async def test_the_model_may_think_for_read_after_a_hosted_tool_not_just_idle(server: Server) -> None:
    # A hosted tool's progress is not the answer: the silence that follows is bounded by ``read``, not by
    # ``idle`` (much shorter here). The two silences together are longer than ``read``.
    async def search_then_think(request: web.Request, response: web.StreamResponse) -> None:
        item = {**HOSTED[0], "status": "completed"}
        await anyio.sleep(STEP * 2)
        await response.write(sse({"type": "response.output_item.added", "output_index": 0, "item": item}))
        await response.write(sse({"type": "response.output_item.done", "output_index": 0, "item": item}))
        await anyio.sleep(STEP * 2)
        await answer(response, index=1)

    server.handler = search_then_think
    async with model_for(server, idle=STEP / 4) as model:
        with anyio.fail_after(20):
            result = await model.stream(HI).collect()
    assert result.message.text == "done"


@pytest.mark.parametrize("keepalive", ["comments", "envelope"])
async def test_what_is_no_progress_does_not_hold_a_stream_open(server: Server, keepalive: str) -> None:
    beats = {
        "comments": b": ping\n\n",
        "envelope": sse({"type": "response.in_progress", "response": ENVELOPE}),
    }

    async def beats_forever(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(sse({"type": "response.created", "response": ENVELOPE}))
        with anyio.move_on_after(30):  # until the client leaves
            while not server.stop.is_set():
                await anyio.sleep(STEP / 4)
                await response.write(beats[keepalive])

    server.handler = beats_forever
    async with model_for(server) as model:
        with anyio.fail_after(20), pytest.raises(ModelTimeoutError) as caught:
            await model.stream(HI).collect()
    assert caught.value.limit == "read"


async def test_pings_after_a_hosted_tool_still_time_out(server: Server) -> None:
    # Progress gives ``read`` again once, from there: comments afterwards do not extend it.
    async def one_tool_then_pings(request: web.Request, response: web.StreamResponse) -> None:
        item = {**HOSTED[0], "status": "completed"}
        await anyio.sleep(STEP)
        await response.write(sse({"type": "response.output_item.done", "output_index": 0, "item": item}))
        with anyio.move_on_after(30):  # until the client leaves
            while not server.stop.is_set():
                await anyio.sleep(STEP / 4)
                await response.write(b": ping\n\n")

    server.handler = one_tool_then_pings
    async with model_for(server) as model:
        with anyio.fail_after(20), pytest.raises(ModelTimeoutError) as caught:
            await model.stream(HI).collect()
    assert caught.value.limit == "read"

"""Helpers for the Responses model tests: the wire recordings, SSE helpers and a local aiohttp server."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson
from aiohttp import web

from agentflow.http.sse import SseDecoder
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.responses_stream import ResponsesStreamDecoder

WIRE = Path(__file__).resolve().parents[2] / "wire"
API_KEY = "sk-test-very-secret-key"


def load(name: str) -> dict[str, Any]:
    """One recording of ``shared/wire`` (see its README)."""
    data: dict[str, Any] = orjson.loads((WIRE / name).read_bytes())
    return data


def responses_recordings() -> list[str]:
    """Every Responses recording: ``responses_*.json`` and ``error_responses_*.json``."""
    names = sorted(p.name for p in WIRE.glob("responses_*.json")) + sorted(
        p.name for p in WIRE.glob("error_responses_*.json")
    )
    assert names, f"no recordings found in {WIRE}"
    return names


def payloads(body: str) -> list[dict[str, Any]]:
    """The decoded ``data:`` payloads of an SSE body (test oracle, independent of the decoders)."""
    return [orjson.loads(line[6:]) for line in body.split("\n") if line.startswith("data: ")]


def sse_body(*events: Mapping[str, Any], event_lines: bool = True) -> str:
    """An SSE body from payloads, framed like OpenAI (``event: <type>`` then ``data: <json>``)."""
    frames = []
    for payload in events:
        data = orjson.dumps(payload).decode()
        name = payload.get("type")
        frames.append(f"event: {name}\ndata: {data}\n\n" if event_lines and name else f"data: {data}\n\n")
    return "".join(frames)


def run_decoder(
    body: str | bytes, decoder: ResponsesStreamDecoder[Any] | None = None, *, chunk: int = 0
) -> tuple[list[ModelEvent], BaseException | None]:
    """Feed ``body`` through ``SseDecoder`` (in ``chunk``-byte pieces, 0 = whole) and the Responses decoder,
    the way the client does; return the events and the error that ended the stream, if any."""
    decoder = decoder if decoder is not None else ResponsesStreamDecoder.for_responses()
    raw = body.encode() if isinstance(body, str) else body
    pieces = [raw[i : i + chunk] for i in range(0, len(raw), chunk)] if chunk else [raw]
    sse = SseDecoder()
    events: list[ModelEvent] = []
    try:
        for piece in pieces:
            for sse_event in sse.feed(piece):
                events.extend(decoder.feed(sse_event))
                if decoder.done:
                    break
            if decoder.done:
                break
        else:
            for sse_event in sse.close():
                events.extend(decoder.feed(sse_event))
        events.extend(decoder.finish())
    except Exception as exc:
        return events, exc
    return events, None


@attrs.frozen
class Reply:
    """What the local server answers to one request."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    chunk_size: int = 0
    headers: Mapping[str, str] = attrs.field(factory=dict)

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Reply:
        return cls(orjson.dumps(payload), status)

    @classmethod
    def sse(cls, body: str, *, chunk_size: int = 0) -> Reply:
        return cls(body.encode(), 200, "text/event-stream; charset=utf-8", chunk_size)

    @classmethod
    def recording(cls, name: str, *, chunk_size: int = 0) -> Reply:
        data = load(name)
        content_type = data["response_headers"].get("content-type", "application/json")
        return cls(data["response_body"].encode(), data["status"], content_type, chunk_size)


@attrs.frozen
class Captured:
    """One request the local server received."""

    path: str
    headers: Mapping[str, str]
    json: Any


class LocalServer:
    """An aiohttp server on 127.0.0.1 that records requests and plays queued replies in order."""

    def __init__(self) -> None:
        self.requests: list[Captured] = []
        self.replies: deque[Reply] = deque()
        self.url = ""

    def queue(self, *replies: Reply) -> LocalServer:
        self.replies.extend(replies)
        return self

    @property
    def body(self) -> Any:
        """The JSON body of the only request received."""
        assert len(self.requests) == 1, f"expected one request, got {len(self.requests)}"
        return self.requests[0].json

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.requests.append(
            Captured(request.path, dict(request.headers), orjson.loads(raw) if raw else None)
        )
        reply = (
            self.replies.popleft()
            if self.replies
            else Reply.json({"error": {"message": "no reply queued"}}, 500)
        )
        response = web.StreamResponse(
            status=reply.status, headers={"Content-Type": reply.content_type, **reply.headers}
        )
        await response.prepare(request)
        size = reply.chunk_size or len(reply.body) or 1
        for start in range(0, len(reply.body), size):
            await response.write(reply.body[start : start + size])
        await response.write_eof()
        return response


class Sleeps:
    """An injected ``sleep`` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def kinds(events: Iterable[ModelEvent]) -> list[str]:
    """The event type names, for sequence assertions."""
    return [event.type for event in events]

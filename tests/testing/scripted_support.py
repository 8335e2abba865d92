"""Helpers shared by the scripted-server tests: recordings, SSE parsing, key-set shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import orjson
from multidict import CIMultiDict

WIRE = Path(__file__).resolve().parents[1] / "wire"
IGNORED_KEYS = {"obfuscation"}  # random padding some OpenAI streams carry; the server does not send it


def recording(name: str) -> dict[str, Any]:
    """One recording of ``shared/wire`` (fails loudly when the folder is missing)."""
    path = WIRE / name
    assert path.is_file(), f"missing wire recording {path} (clone shared/ beside the repo)"
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def parse_sse(body: bytes | str) -> list[tuple[str | None, str]]:
    """``(event, data)`` of every SSE event with data; comment lines skipped."""
    text = body.decode() if isinstance(body, bytes) else body
    events: list[tuple[str | None, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append((event, "\n".join(data)))
    return events


def payloads(body: bytes | str) -> list[Any]:
    """The JSON payloads of an SSE body, ``[DONE]`` kept as the string ``"[DONE]"``."""
    return [data if data == "[DONE]" else orjson.loads(data) for _, data in parse_sse(body)]


def recorded_payloads(name: str) -> list[Any]:
    return payloads(recording(name)["response_body"])


def keys(obj: dict[str, Any]) -> set[str]:
    return set(obj) - IGNORED_KEYS


def collapse(types: list[str]) -> list[str]:
    """Event types with runs of the same type collapsed to one (delta counts differ)."""
    out: list[str] = []
    for t in types:
        if not out or out[-1] != t:
            out.append(t)
    return out


async def post(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any]
) -> tuple[int, CIMultiDict[str], bytes]:
    async with session.post(url, json=body) as response:
        return response.status, CIMultiDict(response.headers), await response.read()


async def read_frame(response: aiohttp.ClientResponse) -> bytes:
    """The next SSE frame (up to its blank line) of a streaming response."""
    return await response.content.readuntil(b"\n\n")

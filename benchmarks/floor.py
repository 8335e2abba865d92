"""The floor: the least a client can do with raw aiohttp and orjson, no framework at all.

Every agentflow figure is reported as a ratio to these. They do the minimum work that still *uses* the
answer: encode the body with ``orjson.dumps``, POST it on a pooled ``aiohttp.ClientSession``, and decode the
reply with ``orjson.loads`` — the whole body for a plain call; each ``data:`` line of a stream, read line by
line as it arrives (``async for line in response.content``), for a stream. They check nothing, build no
typed values and aggregate nothing, so they are a floor, not a competitor.

``read_whole_stream`` is a second, lower reference for streams: it waits for the whole body and splits it
in one go, which no incremental client can do; it is shown for scale only.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

__all__ = ["FloorClient"]


class FloorClient:
    """Raw aiohttp + orjson against one base URL (``async with FloorClient(url, key) as floor``)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> FloorClient:
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pooled session (only inside ``async with``)."""
        assert self._session is not None, "use `async with FloorClient(...)`"
        return self._session

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST ``body``, return the decoded JSON answer."""
        async with self.session.post(self._base + path, data=orjson.dumps(body), headers=self._headers) as r:
            return orjson.loads(await r.read())

    async def read_stream(self, path: str, body: dict[str, Any]) -> int:
        """POST a stream request, decode every ``data:`` line as it arrives; return how many were JSON."""
        loads = orjson.loads
        count = 0
        async with self.session.post(self._base + path, data=orjson.dumps(body), headers=self._headers) as r:
            async for line in r.content:
                if line.startswith(b"data: "):
                    data = line[6:].rstrip()
                    if data == b"[DONE]":
                        break
                    loads(data)
                    count += 1
        return count

    async def read_whole_stream(self, path: str, body: dict[str, Any]) -> int:
        """Read the whole streamed body first, then split and decode it (not incremental; scale only)."""
        loads = orjson.loads
        count = 0
        async with self.session.post(self._base + path, data=orjson.dumps(body), headers=self._headers) as r:
            raw = await r.read()
        for line in raw.split(b"\n"):
            if line.startswith(b"data: "):
                data = line[6:]
                if data != b"[DONE]":
                    loads(data)
                    count += 1
        return count

"""``python -m agentflow.testing.server`` runs standalone: URL on the first line, serves until SIGTERM."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import anyio
import orjson
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from scripted_support import parse_sse, post


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


GUARD_SECONDS = 30  # only a guard against a hung subprocess, never reached when things work


@asynccontextmanager
async def standalone(*args: str) -> AsyncIterator[tuple[str, Process]]:
    """Start the server module, yield its base URL; SIGTERM it at the end and check it exits with 0."""
    command: Sequence[str] = [sys.executable, "-m", "agentflow.testing.server", "--port", "0", *args]
    with anyio.fail_after(GUARD_SECONDS):
        process = await anyio.open_process(command)
        try:
            assert process.stdout is not None
            first_line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1000)
            yield first_line.decode(), process
        finally:
            if process.returncode is None:
                process.terminate()
            await process.wait()
    assert process.returncode == 0
    assert process.stderr is not None
    with anyio.fail_after(GUARD_SECONDS):
        stderr = b"".join([chunk async for chunk in process.stderr])
    assert stderr == b""


async def test_standalone_serves_the_benchmark_reply_until_terminated(session: aiohttp.ClientSession) -> None:
    async with standalone("--bench-deltas", "50") as (base_url, _):
        assert base_url.startswith("http://127.0.0.1:")
        assert base_url.endswith("/v1")
        body = {"model": "m", "stream": True, "messages": []}
        status, _, raw = await post(session, f"{base_url}/chat/completions", body)
        deltas = [orjson.loads(data)["choices"][0]["delta"] for _, data in parse_sse(raw)[1:-2]]
        assert status == 200
        assert deltas == [{"content": " word"}] * 50
        status, _, raw = await post(session, f"{base_url}/responses", {"model": "m", "input": "hi"})
        assert (status, orjson.loads(raw)["output"][0]["content"][0]["text"]) == (
            200,
            "Hello from the scripted server.",
        )


async def test_standalone_plays_a_json_script(session: aiohttp.ClientSession, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_bytes(
        orjson.dumps({"turns": [{"fault": "status", "status": 503}], "default": {"text": "scripted"}})
    )
    async with standalone("--script", str(script)) as (base_url, _):
        body = {"model": "m", "messages": []}
        first, _, _ = await post(session, f"{base_url}/chat/completions", body)
        second, _, raw = await post(session, f"{base_url}/chat/completions", body)
    assert (first, second) == (503, 200)
    assert orjson.loads(raw)["choices"][0]["message"]["content"] == "scripted"


async def test_standalone_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_bytes(b'[{"txt": "typo"}]')
    with anyio.fail_after(GUARD_SECONDS):
        result = await anyio.run_process(
            [sys.executable, "-m", "agentflow.testing.server", "--script", str(script)], check=False
        )
    assert result.returncode == 2
    assert b"unknown reply fields" in result.stderr

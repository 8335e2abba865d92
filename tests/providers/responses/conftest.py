"""Fixtures for the Responses model tests: a local aiohttp server and a model pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from responses_support import API_KEY, LocalServer, Sleeps

from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.responses_model import OpenAIResponsesModel


@pytest.fixture
async def server() -> AsyncIterator[LocalServer]:
    local = LocalServer()
    app = web.Application()
    app.router.add_post("/{tail:.*}", local.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    local.url = f"http://{host}:{port}/v1"
    try:
        yield local
    finally:
        await runner.cleanup()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def model(server: LocalServer, sleeps: Sleeps) -> AsyncIterator[OpenAIResponsesModel]:
    async with OpenAIResponsesModel(
        base_url=server.url, api_key=API_KEY, model="gpt-test", retry=RetryPolicy(jitter=0), sleep=sleeps
    ) as responses_model:
        yield responses_model

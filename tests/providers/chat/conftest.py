"""Fixtures for the chat provider tests: a real local server and a recording sleep."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from chat_local_server import LocalServer, SleepRecorder


@pytest.fixture
async def server() -> AsyncIterator[LocalServer]:
    local = LocalServer()
    await local.start()
    try:
        yield local
    finally:
        await local.close()


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()

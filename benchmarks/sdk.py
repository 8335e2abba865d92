"""The official ``openai`` SDK as a contender: ``AsyncOpenAI`` pointed at the benchmark server.

The SDK is the ``bench`` extra, not a runtime dependency: when it is missing the measurements still run and
say so. Retries are off so that every contender does exactly one request per operation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["MISSING", "SdkHandle", "open_sdk", "sdk_version"]

MISSING = "openai SDK not installed (pip install -e '.[bench]'): its figures are missing"


@dataclass
class SdkHandle:
    """An ``AsyncOpenAI`` client, or ``None`` with the reason in ``missing``."""

    client: Any
    missing: str = ""


def sdk_version() -> str | None:
    """The installed ``openai`` version, or ``None``."""
    try:
        import openai
    except ImportError:
        return None
    return str(openai.__version__)


@asynccontextmanager
async def open_sdk(base_url: str, api_key: str) -> AsyncIterator[SdkHandle]:
    """Yield an ``AsyncOpenAI`` for ``base_url`` (closed at the end), or a handle saying why there is none."""
    try:
        from openai import AsyncOpenAI
    except ImportError:
        yield SdkHandle(None, MISSING)
        return
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    try:
        yield SdkHandle(client)
    finally:
        await client.close()

"""Who hears about the retries of a blocking model call: a listener set for the current context.

A streaming call yields its ``ModelRetry`` events in the stream. A blocking call (``await model.chat(…)``)
returns one value, so its retries go to the listener set here for the current context, if any: an agent
run sets one around each blocking model call and publishes them on its bus, so ``agent.run()`` shows the
same ``ModelRetry`` events as a streamed run. It costs nothing until a retry happens (only then is it read).

>>> import asyncio
>>> from agentflow.model.events import ModelRetry
>>> heard = []
>>> async def note(retry: ModelRetry) -> None:
...     heard.append(retry.reason)
>>> token = retry_listener.set(note)
>>> asyncio.run(retry_listener.get()(ModelRetry(1, 3, 0.5, "HTTP 429")))  # what a client does on a retry
>>> retry_listener.reset(token)
>>> heard
['HTTP 429']
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeAlias

from .events import ModelRetry

__all__ = ["RetryListener", "retry_listener"]

RetryListener: TypeAlias = Callable[[ModelRetry], Awaitable[object]]
"""Awaited with every ``ModelRetry`` of a blocking call, before the client waits out the back-off."""

retry_listener: ContextVar[RetryListener | None] = ContextVar("agentflow_retry_listener", default=None)
"""The listener of the current context (set it with a token and reset it after the call)."""

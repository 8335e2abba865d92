"""A switch that refuses model requests to any host but this machine, for test suites that must never reach
a real model (and spend money, or leak fixtures) by mistake: pydantic-ai's ``ALLOW_MODEL_REQUESTS``.

``agentflow.testing.block_model_requests()`` turns it on for a ``with`` block (a pytest fixture), and
``AGENTFLOW_BLOCK_MODEL_REQUESTS=1`` in the environment for the whole process (CI). Loopback hosts
(``127.0.0.1``, ``::1``, ``localhost``) stay allowed: that is where ``ScriptedServer`` and local servers run.
The model's HTTP client asks ``refused`` before each attempt; the check is one attribute read while the
switch is off. What it must not do: look at anything but the URL (it is no sandbox for tools' own traffic).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

__all__ = ["ENV_BLOCK", "ModelRequestBlocked", "block_model_requests", "guard"]

ENV_BLOCK = "AGENTFLOW_BLOCK_MODEL_REQUESTS"
"""Set to ``1`` (or ``true``/``yes``) to refuse model requests to other hosts in the whole process."""


class ModelRequestBlocked(RuntimeError):
    """A model request to another host while ``block_model_requests`` is on: no byte was sent.

    A ``RuntimeError``, not a ``ModelError``: it is a mistake in the test's set-up (a real model where a
    local one was meant), so no retry and no handler for model failures may take it for the server's.
    """

    def __init__(self, url: str) -> None:
        super().__init__(
            f"a model request to {url} was refused: real model requests are blocked "
            f"(agentflow.testing.block_model_requests, or {ENV_BLOCK}); point the model at a local server "
            "(agentflow.testing.ScriptedServer) or a fake (FakeModelClient, FakeChatModel), or allow the "
            "host with block_model_requests(allow_hosts=[...])"
        )
        self.url = url


class _Guard:
    __slots__ = ("allowed", "on")

    def __init__(self) -> None:
        self.on = os.environ.get(ENV_BLOCK, "").strip().lower() in ("1", "true", "yes", "on")
        self.allowed: frozenset[str] = frozenset()

    def refused(self, url: str) -> ModelRequestBlocked | None:
        """The error for a request to ``url``, or ``None`` when it may go (the switch is off, or the host is
        this machine or allowed)."""
        host = (urlsplit(url).hostname or "").lower()
        if host in self.allowed or _loopback(host):
            return None
        return ModelRequestBlocked(url)


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


guard = _Guard()
"""The process's switch; the model's HTTP client reads ``guard.on`` before each attempt."""


@contextlib.contextmanager
def block_model_requests(*, allow_hosts: Iterable[str] = ()) -> Iterator[None]:
    """Refuse model requests to any host but this machine (and ``allow_hosts``) inside the block: each one
    raises ``ModelRequestBlocked`` before anything is sent. For the whole process, not one task: a test's
    agent may run its model calls in tasks of its own. Blocks nest; leaving one restores what was before.

    >>> import anyio
    >>> from agentflow.model.messages import UserMessage
    >>> from agentflow.providers.openai.chat_model import OpenAIChatModel
    >>> model = OpenAIChatModel(base_url="https://api.openai.com/v1", api_key="sk-test", model="gpt-4.1")
    >>> with block_model_requests():
    ...     anyio.run(model.chat, [UserMessage("hi")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentflow.http.request_guard.ModelRequestBlocked: a model request to https://api.openai.com/v1/chat/...
    """
    if isinstance(allow_hosts, str):
        raise TypeError(f"allow_hosts takes a list of host names, got the string {allow_hosts!r}")
    before = guard.on, guard.allowed
    guard.on = True
    guard.allowed = before[1] | {host.lower() for host in allow_hosts}
    try:
        yield
    finally:
        guard.on, guard.allowed = before

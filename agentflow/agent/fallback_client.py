"""``FallbackModelClient``: an agent's model calls go to the next model when one fails.

A ``ModelClient`` over other model clients (``ChatModel`` and ``OpenAIResponsesModel`` members wrapped as
``Agent`` wraps them), so ``Agent(model=FallbackModelClient(primary, backup))`` works with every runtime. The
order, the failures that fall back and the stream rule live in ``agentflow.model.fallback.FallbackChain``;
this module only maps an ``AgentPrompt`` onto each member. It adds nothing to an agent that does not use it,
and, to one that does, one ``await`` per blocking call and one generator step per streamed event.
"""

from __future__ import annotations

from collections.abc import Awaitable
from types import TracebackType
from typing import Self

import attrs

from ..model.fallback import FallbackChain, FallbackOn, fallback_predicate
from ..model.stream import ModelStream
from .prompt import AgentModelResult, AgentPrompt, ModelClient

__all__ = ["FallbackModelClient"]


class FallbackModelClient:
    """Sends each model call of a run to ``primary``, and, when that fails in a way another model may fix,
    to each of ``fallbacks`` in turn.

    Members are ``ChatModel`` values (``OpenAIChatModel``…), ``OpenAIResponsesModel`` values (used over
    Responses) or ``ModelClient`` values, as ``Agent(model=…)`` takes them.

    - ``fallback_on``: exception types, or a function of the exception returning ``True`` to try the next
      model. By default ``agentflow.may_succeed_elsewhere``: rate limits (once the model's own retries gave
      up), server errors, timeouts, connection failures, a provider's credentials, an unknown model, a
      prompt too long for the model's context; not other bad requests, content filters or cancellation.
    - A streamed call falls back only while none of its answer has come (a ``ModelRetry`` or a usage report
      is no answer); once a delta has reached the run, a failure propagates: a half-streamed answer cannot
      be taken back.
    - Each fallback is a ``ModelRetry`` of the run (``attempt``: the model tried next, ``max_attempts``: how
      many there are, ``reason``: the failure and the models), and a ``WARNING`` on the ``agentflow`` logger.
    - When every model fails, ``AllModelsFailedError`` (a ``ModelError`` and an ``ExceptionGroup``) holds each
      one's error. An error not to fall back on from a later model propagates, with notes naming the
      failures before it.
    - The prompt's ``model`` (``ModelSettings(model=…)``) is asked of the first model; a fallback that names a
      model of its own asks for that one.
    - ``aclose()`` (or leaving ``async with``) closes every member.

    >>> from agentflow.testing.fake import FakeModelClient, reply
    >>> client = FallbackModelClient(FakeModelClient([reply("hi")]), FakeModelClient([]))
    >>> len(client.members)
    2
    """

    __slots__ = ("_chain", "_primary")

    def __init__(self, primary: object, *fallbacks: object, fallback_on: FallbackOn | None = None) -> None:
        # Imported here: ``agent`` may come to import this module (to look into a fallback's members).
        from .agent import as_model_client

        members = tuple(as_model_client(member) for member in (primary, *fallbacks))
        self._primary = members[0]
        self._chain: FallbackChain[ModelClient] = FallbackChain(members, fallback_predicate(fallback_on))

    def __repr__(self) -> str:
        return f"FallbackModelClient({', '.join(map(repr, self._chain.members))})"

    @property
    def members(self) -> tuple[ModelClient, ...]:
        """The model clients, in the order they are tried."""
        return self._chain.members

    @property
    def model_name(self) -> str | None:
        """The first member's default model name (what a run's ``ModelRequest`` names)."""
        name = getattr(self._primary, "model_name", None)
        return name if isinstance(name, str) else None

    async def create(self, prompt: AgentPrompt) -> AgentModelResult:
        """One blocking model call: the first member's, else each fallback's in turn."""
        try:
            return await self._primary.create(prompt)
        except Exception as exc:
            if not self._chain.falls_back(exc):
                raise

            def call(member: ModelClient, _index: int) -> Awaitable[AgentModelResult]:
                return member.create(_member_prompt(prompt, member))

            return await self._chain.rest(exc, call)

    def create_stream(self, prompt: AgentPrompt) -> ModelStream[AgentModelResult]:
        """One streaming call: the first member's events, or, when it fails before any part of its answer,
        the next member's (announced by a ``ModelRetry``). The prompt is checked now by the first member;
        a fallback member checks it when its turn comes."""

        def open_stream(member: ModelClient, _index: int) -> ModelStream[AgentModelResult]:
            return member.create_stream(_member_prompt(prompt, member))

        return self._chain.stream(self._primary.create_stream(prompt), open_stream)

    async def aclose(self) -> None:
        """Close every member (and its connections)."""
        await self._chain.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _member_prompt(prompt: AgentPrompt, member: ModelClient) -> AgentPrompt:
    """``prompt`` for a fallback member: without the model name meant for the first one when this member
    names a model of its own."""
    if prompt.model is not None and isinstance(getattr(member, "model_name", None), str):
        return attrs.evolve(prompt, model=None)
    return prompt

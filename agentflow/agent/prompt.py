"""What a runtime asks of a model (``AgentPrompt``), what it gets back (``AgentModelResult``), and the
``ModelClient`` protocol that turns one into the other over a concrete wire protocol.

Plain values, a protocol and ``relay_stream`` (the event pass-through both adapters share); no I/O and no
knowledge of any provider. The two adapters live in ``chat_client`` and ``responses_client``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias, TypeVar, runtime_checkable

import attrs

from ..model.errors import StreamCutOffError
from ..model.events import ModelCompleted, ModelEvent
from ..model.messages import ToolCall
from ..model.response import NOT_IN_JSON, FinishReason, TokenUsage
from ..model.stream import ModelStream
from ..model.tools import ToolChoice, ToolSpec

__all__ = [
    "AgentModelResult",
    "AgentPrompt",
    "ModelClient",
    "ToolChoiceLike",
    "reasoning_effort",
    "relay_stream",
]

ToolChoiceLike: TypeAlias = ToolChoice | str | Mapping[str, Any]
"""A tool choice in any accepted form: a ``ToolChoice``, ``"auto"``/``"none"``/``"required"``, or a wire map
such as ``{"type": "function", "name": "f"}``."""


def _to_tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    if isinstance(value, tuple):
        return value  # the usual case (memory snapshots, registry specs): nothing to convert or check
    if isinstance(value, str | bytes | Mapping):
        raise TypeError(f"expected a sequence, got {type(value).__name__}")
    return tuple(value)


def reasoning_effort(reasoning: Mapping[str, Any] | None) -> str | None:
    """The ``effort`` of a ``reasoning`` setting (``{"effort": "low", "summary": "auto"}``), checked.

    Raises ``TypeError`` when ``reasoning`` is not a mapping or its effort not a string.

    >>> reasoning_effort({"effort": "low"}), reasoning_effort(None)
    ('low', None)
    """
    if reasoning is None:
        return None
    if not isinstance(reasoning, Mapping):
        raise TypeError(
            f"reasoning must be a mapping such as {{'effort': 'low'}}, not {type(reasoning).__name__}"
        )
    effort = reasoning.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise TypeError(f"reasoning effort must be a string, not {effort!r}")
    return effort


def _to_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


_NO_HEADERS: Mapping[str, str] = MappingProxyType({})  # shared by every prompt without headers


@attrs.frozen
class AgentPrompt:
    """Everything one model call of a run needs; every field is optional.

    ``system_prompt`` and ``instructions`` land in different places on each protocol (see
    ``ChatModelClient`` and ``ResponsesModelClient``). ``items`` is the conversation: memory items (plain
    dicts in the Responses item shape, see ``agentflow.agent.items``) and ``Message`` values, in order.
    ``stream`` records whether the runtime streams this call; the client method called decides
    (``create`` never streams, ``create_stream`` always does).

    >>> from agentflow.agent.items import user_item
    >>> p = AgentPrompt(model="gpt-4.1", system_prompt="Be brief.", items=[user_item("hi")])
    >>> p.items[0]["role"], p.tools, p.extra_body
    ('user', (), {})
    """

    model: str | None = None
    system_prompt: str | None = None
    instructions: str | None = None
    items: tuple[Any, ...] = attrs.field(default=(), converter=_to_tuple)
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_to_tuple)
    tool_choice: ToolChoiceLike | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    reasoning: Mapping[str, Any] | None = None
    store: bool | None = None
    user: str | None = None
    extra_body: Mapping[str, Any] = attrs.field(factory=dict, converter=_to_mapping)
    stream: bool = False
    cache: dict[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    """Scratch space a client may use to reuse its work across the calls of one run: the runtime passes the
    same dict with every prompt of a run. ``ChatModelClient`` keeps each memory item's Chat message there (the
    memory item of each reply it returns included, so do not mutate those), so a step converts only the items
    that are new. Clients key their entries by their own name; ``None`` (a prompt built by hand) reuses
    nothing."""
    response_format: Mapping[str, Any] | None = None
    """Chat's ``response_format`` (``{"type": "json_schema", "json_schema": {…}}``); on Responses it is sent
    as ``text.format``. Clients may reuse what they built from it while the same mapping comes back, so do
    not mutate one you have passed."""
    extra_headers: Mapping[str, str] = attrs.field(default=_NO_HEADERS)
    """HTTP headers for this call, after the model's own (``ModelSettings.extra_headers``)."""
    hosted_tools: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=_to_tuple)
    """Tools the provider runs inside the model call (``{"type": "web_search"}``…), sent verbatim after
    ``tools`` on Responses (``ToolRegistry.hosted``). Chat Completions has none: ``ChatModelClient`` refuses
    a prompt that has some (``ValueError``)."""

    def __attrs_post_init__(self) -> None:
        for tool in self.tools:
            if not isinstance(tool, ToolSpec):
                raise TypeError(f"AgentPrompt.tools takes ToolSpec values, got {type(tool).__name__}")
        for hosted in self.hosted_tools:
            if not isinstance(hosted, Mapping) or not isinstance(hosted.get("type"), str):
                raise TypeError(
                    "AgentPrompt.hosted_tools takes tool mappings with a string 'type' such as "
                    f"{{'type': 'web_search'}}, got {hosted!r:.80}"
                )


@attrs.frozen
class AgentModelResult:
    """One model call projected onto agent semantics, whichever protocol carried it.

    ``memory_items`` are what the runtime appends to memory for this assistant turn (a converted assistant
    item on Chat, the raw output items on Responses). Every tool call has a non-blank id, and the memory
    items use the same ids. ``refusal`` holds a refusal text when the model refused (``output_text`` is
    then usually empty). ``raw`` is the provider's response (``ChatResponse`` or the Responses response).
    ``to_dict()`` (a ``ModelCompleted``'s JSON) leaves out both: the memory items repeat the text and calls
    in the protocol's shape, with what a browser has no use for (reasoning as opaque ``encrypted_content``).
    """

    output_text: str = ""
    reasoning_text: str | None = None
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_to_tuple)
    memory_items: tuple[Any, ...] = attrs.field(
        default=(), converter=_to_tuple, repr=False, metadata=NOT_IN_JSON
    )
    usage: TokenUsage | None = None
    finish_reason: FinishReason | None = None
    raw: Any = attrs.field(default=None, repr=False, eq=False, metadata=NOT_IN_JSON)
    refusal: str | None = None

    @property
    def has_tool_calls(self) -> bool:
        """Whether the model asked for at least one tool call."""
        return bool(self.tool_calls)


@runtime_checkable
class ModelClient(Protocol):
    """Sends an ``AgentPrompt`` over one wire protocol and projects the answer onto ``AgentModelResult``.

    ``create_stream`` yields the model events as they arrive (``TextDelta``, ``ReasoningDelta``,
    ``ToolCallStarted``/``ToolCallArgumentsDelta``/``ToolCallReady``, ``RefusalDelta``, ``UsageReported``,
    ``ModelRetry``) and ends with ``ModelCompleted(AgentModelResult)``. Invalid prompts raise ``TypeError`` or
    ``ValueError`` when the call is made, before anything is sent.
    """

    async def create(self, prompt: AgentPrompt) -> AgentModelResult:
        """One blocking model call."""
        ...

    def create_stream(self, prompt: AgentPrompt) -> ModelStream[AgentModelResult]:
        """One streaming model call (nothing is sent until the stream is entered or iterated)."""
        ...

    async def aclose(self) -> None:
        """Release the underlying model's connections."""
        ...


R = TypeVar("R")


def relay_stream(
    open_stream: Callable[[], ModelStream[R]], project: Callable[[R], AgentModelResult]
) -> ModelStream[AgentModelResult]:
    """A stream of a model's events, passed through unchanged, with the final ``ModelCompleted`` response
    projected onto an ``AgentModelResult``.

    ``open_stream`` is called only when the returned stream is entered or iterated; closing the returned
    stream (leaving ``async with``, breaking out, cancelling) closes the model's stream and its connection.
    A model stream that ends without ``ModelCompleted`` raises ``StreamCutOffError``.
    """

    async def events() -> AsyncGenerator[ModelEvent, None]:
        async with open_stream() as inner:
            async for event in inner:
                if isinstance(event, ModelCompleted):
                    yield ModelCompleted(project(event.response))
                    return
                yield event
        raise StreamCutOffError("the model stream ended without a completion event")

    return ModelStream(events)

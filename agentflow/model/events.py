"""The event vocabulary's base class and the model events that both protocols emit.

Every event is an immutable attrs value. The agent layer stamps ``run_id``, ``step`` and ``seq`` when it
publishes a model event on a run's bus (``attrs.evolve``); at the model layer they keep their defaults.
``to_dict()`` gives a JSON-ready mapping (``agentflow.exact_json.dumps(event.to_dict())``: orjson, with
integers beyond 64 bits exact) for SSE or WebSocket forwarding.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

import attrs

from .messages import ToolCall
from .response import ChatResponse, TokenUsage

__all__ = [
    "Event",
    "ModelCompleted",
    "ModelEvent",
    "ModelRetry",
    "ReasoningDelta",
    "RefusalDelta",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "UsageReported",
    "to_jsonable",
]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def to_jsonable(value: Any) -> Any:
    """Turn attrs values, enums, tuples and mappings into plain JSON-ready data (orjson-serialisable)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None and callable(to_dict):
        return to_dict()
    if attrs.has(type(value)):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in attrs.fields(type(value))}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    return repr(value)


@attrs.frozen
class Event:
    """Base of every event. ``type`` is the snake_case class name (``TextDelta`` → ``"text_delta"``)."""

    type: ClassVar[str] = "event"
    run_id: str = attrs.field(default="", kw_only=True)
    step: int = attrs.field(default=0, kw_only=True)
    seq: int = attrs.field(default=0, kw_only=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type" not in cls.__dict__:
            cls.type = _CAMEL.sub("_", cls.__name__).lower()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: ``{"type": …, "run_id": …, "step": …, "seq": …, <fields>}``."""
        out: dict[str, Any] = {"type": self.type}
        for f in attrs.fields(type(self)):
            out[f.name] = to_jsonable(getattr(self, f.name))
        return out


@attrs.frozen
class ModelEvent(Event):
    """Base of the events a model stream yields."""


@attrs.frozen
class TextDelta(ModelEvent):
    """A fragment of the assistant's answer text, as soon as it arrives."""

    text: str


@attrs.frozen
class ReasoningDelta(ModelEvent):
    """A fragment of the model's reasoning (``reasoning_content``/``reasoning``, or Responses summaries)."""

    text: str


@attrs.frozen
class RefusalDelta(ModelEvent):
    """A fragment of a refusal message."""

    text: str


@attrs.frozen
class ToolCallStarted(ModelEvent):
    """The model began a tool call; ``index`` correlates the argument deltas that follow."""

    index: int
    id: str
    name: str


@attrs.frozen
class ToolCallArgumentsDelta(ModelEvent):
    """A fragment of a tool call's JSON arguments."""

    index: int
    delta: str


@attrs.frozen
class ToolCallReady(ModelEvent):
    """A tool call is complete (its arguments are final)."""

    index: int
    call: ToolCall


@attrs.frozen
class UsageReported(ModelEvent):
    """The server reported token usage for the call."""

    usage: TokenUsage


@attrs.frozen
class ModelRetry(ModelEvent):
    """A failed attempt will be retried after ``delay`` seconds."""

    attempt: int
    max_attempts: int
    delay: float
    reason: str


R = TypeVar("R")


@attrs.frozen
class ModelCompleted(ModelEvent, Generic[R]):
    """The last event of a model stream, carrying the aggregated response."""

    response: R


ChatCompleted = ModelCompleted[ChatResponse]

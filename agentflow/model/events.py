"""The event vocabulary's base class and the model events that both protocols emit.

Every event is an immutable attrs value. The agent layer stamps ``run_id``, ``step`` and ``seq`` when it
publishes a model event on a run's bus (``attrs.evolve``); at the model layer they keep their defaults.
``to_dict()`` gives a JSON-ready mapping (``agentflow.exact_json.dumps(event.to_dict())``: orjson, with
integers beyond 64 bits exact) for SSE or WebSocket forwarding.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import os
import re
import sys
import typing
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic

import attrs

from ..exact_json import decimal_value
from ..json_forms import NO_FORM, foreign_form, iso_duration, safe_repr
from .messages import ToolCall
from .response import NOT_IN_JSON, ChatResponse, TokenUsage

__all__ = [
    "NOT_IN_JSON",
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


_MAX_DEPTH = 64  # deeper than any event; what is below (a cycle, most likely) is shown as its repr


def _key(key: Any) -> str:
    """A mapping key as JSON text: an enum by its value (as the values are), anything else its ``str``."""
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        key = key.value
    return str(key)


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Turn attrs values, enums, tuples and mappings into plain JSON-ready data (orjson-serialisable).

    Fields marked ``NOT_IN_JSON`` are left out. Dates, times and durations become ISO 8601 text (a
    ``timedelta``: ``PT1M30S``), enums their value (as mapping keys too), UUIDs and paths text,
    dataclasses mappings, a ``Decimal`` a number when a float says it exactly (else its digits), bytes their
    UTF-8 text, pydantic models their ``model_dump(mode="json")`` and NumPy values their ``tolist()``, as
    they are in a tool's output (``agentflow.json_forms``); an object with a ``to_dict()`` is what that
    returns, made JSON-ready in turn. Anything else is its ``repr``, as is whatever lies more than 64 levels
    down (a cycle). A ``to_dict()``, ``model_dump()`` or ``__repr__`` that raises is passed over, so a
    value's own failure never keeps an event from being written.

    >>> import datetime
    >>> to_jsonable({"at": datetime.date(2026, 11, 30), 1: (2, 3)})
    {'at': '2026-11-30', '1': [2, 3]}
    """
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if _depth >= _MAX_DEPTH:
        return safe_repr(value)
    depth = _depth + 1
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None and callable(to_dict) and not isinstance(value, type):
        try:
            plain = to_dict()
        except Exception:
            # Needs arguments (pandas), or fails (an ORM row whose session closed): an event must still be
            # written, so the value is shown as whatever follows can make of it.
            pass
        else:
            return to_jsonable(plain, depth)
    if attrs.has(type(value)):
        # Keyed as the class is built (the alias: ``limit`` for a private ``_limit``), as a schema shows it.
        return {
            (f.alias or f.name): to_jsonable(getattr(value, f.name), depth)
            for f in attrs.fields(type(value))
            if f.metadata.get("json", True)
        }
    if isinstance(value, Mapping):
        return {_key(k): to_jsonable(v, depth) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, depth) for v in value]
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return iso_duration(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    decimal = sys.modules.get("decimal")  # imported only where a Decimal can exist (~1 ms at import time)
    if decimal is not None and isinstance(value, decimal.Decimal):
        return decimal_value(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name), depth) for f in dataclasses.fields(value)}
    try:
        form = foreign_form(value)
    except Exception:
        form = NO_FORM
    return safe_repr(value) if form is NO_FORM else to_jsonable(form, depth)


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
    """A failed attempt will be retried after ``delay`` seconds.

    An event, not pydantic-ai's ``ModelRetry`` exception: to have the model try again, a tool raises
    ``agentflow.RejectCall`` and an output validator ``agentflow.RejectOutput``.
    """

    attempt: int
    max_attempts: int
    delay: float
    reason: str


if TYPE_CHECKING:
    # A default for the type parameter (PEP 696; ``typing`` has it from 3.13), for type checkers only: at
    # run time it changes nothing, and importing ``typing_extensions`` would cost ``import agentflow`` 1.5 ms.
    from typing_extensions import TypeVar

    R = TypeVar("R", default=Any)
else:
    R = typing.TypeVar("R")
"""What a ``ModelCompleted`` carries; a bare ``ModelCompleted`` annotation (an ``isinstance`` check, a union
of event classes such as ``agentflow.events.AgentEvent``) means ``ModelCompleted[Any]``."""


@attrs.frozen
class ModelCompleted(ModelEvent, Generic[R]):
    """The last event of a model stream, carrying the aggregated response (an ``AgentModelResult`` in a run,
    a ``ChatResponse`` from ``ChatModel.stream``).

    In a run, a streamed call's ``ModelCompleted`` also says how long the answer took to begin: seconds from
    the request (its first attempt: retries are part of the wait) to its first text, reasoning, refusal or
    tool-call event (``time_to_first_chunk``; ``None`` for a blocking call, or an answer with none of these).
    """

    response: R
    time_to_first_chunk: float | None = None


ChatCompleted = ModelCompleted[ChatResponse]

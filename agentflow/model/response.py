"""The unified chat response: the assistant message, token usage, finish reason and metadata."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from .messages import AiMessage

__all__ = ["NOT_IN_JSON", "ChatResponse", "FinishReason", "TokenUsage"]


NOT_IN_JSON: Mapping[str, Any] = MappingProxyType({"json": False})
"""``attrs.field(metadata=NOT_IN_JSON)``: a field that ``agentflow.model.events.to_jsonable`` (hence every
``to_dict()``) leaves out.

The provider's whole response (``raw``) is one: it may echo the request — the Responses API sends back the
call's ``instructions`` and ``tools`` — and events are forwarded to browsers as they are.
"""


class FinishReason(enum.Enum):
    """Why the model stopped. Unknown wire values map to ``OTHER``."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_EXECUTION = "tool_execution"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


@attrs.frozen
class TokenUsage:
    """Token counts of one call, or a sum of calls (``a + b``).

    ``cached_input_tokens`` is the part of ``input_tokens`` served from the prompt cache;
    ``uncached_input_tokens`` is the rest.

    >>> (TokenUsage(100, 20, 120, cached_input_tokens=60) + TokenUsage(1, 1, 2)).uncached_input_tokens
    41
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens not served from the cache: ``max(0, input − cached)``."""
        return max(0, self.input_tokens - self.cached_input_tokens)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        # Sums start at zero (a run's, each step's), so zero + usage is the most frequent addition: that sum
        # is ``other`` itself (immutable), not a copy of it.
        if type(other) is TokenUsage and not (
            self.input_tokens
            or self.output_tokens
            or self.total_tokens
            or self.cached_input_tokens
            or self.cache_write_tokens
            or self.reasoning_tokens
        ):
            return other
        # A usage without a total (a server that reports input and output only) adds its input + output to
        # the sum's total: once another usage made that total non-zero, nothing could tell it was left out.
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            (self.total_tokens or self.input_tokens + self.output_tokens)
            + (other.total_tokens or other.input_tokens + other.output_tokens),
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready mapping, including the derived ``uncached_input_tokens``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "uncached_input_tokens": self.uncached_input_tokens,
        }


@attrs.frozen
class ChatResponse:
    """What one model call produced.

    ``usage`` is ``None`` when the server did not report it (e.g. a stream cut before its usage chunk);
    ``metadata`` holds ``id``, ``model`` and ``created`` when present; ``raw`` is the decoded wire body
    (the last chunk's envelope for streams).
    """

    message: AiMessage
    usage: TokenUsage | None = None
    finish_reason: FinishReason | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)
    raw: Any = attrs.field(default=None, repr=False, eq=False, metadata=NOT_IN_JSON)

    @property
    def text(self) -> str:
        """The assistant text, ``""`` when there is none."""
        return self.message.text or ""

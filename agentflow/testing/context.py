"""What the wire encoders know about the request being answered: ids, timestamp, model, usage.

Pure values: the server builds one ``ReplyContext`` per request; ``chat_wire`` and ``responses_wire``
read it so that every id in a reply is deterministic (``<prefix>_scripted_<serial>…``) and the same
call ids appear whichever protocol or mode the request used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..model.response import TokenUsage
from .script import Reply, ScriptedToolCall, default_usage

__all__ = ["DEFAULT_MODEL", "ReplyContext"]

DEFAULT_MODEL = "scripted-model"
"""The model name answered when neither the reply nor the request names one."""


@attrs.frozen
class ReplyContext:
    """Per-request facts for encoding a :class:`Reply`.

    >>> ctx = ReplyContext.for_request(Reply(text="hi"), {"model": "m"}, serial=7, created=0, request_size=8)
    >>> (ctx.model, ctx.usage.input_tokens, ctx.ids("resp"))
    ('m', 2, 'resp_scripted_000007')
    """

    serial: int
    created: int
    model: str
    usage: TokenUsage
    request: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def for_request(
        cls, reply: Reply, request: Mapping[str, Any], *, serial: int, created: int, request_size: int
    ) -> ReplyContext:
        """The context for answering ``request`` (its parsed body, ``request_size`` bytes) with ``reply``."""
        requested = request.get("model")
        model = reply.model or (requested if isinstance(requested, str) and requested else DEFAULT_MODEL)
        return cls(serial, created, model, default_usage(reply, request_size), request)

    def ids(self, prefix: str, index: int | None = None) -> str:
        """A deterministic id: ``<prefix>_scripted_<serial>`` plus ``_<index>`` when given."""
        base = f"{prefix}_scripted_{self.serial:06d}"
        return base if index is None else f"{base}_{index}"

    def call_id(self, call: ScriptedToolCall, index: int) -> str:
        """The call id of the ``index``-th tool call: its own, or ``call_scripted_<serial>_<index>``."""
        return call.id or self.ids("call", index)

"""Server-sent events: the ``SseEvent`` value (the decoder lands here too)."""

from __future__ import annotations

import attrs

__all__ = ["SseEvent"]


@attrs.frozen
class SseEvent:
    """One dispatched SSE event: its ``event`` name (``"message"`` when absent), joined ``data``, ``id``."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None

"""``Timeout``: the time limits of one model call, as a single value object (httpx style).

Only data and validation live here; the transport and the client enforce the limits (see
``agentflow.http.transport`` for how).
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Timeout", "check_seconds"]


def check_seconds(name: str, value: object) -> None:
    """Raise unless ``value`` is what every time limit accepts: seconds (an int or float > 0) or ``None``.

    ``TypeError`` for anything but a number (``True`` and ``"5"`` included), ``ValueError`` for 0, a
    negative number or NaN. ``name`` is how the caller spelled the limit (``"Timeout.read"``,
    ``"read_timeout"``).

    >>> check_seconds("read_timeout", 0)
    Traceback (most recent call last):
    ...
    ValueError: read_timeout must be seconds > 0 or None (no limit), not 0
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{name} must be seconds (an int or float > 0) or None (no limit), got {type(value).__name__} "
            f"{value!r}"
        )
    if not value > 0:  # NaN fails this too
        raise ValueError(f"{name} must be seconds > 0 or None (no limit), not {value!r}")


def _check(_instance: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    check_seconds(f"Timeout.{attribute.name}", value)


@attrs.frozen
class Timeout:
    """Time limits in seconds; ``None`` means no limit.

    - ``connect``: establishing the TCP/TLS connection (default 10 s); waiting for a free pooled
      connection is not part of it (only ``total`` bounds that);
    - ``read``: the time the model may take before its answer begins. For a call that is not streamed, the
      wait for its response headers (a server sends them only once all of the answer is generated), and
      for its whole body from then on (keep-alive bytes a gateway sends meanwhile do not extend it); for a
      stream, the wait for its response headers, and then for its first event (text, reasoning, a tool
      call; not a usage report) from the headers on; keep-alive comments do not extend it, real progress
      does (a Responses hosted tool's item: ``read`` runs again from it). Default 600 s, as in the openai
      SDK: a reasoning model may think for minutes before it writes anything;
    - ``idle``: once a stream's answer has begun, the longest gap between two chunks (default 60 s), so a
      stalled stream fails in a minute instead of ten. ``read`` bounds these gaps too: the shorter wins;
    - ``total``: the whole call, retries and back-off included (default none).

    Exceeding any of them raises ``ModelTimeoutError``, whose ``limit`` names the one. A ``read`` timeout is
    not retried by default: the server got the request and may still be working on it (see
    ``RetryPolicy.retry_read_timeouts``).

    >>> Timeout(read=5)
    Timeout(connect=10.0, read=5, total=None, idle=60.0)
    >>> Timeout(read=5).stream_gap, Timeout().stream_gap, Timeout(read=None, idle=None).stream_gap
    (5, 60.0, None)
    """

    connect: float | None = attrs.field(default=10.0, validator=_check)
    read: float | None = attrs.field(default=600.0, validator=_check)
    total: float | None = attrs.field(default=None, validator=_check)
    # Last, so that the positional order of the first three stays what it always was.
    idle: float | None = attrs.field(default=60.0, validator=_check)

    @property
    def stream_gap(self) -> float | None:
        """The limit on a gap between chunks once a stream's answer began: the shorter of ``idle`` and
        ``read`` (``None``: no limit)."""
        idle, read = self.idle, self.read
        if idle is None or read is None:
            return read if idle is None else idle
        return min(idle, read)

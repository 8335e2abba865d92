"""``Timeout``: the time limits of one model call, as a single value object (httpx style).

Only data and validation live here; the client turns the limits into anyio cancel scopes.
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

    - ``connect``: establishing the TCP/TLS connection (default 10 s, seed 003's connect timeout); waiting
      for a free pooled connection is not part of it (only ``total`` bounds that);
    - ``read``: the longest wait for the next piece of data — the response headers once the request is
      sent, then every body chunk (default 60 s, seed 003's read timeout). A stream may last any time while
      it flows;
    - ``total``: the whole call, retries and back-off included (default none).

    Exceeding any of them raises ``ModelTimeoutError`` (retryable).

    >>> Timeout(read=5)
    Timeout(connect=10.0, read=5, total=None)
    """

    connect: float | None = attrs.field(default=10.0, validator=_check)
    read: float | None = attrs.field(default=60.0, validator=_check)
    total: float | None = attrs.field(default=None, validator=_check)

"""``Timeout``: the time limits of one model call, as a single value object (httpx style).

Only data and validation live here; the client turns the limits into anyio cancel scopes.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Timeout"]


def _check(_instance: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"Timeout.{attribute.name} must be seconds > 0 or None (no limit), not {value!r}")


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

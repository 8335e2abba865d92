"""``RetryPolicy``: which failures are retried, and how long to wait before the next attempt.

Pure policy: it decides and computes delays; the client does the waiting (with an injectable sleep) and
announces each retry as a ``ModelRetry`` event. Nothing here sleeps or does I/O.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..model.errors import ModelConnectionError, ModelError, ModelTimeoutError, header

__all__ = ["NEVER_RETRIED_STATUSES", "RetryPolicy", "retry_after_seconds"]

NEVER_RETRIED_STATUSES = frozenset({400, 401, 403, 404})
"""Statuses that no policy retries (unless the server says ``x-should-retry: true``): the same request would
fail the same way."""


def _seconds(value: str, scale: float = 1.0) -> float | None:
    """A header's number of seconds, or ``None`` unless it is a finite number >= 0 (``nan``, ``inf`` and
    ``-5`` parse as floats, but ask for no wait a server could mean)."""
    try:
        seconds = float(value) * scale
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a server asked for: ``retry-after-ms`` (milliseconds, OpenAI), else ``Retry-After``
    (seconds, or an HTTP date; a date in the past means now). ``None`` when absent or unreadable, which
    includes negative and non-finite numbers.

    >>> retry_after_seconds({"retry-after-ms": "250"})
    0.25
    >>> retry_after_seconds({"Retry-After": "3"})
    3.0
    >>> retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
    10.0
    """
    ms = header(headers, "retry-after-ms")
    if ms is not None:
        seconds = _seconds(ms, 0.001)
        if seconds is not None:
            return seconds
    value = header(headers, "retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _non_negative(_instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if value < 0:
        raise ValueError(f"RetryPolicy.{attribute.name} must not be negative, not {value!r}")


@attrs.frozen
class RetryPolicy:
    """Retries with capped exponential back-off and jitter, honouring the server's ``Retry-After``.

    Retried: connection failures and timeouts, HTTP 408, 409, 429 and 5xx, and any other ``ModelError``
    marked ``retryable`` — except 400, 401, 403 and 404, which are never retried, and errors the server
    marked final (``insufficient_quota``). An ``x-should-retry`` header (OpenAI's) decides first, as in the
    openai SDK: ``true`` retries whatever the status, ``false`` never. The delay before retry
    *n* (1-based) is ``min(max_delay, initial_delay * multiplier ** (n - 1))`` reduced by up to ``jitter``
    (a fraction; ``rng`` draws it), unless the server sent ``retry-after-ms`` / ``Retry-After`` of at
    most ``max_retry_after`` seconds, which is then used as is; a keep-alive race
    (``ModelConnectionError.keepalive_race``: the server closed an idle pooled connection as the request
    went out, before reading it) is retried at once. A longer wait asked for is not honoured:
    the back-off applies instead (as in the openai SDK), so a server asking for minutes gets an early
    retry, and once the retries are spent the error; use ``RetryPolicy.none()`` or a larger
    ``max_retry_after`` to act otherwise. Negative and non-finite values (``nan``, ``inf``) count as absent.

    ``max_retries=2`` (the default) means at most 3 attempts. ``RetryPolicy.none()`` never retries.

    A read timeout (``ModelTimeoutError`` with ``limit="read"``: the request was sent, and no answer came
    within ``Timeout.read``) is not retried unless ``retry_read_timeouts=True``: the server got the request
    and may still be generating the answer, and billing it, and the likeliest cause is an answer that takes
    longer than the limit, which a retry repeats at the same cost. (The openai SDK retries it.) Connect
    timeouts are retried: nothing was sent.

    >>> policy = RetryPolicy(jitter=0)
    >>> [policy.delay(n) for n in (1, 2, 3, 6)]
    [0.5, 1.0, 2.0, 8.0]
    """

    max_retries: int = attrs.field(default=2, validator=_non_negative)
    initial_delay: float = attrs.field(default=0.5, validator=_non_negative)
    max_delay: float = attrs.field(default=8.0, validator=_non_negative)
    multiplier: float = attrs.field(default=2.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.25, validator=[_non_negative, attrs.validators.le(1.0)])
    max_retry_after: float = attrs.field(default=60.0, validator=_non_negative)
    retry_read_timeouts: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    rng: Callable[[], float] = attrs.field(default=random.random, repr=False, eq=False)

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(max_retries=0)

    @property
    def max_attempts(self) -> int:
        """Attempts in all, the first one included."""
        return self.max_retries + 1

    def is_retryable(self, error: BaseException) -> bool:
        """Whether this failure is worth another attempt (ignoring how many were made)."""
        if not isinstance(error, ModelError):
            return False
        if isinstance(error, ModelTimeoutError) and error.limit == "read":
            return self.retry_read_timeouts
        should = header(error.headers, "x-should-retry") if error.headers else None
        if should is not None:
            # The server's word first, as the openai SDK takes it (before any status), but whatever the
            # case: some gateways send "False".
            should = should.strip().lower()
            if should == "false":
                return False
            if should == "true":
                return True
        if error.status in NEVER_RETRIED_STATUSES:
            return False
        return error.retryable

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to retry after attempt number ``attempt`` (1-based) failed with ``error``."""
        return attempt <= self.max_retries and self.is_retryable(error)

    def delay(self, retry: int, error: BaseException | None = None, *, now: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first retry)."""
        if isinstance(error, ModelConnectionError) and error.keepalive_race:
            return 0.0  # the server did not fail: it closed an idle connection, most likely unread
        if isinstance(error, ModelError) and error.headers:
            asked = retry_after_seconds(error.headers, now=now)
            if asked is not None and asked <= self.max_retry_after:
                return asked
        base = min(self.max_delay, self.initial_delay * self.multiplier ** max(0, retry - 1))
        return base * (1.0 - self.jitter * self.rng())

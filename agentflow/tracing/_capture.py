"""Whether spans capture content: the ``capture_content`` argument, or else the standard
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` environment variable, as OpenTelemetry's GenAI
instrumentations read it. Off unless one of them says otherwise: content may hold personal data."""

from __future__ import annotations

import logging
import os

__all__ = ["CAPTURE_ENV", "capture_content"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# ``true`` (the instrumentations' first form) and the modes that put content on spans; the ``EVENT_ONLY``
# mode records content as log events, which this package does not emit: no content on spans then.
_ON = frozenset({"true", "span_only", "span_and_event"})
_OFF = frozenset({"", "false", "no_content", "event_only"})

_log = logging.getLogger("agentflow.tracing")


def capture_content(value: bool | None) -> bool:
    """``value`` if given, else what ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (any case):
    ``true``, ``SPAN_ONLY`` or ``SPAN_AND_EVENT`` capture; unset, ``false``, ``NO_CONTENT`` and ``EVENT_ONLY``
    do not; any other value does not either, with a warning on the ``agentflow.tracing`` logger.

    >>> capture_content(True), capture_content(False)
    (True, False)
    """
    if value is not None:
        if not isinstance(value, bool):
            raise TypeError(f"capture_content must be True, False or None (the environment's), got {value!r}")
        return value
    setting = os.environ.get(CAPTURE_ENV, "").strip().lower()
    if setting in _ON:
        return True
    if setting not in _OFF:
        _log.warning(
            "%s=%r is not a value agentflow.tracing knows (true, false, SPAN_ONLY, SPAN_AND_EVENT, "
            "EVENT_ONLY, NO_CONTENT): content is not captured",
            CAPTURE_ENV,
            os.environ.get(CAPTURE_ENV),
        )
    return False

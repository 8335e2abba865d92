"""What the HTTP client needs of a protocol's stream decoder, and what it makes of a failed stream.

``StreamDecoder`` is the contract between the shared ``OpenAIHttpClient`` and each protocol's pure decoder
(``ChatStreamDecoder``, ``ResponsesStreamDecoder``). The helpers turn what a failed stream left behind into
an error's ``partial``, and a JSON body answered in place of an event stream into the server's error. No I/O.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from ...http.sse import SseEvent
from ...http.transport import HttpResponse
from ...model.errors import (
    ModelError,
    ProtocolError,
    body_excerpt,
    error_from_payload,
    is_error_payload,
    redact_url,
)
from ...model.events import ModelCompleted, ModelEvent

__all__ = ["StreamDecoder", "not_a_stream", "partial_of"]


class StreamDecoder(Protocol):
    """Turns one protocol's SSE events into model events. Pure; one instance per stream attempt.

    ``feed`` may raise a ``ModelError`` for an in-band error. ``done`` turns true once the terminal marker
    was seen (``[DONE]``, ``response.completed``…); the client then stops reading. ``finish`` is called
    once at the end of the body (or after ``done``): it returns the last events, ``ModelCompleted``
    included, or raises ``StreamCutOffError`` (with ``.partial``) when the stream was cut off. When the
    body fails instead (connection lost, read timeout), ``finish`` is called the same way, and what it
    would have returned or carried becomes the failure's ``partial``.
    """

    def feed(self, event: SseEvent) -> list[ModelEvent]:
        """Model events for one SSE event (often none)."""
        ...

    @property
    def done(self) -> bool:
        """Whether the terminal marker was seen."""
        ...

    def finish(self) -> list[ModelEvent]:
        """The last events, ending with ``ModelCompleted``; raises if the stream was cut off."""
        ...


def partial_of(decoder: StreamDecoder) -> Any:
    """What ``decoder`` had aggregated when its stream failed: the ``partial`` a cut-off would carry, or the
    response itself when what arrived was already enough to complete it (a finish reason but no ``[DONE]``).
    """
    try:
        last = decoder.finish()
    except ModelError as cut_off:
        return cut_off.partial
    completed = [event.response for event in last if isinstance(event, ModelCompleted)]
    return completed[-1] if completed else None


def not_a_stream(raw: bytes, response: HttpResponse, url: str, got: str) -> ModelError:
    """The error for a stream request answered with JSON (``got`` says how it was labelled): the server's
    own error when the JSON is an error report in any shape ``error_from_payload`` reads, else
    ``ProtocolError`` showing the start of the body."""
    text = raw.decode("utf-8", "replace")
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        payload = None
    if is_error_payload(payload):
        return error_from_payload(payload, body=text, headers=response.headers, url=url)
    return ProtocolError(
        f"expected an event stream from {redact_url(url)} but got {got}: {body_excerpt(text)!r}",
        status=response.status,
        body=text,
    )

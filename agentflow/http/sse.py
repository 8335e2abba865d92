"""Server-sent events: the ``SseEvent`` value and ``SseDecoder``, an incremental bytes → events parser.

The decoder is pure (no I/O, no awaits): feed it body chunks of any size as they arrive, get back the
events they complete. It follows the WHATWG event-stream rules: lines end with LF, CR or CRLF (also when
the CR and the LF arrive in different chunks); a UTF-8 character may be split across chunks; several
``data:`` lines join with ``"\\n"``; ``event:``, ``id:`` and ``retry:`` are read; ``:`` comment lines and
unknown fields are ignored; a blank line dispatches. Unlike a browser it also dispatches, on ``close()``,
an event the server did not terminate with a blank line (some OpenAI-compatible servers end that way).

It does not know about ``[DONE]`` or JSON: that is the protocol decoder's job, one layer up.
"""

from __future__ import annotations

import attrs

from ..model.errors import ProtocolError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SseDecoder", "SseEvent"]

DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024


@attrs.frozen
class SseEvent:
    """One dispatched SSE event: its ``event`` name (``"message"`` when absent), joined ``data``, ``id``."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseDecoder:
    """Incremental SSE parser: ``feed(chunk)`` returns the events that chunk completed.

    >>> decoder = SseDecoder()
    >>> decoder.feed(b'event: ping\\ndata: {"a":\\r')
    []
    >>> decoder.feed(b'\\ndata: 1}\\r\\n\\ndata: [DO')
    [SseEvent(data='{"a":\\n1}', event='ping', id=None, retry=None)]
    >>> decoder.close()
    [SseEvent(data='[DO', event='message', id=None, retry=None)]

    An event (or an unterminated line) larger than ``max_event_bytes`` raises ``ProtocolError``, so a
    misbehaving server cannot exhaust memory. After an error the decoder must not be used again.
    """

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_size",
        "_event",
        "_last_id",
        "_max",
        "_pending",
        "_pending_size",
        "_retry",
        "_started",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes <= 0:
            raise ValueError("max_event_bytes must be positive")
        self._max = max_event_bytes
        # Bytes of the current, not yet terminated line (kept as bytes: a UTF-8 character may be split).
        self._pending: list[bytes] = []
        self._pending_size = 0
        # The previous chunk ended with CR: a LF at the start of the next one belongs to that CRLF.
        self._after_cr = False
        self._started = False
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse the next body chunk; return the events it completed (often none, often several)."""
        if not chunk:
            return []
        if self._after_cr:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\r" in chunk:
            # A trailing CR ends its line now; remember it so a LF opening the next chunk is not a 2nd line.
            self._after_cr = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = chunk.rfind(b"\n")
        if end < 0:
            self._pending_size += len(chunk)
            if self._pending_size > self._max:
                raise self._too_large()
            self._pending.append(chunk)
            return []
        head = chunk[:end]
        if self._pending:
            self._pending.append(head)
            head = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
        if end + 1 < len(chunk):
            tail = chunk[end + 1 :]
            self._pending.append(tail)
            self._pending_size = len(tail)
            if self._pending_size > self._max:
                raise self._too_large()
        # Every byte up to the last LF belongs to complete lines, so it is complete UTF-8: decode once.
        text = head.decode("utf-8", "replace")
        if not self._started:
            self._started = True
            if text[:1] == "\ufeff":
                text = text[1:]
        return self._lines(text.split("\n"))

    def close(self) -> list[SseEvent]:
        """The body ended: parse an unterminated last line and dispatch a pending event, if any."""
        lines: list[str] = []
        if self._pending:
            text = b"".join(self._pending).decode("utf-8", "replace")
            self._pending.clear()
            self._pending_size = 0
            if not self._started:
                self._started = True
                if text[:1] == "\ufeff":
                    text = text[1:]
            lines.append(text)
        lines.append("")
        return self._lines(lines)

    def _lines(self, lines: list[str]) -> list[SseEvent]:
        events: list[SseEvent] = []
        data = self._data
        size = self._data_size
        limit = self._max
        for line in lines:
            if not line:
                if data:
                    # Dispatch (inlined: this runs once per event on the hot path).
                    events.append(
                        SseEvent(
                            data[0] if len(data) == 1 else "\n".join(data),
                            self._event or "message",
                            self._last_id,
                            self._retry,
                        )
                        if self._event or self._retry is not None or self._last_id is not None
                        else SseEvent(data[0] if len(data) == 1 else "\n".join(data))
                    )
                    data.clear()
                    size = 0
                # A block without data lines dispatches nothing (the spec), but ends its fields.
                self._event = ""
                self._retry = None
                continue
            if line[:6] == "data: ":
                value = line[6:]
            elif line[0] == ":":
                continue
            else:
                name, colon, value = line.partition(":")
                if colon and value[:1] == " ":
                    value = value[1:]
                if name != "data":
                    self._field(name, value)
                    continue
            size += len(value) + 1
            if size > limit:
                raise self._too_large()
            data.append(value)
        self._data_size = size
        return events

    def _field(self, name: str, value: str) -> None:
        if name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        # Any other field name is ignored, as the spec says.

    def _too_large(self) -> ProtocolError:
        return ProtocolError(
            f"server-sent event larger than {self._max} bytes; the stream is malformed or hostile "
            "(raise max_event_bytes if such events are expected)"
        )

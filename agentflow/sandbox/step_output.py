"""What a code step printed, as the host captures it: each stream cut at a byte budget, and a listener that
hears each piece as it arrives.

The child cuts its output too, but it is not trusted, so the host keeps its own count. Bytes the code wrote
straight to the descriptors (C code, ``os.write``) arrive raw and are decoded when the step ends; past the
budget and ``RAW_SLACK`` more, the host stops reading them (code that floods its descriptors then waits on
the pipe until ``wall_time`` ends the step, instead of the host spending its CPU reading what nobody sees).
No I/O, no awaits: ``ProcessSandbox`` feeds it from its reading loop.
"""

from __future__ import annotations

import logging

from .executor import OutputListener
from .frames import OutputChunk
from .limits import ExecutionLimits

__all__ = ["RAW_SLACK", "StepOutput", "StreamOutput"]

_log = logging.getLogger("agentflow")

RAW_SLACK = 1024 * 1024
"""Raw bytes past a stream's budget the host still reads (and drops) before it stops reading them."""


class StreamOutput:
    """One captured stream of a step, cut at a byte budget (the child cuts too, but is not trusted)."""

    def __init__(self, budget: int) -> None:
        self._parts: list[str] = []
        self._budget = budget
        self._dropped = 0
        self._raw = bytearray()
        self._raw_dropped = 0

    def add(self, text: str) -> str:
        """Keep what fits of ``text``; returns what was kept."""
        size = len(text.encode("utf-8", "replace"))
        if size > self._budget:
            kept = text.encode("utf-8", "replace")[: self._budget].decode("utf-8", "ignore")
            self._dropped += size - len(kept.encode("utf-8"))
            text, size = kept, len(kept.encode("utf-8"))
        self._budget -= size
        if text:
            self._parts.append(text)
        return text

    def add_raw(self, chunk: bytes) -> bool:
        """Bytes written straight to the descriptors (C code, ``os.write``): decoded when the step ends.
        ``False`` once more than ``RAW_SLACK`` bytes past the budget were dropped: read no more."""
        room = max(0, self._budget - len(self._raw))
        self._raw += chunk[:room]
        over = max(0, len(chunk) - room)
        self._dropped += over
        self._raw_dropped += over
        return not self.raw_stopped

    @property
    def raw_stopped(self) -> bool:
        """Whether so much raw output went past the budget that the host stopped reading it."""
        return self._raw_dropped > RAW_SLACK

    def text(self, dropped_by_child: int | None = 0) -> str:
        """The stream as kept, raw bytes decoded, ending with a marker when anything was cut (here, or by
        the child: ``dropped_by_child`` bytes; ``None`` when the step ended before the child said, and
        then a stream that used up its budget is taken as cut)."""
        if self._raw:
            lines = self._raw.decode("utf-8", "replace").splitlines(keepends=True)
            self.add("".join(line for line in lines if not line.startswith("unshare: ")))
            self._raw.clear()
        body = "".join(self._parts)
        dropped = self._dropped + (dropped_by_child or 0)
        # Unread raw bytes, or what the child cut but never told: only a lower bound is known.
        unsure = self.raw_stopped or (dropped_by_child is None and self._budget <= 0)
        if dropped and unsure:
            body += f"\n[... output truncated: at least {dropped} more bytes not shown ...]"
        elif dropped:
            body += f"\n[... output truncated: {dropped} more bytes not shown ...]"
        elif unsure:
            body += "\n[... output truncated ...]"
        return body


class StepOutput:
    """A step's two streams, and who hears each piece as it comes (``on_output``)."""

    def __init__(self, limits: ExecutionLimits, listener: OutputListener | None = None) -> None:
        self.stdout = StreamOutput(limits.max_output_bytes)
        self.stderr = StreamOutput(limits.max_output_bytes)
        self._listener = listener

    def add(self, chunk: OutputChunk) -> None:
        """Capture one piece the child sent, and tell the listener what of it was kept."""
        kept = (self.stdout if chunk.stream == "stdout" else self.stderr).add(chunk.text)
        if kept and self._listener is not None:
            try:
                self._listener(chunk.stream, kept)
            except Exception:
                # Someone else's bug must not end the step: the output is still captured, only not live.
                _log.exception("a CodeAct on_output listener raised; it gets no more output of this step")
                self._listener = None

"""What a code step printed, as the host captures it: each stream cut at a byte budget, and a listener that
hears each piece as it arrives.

The child cuts its output too, but it is not trusted, so the host keeps its own count. Bytes the code wrote
straight to the descriptors (C code, ``os.write``) arrive raw and are decoded when the step ends. No I/O, no
awaits: ``ProcessSandbox`` feeds it from its reading loop.
"""

from __future__ import annotations

import logging

from .executor import OutputListener
from .frames import OutputChunk
from .limits import ExecutionLimits

__all__ = ["StepOutput", "StreamOutput"]

_log = logging.getLogger("agentflow")


class StreamOutput:
    """One captured stream of a step, cut at a byte budget (the child cuts too, but is not trusted)."""

    def __init__(self, budget: int) -> None:
        self._parts: list[str] = []
        self._budget = budget
        self._dropped = 0
        self._raw = bytearray()

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

    def add_raw(self, chunk: bytes) -> None:
        """Bytes written straight to the descriptors (C code, ``os.write``): decoded when the step ends."""
        room = max(0, self._budget - len(self._raw))
        self._raw += chunk[:room]
        self._dropped += max(0, len(chunk) - room)

    def text(self, dropped_by_child: int = 0) -> str:
        """The stream as kept, raw bytes decoded, ending with a marker when anything was cut (here, or by
        the child: ``dropped_by_child`` bytes)."""
        if self._raw:
            lines = self._raw.decode("utf-8", "replace").splitlines(keepends=True)
            self.add("".join(line for line in lines if not line.startswith("unshare: ")))
            self._raw.clear()
        dropped = self._dropped + dropped_by_child
        body = "".join(self._parts)
        if dropped:
            body += f"\n[... output truncated: {dropped} more bytes not shown ...]"
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

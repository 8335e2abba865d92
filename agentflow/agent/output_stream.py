"""A run's output while its answer streams: events in, the output so far out.

``OutputReader`` is the state machine (pure: no I/O, nothing async): fed a streamed run's events, it keeps
the text of the step that may be the final answer and reads it, on demand, into the run's output type
(``OutputType.read_partial``, pruning unfinished parts until it reads) or as JSON
(``OutputType.unwrap_partial``); for a run without an output type, the text itself. ``partial_values``
drives one over an event stream with a debounce: what ``AgentRun.stream_output`` and
``AgentRun.stream_json`` yield before the run's final output.

Which text counts: a step's, from its ``StepStarted`` on (a reader that joins mid-step waits for the next
one), until the step shows it is not an answer: a tool call starts in it (``ToolCallStarted``) or the model
refuses (``RefusalDelta``). The next step starts afresh. So text a model writes before calling a tool can
show for a moment, and an answer the output type then rejects is followed by the next answer's parts; the
run's final output, read and validated, is the one that counts. A runtime whose answer text is not the
output (CodeAct: its final answer is a protocol object) gives no partial values.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Hashable
from typing import Any, Final, Generic, cast

from ..events import RunCancelled, RunFailed, RunFinished, StepStarted
from ..model.events import Event, RefusalDelta, TextDelta, ToolCallStarted
from ..result import OutputT
from ..runtimes.base import AgentRuntime
from ..runtimes.output import OutputType
from ..runtimes.partial_json import NO_VALUE, Cut, PartialJson

__all__ = ["OutputReader", "partial_values", "streams_answer"]

_TERMINAL: Final = (RunFinished, RunFailed, RunCancelled)
_UNREAD: Final[Any] = object()
_UNFIT: Final[Any] = object()
_MEMO_SIZE: Final = 256
"""Cuts remembered per step: a few per list item or field of the answer (a cut of the whole answer so far,
new at each piece, is not remembered)."""


def streams_answer(runtime: AgentRuntime) -> bool:
    """Whether the text a runtime's model streams in its last step is the run's answer (not for CodeAct,
    whose model answers with a protocol object that holds the answer)."""
    codeact = sys.modules.get("agentflow.runtimes.codeact")  # not imported: no runtime can be CodeAct's
    return codeact is None or not isinstance(runtime, codeact.CodeActRuntime)


class OutputReader(Generic[OutputT]):
    """The output of a streamed run so far, read from its events (``run.output_reader()`` builds one).

    For iterating a run's events and seeing its output take shape at the same time::

        reader = run.output_reader()
        async for event in run:
            if reader.feed(event) and (city := reader.partial()) is not None:
                show(city)
        city = run.result.output  # the final output, validated

    ``feed(event)`` says whether the answer's text grew (taking in a piece costs its length; a read decodes
    and checks the answer so far, which grows with it: read when you need the value, not for every piece of
    a long answer). ``partial()`` is the
    answer so far read into the output type (``None``: nothing reads yet), ``partial_json()`` the answer so
    far as JSON (dicts and lists), for a type that cannot be built from part of an answer. See
    ``AgentRun.stream_output`` for what a partial value is.
    """

    __slots__ = (
        "_chars",
        "_json",
        "_live",
        "_memo",
        "_spec",
        "_step",
        "_streams",
        "_texts",
        "_unfit",
        "ended",
    )

    def __init__(self, output_type: OutputType[OutputT] | None, *, partials: bool = True) -> None:
        self._spec = output_type
        self._streams = partials
        self._live = False  # the step being read may be the answer
        self._step = -1
        self._json: PartialJson | None = None
        self._texts: list[str] = []
        self._chars = 0  # the length of the step's text, for ``version``
        self._memo: dict[Cut, Any] = {}  # what each cut of this step's answer read to (or _UNFIT)
        self._unfit: Hashable = None  # the structure of the last whole answer so far that did not read
        self.ended = False
        """Whether the run's terminal event was fed."""

    def __repr__(self) -> str:
        return f"OutputReader(step={self._step}, live={self._live}, ended={self.ended})"

    def feed(self, event: Event) -> bool:
        """Take in one of the run's events (in order); whether the answer's text grew."""
        if isinstance(event, TextDelta):
            if not self._live or event.step != self._step:
                return False
            if self._json is not None:
                self._json.feed(event.text)
            else:
                self._texts.append(event.text)
                self._chars += len(event.text)
            return True
        if isinstance(event, StepStarted):
            self._step = event.step
            self._live = self._streams
            self._texts = []
            self._chars = 0
            self._memo = {}
            self._unfit = None
            if self._spec is not None and self._streams:
                # A wrapped type's bare value may be an array; an object type's answer is an object.
                self._json = PartialJson(opening="{[" if self._spec.wrapped else "{")
        elif isinstance(event, ToolCallStarted | RefusalDelta):
            if event.step == self._step:
                self._live = False  # this step's text is not the answer
                self._texts = []
                self._json = None
        elif isinstance(event, _TERMINAL):
            self.ended = True
            self._live = False
        return False

    @property
    def version(self) -> Hashable:
        """Unchanged while what ``partial()`` and ``partial_json()`` read is: compare it to skip reading."""
        if not self._live:
            return (self._step, None)
        if self._json is not None:
            return (self._step, self._json.version)
        return (self._step, self._chars)

    def partial(self) -> OutputT | None:
        """The answer so far read into the output type (the text so far for a run without one); ``None``
        when nothing reads yet (an output type that allows ``None`` cannot tell it apart)."""
        value = self.read()
        return None if value is NO_VALUE else cast(OutputT, value)

    def partial_json(self) -> Any:
        """The answer so far as JSON (a wrapped type's value unwrapped); ``None`` when there is none yet.
        ``TypeError`` for a run without an output type (its answer is text: ``partial()``)."""
        value = self.read(json=True)
        return None if value is NO_VALUE else value

    def read(self, *, json: bool = False) -> Any:
        """``partial()`` (``partial_json()`` with ``json``), with ``NO_VALUE`` for nothing."""
        spec = self._spec
        if spec is None:
            if json:
                raise TypeError("the run has no output type: its answer is text (partial() reads it)")
            texts = self._texts
            if not self._live or not texts:
                return NO_VALUE
            if len(texts) > 1:
                texts[:] = ["".join(texts)]  # joined once per read, not once per piece
            return texts[0]
        reader = self._json
        if not self._live or reader is None:
            return NO_VALUE
        if json:
            value = reader.value()
            if value is NO_VALUE:
                return NO_VALUE
            try:
                return spec.unwrap_partial(value)
            except LookupError:
                return NO_VALUE
        return self._read_typed(spec, reader)

    def _read_typed(self, spec: OutputType[OutputT], reader: PartialJson) -> Any:
        # The whole answer so far first, then with unfinished parts left out, innermost first: a half-written
        # field or list item that does not read yet must not hide what does. A cut reads the same every
        # time, so what each one read to is remembered: while the last list item is written, its list and
        # everything before it are read once, not once per piece.
        memo = self._memo
        structure = reader.structure
        for index, cut in enumerate(reader.cuts()):
            known = memo.get(cut, _UNREAD)
            if known is _UNREAD:
                if index == 0 and structure == self._unfit:
                    continue  # only a string's text grew since the whole did not read: it still does not
                value = reader.value(cut)
                known = _UNFIT
                if value is not NO_VALUE:
                    # A part that does not read yet fails quietly: the final answer's errors are the run's.
                    with contextlib.suppress(Exception):
                        known = spec.read_partial(value)
                if index == 0:
                    self._unfit = structure if known is _UNFIT else None
                elif len(memo) < _MEMO_SIZE:
                    memo[cut] = known
            if known is not _UNFIT:
                return known
        return NO_VALUE


async def partial_values(
    events: AsyncIterator[Event], reader: OutputReader[Any], *, debounce: float | None, json: bool = False
) -> AsyncGenerator[Any, None]:
    """The partial values of a run's answer, read by ``reader`` from ``events`` (until they end): each one
    that differs from the one before, at most one per ``debounce`` seconds (``None``: every one).

    No task and no timer: a value held back by the debounce comes with the next event after the interval
    (the answer's next piece, or the step's end), and none comes with the run's terminal event (its final
    output follows). Only the consumer's ``await`` waits, so a cancel there leaves nothing behind. A value
    that cannot be read or compared (``RecursionError``, say) is skipped, never raised: the run's final
    output, or its error, is what counts.
    """
    last_yield = float("-inf")
    last_version: Hashable = None
    last_value: Any = NO_VALUE
    pending = False
    while True:
        # ``__anext__`` itself: ``async for`` over a subscription closes it when the loop is left, and the
        # run's subscription must stay open for whoever reads on.
        try:
            event = await events.__anext__()
        except StopAsyncIteration:
            return
        if reader.feed(event):
            pending = True
        if not pending or reader.ended:
            continue
        if debounce:
            now = time.monotonic()
            if now - last_yield < debounce:
                continue
        pending = False
        version = reader.version
        if version == last_version:
            continue
        last_version = version
        try:
            value = reader.read(json=json)
            if value is NO_VALUE or value is last_value:
                continue
            if last_value is not NO_VALUE and value == last_value:
                continue
        except Exception:
            # A value that cannot be read or compared (a whole answer nested too deeply for Python's
            # recursion, say) is passed over: the final output, read and validated, is the one that counts.
            continue
        last_value = value
        if debounce:
            last_yield = time.monotonic()
        yield value

"""Pure stream decoder of the OpenAI Responses protocol: SSE events in, typed model events out.

``ResponsesStreamDecoder`` is a sans-I/O state machine (the ``StreamDecoder`` the OpenAI client drives):
``feed(sse_event)`` returns the model events that event produces, ``finish()`` is called at the end of the
body. It never awaits and never touches HTTP; the transport, retries and timeouts belong to the client.

Mapping (events are correlated by ``output_index``, falling back to ``item_id``; ``sequence_number`` is not
relied on, so missing or out-of-order numbers are harmless):

- ``response.output_text.delta`` → ``TextDelta`` (a ``"\\n\\n"`` delta separates the texts of two messages,
  as in ``ResponsesResponse.output_text``); ``response.refusal.delta`` → ``RefusalDelta``;
- ``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta`` → ``ReasoningDelta`` (a
  ``"\\n\\n"`` delta separates consecutive reasoning parts, as in ``ResponsesResponse.reasoning``);
- ``response.output_item.added`` of a ``function_call`` → ``ToolCallStarted``;
  ``response.function_call_arguments.delta`` → ``ToolCallArgumentsDelta``;
  ``response.function_call_arguments.done`` or ``response.output_item.done`` → ``ToolCallReady`` (once per
  call). Their ``index`` is the call's position among the response's tool calls (0, 1, …, in the order
  the stream first shows each call), as on Chat Completions, not its ``output_index``, which counts reasoning
  and message items too. Calls are keyed by ``output_index``: an item added without its ``call_id`` (only
  an item ``id``, or neither) is announced once the ``call_id`` is known (its ``output_item.done``; the item
  ``id`` stands in if that has none either), its argument deltas held until then and sent as one
  ``ToolCallArgumentsDelta`` after ``ToolCallStarted``, so every event names the call by its real id;
- a ``custom_tool_call`` item (GPT-5 custom tools) and its ``response.custom_tool_call_input.delta`` /
  ``.done`` events → the same events, the call's ``input`` as its arguments (``ToolCall.kind == "custom"``);
- ``response.completed`` → ``UsageReported`` then ``ModelCompleted``; ``response.incomplete`` → the same
  when incomplete results are returned, else ``IncompleteResponseError``; ``response.failed`` and ``error``
  events (nested ``{"error": {…}}`` or flat) → the typed ``ModelError``;
- a body that ends before a terminal event → ``StreamCutOffError`` whose ``partial`` is built from the
  ``output_item.done`` items and the deltas seen.

The per-delta path decodes each payload once and only appends to a buffer: no copies, no ``attrs.evolve``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import orjson

from ...http.sse import SseEvent
from ...model.errors import ModelError, ProtocolError, StreamCutOffError
from ...model.events import (
    ModelCompleted,
    ModelEvent,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from .responses_codec import (
    CALL_ITEMS,
    MESSAGE_BREAK,
    PENDING_STATUSES,
    UNFINISHED_STATUSES,
    IncompletePolicy,
    build_response,
    check_response,
    error_from_event,
    tool_call_from_item,
)
from .responses_types import ResponsesResponse

__all__ = ["ResponsesStreamDecoder"]

R = TypeVar("R")

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_REASONING_BREAK = "\n\n"


def _identity(response: ResponsesResponse) -> ResponsesResponse:
    return response


def _arguments_key(item: Mapping[str, Any]) -> str:
    """The field a call item holds its arguments in: a custom call's ``input``, else ``arguments``."""
    return "input" if item.get("type") == "custom_tool_call" else "arguments"


def _joined(content: list[Any], part_type: str, key: str) -> str:
    """The ``key`` strings of a message's ``part_type`` content parts, concatenated."""
    texts = (p.get(key) for p in content if isinstance(p, Mapping) and p.get("type") == part_type)
    return "".join(text for text in texts if isinstance(text, str))


class ResponsesStreamDecoder(Generic[R]):
    """Turns the SSE events of one ``/responses`` stream into model events.

    ``finalize`` maps the aggregated ``ResponsesResponse`` onto the stream's result type (``to_chat_response``
    for the ``ChatModel`` view); it is applied to ``ModelCompleted`` and to every error's ``partial``.

    >>> decoder = ResponsesStreamDecoder.for_responses()
    >>> decoder.feed(SseEvent('{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}'))
    [TextDelta(run_id='', step=0, seq=0, text='Hi')]
    """

    __slots__ = (
        "_announced_at",
        "_break_owed",
        "_call_args",
        "_call_index",
        "_dispatch",
        "_done",
        "_envelope",
        "_failed",
        "_finalize",
        "_finished",
        "_held",
        "_index_by_item",
        "_items",
        "_on_incomplete",
        "_pending_args",
        "_ready",
        "_ready_at",
        "_reasoning",
        "_reasoning_break",
        "_reasoning_buf",
        "_reasoning_idx",
        "_reasoning_kind",
        "_refusal",
        "_seen_any",
        "_started",
        "_text",
        "_text_buf",
        "_text_idx",
    )

    def __init__(
        self, finalize: Callable[[ResponsesResponse], R], *, on_incomplete: IncompletePolicy = "raise"
    ) -> None:
        self._finalize = finalize
        self._on_incomplete: IncompletePolicy = on_incomplete
        self._done = False
        self._seen_any = False
        self._envelope: dict[str, Any] = {}
        # Set when ``feed`` raised an in-band error: the ``response.failed`` envelope, or ``{}`` for an
        # ``error`` event. ``finish`` then builds the partial answer from it.
        self._failed: dict[str, Any] | None = None
        self._items: dict[int, dict[str, Any]] = {}
        self._finished: set[int] = set()
        self._index_by_item: dict[str, int] = {}
        self._text: dict[int, list[str]] = {}
        self._text_idx: int | None = None
        self._text_buf: list[str] = []
        self._break_owed: int | None = None  # a message whose first text still owes the break before it
        self._refusal: dict[int, list[str]] = {}
        self._reasoning: dict[int, list[str]] = {}
        self._reasoning_kind: dict[int, str] = {}
        self._reasoning_idx: int | None = None
        self._reasoning_buf: list[str] = []
        self._reasoning_break = False
        self._call_args: dict[int, list[str]] = {}
        self._call_index: dict[int, int] = {}  # output_index → the call's position (the events' ``index``)
        self._pending_args: dict[int, str] = {}
        # Calls announced (``ToolCallStarted``) and ready (``ToolCallReady``), by output index and by call id
        # (a server's final output may number its items otherwise than its events did).
        self._announced_at: set[int] = set()
        self._started: set[str] = set()
        self._ready_at: set[int] = set()
        self._ready: set[str] = set()
        self._held: set[int] = set()  # calls added without a call_id: their deltas wait for it
        self._dispatch: dict[str, Callable[[dict[str, Any]], list[ModelEvent]]] = {
            "response.created": self._on_envelope,
            "response.in_progress": self._on_envelope,
            "response.queued": self._on_envelope,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.custom_tool_call_input.done": self._on_input_done,
            "response.refusal.delta": self._on_refusal_delta,
            "response.reasoning_summary_part.added": self._on_reasoning_part,
            "response.content_part.added": self._on_content_part,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_terminal,
            "error": self._on_error,
        }

    @classmethod
    def for_responses(
        cls, *, on_incomplete: IncompletePolicy = "raise"
    ) -> ResponsesStreamDecoder[ResponsesResponse]:
        """A decoder whose ``ModelCompleted`` carries the ``ResponsesResponse`` itself."""
        return ResponsesStreamDecoder(_identity, on_incomplete=on_incomplete)

    @property
    def done(self) -> bool:
        """Whether a terminal event (``response.completed``/``.incomplete``/``.failed``/``error``) came."""
        return self._done

    # --- the hot path -------------------------------------------------------------------------------------

    def feed(self, event: SseEvent) -> list[ModelEvent]:
        """The model events produced by one SSE event; raises ``ModelError`` for in-band errors."""
        data = event.data
        if self._done or not data:
            return []
        try:
            payload = _loads(data)
        except _JSONDecodeError:
            return self._undecodable(event)
        if type(payload) is not dict:
            raise ProtocolError(f"stream event is not a JSON object: {data[:200]!r}")
        self._seen_any = True
        kind = payload.get("type") or event.event
        if kind == "response.output_text.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                raise ProtocolError(f"output_text delta is not a string: {delta!r}")
            idx = payload.get("output_index")
            if idx is None:
                idx = self._index_of(payload)
            if idx != self._text_idx:
                return self._on_text_switch(idx, delta)
            self._text_buf.append(delta)
            return [TextDelta(delta)]
        if kind == "response.reasoning_summary_text.delta" or kind == "response.reasoning_text.delta":
            return self._on_reasoning_delta(payload, kind)
        if (
            kind == "response.function_call_arguments.delta"
            or kind == "response.custom_tool_call_input.delta"
        ):
            delta = payload.get("delta")
            if type(delta) is not str:
                raise ProtocolError(f"{kind} is not a string: {delta!r}")
            idx = payload.get("output_index")
            if idx is None:
                idx = self._index_of(payload)
            args = self._call_args.get(idx)
            if args is None:
                args = self._call_args[idx] = []
            args.append(delta)
            if self._held and idx in self._held:
                return []  # its call_id is not known yet: sent once the call is announced
            position = self._call_index.get(idx)
            if position is None:
                position = self._call_position(idx)
            return [ToolCallArgumentsDelta(position, delta)]
        handler = self._dispatch.get(kind)
        if handler is not None:
            return handler(payload)
        if "type" not in payload and isinstance(payload.get("error"), Mapping):
            return self._on_error(payload)  # a Chat-style ``data: {"error": {…}}`` from a compatible server
        # Other events (content_part.done, output_text.done, annotations, hosted-tool progress…) carry nothing
        # that the output items do not hold at output_item.done.
        return []

    def _on_text_switch(self, idx: int, delta: str) -> list[ModelEvent]:
        """A text delta of another message than the last delta's (once per message, not per delta).

        The first text of a message that follows another message's text comes after a ``"\\n\\n"``
        ``TextDelta``, so the deltas add up to ``output_text``, which joins messages so. The buffers hold each
        message's own text. An empty first delta leaves the break owed: the next delta comes back here.
        """
        buf = self._text.get(idx)
        if buf is None:
            owed = self._has_text()
            buf = self._text[idx] = []
        else:
            owed = idx == self._break_owed
        self._text_idx = idx
        self._text_buf = buf
        buf.append(delta)
        if not owed:
            return [TextDelta(delta)]
        if not delta:
            self._break_owed = idx
            self._text_idx = None
            return [TextDelta(delta)]
        self._break_owed = None
        return [TextDelta(MESSAGE_BREAK), TextDelta(delta)]

    def _has_text(self) -> bool:
        """Whether some message has text already."""
        return any(any(buf) for buf in self._text.values())

    def _on_reasoning_delta(self, payload: dict[str, Any], kind: str) -> list[ModelEvent]:
        delta = payload.get("delta")
        if type(delta) is not str:
            raise ProtocolError(f"reasoning delta is not a string: {delta!r}")
        idx = payload.get("output_index")
        if idx is None:
            idx = self._index_of(payload)
        if idx != self._reasoning_idx:
            if self._reasoning_idx is not None:
                self._reasoning_break = True
            self._reasoning_idx = idx
            buf = self._reasoning.get(idx)
            if buf is None:
                buf = self._reasoning[idx] = []
                self._reasoning_kind[idx] = (
                    "summary" if kind == "response.reasoning_summary_text.delta" else "text"
                )
            self._reasoning_buf = buf
        if self._reasoning_break:
            self._reasoning_break = False
            self._reasoning_buf.append(_REASONING_BREAK)
            self._reasoning_buf.append(delta)
            return [ReasoningDelta(_REASONING_BREAK), ReasoningDelta(delta)]
        self._reasoning_buf.append(delta)
        return [ReasoningDelta(delta)]

    # --- structure events ---------------------------------------------------------------------------------

    def _undecodable(self, event: SseEvent) -> list[ModelEvent]:
        if event.data.strip() == "[DONE]":
            return []  # some compatible servers end with the Chat Completions sentinel
        if event.event == "error":
            raise self._fail(ModelError(f"error event in the response stream: {event.data[:500]}"))
        raise ProtocolError(f"stream event is not valid JSON: {event.data[:200]!r}")

    def _index_of(self, payload: Mapping[str, Any]) -> int:
        item_id = payload.get("item_id")
        if isinstance(item_id, str):
            idx = self._index_by_item.get(item_id)
            if idx is not None:
                return idx
        # No output_index and an unknown item: attach to the newest item (or the first slot).
        return max(self._items, default=0)

    def _item_index(self, payload: Mapping[str, Any], item: Mapping[str, Any]) -> int:
        idx = payload.get("output_index")
        if not isinstance(idx, int):
            item_id = item.get("id")
            known = self._index_by_item.get(item_id) if isinstance(item_id, str) else None
            idx = known if known is not None else max(self._items, default=-1) + 1
        return idx

    def _call_position(self, idx: int) -> int:
        """The events' ``index`` of the function call at output index ``idx``: the next free one when new.

        Positions are given in the order calls first show up, which is the order of the output items on any
        server that streams items one after another (and stays unique on one that does not).
        """
        position = self._call_index.get(idx)
        if position is None:
            position = self._call_index[idx] = len(self._call_index)
        return position

    def _on_envelope(self, payload: dict[str, Any]) -> list[ModelEvent]:
        response = payload.get("response")
        if isinstance(response, dict):
            self._envelope = response
        return []

    def _take_item(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        item = payload.get("item")
        if not isinstance(item, dict):
            raise ProtocolError(f"{payload.get('type')} event without an item object")
        idx = self._item_index(payload, item)
        self._items[idx] = item
        item_id = item.get("id")
        if isinstance(item_id, str):
            self._index_by_item[item_id] = idx
        return idx, item

    def _on_item_added(self, payload: dict[str, Any]) -> list[ModelEvent]:
        idx, item = self._take_item(payload)
        kind = item.get("type")
        if kind in CALL_ITEMS:
            if idx in self._pending_args:  # its arguments.done came first (out of order): it is finished
                item[_arguments_key(item)] = self._pending_args.pop(idx)
                item["status"] = "completed"
                return self._call_events(idx, item)
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                # Only an item ``id`` (or nothing): the call_id comes with ``output_item.done``, and the call
                # is announced then, under it. Its position is taken now, in the order calls show up.
                self._held.add(idx)
                self._call_position(idx)
                return []
            name = item.get("name")
            if isinstance(name, str) and idx not in self._announced_at and call_id not in self._started:
                self._announced_at.add(idx)
                self._started.add(call_id)
                return [ToolCallStarted(self._call_position(idx), call_id, name)]
        elif kind == "reasoning" and self._reasoning_idx is not None:
            self._reasoning_break = True
        return []

    def _on_item_done(self, payload: dict[str, Any]) -> list[ModelEvent]:
        idx, item = self._take_item(payload)
        self._finished.add(idx)
        return self._catch_up(idx, item)

    def _on_arguments_done(self, payload: dict[str, Any], key: str = "arguments") -> list[ModelEvent]:
        idx = payload.get("output_index")
        if not isinstance(idx, int):
            idx = self._index_of(payload)
        arguments = payload.get(key)
        if not isinstance(arguments, str):
            arguments = "".join(self._call_args.get(idx, ()))
        item = self._items.get(idx)
        if item is None or item.get("type") not in CALL_ITEMS or not item.get("name"):
            self._pending_args[idx] = arguments  # the item shows up later (out of order)
            return []
        item[_arguments_key(item)] = arguments
        item["status"] = "completed"  # the arguments are final: a cut-off partial still offers this call
        return self._call_events(idx, item)

    def _on_input_done(self, payload: dict[str, Any]) -> list[ModelEvent]:
        """``response.custom_tool_call_input.done``: a custom call's ``input`` is final."""
        return self._on_arguments_done(payload, "input")

    def _on_refusal_delta(self, payload: dict[str, Any]) -> list[ModelEvent]:
        delta = payload.get("delta")
        if type(delta) is not str:
            raise ProtocolError(f"refusal delta is not a string: {delta!r}")
        idx = payload.get("output_index")
        if not isinstance(idx, int):
            idx = self._index_of(payload)
        self._refusal.setdefault(idx, []).append(delta)
        return [RefusalDelta(delta)]

    def _on_reasoning_part(self, payload: dict[str, Any]) -> list[ModelEvent]:
        if self._reasoning_idx is not None:
            self._reasoning_break = True
        return []

    def _on_content_part(self, payload: dict[str, Any]) -> list[ModelEvent]:
        part = payload.get("part")
        if (
            isinstance(part, Mapping)
            and part.get("type") == "reasoning_text"
            and self._reasoning_idx is not None
        ):
            self._reasoning_break = True
        return []

    def _call_events(self, idx: int, item: dict[str, Any], *, final: bool = False) -> list[ModelEvent]:
        """``ToolCallStarted`` (unless sent) and ``ToolCallReady`` for a finished call, once.

        A call without a ``call_id`` waits for its ``output_item.done`` (``final``), which brings it; only if
        that has none either does the item ``id`` stand in, as in a blocking answer.
        """
        key = _arguments_key(item)
        if idx in self._pending_args and not item.get(key):
            item[key] = self._pending_args[idx]
        if not final and not item.get("call_id"):
            return []
        call = tool_call_from_item(item)
        if idx in self._ready_at or call.id in self._ready:
            return []
        self._ready_at.add(idx)
        self._ready.add(call.id)
        position = self._call_position(idx)
        events: list[ModelEvent] = []
        if idx not in self._announced_at and call.id not in self._started:
            self._announced_at.add(idx)
            self._started.add(call.id)
            events.append(ToolCallStarted(position, call.id, call.name))
            if idx in self._held:
                # The deltas held while the call_id was unknown, as one.
                held = "".join(self._call_args.get(idx, ()))
                if held:
                    events.append(ToolCallArgumentsDelta(position, held))
        self._held.discard(idx)
        events.append(ToolCallReady(position, call))
        return events

    def _catch_up(self, idx: int, item: dict[str, Any]) -> list[ModelEvent]:
        """Events for a finished item whose content never arrived as deltas (servers that skip them)."""
        kind = item.get("type")
        if kind in CALL_ITEMS:
            # A call the model did not finish (cut at max_output_tokens) may hold truncated arguments: it
            # stays in ``output`` but is never announced as ready, as in ``ResponsesResponse.tool_calls``.
            if item.get("status") in UNFINISHED_STATUSES:
                return []
            return self._call_events(idx, item, final=True)
        events: list[ModelEvent] = []
        if kind == "message":
            content = item.get("content")
            if not isinstance(content, list):
                return events
            if idx not in self._text and (text := _joined(content, "output_text", "text")):
                if self._has_text():
                    events.append(TextDelta(MESSAGE_BREAK))
                self._text[idx] = [text]
                events.append(TextDelta(text))
            if idx not in self._refusal and (refusal := _joined(content, "refusal", "refusal")):
                self._refusal[idx] = [refusal]
                events.append(RefusalDelta(refusal))
        elif kind == "reasoning" and idx not in self._reasoning:
            parts = [
                p.get("text")
                for key in ("summary", "content")
                for p in (item.get(key) or ())
                if isinstance(p, Mapping) and p.get("text")
            ]
            if parts:
                text = _REASONING_BREAK.join(str(p) for p in parts)
                if self._reasoning_idx is not None:
                    events.append(ReasoningDelta(_REASONING_BREAK))
                self._reasoning[idx] = [text]
                self._reasoning_kind[idx] = "summary"
                self._reasoning_idx = idx
                self._reasoning_break = False
                events.append(ReasoningDelta(text))
        return events

    # --- terminal events ----------------------------------------------------------------------------------

    def _on_error(self, payload: dict[str, Any]) -> list[ModelEvent]:
        raise self._fail(error_from_event(payload))

    def _fail(self, error: ModelError, envelope: dict[str, Any] | None = None) -> ModelError:
        """``error``, noted as the end of the stream, for ``feed`` to raise."""
        self._done = True
        self._failed = {} if envelope is None else envelope
        return error

    def _on_terminal(self, payload: dict[str, Any]) -> list[ModelEvent]:
        self._done = True
        envelope = payload.get("response")
        if not isinstance(envelope, dict):
            raise ProtocolError(f"{payload.get('type')} event without a response object")
        if payload.get("type") == "response.failed" or envelope.get("status") == "failed":
            error = ModelError("the response failed without an error object")
            try:
                check_response(build_response(envelope, ()))
            except ModelError as typed:
                error = typed
            raise self._fail(error, envelope)
        if payload.get("type") == "response.completed" and envelope.get("status") in PENDING_STATUSES:
            # The event is final whatever a stale envelope status says: a stream ends only when the response
            # does, so a "still queued" reading (an error for blocking calls) cannot apply here.
            envelope["status"] = "completed"
        output = envelope.get("output")
        if isinstance(output, list) and output:
            indexed: list[tuple[int, Any]] = list(enumerate(output))
        else:
            # Some compatible servers leave the final output empty and expect it to be aggregated; after
            # ``response.completed`` every item it aggregates is finished.
            indexed = self._aggregated_items(finished=envelope.get("status") in ("completed", None))
            output = envelope["output"] = [item for _, item in indexed]
        response = build_response(envelope, output)
        events: list[ModelEvent] = []
        # Content the stream never delivered as deltas, and calls never announced as ready: every finished
        # call gets exactly one ToolCallReady, whichever events the server chose to send. ``idx`` is the
        # item's output index (an aggregated output skips unnamed calls, so it is not the list position).
        for idx, item in indexed:
            if idx not in self._finished or item.get("type") in CALL_ITEMS:
                events.extend(self._catch_up(idx, item))
        result = self._finalize(response)
        check_response(response, on_incomplete=self._on_incomplete, partial=result)
        if response.usage is not None:
            events.append(UsageReported(response.usage))
        events.append(ModelCompleted(result))
        return events

    def finish(self) -> list[ModelEvent]:
        """Called at the end of the body: nothing more when a terminal event was seen, else
        ``StreamCutOffError`` carrying the partial result.

        After an in-band error (an ``error`` event, ``response.failed``) it raises ``StreamCutOffError`` too,
        whose ``partial`` is the answer aggregated before the error (status ``failed``): what the client
        attaches to that error when part of the answer was emitted, as on Chat Completions.
        """
        failed = self._failed
        if failed is not None:
            self._failed = None
            partial = self._partial(failed=True, envelope=failed or None)
            raise StreamCutOffError("the response stream failed before response.completed", partial=partial)
        if self._done:
            return []
        self._done = True
        if not self._seen_any:
            raise StreamCutOffError("the response stream ended before any event")
        partial = self._partial(failed=False)
        raise StreamCutOffError("the response stream ended before response.completed", partial=partial)

    def _partial(self, *, failed: bool, envelope: dict[str, Any] | None = None) -> R:
        """The result as far as the stream came, never reading as completed: ``failed`` after an in-band
        error, else (cut off) ``in_progress``. ``envelope`` is a ``response.failed`` one, whose own output is
        kept when it has some; otherwise the last envelope seen, with the items aggregated from the events.
        """
        envelope = dict(self._envelope if envelope is None else envelope)
        if failed:
            envelope["status"] = "failed"
        elif envelope.get("status") in ("completed", None):
            # A server that skipped ``response.created`` left no status.
            envelope["status"] = "in_progress"
        output = envelope.get("output") if failed else None
        if not (isinstance(output, list) and output):
            output = envelope["output"] = [item for _, item in self._aggregated_items()]
        return self._finalize(build_response(envelope, output))

    def _aggregated_items(self, *, finished: bool = False) -> list[tuple[int, dict[str, Any]]]:
        """Output items so far, each with its output index: finished items verbatim, unfinished ones completed
        with the deltas seen.

        ``finished``: the response completed, so items without an ``output_item.done`` are complete too.
        """
        indexes = set(self._items) | set(self._text) | set(self._refusal) | set(self._reasoning)
        indexes |= set(self._call_args) | set(self._pending_args)
        items: list[tuple[int, dict[str, Any]]] = []
        for idx in sorted(indexes):
            item = self._items.get(idx)
            if idx in self._finished and item is not None:
                items.append((idx, item))
                continue
            item = dict(item) if item is not None else {}
            if idx in self._text or idx in self._refusal:
                content: list[dict[str, Any]] = []
                if idx in self._text:
                    content.append({"type": "output_text", "text": "".join(self._text[idx])})
                if idx in self._refusal:
                    content.append({"type": "refusal", "refusal": "".join(self._refusal[idx])})
                item.setdefault("type", "message")
                item.setdefault("role", "assistant")
                item["content"] = content
            if idx in self._reasoning:
                text = "".join(self._reasoning[idx]).removeprefix(_REASONING_BREAK)
                item.setdefault("type", "reasoning")
                if self._reasoning_kind.get(idx) == "summary":
                    item["summary"] = [{"type": "summary_text", "text": text}]
                else:
                    item["content"] = [{"type": "reasoning_text", "text": text}]
            if idx in self._pending_args:
                item.setdefault("type", "function_call")
                item[_arguments_key(item)] = self._pending_args[idx]
                item["status"] = "completed"
            elif idx in self._call_args:
                item.setdefault("type", "function_call")
                item[_arguments_key(item)] = "".join(self._call_args[idx])
            if item.get("type") in CALL_ITEMS and not item.get("name"):
                continue  # arguments without a known function name cannot form a call
            if finished:
                item["status"] = "completed"
            else:
                item.setdefault("status", "in_progress")
            items.append((idx, item))
        return items

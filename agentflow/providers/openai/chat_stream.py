"""The Chat Completions stream decoder: SSE events → model events, aggregated into one ``ChatResponse``.

Pure and synchronous (no I/O): the HTTP client feeds it one ``SseEvent`` at a time. Per chunk it reads
``choices[0].delta`` — ``content`` → ``TextDelta`` at once (a list of parts, as Magistral sends: text parts
→ ``TextDelta``, thinking parts → ``ReasoningDelta``); ``reasoning_content`` (DeepSeek) or
``reasoning`` (OpenRouter, Groq) → ``ReasoningDelta``, the field noted for sending the reasoning back (also
an empty ``reasoning_content``, which DeepSeek wants back); ``refusal`` → ``RefusalDelta``; ``tool_calls``
fragments aggregated **by index** → ``ToolCallStarted`` (once the name is known), ``ToolCallArgumentsDelta``
per fragment, ``ToolCallReady`` when the next call starts (once its arguments are a complete JSON object:
a server may interleave the fragments of parallel calls) or at the finish — and ``usage`` (also on a
``choices: []`` chunk) → ``UsageReported``. ``finish()`` ends with ``ModelCompleted(ChatResponse)``.

Tool calls, beyond OpenAI's shape: a fragment whose new, different id lands on an index that already holds a
call with another id starts a new call (Ollama sends parallel calls all at ``index: 0``, told apart only by
their ids; vercel/ai and litellm read them the same way); a fragment without an index continues the current
call unless it brings a new id, or it is one of several fragments in one delta (then its position is its
index); the legacy ``delta.function_call`` is one call with the id ``"function_call"``, as in a blocking
answer. A call the server gave no id gets one made up when it starts (``call_<random>_<index>``, unique per
response); an id the server sends later replaces it until the call is ready (``ToolCallReady`` and the
response carry the server's). A ``{"type": "custom", "custom": {"name", "input"}}`` call (GPT-5 custom tools)
is aggregated alike, its ``input`` as the arguments (``ToolCall.kind == "custom"``).

Provider fields: each call's ``extra_content`` (Gemini's thought signature; the last one sent) and the
message's ``reasoning_details`` (OpenRouter) are kept for sending back (``provider_fields``). OpenRouter sends
``reasoning_details`` in fragments: those of one entry (same ``index`` and ``type``) are merged, their
``text`` / ``summary`` pieces concatenated and other fields (``signature``, ``data``, ``format``…) the last
non-empty value, into the list a blocking answer holds.

Inline reasoning: with ``think_tags`` (default ``("<think>", "</think>")``), string content that opens with
the open tag (after optional whitespace) is split by a ``ThinkTagSplitter``: the block → ``ReasoningDelta``,
what follows → ``TextDelta`` (rules in ``think_tags``). The first content delta decides; content that does not
open with the tag passes through as before, with no scanning. When the server also sends its reasoning in
``reasoning_content`` / ``reasoning`` (before the block, or in the same delta), the block repeats it: it is
left out of the answer and not counted again. Inline reasoning names no field, so nothing is sent back for it
(but a tool-call turn keeps a ``reasoning_content`` its server sent empty: ``inline_reasoning_field``).

Metadata (``id``, ``model``, ``created``) comes from the first chunk; values it leaves empty are filled from
the following ones up to the first chunk with choices (Azure opens with a ``prompt_filter_results`` chunk
whose id and model are ``""`` and created ``0``).

In-band errors raise typed ``ModelError``\\ s: a ``data: {"error": …}`` chunk (OpenRouter, also after a
finish_reason), a flat ``data: {"object": "error", "message": …}`` chunk (vLLM) and an ``event: error`` SSE
event (Groq).

End of stream: ``[DONE]`` ends it (also with whitespace around it; blank ``data:`` lines, keep-alives, are
skipped). A stream that reached a ``finish_reason`` but closed without ``[DONE]`` is accepted as complete
(several compatible servers end that way; its usage may then be missing). A stream that ended with neither
raises ``StreamCutOffError`` whose ``partial`` is the response aggregated so far.

Hot path: one ``orjson.loads`` per chunk, dict lookups, list appends; no regex, no copies of the
aggregate per delta.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ...http.sse import SseEvent
from ...model.errors import ModelError, ProtocolError, StreamCutOffError, error_from_payload
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
from ...model.messages import AiMessage, ToolCall, ToolCallKind
from ...model.response import ChatResponse, FinishReason, TokenUsage
from .chat_codec import (
    content_pieces,
    decode_finish_reason,
    decode_metadata,
    decode_usage,
    inline_reasoning_field,
    synthetic_call_id_prefix,
)
from .think_tags import DEFAULT_THINK_TAGS, Piece, ThinkTags, ThinkTagSplitter

__all__ = ["ChatStreamDecoder"]

_loads = orjson.loads
_MID_STREAM = "the server reported an error mid-stream"


class _CallBuffer:
    """One tool call being assembled from fragments.

    ``index`` is the call's index in events; ``slot`` the wire index its fragments arrive at (the same,
    unless the call displaced another one at that index).
    """

    __slots__ = ("extra", "id", "index", "kind", "name", "parts", "ready", "slot", "started", "synthetic_id")

    def __init__(self, index: int, slot: int) -> None:
        self.index = index
        self.slot = slot
        self.id = ""
        self.name = ""
        self.parts: list[str] = []
        self.started = False
        self.ready = False
        self.synthetic_id = False  # ``id`` is ours (``call_<random>_<index>``), not the server's
        self.kind: ToolCallKind = "function"
        self.extra: Any = None  # Gemini's ``extra_content`` (its thought signature), as sent

    def call(self) -> ToolCall:
        # ``_start`` gave it an id if it had none.
        extra = self.extra
        return ToolCall(
            self.id,
            self.name,
            "".join(self.parts),
            self.kind,
            None if extra is None else {"extra_content": extra},
        )


class ChatStreamDecoder:
    """Decodes one Chat Completions SSE stream (implements the client's ``StreamDecoder``).

    >>> d = ChatStreamDecoder()
    >>> d.feed(SseEvent('{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}'))
    [TextDelta(run_id='', step=0, seq=0, text='Hi')]
    >>> d.feed(SseEvent("[DONE]")), d.done
    ([], True)
    >>> d.finish()[-1].response.message.text
    'Hi'

    ``think_tags`` is the ``(open, close)`` pair of an inline think block to split off as reasoning, or
    ``None`` to leave content as sent.
    """

    __slots__ = (
        "_calls",
        "_current",
        "_detail_at",
        "_details",
        "_done",
        "_finish_reason",
        "_finished",
        "_id_prefix",
        "_last",
        "_metadata",
        "_native",
        "_reasoning",
        "_reasoning_field",
        "_refusal",
        "_retired",
        "_text",
        "_think",
        "_usage",
        "_wants_metadata",
    )

    def __init__(self, *, think_tags: ThinkTags | None = DEFAULT_THINK_TAGS) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._reasoning_field: str | None = None  # the wire field the reasoning came in
        self._native = False  # whether reasoning came in such a field (not only inline)
        # Until the first content delta shows there is no think block (then ``None``: the plain path).
        self._think = None if think_tags is None else ThinkTagSplitter(think_tags)
        self._refusal: list[str] = []
        self._calls: dict[int, _CallBuffer] = {}  # by wire index: the call its fragments go to
        self._retired: tuple[_CallBuffer, ...] = ()  # calls displaced from their wire index by a new id
        self._current: _CallBuffer | None = None
        self._id_prefix = ""  # of the ids made up for calls sent without one (``synthetic_call_id_prefix``)
        # OpenRouter's ``reasoning_details``, merged from their fragments (``None`` until one arrives), and
        # each merged entry by its ``(index, type)``.
        self._details: list[Any] | None = None
        self._detail_at: dict[tuple[int, Any], dict[str, Any]] = {}
        self._usage: TokenUsage | None = None
        self._finish_reason: FinishReason | None = None
        self._finished = False
        self._done = False
        self._metadata: dict[str, Any] | None = None
        self._wants_metadata = True
        self._last: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        """Whether ``[DONE]`` was seen."""
        return self._done

    def feed(self, event: SseEvent) -> list[ModelEvent]:
        """The model events of one SSE event; raises the typed error of an in-band error."""
        data = event.data
        if event.event != "message":
            if event.event == "error":
                raise _in_band_error(data)
            return []  # other named events (keep-alive pings…) carry nothing for Chat Completions
        if data == "[DONE]":
            self._done = True
            return []
        try:
            chunk = _loads(data)
        except orjson.JSONDecodeError as exc:
            # Only here, off the hot path: a blank ``data:`` line (a keep-alive) carries nothing, and
            # ``[DONE]`` with whitespace around it (or in lower case) still ends the stream, as on Responses.
            # Either may follow a complete answer, which an error here would lose.
            stripped = data.strip()
            if not stripped:
                return []
            if stripped.upper() == "[DONE]":
                self._done = True
                return []
            raise ProtocolError(f"malformed JSON in a stream chunk ({exc})", body=data) from exc
        if type(chunk) is not dict:
            raise ProtocolError("a stream chunk is not a JSON object", body=data)
        if chunk.get("error") is not None:
            raise error_from_payload(chunk, body=data, default_message=_MID_STREAM)
        try:
            self._last = chunk
            if self._wants_metadata:
                self._read_metadata(chunk)
            out: list[ModelEvent] = []
            choices = chunk.get("choices")
            if choices:
                choice = choices[0]
                if choice.get("index", 0):
                    choice = next((c for c in choices if not c.get("index", 0)), None)
                if choice is not None:
                    delta = choice.get("delta")
                    if delta:
                        content = delta.get("content")
                        if content:
                            if type(content) is str:
                                think = self._think
                                if think is None:
                                    self._text.append(content)
                                    out.append(TextDelta(content))
                                else:
                                    self._split_content(think, content, delta, out)
                            else:
                                self._content_parts(content, out, data)
                        # Most deltas hold nothing but content: skip the other lookups for them.
                        if content is None or len(delta) > 1:
                            self._other_deltas(delta, out, content)
                    if choice.get("finish_reason"):
                        self._finish_reason = decode_finish_reason(choice["finish_reason"])
                        self._finished = True
                        think = self._think
                        if think is not None:  # the content is complete: what it held back is known
                            self._close_think(think, out)
                        self._ready_all(out)
            elif chunk.get("object") == "error":  # vLLM's flat error object (only chunks without choices)
                raise error_from_payload(chunk, body=data, default_message=_MID_STREAM)
            # Usage comes on a final ``choices: []`` chunk (OpenAI) or on the finish chunk (DeepSeek): read it
            # before (and regardless of) the empty-choices case.
            usage = chunk.get("usage")
            if usage:
                decoded = decode_usage(usage)
                if decoded != self._usage:
                    self._usage = decoded
                    out.append(UsageReported(decoded))
        except (AttributeError, TypeError) as exc:
            # A field of the wrong JSON type (``choices: "x"``, a delta that is a string…).
            raise ProtocolError(f"malformed stream chunk ({exc})", body=data) from exc
        return out

    def _read_metadata(self, chunk: dict[str, Any]) -> None:
        found = decode_metadata(chunk)
        metadata = self._metadata
        if metadata is None:
            self._metadata = metadata = found
        else:
            for key, value in found.items():
                if not metadata.get(key):
                    metadata[key] = value
        # Up to the first chunk with choices (most servers' first chunk), or until every value is set: a
        # server that never sends one must not cost a lookup per chunk.
        self._wants_metadata = not chunk.get("choices") and not all(metadata.values())

    def _split_content(
        self, splitter: ThinkTagSplitter, content: str, delta: dict[str, Any], out: list[ModelEvent]
    ) -> None:
        """String content while a think block may lead it or is open (off the plain path)."""
        pieces = splitter.feed(content)
        if splitter.done:
            self._think = None  # the answer has begun: the rest of the content is plain text
        if pieces:
            self._add_pieces(pieces, out, repeated=self._native or _has_native_reasoning(delta))

    def _close_think(self, splitter: ThinkTagSplitter, out: list[ModelEvent]) -> None:
        """The content has ended: what the splitter held back, as the pieces it turns out to be."""
        self._think = None
        pieces = splitter.close()
        if pieces:
            self._add_pieces(pieces, out, repeated=self._native)

    def _add_pieces(self, pieces: list[Piece], out: list[ModelEvent], *, repeated: bool) -> None:
        """Reasoning and answer pieces split off the content. With ``repeated``, the server sent the
        reasoning in its own field as well: the block is left out, not counted twice."""
        for thinking, piece in pieces:
            if not thinking:
                self._text.append(piece)
                out.append(TextDelta(piece))
            elif not repeated:
                self._reasoning.append(piece)
                out.append(ReasoningDelta(piece))

    def _content_parts(self, content: Any, out: list[ModelEvent], data: str) -> None:
        """Content sent as a list of parts (Magistral): text parts are text, thinking parts reasoning."""
        think = self._think
        if think is not None:
            # Parts carry their reasoning apart already: no think block to look for (held text goes first).
            self._close_think(think, out)
        try:
            pieces = content_pieces(content, "choices[0].delta.content")
        except ProtocolError as exc:
            exc.body = data
            raise
        for thinking, piece in pieces:
            if thinking:
                self._reasoning.append(piece)
                out.append(ReasoningDelta(piece))
            else:
                self._text.append(piece)
                out.append(TextDelta(piece))

    def _other_deltas(self, delta: dict[str, Any], out: list[ModelEvent], content: Any) -> None:
        native = delta.get("reasoning_content")
        reasoning = native or delta.get("reasoning")
        if reasoning and type(reasoning) is str:
            if not self._native:  # the first piece names the field it is sent back in
                self._native = True
                self._reasoning_field = "reasoning_content" if native else "reasoning"
            self._reasoning.append(reasoning)
            out.append(ReasoningDelta(reasoning))
        elif native is not None and native == "" and self._reasoning_field is None:
            # DeepSeek's streams open with ``reasoning_content: ""``; its thinking mode wants the field back
            # even when no reasoning follows. (Elsewhere ``native`` is ``None``: one identity test.)
            self._reasoning_field = "reasoning_content"
        details = delta.get("reasoning_details")
        if details:  # OpenRouter sends it on every delta, nearly always empty
            self._merge_details(details)
        refusal = delta.get("refusal")
        if refusal:
            if type(refusal) is not str:
                raise ProtocolError("choices[0].delta.refusal is not a string")
            self._refusal.append(refusal)
            out.append(RefusalDelta(refusal))
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self._tool_calls(tool_calls, out)
        # The legacy single call (a blocking answer's id, "function_call", on every fragment). It never comes
        # with text or reasoning, so the deltas that make up most of a stream skip the lookup.
        elif not content and not reasoning and (legacy := delta.get("function_call")) is not None:
            self._tool_calls(({"index": 0, "id": "function_call", "function": legacy},), out)

    def _tool_calls(self, fragments: Sequence[Any], out: list[ModelEvent]) -> None:
        calls = self._calls
        several = len(fragments) > 1
        for position, fragment in enumerate(fragments):
            index = fragment.get("index")
            if type(index) is not int:
                # Several fragments in one delta are different calls: each takes its position, as OpenAI
                # numbers them.
                index = position if several else self._implicit_index(fragment)
            buffer = calls.get(index)
            call_id = fragment.get("id")
            # OpenAI sends the id on a call's first fragment only; a different one at a used index is a new
            # call (Ollama puts every call at index 0), unless it is the late id of a call we named.
            if buffer is None or (
                call_id and call_id != buffer.id and buffer.id and _new_call(buffer, fragment)
            ):
                buffer = self._open(index, out)
            self._current = buffer
            if call_id and (not buffer.id or (buffer.synthetic_id and not buffer.ready)):
                if type(call_id) is not str:
                    raise ProtocolError(f"the id of tool call {index} is not a string")
                # A server's id, also one that arrives after we made one up (the call was started with ours):
                # its ``ToolCallReady`` and the response carry the real one.
                buffer.id = call_id
                buffer.synthetic_id = False
            function = fragment.get("function")
            key = "arguments"
            if not function:
                function = fragment.get("custom")  # GPT-5 custom tools: ``{"name", "input"}``
                if function:
                    buffer.kind = "custom"
                    key = "input"
            arguments = None
            if function:
                name = function.get("name")
                if name and not buffer.name:
                    if type(name) is not str:
                        raise ProtocolError(f"the name of tool call {index} is not a string")
                    buffer.name = name
                arguments = function.get(key)
                if arguments is not None and type(arguments) is not str:
                    arguments = orjson.dumps(arguments).decode()
                if arguments:
                    buffer.parts.append(arguments)
            extra = fragment.get("extra_content")  # Gemini's thought signature (``CALL_PROVIDER_FIELDS``)
            if extra is not None:
                buffer.extra = extra
            if buffer.started:
                if arguments:
                    out.append(ToolCallArgumentsDelta(buffer.index, arguments))
            elif buffer.name:
                self._start(buffer, out)

    def _implicit_index(self, fragment: dict[str, Any]) -> int:
        """Wire index of a lone fragment from a server that omits it: a new call when it brings a new id,
        otherwise the current call goes on."""
        current = self._current
        call_id = fragment.get("id")
        if current is None or (call_id and current.id and call_id != current.id):
            return len(self._calls)
        return current.slot

    def _open(self, slot: int, out: list[ModelEvent]) -> _CallBuffer:
        """A new call whose fragments arrive at wire index ``slot``: the earlier calls whose arguments are
        complete are ready."""
        calls = self._calls
        displaced = calls.get(slot)
        self._ready_complete(out, displaced)
        index = slot
        if displaced is not None or self._retired:
            if displaced is not None:
                self._retired = (*self._retired, displaced)
            # Event indices stay unique: a call that took a used wire index gets the next free one.
            taken = {b.index for b in self._retired} | {b.index for b in calls.values()}
            if index in taken:
                index = max(taken) + 1
        buffer = calls[slot] = _CallBuffer(index, slot)
        return buffer

    def _ready_complete(self, out: list[ModelEvent], displaced: _CallBuffer | None) -> None:
        """``ToolCallReady`` for the pending calls, in order, up to the first whose arguments are not yet a
        complete JSON object, and for ``displaced`` (its wire index now belongs to another call).

        A server may interleave the fragments of parallel calls (index 0, 1, 0, 1…): a call whose arguments
        are still incomplete when another starts may get more, so it waits (for completeness, or the finish).
        Sequential calls, the common case, are complete when the next starts: ready then, as before.
        """
        for buffer in self._calls.values():
            if buffer.ready:
                continue
            if buffer is not displaced and not _complete(buffer.parts):
                break
            self._ready(buffer, out)
        if displaced is not None and not displaced.ready:
            self._ready(displaced, out)

    def _ready_all(self, out: list[ModelEvent]) -> None:
        for buffer in self._calls.values():
            if not buffer.ready:
                self._ready(buffer, out)

    def _ready(self, buffer: _CallBuffer, out: list[ModelEvent]) -> None:
        """``ToolCallReady`` for a call (``ToolCallStarted`` first if its name came only now)."""
        buffer.ready = True
        if not buffer.started:
            if not buffer.name:
                raise ProtocolError(f"tool call at index {buffer.index} ended without a function name")
            self._start(buffer, out)
        out.append(ToolCallReady(buffer.index, buffer.call()))

    def _start(self, buffer: _CallBuffer, out: list[ModelEvent]) -> None:
        """``ToolCallStarted`` for a call whose name is known, then the argument fragments that came first."""
        buffer.started = True
        if not buffer.id:
            # No id yet: one is made up now, so every event agrees unless the server's own id comes before the
            # call is ready (then ``ToolCallReady`` carries that one). Unique per response: two turns' made-up
            # ids never collide in memory.
            if not self._id_prefix:
                self._id_prefix = synthetic_call_id_prefix()
            buffer.id = f"{self._id_prefix}{buffer.index}"
            buffer.synthetic_id = True
        out.append(ToolCallStarted(buffer.index, buffer.id, buffer.name))
        if buffer.parts:
            out.append(ToolCallArgumentsDelta(buffer.index, "".join(buffer.parts)))

    def _merge_details(self, entries: Any) -> None:
        """Adds fragments of OpenRouter's ``reasoning_details`` to the entries merged so far.

        Fragments of one entry share its ``index`` (and ``type``): their ``text`` and ``summary`` pieces are
        concatenated, and any other field takes the last non-empty value sent (a ``signature`` or encrypted
        ``data`` comes whole, often on a fragment of its own after an empty one). An entry without an
        integer ``index`` is kept as it came. The result is the list a blocking answer holds.
        """
        if type(entries) is not list:
            entries = [entries]
        merged = self._details
        if merged is None:
            merged = self._details = []
        at = self._detail_at
        for entry in entries:
            if type(entry) is not dict:
                merged.append(entry)
                continue
            index = entry.get("index")
            if type(index) is not int:
                merged.append(entry)
                continue
            key = (index, entry.get("type"))
            known = at.get(key)
            if known is None:
                at[key] = known = dict(entry)
                merged.append(known)
                continue
            for name, value in entry.items():
                if name in _CONCATENATED and type(value) is str:
                    before = known.get(name)
                    known[name] = before + value if type(before) is str else value
                elif value is not None and value != "":
                    known[name] = value

    def response(self) -> ChatResponse:
        """What has been aggregated so far, as a ``ChatResponse``."""
        buffers = [*self._retired, *self._calls.values()] if self._retired else self._calls.values()
        calls = tuple(b.call() for b in sorted(buffers, key=_event_index) if b.name)
        texts, thoughts = self._text, self._reasoning
        if self._think is not None:
            # What the splitter holds back belongs to the answer so far (a cut-off stream's partial too).
            held = self._think.pending()
            if held:
                texts = [*texts, *(piece for thinking, piece in held if not thinking)]
                if not self._native:
                    thoughts = [*thoughts, *(piece for thinking, piece in held if thinking)]
        text = "".join(texts) if texts else None
        field = self._reasoning_field
        if thoughts and not self._native:
            # Reasoning only from the content (a think block, thinking parts): no field carried it.
            field = inline_reasoning_field(field, has_calls=bool(calls))
        details = self._details
        return ChatResponse(
            message=AiMessage(
                text=text,
                tool_calls=calls,
                reasoning="".join(thoughts) if thoughts else None,
                refusal="".join(self._refusal) if self._refusal else None,
                reasoning_field=field,
                provider_fields={"reasoning_details": _snapshot(details)} if details else None,
            ),
            usage=self._usage,
            finish_reason=self._finish_reason,
            metadata=dict(self._metadata or {}),
            raw=self._last,
        )

    def finish(self) -> list[ModelEvent]:
        """The last events (pending ``ToolCallReady``, then ``ModelCompleted``); raises when cut off."""
        if not self._done and not self._finished:
            raise StreamCutOffError(
                "the stream ended before [DONE] and without a finish_reason", partial=self.response()
            )
        out: list[ModelEvent] = []
        think = self._think
        if think is not None:
            self._close_think(think, out)
        self._ready_all(out)
        out.append(ModelCompleted(self.response()))
        return out


def _complete(parts: list[str]) -> bool:
    """Whether argument fragments make a complete JSON object: no fragment can follow it and still be JSON.

    Once per call, when the next one starts (never per fragment).
    """
    if not parts or not parts[-1].rstrip().endswith("}"):
        return False
    try:
        return type(_loads("".join(parts))) is dict
    except orjson.JSONDecodeError:
        return False


def _event_index(buffer: _CallBuffer) -> int:
    return buffer.index


def _new_call(buffer: _CallBuffer, fragment: dict[str, Any]) -> bool:
    """Whether a fragment bringing a new id to the wire index of ``buffer`` (which has another id) starts a
    new call, rather than giving a call whose id we made up its real one.

    A server's own id is never replaced (Ollama's parallel calls, all at index 0): a new call. A made-up one
    is kept for a fragment that names another function: a new call too. Otherwise the fragment goes on with
    the call (whose made-up id its id replaces, unless the call was already announced as ready).
    """
    if not buffer.synthetic_id:
        return True
    function = fragment.get("function") or fragment.get("custom")
    name = function.get("name") if isinstance(function, dict) else None
    return bool(name) and bool(buffer.name) and name != buffer.name


def _snapshot(details: list[Any]) -> list[Any]:
    """The merged ``reasoning_details`` as they are now (kept as they are by a partial response)."""
    return [dict(entry) if type(entry) is dict else entry for entry in details]


_CONCATENATED = frozenset({"text", "summary"})
"""The ``reasoning_details`` fields whose fragments are pieces of one string."""


def _has_native_reasoning(delta: dict[str, Any]) -> bool:
    """Whether a delta carries reasoning in a field of its own (beside its content)."""
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    return type(reasoning) is str and bool(reasoning)


def _in_band_error(data: str) -> ModelError:
    try:
        payload = _loads(data) if data else None
    except orjson.JSONDecodeError:
        return ModelError(f"the server reported an error mid-stream: {data[:500]}", body=data)
    return error_from_payload(payload, body=data, default_message=_MID_STREAM)

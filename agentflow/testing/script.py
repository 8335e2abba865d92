"""The script of a ``ScriptedServer``: what it answers, turn by turn.

A script is a sequence of *turns*. Each request to the server takes the next turn, which is one of

- a :class:`Reply`: what the model "says" (text, reasoning, refusal, tool calls, usage, finish reason),
  encoded in whichever protocol (Chat Completions or Responses) and mode (JSON or SSE) the request asks for;
- a :class:`Fault`: a failure (HTTP status, stall, truncation, disconnect, malformed chunk, in-band error);
- a :class:`Hold`: a reply whose stream stops at a point until the test releases the rest;
- a callable that receives the parsed request body (a ``dict``) and returns a ``Reply`` or a ``Fault``
  (or an awaitable of one), for answers computed from the request.

This module holds only values and pure helpers: no I/O, no wire format (see ``chat_wire`` and
``responses_wire``), no server (see ``scripted_server``).

>>> Reply(text="Hello world", chunk_size=5).text
'Hello world'
>>> Reply(tool_calls=[("get_weather", {"city": "Paris"})]).tool_calls[0].arguments
'{"city":"Paris"}'
>>> Fault.status(429, headers={"retry-after-ms": "10"}).http_status
429
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import anyio
import attrs
import orjson

from ..model.response import TokenUsage

__all__ = [
    "Fault",
    "FaultKind",
    "Hold",
    "Reply",
    "Responder",
    "ScriptError",
    "ScriptedToolCall",
    "Turn",
    "check_turn",
    "default_usage",
    "load_script",
    "openai_error",
    "pretty_json",
    "split_deltas",
    "turn_from_json",
]


class ScriptError(ValueError):
    """A script (or a turn in it) is not valid: says which field and why."""


# --- tool calls -------------------------------------------------------------------------------


def _arguments_to_json(value: str | Mapping[str, Any]) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return orjson.dumps(dict(value)).decode()
    raise ScriptError(f"tool call arguments must be a JSON string or a mapping, not {type(value).__name__}")


@attrs.frozen
class ScriptedToolCall:
    """One tool call the scripted model makes.

    ``arguments`` is the raw JSON string sent on the wire (a mapping is encoded compactly);
    ``id`` is generated per request (``call_scripted_<request>_<index>``) when not given.

    >>> ScriptedToolCall("get_time", {"tz": "CET"}).arguments
    '{"tz":"CET"}'
    """

    name: str
    arguments: str = attrs.field(default="{}", converter=_arguments_to_json)
    id: str | None = None

    @classmethod
    def coerce(cls, value: ScriptedToolCall | Sequence[Any] | Mapping[str, Any]) -> ScriptedToolCall:
        """A tool call from ``(name, arguments[, id])``, ``{"name", "arguments", "id"}`` or itself."""
        if isinstance(value, ScriptedToolCall):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"name", "arguments", "id"}
            if "name" not in value or unknown:
                raise ScriptError(f"a tool call needs 'name' (and optional 'arguments', 'id'), got {value!r}")
            return cls(value["name"], value.get("arguments", "{}"), value.get("id"))
        if isinstance(value, Sequence) and not isinstance(value, str | bytes) and 1 <= len(value) <= 3:
            return cls(*value)
        raise ScriptError(f"a tool call is (name, arguments[, id]) or a mapping, got {value!r}")


def _to_tool_calls(value: Iterable[Any]) -> tuple[ScriptedToolCall, ...]:
    if isinstance(value, str | bytes | Mapping):
        raise ScriptError("tool_calls must be a sequence of tool calls")
    return tuple(ScriptedToolCall.coerce(item) for item in value)


def _to_usage(value: TokenUsage | Sequence[int] | None) -> TokenUsage | None:
    if value is None:
        return None
    if isinstance(value, TokenUsage):
        usage = value
    elif isinstance(value, Sequence) and len(value) == 2 and all(isinstance(v, int) for v in value):
        usage = TokenUsage(value[0], value[1])
    else:
        raise ScriptError(f"usage must be a TokenUsage or (input_tokens, output_tokens), got {value!r}")
    if usage.total_tokens == 0:
        usage = attrs.evolve(usage, total_tokens=usage.input_tokens + usage.output_tokens)
    return usage


def _to_headers(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return dict(value or {})


def _positive_or_none(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ScriptError(f"{attribute.name} must be a positive int or None, got {value!r}")


# --- replies ----------------------------------------------------------------------------------


@attrs.frozen
class Reply:
    """What the scripted model answers.

    - ``text``, ``reasoning``, ``refusal``: strings (``None`` = absent). Reasoning streams as
      ``reasoning_content`` deltas on Chat and as a reasoning summary on Responses.
    - ``tool_calls``: :class:`ScriptedToolCall` values, or ``(name, arguments[, id])`` tuples where
      ``arguments`` is a mapping or a raw JSON string.
    - ``usage``: a ``TokenUsage`` or ``(input_tokens, output_tokens)``; when ``None`` it is computed
      from the sizes of the request and the reply (see :func:`default_usage`). Usage is always sent
      (on Chat streams in the final usage chunk, which, as with OpenAI, needs
      ``stream_options.include_usage`` in the request).
    - ``finish_reason``: the Chat wire value; default ``"tool_calls"`` when there are tool calls, else
      ``"stop"``. On Responses, ``"length"`` gives ``status: "incomplete"`` with reason
      ``max_output_tokens`` and ``"content_filter"`` gives reason ``content_filter``.
    - ``chunk_size``: stream text, reasoning, refusal and tool arguments in deltas of this many
      characters; ``None`` streams text word by word and arguments in 4-character fragments.
    - ``model``: the model name answered (default: the request's ``model``).
    - ``headers``: extra response headers.

    >>> Reply(text="Hi", usage=(10, 2)).usage.total_tokens
    12
    """

    text: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = attrs.field(default=(), converter=_to_tool_calls)
    usage: TokenUsage | None = attrs.field(default=None, converter=_to_usage)
    finish_reason: str | None = None
    chunk_size: int | None = attrs.field(default=None, validator=_positive_or_none)
    model: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_to_headers)

    def __attrs_post_init__(self) -> None:
        if self.text is None and self.reasoning is None and self.refusal is None and not self.tool_calls:
            raise ScriptError("a Reply needs text, reasoning, refusal or tool_calls (text='' is allowed)")

    @property
    def wire_finish_reason(self) -> str:
        """The Chat ``finish_reason`` sent: the given one, or derived from the content."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


# --- faults -----------------------------------------------------------------------------------


class FaultKind(enum.Enum):
    """What goes wrong; see the :class:`Fault` constructors."""

    STATUS = "status"
    STALL = "stall"
    TRUNCATE = "truncate"
    DISCONNECT = "disconnect"
    MALFORMED_CHUNK = "malformed_chunk"
    STREAM_ERROR = "stream_error"


_STATUS_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Scripted bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Scripted forbidden."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    408: ("timeout", None, "Scripted request timeout."),
    409: ("conflict", None, "Scripted conflict."),
    422: ("invalid_request_error", None, "Scripted unprocessable request."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
}


def openai_error(
    message: str, type: str = "server_error", code: str | int | None = None, param: str | None = None
) -> dict[str, Any]:
    """An OpenAI-shaped error body: ``{"error": {"message", "type", "param", "code"}}``.

    >>> openai_error("Bad", "invalid_request_error", param="stop")["error"]["param"]
    'stop'
    """
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _status_error(status: int) -> dict[str, Any]:
    if status in _STATUS_ERRORS:
        error_type, code, message = _STATUS_ERRORS[status]
        return openai_error(message, error_type, code)
    if status >= 500:
        return openai_error("The server had an error while processing your request.", "server_error")
    return openai_error(f"Scripted HTTP {status}.", "invalid_request_error")


def pretty_json(payload: Any) -> bytes:
    """``payload`` as OpenAI sends non-streaming JSON: indented by 2, with a trailing newline."""
    # OpenAI's non-streaming JSON is pretty-printed with a trailing newline.
    return orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n"


_FAULT_REPLY = Reply(text="This answer is cut short by a scripted fault before it can finish.")


def _non_negative(_instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if not isinstance(value, int) or value < 0:
        raise ScriptError(f"{attribute.name} must be an int >= 0, got {value!r}")


@attrs.frozen
class Fault:
    """A scripted failure. Build one with the class methods; fields are read by the server.

    ``after_chunks`` counts SSE events of the stream of ``reply`` (Chat: the role chunk, the deltas,
    the finish chunk, the usage chunk, ``[DONE]``; Responses: every ``event:``). It must be smaller
    than the number of events of that stream. For a non-streaming request ``after_chunks`` is not used:
    ``stall`` sends the headers and no body, ``truncate`` / ``disconnect`` send the first half of the
    JSON body, ``malformed_chunk`` sends a body that is not JSON, and ``stream_error`` answers
    HTTP 200 with the error object as body.
    """

    kind: FaultKind
    http_status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_to_headers)
    body: bytes = b""
    after_chunks: int = attrs.field(default=0, validator=_non_negative)
    reply: Reply = _FAULT_REPLY
    error: Mapping[str, Any] = attrs.field(factory=dict)
    as_event: bool = False

    @classmethod
    def status(
        cls,
        status: int,
        *,
        headers: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | str | bytes | None = None,
        message: str | None = None,
    ) -> Fault:
        """An HTTP error answer (also to streaming requests, as real servers do).

        ``body``: a mapping (sent as pretty JSON), raw ``str``/``bytes`` (sent verbatim), or ``None``
        for an OpenAI-shaped error object fitting the status (``message`` overrides its text).

        >>> b'"rate_limit_exceeded"' in Fault.status(429).body
        True
        """
        if not isinstance(status, int) or not 100 <= status <= 599:
            raise ScriptError(f"status must be an HTTP status code, got {status!r}")
        if body is None:
            payload = _status_error(status)
            if message is not None:
                payload["error"]["message"] = message
            raw = pretty_json(payload)
        elif isinstance(body, bytes):
            raw = body
        elif isinstance(body, str):
            raw = body.encode()
        else:
            raw = pretty_json(dict(body))
        return cls(FaultKind.STATUS, http_status=status, headers=headers, body=raw)

    @classmethod
    def stall(cls, after_chunks: int = 0, *, reply: Reply = _FAULT_REPLY) -> Fault:
        """Send ``after_chunks`` events, then send nothing more until the server stops.

        The wait is on an event released by ``ScriptedServer.stop()``, which then drops the connection.
        """
        return cls(FaultKind.STALL, after_chunks=after_chunks, reply=reply)

    @classmethod
    def truncate(cls, after_chunks: int = 1, *, reply: Reply = _FAULT_REPLY) -> Fault:
        """Send ``after_chunks`` events, then end the body cleanly (no ``[DONE]``, no completion event)."""
        return cls(FaultKind.TRUNCATE, after_chunks=after_chunks, reply=reply)

    @classmethod
    def disconnect(cls, after_chunks: int = 1, *, reply: Reply = _FAULT_REPLY) -> Fault:
        """Send ``after_chunks`` events, then close the TCP connection mid-body (no final chunk)."""
        return cls(FaultKind.DISCONNECT, after_chunks=after_chunks, reply=reply)

    @classmethod
    def malformed_chunk(cls, after_chunks: int = 1, *, reply: Reply = _FAULT_REPLY) -> Fault:
        """Send ``after_chunks`` events, then one ``data:`` line that is not JSON, then the rest."""
        return cls(FaultKind.MALFORMED_CHUNK, after_chunks=after_chunks, reply=reply)

    @classmethod
    def stream_error(
        cls,
        after_chunks: int = 1,
        *,
        message: str = "The server had an error while processing your request.",
        type: str = "server_error",
        code: str | int | None = None,
        param: str | None = None,
        as_event: bool = False,
        reply: Reply = _FAULT_REPLY,
    ) -> Fault:
        """Send ``after_chunks`` events, then an in-band error, with HTTP status 200.

        Chat: ``data: {"error": {…}}`` then ``data: [DONE]``, or with ``as_event=True`` an
        ``event: error`` and nothing after it (as Groq does). Responses: an ``error`` event
        followed by ``response.failed``.
        """
        error = openai_error(message, type, code, param)["error"]
        return cls(
            FaultKind.STREAM_ERROR, after_chunks=after_chunks, reply=reply, error=error, as_event=as_event
        )


# --- holds ------------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class Hold:
    """A reply streamed up to a point and held there until ``release`` is set; then the rest follows.

    For a test that proves a client acts on what it has received while the rest is still to come (the
    server lets the stream go on only once the client did something): no sleeping, no timing.
    ``after_chunks`` counts SSE events as ``Fault`` does and must be smaller than the number of events of
    ``reply``'s stream; ``reached``, if given, is set once those first events are written. A non-streamed
    request gets its whole answer once ``release`` is set. Stopping the server while an answer is held drops
    its connection, as for a stall.

    >>> Hold(Reply(text="one two three"), anyio.Event(), after_chunks=2).after_chunks
    2
    """

    reply: Reply
    release: anyio.Event
    after_chunks: int = attrs.field(default=1, validator=_non_negative)
    reached: anyio.Event | None = None


Responder: TypeAlias = Callable[[dict[str, Any]], Reply | Fault | Hold | Awaitable[Reply | Fault | Hold]]
"""A turn computed from the request: gets the parsed JSON body, returns a Reply, a Fault or a Hold."""

Turn: TypeAlias = Reply | Fault | Hold | Responder
"""One entry of a script."""


def check_turn(turn: object, where: str) -> None:
    """Raise ``ScriptError`` unless ``turn`` is a Reply, a Fault, a Hold or a callable."""
    if not (isinstance(turn, Reply | Fault | Hold) or callable(turn)):
        raise ScriptError(
            f"{where} must be a Reply, a Fault, a Hold or a callable, got {type(turn).__name__}"
        )


# --- pure helpers used by the wire encoders ------------------------------------------------------

_WORD = re.compile(r"\s*\S+|\s+$")


def split_deltas(text: str, chunk_size: int | None, *, default_size: int | None = None) -> list[str]:
    """The deltas a string is streamed in; they always join back to ``text``.

    ``chunk_size`` wins; otherwise ``default_size`` characters, or word by word when that is ``None``.

    >>> split_deltas("Hello big world", None)
    ['Hello', ' big', ' world']
    >>> split_deltas("abcde", 2)
    ['ab', 'cd', 'e']
    """
    size = chunk_size or default_size
    if size is None:
        return _WORD.findall(text)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def default_usage(reply: Reply, request_size: int) -> TokenUsage:
    """The reply's usage, or one estimated at 4 characters (bytes) per token when it has none.

    >>> default_usage(Reply(text="12345678"), request_size=40)
    TokenUsage(input_tokens=10, output_tokens=2, total_tokens=12, cached_input_tokens=0, \
cache_write_tokens=0, reasoning_tokens=0)
    """
    if reply.usage is not None:
        return reply.usage
    reasoning = _tokens(len(reply.reasoning or ""))
    chars = len(reply.text or "") + len(reply.refusal or "")
    chars += sum(len(call.name) + len(call.arguments) for call in reply.tool_calls)
    output = max(1, _tokens(chars) + reasoning)
    prompt = max(1, _tokens(request_size))
    return TokenUsage(prompt, output, prompt + output, reasoning_tokens=reasoning)


# --- scripts from JSON (for ``python -m agentflow.testing.server --script``) -----------------------

_REPLY_FIELDS = {f.name for f in attrs.fields(Reply)}


def _usage_from_json(value: Any) -> TokenUsage | Sequence[int] | None:
    if isinstance(value, Mapping):
        try:
            return TokenUsage(**value)
        except TypeError as exc:
            raise ScriptError(f"bad usage {value!r}: {exc}") from None
    return value  # type: ignore[no-any-return]


def turn_from_json(value: Any) -> Reply | Fault:
    """A turn from its JSON form.

    A reply is an object with ``Reply`` fields (``usage`` as ``[in, out]`` or an object of
    ``TokenUsage`` fields; ``tool_calls`` as ``[name, arguments]`` pairs or objects). A fault is an
    object with ``"fault"``: one of ``status``, ``stall``, ``truncate``, ``disconnect``,
    ``malformed_chunk``, ``stream_error``, plus that constructor's keywords (``reply`` as a reply
    object).

    >>> turn_from_json({"text": "hi", "chunk_size": 1}).chunk_size
    1
    >>> turn_from_json({"fault": "status", "status": 503}).http_status
    503
    """
    if not isinstance(value, Mapping):
        raise ScriptError(f"a turn must be a JSON object, got {value!r}")
    fields = dict(value)
    if "fault" in fields:
        kind = fields.pop("fault")
        constructors: dict[str, Callable[..., Fault]] = {
            "status": Fault.status,
            "stall": Fault.stall,
            "truncate": Fault.truncate,
            "disconnect": Fault.disconnect,
            "malformed_chunk": Fault.malformed_chunk,
            "stream_error": Fault.stream_error,
        }
        if kind not in constructors:
            raise ScriptError(f"unknown fault {kind!r}; expected one of {sorted(constructors)}")
        if "reply" in fields:
            fields["reply"] = turn_from_json(fields["reply"])
        try:
            return constructors[kind](**fields)
        except TypeError as exc:
            raise ScriptError(f"bad {kind} fault {value!r}: {exc}") from None
    unknown = set(fields) - _REPLY_FIELDS
    if unknown:
        raise ScriptError(f"unknown reply fields {sorted(unknown)}; expected some of {sorted(_REPLY_FIELDS)}")
    if "usage" in fields:
        fields["usage"] = _usage_from_json(fields["usage"])
    return Reply(**fields)


def load_script(source: str | Path | bytes) -> tuple[list[Reply | Fault], Reply | Fault | None]:
    """``(turns, default)`` from a JSON script: a list of turns, or ``{"turns": [...], "default": {...}}``.

    ``source`` is a path, or the JSON document itself as ``bytes``.

    >>> load_script(b'{"turns": [{"text": "a"}], "default": {"text": "b"}}')[1].text
    'b'
    """
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ScriptError(f"script is not valid JSON: {exc}") from None
    if isinstance(document, list):
        return [turn_from_json(turn) for turn in document], None
    if isinstance(document, Mapping) and set(document) <= {"turns", "default"}:
        turns = document.get("turns", [])
        if not isinstance(turns, list):
            raise ScriptError("'turns' must be a list")
        default = document.get("default")
        return [turn_from_json(t) for t in turns], None if default is None else turn_from_json(default)
    raise ScriptError("a script is a list of turns or an object with 'turns' and/or 'default'")

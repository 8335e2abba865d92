"""Server-Sent Events for web services: a run's events as the bytes of a ``text/event-stream`` body.

Framework-neutral: ``sse_stream(run)`` is an async iterator of ``bytes`` frames that aiohttp's
``StreamResponse.write``, an ASGI ``send`` or any other server can forward as they come. Each event becomes
one frame::

    event: text_delta
    id: 7
    data: {"type":"text_delta","run_id":"run_…","step":0,"seq":7,"text":"Hel"}

``data`` is ``exact_json.dumps(event.to_dict())`` (orjson; integers beyond 64 bits stay exact) on one line,
``id`` the event's ``seq`` and ``event`` its ``type``, so a browser's ``EventSource`` can listen by type.

A browser is not the server's log: by default (``errors="public"``) the failure texts of a frame are replaced
by short public ones (``public_event``). Such texts are written for the developer: a model error names the
URL it posted to and may say how to configure a key, a tool's exception says whatever its library put in it.
``errors="full"`` sends them as ``to_dict()`` holds them, for a trusted client (an internal dashboard);
``to_dict()`` itself is always complete, for logs and the server's own use.

This module encodes and forwards only: it starts no run, imports no web framework and never swallows an
event. Cancelling the run when the client goes away is the server's job (see the "Embedding in web services"
page of the docs).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable
from typing import Any, Literal, TypeAlias, TypeVar, cast

import anyio
import attrs
import orjson
from anyio.streams.memory import MemoryObjectSendStream

from .events import GuardrailTripped, RunCancelled, RunFailed, RunFinished, ToolFailed, ToolProgress
from .exact_json import dumps as exact_dumps
from .json_forms import safe_repr
from .model.errors import ModelError
from .model.events import Event, ModelRetry
from .result import AgentResult, ToolResult

__all__ = [
    "HEARTBEAT",
    "SSE_HEADERS",
    "ErrorDetail",
    "encode_comment",
    "encode_sse",
    "public_event",
    "public_run_error",
    "sse_stream",
]

E = TypeVar("E", bound=Event)

ErrorDetail: TypeAlias = Literal["public", "full"]
"""How much of a failure a frame tells the client: ``"public"`` (the default) a short public text in place of
each failure's own message (``public_event``), ``"full"`` what ``to_dict()`` holds."""

HEARTBEAT = b": keep-alive\n\n"
"""The comment frame ``sse_stream`` sends while a run is quiet (clients ignore comments)."""

SSE_HEADERS: dict[str, str] = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    # nginx buffers proxied responses by default, which would hold the stream back.
    "X-Accel-Buffering": "no",
}
"""Response headers for an event stream."""


def encode_sse(event: Event, *, errors: ErrorDetail = "public") -> bytes:
    """One SSE frame for ``event``: ``event: <type>``, ``id: <seq>``, ``data: <JSON of to_dict()>``.

    >>> from agentflow.model.events import TextDelta
    >>> print(encode_sse(TextDelta("Hi", run_id="run_1", seq=3)).decode(), end="")
    event: text_delta
    id: 3
    data: {"type":"text_delta","run_id":"run_1","step":0,"seq":3,"text":"Hi"}
    <BLANKLINE>

    Integers beyond 64 bits (a tool's result may hold one) keep every digit. An event holding what JSON
    cannot carry is still written, so the stream goes on to its terminal event: text with a lone surrogate
    (a file name read with ``os.fsdecode``) with the surrogate escaped, any other such value as its
    ``repr``, and an event whose ``to_dict()`` fails as its type and stamps with an ``error``.

    With ``errors="public"`` (the default) the event is first passed through ``public_event``, which replaces
    the texts of a failure by public ones; ``errors="full"`` writes ``to_dict()`` as it is.
    """
    if errors == "public":
        event = public_event(event)
    elif errors != "full":
        raise ValueError(_bad_errors(errors))
    try:
        data = exact_dumps(event.to_dict())
    except (
        Exception
    ) as exc:  # orjson.JSONEncodeError is a TypeError; an overridden to_dict() may raise anything
        data = _written_anyway(event, exc)
    # orjson never writes a raw line break, so the JSON is always exactly one ``data:`` line.
    return b"event: %s\nid: %d\ndata: %s\n\n" % (event.type.encode(), event.seq, data)


def _written_anyway(event: Event, error: BaseException) -> bytes:
    """The JSON of an event ``encode_sse`` could not write as it is (see there)."""
    try:
        return exact_dumps(_scrubbed(event.to_dict()))
    except Exception as exc:
        error = exc
    return orjson.dumps(
        {
            "type": event.type,
            "run_id": event.run_id,
            "step": event.step,
            "seq": event.seq,
            "error": f"this {type(event).__name__} could not be written as JSON: {type(error).__name__}",
        }
    )


def _scrubbed(value: object, depth: int = 0) -> object:
    """``value`` with what JSON cannot carry replaced: lone surrogates escaped, unknown objects as repr."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if value is None or isinstance(value, bool | int | float) or depth > 64:
        return value if depth <= 64 else safe_repr(value)
    if isinstance(value, dict):
        return {_scrubbed(str(k), depth + 1): _scrubbed(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, depth + 1) for v in value]
    return _scrubbed(safe_repr(value), depth + 1)


def _bad_errors(errors: object) -> str:
    return f"errors must be 'public' or 'full', got {errors!r}"


# -- public failure texts ----------------------------------------------------------------------------------

_FAILURES = (RunFailed, ModelRetry, ToolFailed, RunFinished, RunCancelled, ToolProgress, GuardrailTripped)
"""The events that can carry a failure's own text (directly, or in a result's ``error`` / tool results, or
in the event of a sub-run an agent used as a tool forwards as a ``ToolProgress``'s ``data``)."""

_RUN_FAILED = "The run failed."

_MODEL_FAILURES = {
    "AuthenticationError": "The model service refused this server's credentials.",
    "RateLimitError": "The model service is limiting requests.",
    "ModelTimeoutError": "The model service did not answer in time.",
    "ModelConnectionError": "The model service could not be reached.",
    "ContentFilterError": "The model provider's content filter blocked the request or the answer.",
    "StreamCutOffError": "The model's answer was cut off.",
    "IncompleteResponseError": "The model's answer is incomplete.",
    "ProtocolError": "The model service's answer could not be read.",
    "AllModelsFailedError": "The model service could not answer.",
}
"""Public texts for agentflow's own model errors, by class name (what ``RunFailed.error_type`` holds). Each
is a model error whether or not its module was imported (a process that only relays events)."""

_GUARDRAIL_STOPS = {
    "InputGuardrailTripped": "The request was stopped by a policy check.",
    "OutputGuardrailTripped": "The answer was stopped by a policy check.",
    "ToolGuardrailTripped": "A tool call was stopped by a policy check.",
}
"""Public texts for a run a guardrail stopped (by ``RunFailed.error_type``), also a ``GuardrailTripped``'s
``reason``: a guardrail's reason and ``info`` are the application's (a classifier's scores, what matched);
show your own text from the event's ``guardrail`` name, or send ``errors="full"`` to a client you trust."""

_TOOL_FAILURES = {
    "unknown_tool": "The model asked for a tool that does not exist.",
    "invalid_arguments": "The model called the tool with invalid arguments.",
    "timeout": "The tool took too long.",
    "cancelled": "The tool call was cancelled.",
    "denied": "The tool call was not approved.",
    "rejected": "The tool call was stopped by a policy check.",
}
"""Public texts for a failed tool call, by ``ToolResult.error_type`` (any other: "The tool failed.")."""

# A model error with a status says so first, as ``HTTP 503: …`` (``agentflow.model.errors``): a retry's reason
# is that message, and the status is all of it a browser gets.
_HTTP_STATUS = re.compile(r"HTTP ([1-5][0-9][0-9])\b")
# Where a fallback's last model's failure starts in its ``AllModelsFailedError``'s message: "… (3 of 3) with
# HTTP 503: …". The last of them in the text is the last model tried, a nested fallback's included.
_LAST_MEMBER = re.compile(r"\((\d+) of \1\) with ")


def public_run_error(error_type: str, status: int | None = None) -> str:
    """A short text for a failed run that tells a user what happened and nothing of how the server is set up.

    Built from what ``RunFailed`` says apart from its message: a model error (``error_type`` names a
    ``ModelError`` class) gets a sentence for its kind and its HTTP status, anything else "The run failed.".
    Never a URL, a host, a model name or a hint about configuration.

    >>> public_run_error("AuthenticationError", 401)
    "The model service refused this server's credentials (HTTP 401)."
    >>> public_run_error("ServerError", 503)
    'The model service returned an error (HTTP 503).'
    >>> public_run_error("SessionStoreError")
    'The run failed.'
    >>> public_run_error("AllModelsFailedError", 429)
    'The model service could not answer (HTTP 429).'

    A run a guardrail stopped (``InputGuardrailTripped``, ``OutputGuardrailTripped``) says so, without the
    guardrail's reason.

    Every model of a fallback failing (``AllModelsFailedError``) is a model error too. Its ``RunFailed``
    status is the members' common one, ``None`` when they differ; ``public_event`` then passes the status of
    the last model tried, the failure that ended the run after every fallback (``None`` if that one had no
    HTTP status: a timeout, a connection error).
    """
    if error_type in _GUARDRAIL_STOPS:
        return _GUARDRAIL_STOPS[error_type]
    if error_type not in _MODEL_FAILURES and error_type not in _model_error_names():
        # The application's own error (a tool's on_error="raise", a session store, a validator), whose text
        # is for its developers; ``error_type`` names it.
        return _RUN_FAILED
    text = _MODEL_FAILURES.get(error_type, "The model service returned an error.")
    return text if status is None else f"{text[:-1]} (HTTP {status})."


def _last_member_status(message: str) -> int | None:
    """The HTTP status of the last model an ``AllModelsFailedError``'s ``message`` names, if it had one."""
    starts = [match.end() for match in _LAST_MEMBER.finditer(message)]
    found = _HTTP_STATUS.match(message, starts[-1]) if starts else None
    return None if found is None else int(found.group(1))


def _model_error_names() -> set[str]:
    # Walked each time (once per failed run): a transport of your own may define ModelError subclasses late.
    names: set[str] = set()
    pending: list[type[ModelError]] = [ModelError]
    while pending:
        cls = pending.pop()
        names.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return names


def public_event(event: E) -> E:
    """``event`` as a browser may see it: each failure's own text replaced by a public one.

    - ``RunFailed``: ``error`` becomes ``public_run_error(error_type, status)`` (for an
      ``AllModelsFailedError`` whose members' statuses differ, the last model's status); ``error_type``,
      ``status`` and ``retryable`` stay as they are;
    - ``ModelRetry``: ``reason`` becomes "The model service returned an error (HTTP 503)." (the status only
      when the reason starts with one), else "The model call failed.";
    - ``ToolFailed``, and a failed tool result in a terminal event's ``result`` / ``partial``: ``error`` and
      ``output`` (the ``TOOL_ERROR`` text the model got) become a sentence for its ``error_type``;
    - a result's ``error`` (a failed run's ``partial``) becomes the run's public text; the partial of a run
      an output guardrail stopped loses the answer it stopped (``output``, ``output_text``);
    - ``GuardrailTripped``: ``reason`` becomes "The request (or answer) was stopped by a policy check." and
      ``info`` ``None`` (what a check found is the application's); ``kind`` and ``guardrail`` stay;
    - ``ToolProgress`` whose ``data`` is an event (a sub-agent's, forwarded by ``as_tool``): that event, made
      public the same way, at any depth.

    Any other event is returned as it is (the same object), as is a failure event with nothing to
    replace. What stays is everything a UI decides with: types, statuses, ``retryable``, ``ok``, the
    partial answer. Keep the full texts for the server (``to_dict()`` has them; so does the event itself).

    >>> failed = RunFailed("AuthenticationError", "HTTP 401: bad key (POST http://10.0.0.7/v1)", status=401,
    ...                    retryable=False)
    >>> public_event(failed).error
    "The model service refused this server's credentials (HTTP 401)."
    """
    if not isinstance(event, _FAILURES):
        return event  # the common case (every delta): one check
    return cast(E, _public(event))


def _public(event: Event) -> Event:
    if isinstance(event, RunFailed):
        status = event.status
        if status is None and event.error_type == "AllModelsFailedError":
            status = _last_member_status(event.error)  # the members' statuses differ: the last one's
        text = public_run_error(event.error_type, status)
        partial = None if event.partial is None else _public_result(event.partial, text)
        if partial is not None and event.error_type == "OutputGuardrailTripped":
            # The answer an output guardrail stopped is kept for the server's logs, not shown.
            partial = attrs.evolve(partial, output=None, output_text="", reasoning_text=None)
        return attrs.evolve(event, error=text, partial=partial)
    if isinstance(event, ModelRetry):
        found = _HTTP_STATUS.match(event.reason)
        if found is None:
            return attrs.evolve(event, reason="The model call failed.")
        return attrs.evolve(event, reason=f"The model service returned an error (HTTP {found.group(1)}).")
    if isinstance(event, ToolFailed):
        return attrs.evolve(event, result=_public_tool_result(event.result))
    if isinstance(event, RunFinished):
        result = _public_result(event.result, _RUN_FAILED)
        return event if result is event.result else attrs.evolve(event, result=result)
    if isinstance(event, RunCancelled):
        partial = _public_result(event.partial, _RUN_FAILED)
        return event if partial is event.partial else attrs.evolve(event, partial=partial)
    if isinstance(event, GuardrailTripped):
        stopped = "InputGuardrailTripped" if event.kind == "input" else "OutputGuardrailTripped"
        return attrs.evolve(event, reason=_GUARDRAIL_STOPS[stopped], info=None)
    if isinstance(event, ToolProgress) and isinstance(event.data, Event):
        # A sub-agent's event (``as_tool`` forwards them): its failures are as private as the run's own.
        data = public_event(event.data)
        return event if data is event.data else attrs.evolve(event, data=data)
    return event


def _public_result(result: AgentResult[Any], error: str) -> AgentResult[Any]:
    """``result`` with its ``error`` (if any) as ``error`` and its failed tool results public; the same
    object when there is nothing to replace."""
    failed = any(not r.ok for r in result.tool_results)
    if result.error is None and not failed:
        return result
    tool_results = tuple(_public_tool_result(r) for r in result.tool_results)
    return attrs.evolve(result, error=None if result.error is None else error, tool_results=tool_results)


def _public_tool_result(result: ToolResult) -> ToolResult:
    if result.ok:
        return result
    text = _TOOL_FAILURES.get(result.error_type or "", "The tool failed.")
    return attrs.evolve(result, output=text, error=text)


def encode_comment(text: str = "") -> bytes:
    """A comment frame (ignored by clients; keeps idle connections and proxies alive).

    >>> encode_comment("hello")
    b': hello\\n\\n'
    """
    lines = text.splitlines() or [""]
    return b"".join(b": " + line.encode() + b"\n" if line else b":\n" for line in lines) + b"\n"


async def sse_stream(
    events: AsyncIterable[Event],
    *,
    heartbeat: float | None = None,
    errors: ErrorDetail = "public",
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
) -> AsyncGenerator[bytes, None]:
    """The frames of ``events`` (e.g. an ``AgentRun``), in order, ending when ``events`` ends.

    ``heartbeat`` (seconds) sends ``HEARTBEAT`` at the end of every period of that length in which no frame
    went out, so proxies do not close a connection while a tool runs for minutes. The periods run on a fixed
    clock, so a quiet connection hears something at least every ``2 * heartbeat`` seconds: choose at most
    half the idle timeout of the proxies in between. With a heartbeat the events are read by a task of
    the stream's own task group: close the stream in the task that iterates it (run it to the end, or wrap
    it in ``contextlib.aclosing``). An exception raised by ``events`` is raised here, unchanged. ``sleep``
    is injectable for tests.

    ``errors`` is ``encode_sse``'s: ``"public"`` (the default) sends a failure's public text
    (``public_event``) instead of its message, which may name internal URLs and configuration; ``"full"``
    sends the message, for a client you trust with it.
    """
    if errors not in ("public", "full"):
        raise ValueError(_bad_errors(errors))
    if heartbeat is None:
        async for event in events:
            yield encode_sse(event, errors=errors)
        return
    if heartbeat <= 0:
        raise ValueError(f"heartbeat must be a positive number of seconds or None, got {heartbeat!r}")
    # Buffer 0: an item is handed over only when the consumer takes it, so backpressure reaches the run.
    send, receive = anyio.create_memory_object_stream[_Item](0)
    quiet = _Quiet()
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, events, send.clone())
        tg.start_soon(_tick, send, quiet, heartbeat, sleep)
        try:
            async with receive:
                async for item in receive:
                    if item is None:
                        break
                    if isinstance(item, Exception):
                        error = item
                        break
                    if isinstance(item, bytes):
                        yield item
                    else:
                        frame = encode_sse(item, errors=errors)  # never raises: an event is always written
                        quiet.sent = True
                        yield frame
        except GeneratorExit:
            # Closed early (aclose): stop the helpers and end quietly. Raised inside the task group it
            # would come out wrapped in an exception group.
            pass
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error


_Item: TypeAlias = "Event | bytes | Exception | None"
"""What the heartbeat helpers hand over: an event, the heartbeat, the source's error or ``None`` (end)."""


class _Quiet:
    """Whether an event went out since the last heartbeat tick."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


async def _pump(events: AsyncIterable[Event], send: MemoryObjectSendStream[_Item]) -> None:
    """Read the events in this task (the consumer may wait for a heartbeat meanwhile) and hand them over."""
    with send:
        try:
            try:
                async for event in events:
                    await send.send(event)
            except Exception as exc:
                # Handed over so the consumer raises it as is, not wrapped in an ExceptionGroup.
                await send.send(exc)
                return
            await send.send(None)
        except anyio.BrokenResourceError:
            pass  # the consumer stopped reading


async def _tick(
    send: MemoryObjectSendStream[_Item],
    quiet: _Quiet,
    interval: float,
    sleep: Callable[[float], Awaitable[None]],
) -> None:
    """Every ``interval``: a heartbeat, unless an event went out since the last tick."""
    with send:
        try:
            while True:
                await sleep(interval)
                if quiet.sent:
                    quiet.sent = False
                else:
                    await send.send(HEARTBEAT)
        except anyio.BrokenResourceError:
            pass

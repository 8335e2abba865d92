"""Tool outcomes as text for the model: return values → ``output``, failures → ``TOOL_ERROR: {…}``.

The failure text keeps the reference's format: ``TOOL_ERROR: `` followed by compact JSON with the keys
``errorType``, ``error``, ``tool`` and ``callId`` in that order (``callId`` left out when the call has no
id). ``errorType`` is one of ``unknown_tool``, ``invalid_arguments``, ``timeout``, ``exception`` (and
``cancelled`` for the synthetic results a runtime writes for calls cut short). Pure functions, no I/O.
"""

from __future__ import annotations

import decimal
import enum
import os
from typing import Any, Final, Literal

import attrs
import orjson

from ..exact_json import decimal_value
from ..exact_json import dumps as exact_dumps
from ..model.messages import ToolCall
from ..result import ToolResult

__all__ = [
    "TOOL_ERROR_PREFIX",
    "ToolErrorType",
    "cancelled_result",
    "exception_message",
    "failed_result",
    "output_text",
    "tool_error_text",
]

TOOL_ERROR_PREFIX: Final = "TOOL_ERROR: "

ToolErrorType = Literal["unknown_tool", "invalid_arguments", "timeout", "exception", "cancelled"]


def tool_error_text(error_type: str, error: str, tool: str, call_id: str | None) -> str:
    """The ``TOOL_ERROR: {…}`` text fed back to the model.

    >>> print(tool_error_text("timeout", "timed out after 5 s", "search", "call_1"))
    TOOL_ERROR: {"errorType":"timeout","error":"timed out after 5 s","tool":"search","callId":"call_1"}
    """
    payload: dict[str, str] = {"errorType": error_type, "error": error, "tool": tool}
    if call_id:
        payload["callId"] = call_id
    return TOOL_ERROR_PREFIX + orjson.dumps(payload).decode()


def failed_result(
    call: ToolCall, error_type: ToolErrorType, error: str, *, tool: str | None = None, duration: float = 0.0
) -> ToolResult:
    """A failed ``ToolResult`` for ``call`` whose output is the ``TOOL_ERROR`` text."""
    name = tool or call.name
    return ToolResult(
        call_id=call.id,
        name=name,
        output=tool_error_text(error_type, error, name, call.id),
        ok=False,
        error_type=error_type,
        error=error,
        duration=duration,
    )


def cancelled_result(
    call: ToolCall, reason: str = "the run was cancelled before this tool call finished"
) -> ToolResult:
    """The synthetic result a runtime writes for a call that was cut short, so memory stays paired."""
    return failed_result(call, "cancelled", reason)


def exception_message(exc: BaseException) -> str:
    """``"ValueError: bad city"``; the class name alone when the message is empty."""
    message = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


def _default(value: Any) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, decimal.Decimal):
        return decimal_value(value)
    raise TypeError(f"values of type {type(value).__qualname__} cannot be turned into JSON")


def _encodable(text: str) -> str:
    """``text``, with lone surrogates (``os.fsdecode`` of a non-UTF-8 file name) escaped as ``\\udcff``:
    they cannot be sent to the model as UTF-8, and would fail the run's next request instead of the tool."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def output_text(value: Any) -> str:
    """A tool's return value as the text the model sees: str as is, None → "", anything else as JSON.

    Integers keep every digit, however large (JSON numbers have no 64-bit limit).

    Raises ``TypeError`` for values that have no JSON form.

    >>> output_text({"temp": 21.5, "unit": "C"})
    '{"temp":21.5,"unit":"C"}'
    >>> output_text(None), output_text("sunny")
    ('', 'sunny')
    >>> output_text({"total": 2**64})
    '{"total":18446744073709551616}'
    """
    if isinstance(value, str):
        return value if value.isascii() else _encodable(value)
    if value is None:
        return ""
    try:
        return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        pass  # perhaps an integer beyond 64 bits, which ``exact_dumps`` writes (orjson first is the hot path)
    try:
        return exact_dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"the tool's return value cannot be sent to the model as JSON: {exc}") from None

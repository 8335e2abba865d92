"""Tool outcomes as text for the model: return values → ``output``, failures → ``TOOL_ERROR: {…}``.

The failure text keeps the reference's format: ``TOOL_ERROR: `` followed by compact JSON with the keys
``errorType``, ``error``, ``tool`` and ``callId`` in that order (``callId`` left out when the call has no
id). ``errorType`` is one of ``unknown_tool``, ``invalid_arguments``, ``timeout``, ``exception``,
``denied`` (a call a person did not approve: ``agentflow.tools.approval``), ``rejected`` (a call, or its
result, a tool guardrail rejected: ``agentflow.tools.tool_guardrails``), and ``cancelled`` for the synthetic
results a runtime writes for calls cut short. Pure functions, no I/O.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Final, Literal

import attrs
import orjson

from ..exact_json import dumps as exact_dumps
from ..json_forms import encodable_text, json_form, lenient_form, plain_text
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

_log = logging.getLogger("agentflow.tools")

ToolErrorType = Literal[
    "unknown_tool", "invalid_arguments", "timeout", "exception", "cancelled", "denied", "rejected"
]


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


MAX_ERROR_CHARS: Final = 2000
"""The most of an exception's message a ``TOOL_ERROR`` carries: the rest is cut (and marked as cut), as an
error that quotes a whole response body would otherwise fill the model's context."""


def exception_message(exc: BaseException, limit: int | None = None) -> str:
    """``"ValueError: bad city"``; the class name alone when the message is empty.

    With a ``limit``, a longer message is cut to that many characters, and says so.

    >>> exception_message(ValueError("x" * 50), limit=20)
    'ValueError: xxxxxxxx… [42 more characters]'
    """
    message = str(exc).strip()
    name = type(exc).__name__
    text = f"{name}: {message}" if message else name
    if limit is not None and len(text) > limit:
        return f"{text[:limit]}… [{len(text) - limit} more characters]"
    return text


def output_text(value: Any) -> str:
    """A tool's return value as the text the model sees: str as is, None → "", anything else as JSON.

    Integers keep every digit, however large (JSON numbers have no 64-bit limit). A float that is not finite
    is written ``NaN``, ``Infinity`` or ``-Infinity`` when it is the whole value, ``null`` inside JSON.

    Never raises: by now the tool has run, and an error would tell the model the call failed (it would call
    again, repeating what the tool did). What has no JSON form is written as its ``str()``: the whole value
    when it is not a container, else just the parts that have none.

    >>> output_text({"temp": 21.5, "unit": "C"})
    '{"temp":21.5,"unit":"C"}'
    >>> output_text(None), output_text("sunny")
    ('', 'sunny')
    >>> output_text({"total": 2**64})
    '{"total":18446744073709551616}'
    """
    if isinstance(value, str):
        return value if value.isascii() else encodable_text(value)
    if value is None:
        return ""
    try:
        text = orjson.dumps(value, default=json_form, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        pass  # perhaps an integer beyond 64 bits, which ``exact_dumps`` writes (orjson first is the hot path)
    else:
        # orjson writes NaN and infinities as null: alone, that would say the tool returned nothing.
        return text if text != "null" else _non_finite(value)
    try:
        return exact_dumps(value, default=json_form, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        pass
    return _fallback_text(value)


def _non_finite(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return "null"


def _fallback_text(value: Any) -> str:
    """The text of a return value that JSON cannot carry as it is (a plain object, a cycle…)."""
    _log.warning(
        "a tool returned a value of type %s that has no JSON form; the model is shown it (or its parts) as "
        "str()",
        type(value).__qualname__,
    )
    if isinstance(value, list | tuple | dict | set | frozenset) or _is_record(value):
        try:
            return exact_dumps(value, default=lenient_form, option=orjson.OPT_NON_STR_KEYS).decode()
        except (orjson.JSONEncodeError, RecursionError):
            pass  # keys JSON cannot have, a reference cycle: the whole as text
    return encodable_text(plain_text(value))


def _is_record(value: Any) -> bool:
    return attrs.has(type(value)) or (dataclasses.is_dataclass(value) and not isinstance(value, type))

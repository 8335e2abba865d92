"""The host side of the sandbox channel as a pure codec: frames in, typed messages out (no I/O).

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. The child (``_runner.py``)
speaks the same format with the stdlib ``json`` module, whose integers have no size limit, so the host
reads and writes them exactly too (``exact_json``): code's ``10**20 + 1`` reaches a tool as that integer.
Everything the child sends is untrusted: any malformed frame raises ``FrameError`` and the host kills the
process.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs
import orjson

from ..exact_json import dumps as exact_dumps
from ..exact_json import loads as exact_loads
from ..json_forms import encodable_text, json_form, plain_text
from ..result import ToolResult
from .code_result import CodeErrorType
from .errors import SandboxError
from .limits import ExecutionLimits

__all__ = [
    "HEADER",
    "MAX_CHILD_READS",
    "PROTOCOL_VERSION",
    "ChildMessage",
    "CodeWaits",
    "FrameError",
    "OutputChunk",
    "Ready",
    "StepDone",
    "ToolCallRequest",
    "decode_child_message",
    "encode_frame",
    "exec_frame",
    "frame_size",
    "max_frame_bytes",
    "tool_failure_frame",
    "tool_result_frame",
]

PROTOCOL_VERSION = 1
HEADER = struct.Struct(">I")
FRAME_MARGIN = 16 * 1024 * 1024
"""Room above a step's value and output in a frame: tool arguments, error text, JSON overhead."""
MAX_CHILD_READS = 256 * 1024 * 1024
"""The largest frame the child reads (``_runner._MAX_FRAME``): a bigger one makes it hang up, so the host
answers a tool call whose result would not fit with a failure instead (``tool_result_frame``)."""


class FrameError(SandboxError):
    """The child sent something that is not a valid frame of the protocol."""


@attrs.frozen
class Ready:
    """The child is up and waits for steps; ``site_error`` says why the host's packages it was asked to
    add (``site_packages=True`` with another interpreter) cannot be imported, if they cannot."""

    python: str
    pid: int
    site_error: str | None = None


@attrs.frozen
class ToolCallRequest:
    """Code called a tool; the answer goes back under the same ``id``. ``waits``: the code now waits for
    the answer (as a ``CodeWaits(True)`` right after the call would say)."""

    id: int
    name: str
    args: dict[str, Any]
    waits: bool = False


@attrs.frozen
class CodeWaits:
    """The code started (``waiting``) or stopped waiting for answers to its tool calls: the host stops the
    code's clock only while it waits and a call of it runs (the child is not trusted to say more)."""

    waiting: bool


@attrs.frozen
class OutputChunk:
    """Text the code printed (already within the child's budget)."""

    stream: Literal["stdout", "stderr"]
    text: str


@attrs.frozen
class StepDone:
    """The step ``step`` ended; ``dropped_*`` count the output bytes cut by the child; ``frame_bytes`` is
    the size of the frame's body, which bounds the value's size as JSON."""

    step: int
    ok: bool
    value: Any = None
    error: str | None = None
    error_type: CodeErrorType | None = None
    is_final: bool = False
    dropped_stdout: int = 0
    dropped_stderr: int = 0
    frame_bytes: int = attrs.field(default=0, eq=False)  # how it travelled, not what it says


ChildMessage = Ready | ToolCallRequest | CodeWaits | OutputChunk | StepDone


def encode_frame(message: Mapping[str, Any]) -> bytes:
    """One frame: the length header then the JSON body (keys that are numbers written as text).

    >>> encode_frame({"t": "x"})
    b'\\x00\\x00\\x00\\t{"t":"x"}'
    """
    body = exact_dumps(message, option=orjson.OPT_NON_STR_KEYS)
    return HEADER.pack(len(body)) + body


def max_frame_bytes(limits: ExecutionLimits) -> int:
    """The largest frame the host reads from the child during a step with ``limits``.

    The child refuses a tool call whose frame would be bigger (the code gets a ``ValueError``), so only a
    broken child ever sends one.

    >>> max_frame_bytes(ExecutionLimits(max_result_bytes=1024, max_output_bytes=0)) - FRAME_MARGIN
    1024
    """
    return limits.max_result_bytes + limits.max_output_bytes + FRAME_MARGIN


def frame_size(header: bytes, limit: int) -> int:
    """The body length announced by ``header``; ``FrameError`` when it is over ``limit``."""
    (size,) = HEADER.unpack(header)
    if size > limit:
        raise FrameError(f"the sandbox sent a frame of {size} bytes (limit {limit})")
    return int(size)


def exec_frame(
    code: str,
    step: int,
    tool_names: Sequence[str],
    limits: ExecutionLimits,
    rlimits: Mapping[str, int | None],
    parameters: Mapping[str, Sequence[str]] | None = None,
) -> bytes:
    """The frame that runs one step; ``rlimits`` are applied by the child before its first step, and
    ``parameters`` (tool name → its parameter names in order) let code pass a tool's arguments by position.
    A tool whose names say its first parameter takes an object (``ParameterNames.first_takes_object``) is
    listed under ``object_first``: the child passes a lone dict to it as that parameter's value.
    """
    parameters = parameters or {}
    return encode_frame(
        {
            "t": "exec",
            "code": code,
            "step": step,
            "tools": list(tool_names),
            "params": {name: list(names) for name, names in parameters.items()},
            "object_first": [
                name for name, names in parameters.items() if getattr(names, "first_takes_object", False)
            ],
            "limits": {
                "cpu_seconds": limits.cpu_seconds,
                "max_output_bytes": limits.max_output_bytes,
                "max_result_bytes": limits.max_result_bytes,
                "max_call_bytes": max_frame_bytes(limits),
                "max_tool_calls": limits.max_step_tool_calls,
            },
            "rlimits": dict(rlimits),
        }
    )


def tool_result_frame(call_id: int, result: ToolResult, limit: int = MAX_CHILD_READS) -> bytes:
    """The answer to a tool call: the value when ``ok``, else the error.

    The value reaches the code as it is, part by part: a part JSON has no type for takes the form the
    model's text gives it (``json_forms.lenient_form``: a set is a list, bytes their text, an object without
    a JSON form its ``str()``), so one odd part never turns the whole value into a string; a value with no
    JSON form at all is the tool's output text, which the model reads. A float that is not finite stays one
    (see ``NON_FINITE``). An answer over ``limit`` bytes is replaced by a failure
    saying so: the child could not read it.

    >>> tool_result_frame(1, ToolResult("c", "t", "12", value={1, 2}))[4:]
    b'{"t":"result","id":1,"ok":true,"value":[1,2]}'
    >>> tool_result_frame(2, ToolResult("c", "t", "", value=[2**64]))[4:]
    b'{"t":"result","id":2,"ok":true,"value":[18446744073709551616]}'
    >>> tool_result_frame(3, ToolResult("c", "t", "", value={"k": b"\\xff", "x": float("inf")}))[4:]
    b'{"t":"result","id":3,"ok":true,"value":{"k":"<1 bytes of binary data>","x":Infinity}}'
    >>> too_big = tool_result_frame(4, ToolResult("c", "t", "", value="x" * 100), limit=50)
    >>> orjson.loads(too_big[4:])["error"][:48]
    "TOOL_ERROR: the result of tool 't' is 142 bytes "
    """
    if not result.ok:
        return tool_failure_frame(call_id, result.output)
    answer = {"t": "result", "id": call_id, "ok": True, "value": result.value}
    try:
        frame: bytes | None = encode_frame(answer)
    except orjson.JSONEncodeError:
        frame = None
    # orjson writes NaN and the infinities as null: only then (or when it failed) is the value walked. A
    # ``null`` is mostly a ``None`` (or the text "null"): a look for floats, which copies nothing, rules
    # those out first.
    if frame is None or (b"null" in frame and _may_hold_non_finite(result.value)):
        try:
            frame = encode_frame({**answer, "value": code_value(result.value, opaque=result.output)})
        except (orjson.JSONEncodeError, RecursionError):  # not expected: ``code_value`` leaves nothing out
            frame = encode_frame({**answer, "value": encodable_text(result.output)})
    size = len(frame) - HEADER.size
    if size > limit:
        return tool_failure_frame(
            call_id,
            f"TOOL_ERROR: the result of tool {result.name!r} is {size} bytes as JSON, over the sandbox's "
            f"limit of {limit}; ask the tool for less (a part, a page or a summary)",
        )
    return frame


_PLAIN_LEAVES: Final = frozenset({str, int, bool, type(None)})


def _may_hold_non_finite(value: Any) -> bool:
    """Whether orjson may have written a float of ``value`` that is not finite as ``null``: ``False`` only
    when every part is a finite float or a plain leaf inside dicts, lists and tuples (what a tool's JSON
    value is made of). Any other part (a dataclass, an enum, a subclass…) answers ``True``: ``code_value``
    then walks the value as it always did.

    Called only on a value orjson has just written, so it holds no cycle; kept flat, as ``code_value``'s copy
    is what this spares.
    """
    pending = [value]
    while pending:
        part = pending.pop()
        kind = type(part)
        if kind is dict:
            pending.extend(part.values())
        elif kind is list or kind is tuple:
            pending.extend(part)
        elif kind is float:
            if not math.isfinite(part):
                return True
        elif kind not in _PLAIN_LEAVES:
            return True
    return False


def tool_failure_frame(call_id: int, message: str) -> bytes:
    """A failed tool call: the code raises ``ToolError(message)``."""
    return encode_frame({"t": "result", "id": call_id, "ok": False, "error": message})


NON_FINITE: Final = {"nan": b"NaN", "inf": b"Infinity", "-inf": b"-Infinity"}
"""How a host frame writes the floats JSON has no number for. Not JSON, but the child's ``json.loads``
reads these literals back as the same floats (the child's own frames never hold them)."""

_MAX_DEPTH: Final = 200
"""Below this many levels (a reference cycle, most likely) a part is sent as its ``str()``: orjson writes
no deeper than 254 levels."""
_MAX_INT_BITS: Final = 14_000
"""The largest integer the child reads (``json.loads`` stops at 4,300 digits); a bigger one is sent as a
note of its size."""


def code_value(value: Any, depth: int = 0, *, opaque: str | None = None) -> Any:
    """A copy of ``value`` that ``encode_frame`` writes, converted part by part (see ``tool_result_frame``);
    ``opaque`` stands for the value when it has no JSON form at all (its parts never use it).

    >>> import decimal
    >>> encode_frame(code_value({"n": decimal.Decimal("1.10"), 2: {3}, "x": float("nan")}))[4:]
    b'{"n":1.1,"2":[3],"x":NaN}'
    """
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value if kind is not str or value.isascii() else encodable_text(value)
    if kind is int:
        return value if value.bit_length() <= _MAX_INT_BITS else f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else orjson.Fragment(NON_FINITE[repr(float(value))])
    if depth >= _MAX_DEPTH:
        return encodable_text(plain_text(value))
    depth += 1
    if isinstance(value, dict):
        return {_code_key(key): code_value(item, depth) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [code_value(item, depth) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # As orjson writes one, but each field converted on its own.
        return {f.name: code_value(getattr(value, f.name), depth) for f in dataclasses.fields(value)}
    if not attrs.has(kind) and not isinstance(value, enum.Enum):
        try:
            orjson.dumps(value)  # dates, times, UUIDs, str and int subclasses: orjson's own form
        except orjson.JSONEncodeError:
            pass
        else:
            return value
    try:
        form = json_form(value)
    except Exception:  # no form (or its own method failed): its text, as the model's text shows a part
        return encodable_text(plain_text(value) if opaque is None else opaque)
    return encodable_text(form) if isinstance(form, str) else code_value(form, depth)


def _code_key(key: Any) -> Any:
    if isinstance(key, str):
        return encodable_text(key)
    if key is None or isinstance(key, bool | int | float):
        return key  # written by ``OPT_NON_STR_KEYS`` as JSON writes the number
    return encodable_text(plain_text(key))


def decode_child_message(body: bytes) -> ChildMessage:
    """Parse and check one frame body from the child.

    >>> decode_child_message(b'{"t":"call","id":3,"name":"add","args":{"a":1}}')
    ToolCallRequest(id=3, name='add', args={'a': 1}, waits=False)
    >>> decode_child_message(b'{"t":"call","id":4,"name":"store","args":{"n":100000000000000000001}}').args
    {'n': 100000000000000000001}
    >>> decode_child_message(b'{"t":"call","id":"x"}')
    Traceback (most recent call last):
    ...
    agentflow.sandbox.frames.FrameError: bad 'call' frame from the sandbox: id must be an integer
    """
    try:
        message = exact_loads(body)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"the sandbox sent a frame that is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise FrameError("the sandbox sent a frame that is not a JSON object")
    kind = message.get("t")
    try:
        if kind == "call":
            return ToolCallRequest(
                id=_get(message, "id", int),
                name=_get(message, "name", str),
                args=_get(message, "args", dict),
                waits=bool(message.get("w")),
            )
        if kind == "wait" or kind == "resume":
            return CodeWaits(waiting=kind == "wait")
        if kind == "out":
            stream = _get(message, "s", str)
            if stream not in ("stdout", "stderr"):
                raise ValueError(f"unknown stream {stream!r}")
            text = _get(message, "d", str)
            return OutputChunk(stream="stdout" if stream == "stdout" else "stderr", text=text)
        if kind == "done":
            return attrs.evolve(_decode_done(message), frame_bytes=len(body))
        if kind == "ready":
            if message.get("v") != PROTOCOL_VERSION:
                raise ValueError(f"protocol version {message.get('v')!r}, expected {PROTOCOL_VERSION}")
            site_error = message.get("site_error")
            if site_error is not None and not isinstance(site_error, str):
                raise ValueError("site_error must be a string")
            python, pid = _get(message, "python", str), _get(message, "pid", int)
            return Ready(python=python, pid=pid, site_error=site_error)
    except ValueError as exc:
        raise FrameError(f"bad {kind!r} frame from the sandbox: {exc}") from None
    raise FrameError(f"the sandbox sent an unknown frame type {kind!r}")


def _decode_done(message: dict[str, Any]) -> StepDone:
    ok = _get(message, "ok", bool)
    error = message.get("error")
    raw_type = message.get("error_type")
    if error is not None and not isinstance(error, str):
        raise ValueError("error must be a string")
    error_type = CodeErrorType(raw_type) if raw_type is not None else None
    if not ok and (error is None or error_type is None):
        raise ValueError("a failed step needs error and error_type")
    dropped = message.get("dropped") or {}
    if not isinstance(dropped, dict):
        raise ValueError("dropped must be an object")
    counts = [dropped.get(name, 0) for name in ("stdout", "stderr")]
    if not all(isinstance(count, int) and count >= 0 for count in counts):
        raise ValueError("dropped counts must be integers >= 0")
    return StepDone(
        step=_get(message, "step", int),
        ok=ok,
        value=message.get("value") if ok else None,
        error=None if ok else error,
        error_type=None if ok else error_type,
        is_final=bool(message.get("final")) and ok,
        dropped_stdout=counts[0],
        dropped_stderr=counts[1],
    )


def _get(message: dict[str, Any], key: str, kind: type[Any]) -> Any:
    value = message.get(key)
    # bool is an int subclass: an id of ``true`` is not an id.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        expected = {int: "an integer", str: "a string", dict: "an object", bool: "a boolean"}[kind]
        raise ValueError(f"{key} must be {expected}")
    return value

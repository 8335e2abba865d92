"""``CodeResult``: the outcome of one code step, and ``CodeErrorType``, why a step failed.

Plain values; the CodeAct runtime turns them into ``CODE_RESULT`` / ``CODE_ERROR`` memory messages.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = ["CodeErrorType", "CodeResult"]


class CodeErrorType(enum.StrEnum):
    """Why a code step failed (a ``str``: ``CodeErrorType.TIMEOUT == "timeout"``)."""

    SYNTAX = "syntax"
    """The code does not compile."""
    EXCEPTION = "exception"
    """The code raised (``SystemExit`` included)."""
    TOOL_ERROR = "tool_error"
    """A tool called from the code failed and the code did not catch the ``ToolError``."""
    TIMEOUT = "timeout"
    """The step ran past ``wall_time``; the process was killed."""
    CPU_LIMIT = "cpu_limit"
    """The step used up ``cpu_seconds``; the process lives on (unless the host had to kill it: a long call
    into C cannot be interrupted, and then ``state_lost`` is true)."""
    MEMORY = "memory"
    """The code ran out of its address space (``MemoryError``)."""
    OUTPUT_LIMIT = "output_limit"
    """The step's value is bigger than ``max_result_bytes``."""
    KILLED = "killed"
    """The process ended during the step (a crash, a signal, ``os._exit``)."""
    PROTOCOL = "protocol"
    """The process broke the host channel (e.g. code wrote to its descriptors); it was killed."""

    # Set by the runtime for code that no executor ran (``CodeExecuted.error_type`` says which).
    NOT_RUN = "not_run"
    """The runtime did not run the code: a limit was reached, the answer was cut before the code object
    ended, or the same answer made native tool calls."""
    UNSUPPORTED_LANGUAGE = "unsupported_language"
    """The code is not Python, so it was not run."""
    CANCELLED = "cancelled"
    """The run ended (cancelled, timed out or failed) while the step ran; its process was killed."""


@attrs.frozen
class CodeResult:
    """What one code step produced.

    ``value`` is the JSON-safe value of the last expression, of a top-level ``return`` or of
    ``final_answer(x)`` (then ``is_final`` is true). ``stdout``/``stderr`` are the captured output, cut at
    ``max_output_bytes`` with a ``[… truncated …]`` marker. On failure ``ok`` is false, ``error`` is the
    message (with a short traceback of the user's code) and ``error_type`` says why. ``state_lost`` is true
    when the process died or was killed: the next step starts from a fresh interpreter.

    >>> CodeResult(ok=True, value=42).error_type is None
    True
    """

    ok: bool
    value: Any = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    error_type: CodeErrorType | None = None
    is_final: bool = False
    duration: float = 0.0
    state_lost: bool = False

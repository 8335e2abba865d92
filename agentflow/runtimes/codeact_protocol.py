"""The CodeAct message protocol: read a model's answer, and write what a code step produced.

The model answers each turn with one JSON object::

    {"type": "code", "language": "python", "code": "..."}     run this code
    {"type": "final", "output": "..."}                       the final answer

``parse_answer`` turns the answer text into a ``CodeMessage``, a ``FinalMessage`` or ``NotProtocol`` (with
the reason), tolerating what models actually send: Markdown fences and prose around the object, a non-protocol
``{…}`` before the real one, raw newlines inside the JSON strings (invalid JSON, but the most common slip
when a model writes code into a string), ``"py"``/``"python3"`` as the language, the code as a list of lines.
It reads at most the answer's first ``MAX_ANSWER_CHARS`` characters, in time linear in them, so a runaway
answer (a megabyte of ``{``) cannot stall the event loop.

``code_result_text`` / ``code_error_text`` write the outcome of a step as the reference's memory texts,
``CODE_RESULT: {"result":…,"stdout":…}`` and ``CODE_ERROR: {"error":…,"stdout":…}`` (compact JSON, keys in
that order; ``stdout`` and ``stderr`` only when non-empty); ``step_text`` shows the model at most a given
number of characters of a step's value (``result_preview``), with a marker saying what was cut.

Pure functions and values: no I/O, no awaits. JSON goes through orjson.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

import attrs
import orjson

from ..sandbox.code_result import CodeResult
from .json_text import MAX_SCANNED_CHARS, json_spans

__all__ = [
    "CODE_ERROR_PREFIX",
    "CODE_RESULT_PREFIX",
    "MAX_ANSWER_CHARS",
    "PYTHON_NAMES",
    "RESULT_TRUNCATED",
    "Answer",
    "CodeMessage",
    "FinalMessage",
    "NotProtocol",
    "answer_text",
    "code_error_text",
    "code_result_text",
    "parse_answer",
    "result_preview",
    "step_text",
]

CODE_RESULT_PREFIX: Final = "CODE_RESULT: "
CODE_ERROR_PREFIX: Final = "CODE_ERROR: "
PYTHON_NAMES: Final = frozenset({"python", "python3", "py", "py3"})
"""The ``language`` values read as Python (compared lower-cased); a missing or blank one is Python too."""
RESULT_TRUNCATED: Final = (
    " [... result truncated: {missing} more characters not shown; keep big values in variables and "
    "return only the part you need to see ...]"
)
"""The marker ending a step's value cut by ``result_preview`` (``{missing}``: characters left out)."""

MAX_ANSWER_CHARS: Final = MAX_SCANNED_CHARS
"""The most characters of an answer ``parse_answer`` reads (as many as the model-backed planner reads).

Finding the objects is linear in the text, but each candidate is decoded on its own, so the text is bounded
too: a longer answer is read from its start, and a ``NotProtocol`` reason says the rest was not read.
"""
_MAX_CANDIDATES = 64
"""How many ``{`` positions an answer is searched from (bounds the decoding work on brace-heavy prose)."""
_MAX_UNCLOSED = 4
"""How many of them may run to the end of the answer without closing before the search gives up."""
_CODE_TYPE = re.compile(
    r'\s*(?:"[^"\\]{0,20}"\s*:\s*"[^"\\]{0,20}"\s*,\s*){0,4}"type"\s*:\s*"code"', re.IGNORECASE
)
"""An object that starts as a code message: ``"type": "code"``, maybe after a few short string members
(``"language": "python"``)."""


@attrs.frozen
class CodeMessage:
    """``{"type": "code", …}``: the model wants ``code`` run. ``language`` is as the model wrote it.

    >>> CodeMessage("1 + 1", "Python3").is_python, CodeMessage("1", "js").is_python
    (True, False)
    """

    code: str
    language: str = "python"

    @property
    def is_python(self) -> bool:
        """Whether ``language`` names Python (see ``PYTHON_NAMES``)."""
        return not self.language.strip() or self.language.strip().lower() in PYTHON_NAMES


@attrs.frozen
class FinalMessage:
    """``{"type": "final", "output": …}``: the final answer (a non-string output as compact JSON)."""

    output: str


@attrs.frozen
class NotProtocol:
    """An answer that holds no protocol object: the raw ``text``, and ``reason`` saying what was wrong.

    ``cut_code``: the answer is longer than ``MAX_ANSWER_CHARS`` and its protocol object, a code object, runs
    past that point, so it was not read whole. That is code too long to read, not an answer for the user.
    """

    text: str
    reason: str
    cut_code: bool = False


Answer: TypeAlias = CodeMessage | FinalMessage | NotProtocol
"""What ``parse_answer`` returns."""


def parse_answer(text: str) -> Answer:
    """Read one model answer: the first ``{…}`` in it that is a protocol object decides.

    Objects are found by ``json_text.json_spans``, whose scanner understands JSON strings, so fences, prose
    and braces inside the code do not confuse it; an object that is not valid JSON, or valid JSON but not a
    protocol message, is skipped in favour of a later (or nested) one. A code object without a string
    ``code``, or a final object without ``output``, is not the protocol (nothing is guessed or dropped);
    ``"output": null`` is ``""``. Only the first ``MAX_ANSWER_CHARS`` characters are read.

    >>> parse_answer('Sure!\\n```json\\n{"type": "code", "language": "python", "code": "2 ** 10"}\\n```')
    CodeMessage(code='2 ** 10', language='python')
    >>> parse_answer('{"type": "final", "output": {"total": 3}}')
    FinalMessage(output='{"total":3}')
    >>> parse_answer("The answer is 42.").reason
    'the answer holds no JSON object'
    """
    best_reason: str | None = None
    best_rank = -1
    cut_code = False
    read = text[:MAX_ANSWER_CHARS]
    for span in json_spans(
        read,
        opening="{",
        nested=True,
        max_spans=_MAX_CANDIDATES,
        max_unclosed=_MAX_UNCLOSED,
    ):
        if span.error is None:
            message = _message(span.value)
            if not isinstance(message, str):
                return message
            if best_rank < 2:
                best_reason, best_rank = message, 2
        else:
            if not span.complete and not cut_code:
                # Any unclosed code object, not only the first bad span: a stray "{…}" in the prose before
                # a code object cut at the read limit must not hide it.
                cut_code = len(text) > MAX_ANSWER_CHARS and _CODE_TYPE.match(read, span.start + 1) is not None
            if best_rank < 1:
                # A later "{" may still close (prose can open a brace it never closes): the search goes on.
                best_rank = 1
                if span.complete:
                    best_reason = f"the JSON object is not valid JSON ({span.error})"
                else:
                    best_reason = "the JSON object is not complete (no closing brace)"
    if best_rank == 1 and cut_code:
        return NotProtocol(
            text,
            f"the answer is {len(text)} characters long and only its first {MAX_ANSWER_CHARS} are read, so "
            "its code object was cut off; write shorter code (compute or load large data instead of writing "
            "it out in the code)",
            cut_code=True,
        )
    reason = best_reason or "the answer holds no JSON object"
    if len(text) > MAX_ANSWER_CHARS:
        reason += f" (only the first {MAX_ANSWER_CHARS} of its {len(text)} characters were read)"
    return NotProtocol(text, reason)


def _message(value: Mapping[str, Any]) -> CodeMessage | FinalMessage | str:
    """The protocol message in a decoded object, or why it is not one."""
    kind = value.get("type")
    kind = kind.strip().lower() if isinstance(kind, str) else kind
    if kind == "code":
        code = value.get("code")
        if isinstance(code, list) and all(isinstance(line, str) for line in code):
            code = "\n".join(code)
        if not isinstance(code, str):
            return 'a code message needs the code as a string in "code"'
        language = value.get("language")
        return CodeMessage(
            code, language.strip() if isinstance(language, str) and language.strip() else "python"
        )
    if kind == "final":
        if "output" not in value:
            return 'a final message needs the answer in "output"'
        return FinalMessage(answer_text(value["output"]))
    if kind is None:
        return 'the JSON object has no "type" ("code" or "final")'
    return f'"type" must be "code" or "final", not {orjson.dumps(kind).decode()}'


# --- what a step produced ----------------------------------------------------------------------------------


def _json(payload: Mapping[str, Any]) -> str:
    # ``default=repr``: a custom executor may return values JSON cannot hold; the model still sees them.
    return orjson.dumps(payload, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()


def code_result_text(value: Any, stdout: str = "", stderr: str = "") -> str:
    """The memory text of a successful step: ``result`` always (``null`` when the step had no value),
    ``stdout`` / ``stderr`` when non-empty.

    >>> code_result_text(1024, "computing\\n")
    'CODE_RESULT: {"result":1024,"stdout":"computing\\\\n"}'
    >>> code_result_text(None)
    'CODE_RESULT: {"result":null}'
    """
    payload: dict[str, Any] = {"result": value}
    if stdout:
        payload["stdout"] = stdout
    if stderr:
        payload["stderr"] = stderr
    return CODE_RESULT_PREFIX + _json(payload)


def code_error_text(error: str, stdout: str = "", stderr: str = "") -> str:
    """The memory text of a failed step: ``error``, then ``stdout`` / ``stderr`` when non-empty.

    >>> code_error_text("ZeroDivisionError: division by zero")
    'CODE_ERROR: {"error":"ZeroDivisionError: division by zero"}'
    """
    payload: dict[str, Any] = {"error": error}
    if stdout:
        payload["stdout"] = stdout
    if stderr:
        payload["stderr"] = stderr
    return CODE_ERROR_PREFIX + _json(payload)


def result_preview(value: Any, max_chars: int | None) -> Any:
    """``value`` as the model is shown it: unchanged when its text fits in ``max_chars``, else cut.

    A string is cut to its first ``max_chars`` characters, any other value to the first ``max_chars`` of
    its compact JSON; either way the cut text (a string) ends with a marker saying how much is missing.
    ``None`` means no limit.

    >>> result_preview([1, 2], 100), result_preview("abcdef", None)
    ([1, 2], 'abcdef')
    >>> result_preview(list(range(100)), 10)[:24]
    '[0,1,2,3,4 [... result t'
    """
    if max_chars is None:
        return value
    text = value if isinstance(value, str) else answer_text(value)
    if len(text) <= max_chars:
        return value
    return text[:max_chars] + RESULT_TRUNCATED.format(missing=len(text) - max_chars)


def step_text(result: CodeResult, max_result_chars: int | None = None) -> str:
    """``CODE_RESULT`` or ``CODE_ERROR`` text for an executor's ``CodeResult``.

    ``max_result_chars`` bounds how much of the step's value the text shows (see ``result_preview``);
    stdout and stderr are written as the executor bounded them.

    >>> step_text(CodeResult(ok=True, value="x" * 50), max_result_chars=5)[:44]
    'CODE_RESULT: {"result":"xxxxx [... result tr'
    """
    if result.ok:
        return code_result_text(result_preview(result.value, max_result_chars), result.stdout, result.stderr)
    error = result.error or (
        f"the code step failed ({result.error_type})" if result.error_type else "the code step failed"
    )
    return code_error_text(error, result.stdout, result.stderr)


def answer_text(value: Any) -> str:
    """A value as answer text: a string as is, ``None`` as ``""``, anything else as compact JSON.

    >>> answer_text("Paris"), answer_text(None), answer_text([1, 2])
    ('Paris', '', '[1,2]')
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()

"""Find the JSON values in a model's free text: Markdown fences, prose and stray brackets around them.

Models asked for JSON wrap it in fences, explain it in prose, or write an object that is almost JSON (a
raw line break inside a string: the most common slip when a model writes code into a string). ``json_spans``
walks the text from each opening bracket, finds where it closes with a scanner that understands JSON strings
and escapes (so brackets inside strings do not count), and decodes the span, leniently. CodeAct reads its
protocol object with it, the model-backed planner its list of steps; each decides what a span means.

Pure functions and values: no I/O, no awaits. JSON goes through orjson. The work is bounded: at most
``max_spans`` spans are tried and at most ``max_unclosed`` of them may scan to the end of the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import attrs
import orjson

__all__ = ["JsonSpan", "json_spans"]

_CLOSING: Final = {"{": "}", "[": "]"}
_CONTROL_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_UNCLOSED: Final = "the text ends before the bracket closes"
_MISMATCH: Final = "the brackets do not match"


@attrs.frozen
class JsonSpan:
    """One bracketed span of the text, from ``start`` to ``end`` (exclusive), and what it decoded to.

    ``error`` is ``None`` when the span is a JSON value (then ``value`` holds it), else why it is not one.
    ``complete`` is false when the text ends before the bracket at ``start`` closes (``end`` is then the
    text's length).
    """

    start: int
    end: int
    value: Any = None
    error: str | None = None
    complete: bool = True


def json_spans(
    text: str,
    *,
    opening: str = "{[",
    nested: bool = False,
    max_spans: int | None = 64,
    max_unclosed: int = 4,
) -> Iterator[JsonSpan]:
    """The spans opened by a bracket of ``opening`` (``"{"``: objects only), left to right.

    After a span that decodes, the search goes on after it (``nested=False``) or inside it
    (``nested=True``: the values it contains are offered too). After one that does not, it goes on from
    the next character, so a later (or inner) value is still found. Raw control characters inside strings
    (invalid JSON, but what a model means) are read as their escapes.

    >>> [s.value for s in json_spans('Here: ```json\\n{"a": [1, 2]}\\n``` and [3]')]
    [{'a': [1, 2]}, [3]]
    >>> [s.value for s in json_spans('{"a": [1, 2]}', nested=True)]
    [{'a': [1, 2]}, [1, 2]]
    >>> [(s.start, s.error is None, s.complete) for s in json_spans("{oops} [1} {")]
    [(0, False, True), (7, False, True), (11, False, False)]
    """
    spans = unclosed = 0
    start = _next_opening(text, 0, opening)
    while start != -1 and (max_spans is None or spans < max_spans) and unclosed < max_unclosed:
        spans += 1
        end, has_controls, problem = _closing(text, start)
        if problem is not None:
            unclosed += problem == _UNCLOSED
            yield JsonSpan(start, end, error=problem, complete=problem != _UNCLOSED)
        else:
            value, error = _decode(text[start:end], has_controls)
            yield JsonSpan(start, end, value=value, error=error)
            if error is None and not nested:
                start = _next_opening(text, end, opening)
                continue
        start = _next_opening(text, start + 1, opening)


def _next_opening(text: str, index: int, opening: str) -> int:
    found = [i for i in (text.find(bracket, index) for bracket in opening) if i != -1]
    return min(found) if found else -1


def _closing(text: str, start: int) -> tuple[int, bool, str | None]:
    """Where the span opening at ``start`` ends (exclusive), whether its strings hold raw control
    characters, and what is wrong with its brackets (``None``: nothing; else ``_MISMATCH`` with the end at
    the bracket that does not match, or ``_UNCLOSED`` with the end at the end of the text)."""
    stack = [_CLOSING[text[start]]]
    in_string = escaped = controls = False
    for index in range(start + 1, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            elif char < " ":
                controls = True
        elif char == '"':
            in_string = True
        elif char in _CLOSING:
            stack.append(_CLOSING[char])
        elif char in "}]":
            if char != stack.pop():
                return index + 1, controls, _MISMATCH
            if not stack:
                return index + 1, controls, None
    return len(text), controls, _UNCLOSED


def _escape_controls(candidate: str) -> str:
    """``candidate`` with raw control characters inside its strings escaped (what the model meant)."""
    out: list[str] = []
    in_string = escaped = False
    for char in candidate:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            elif char < " ":
                out.append(_CONTROL_ESCAPES.get(char) or f"\\u{ord(char):04x}")
                continue
        elif char == '"':
            in_string = True
        out.append(char)
    return "".join(out)


def _decode(candidate: str, has_controls: bool) -> tuple[Any, str | None]:
    try:
        return orjson.loads(candidate), None
    except orjson.JSONDecodeError as exc:
        if not has_controls:
            return None, str(exc)
    try:
        return orjson.loads(_escape_controls(candidate)), None
    except orjson.JSONDecodeError as exc:
        return None, str(exc)

"""Find the JSON values in a model's free text: Markdown fences, prose and stray brackets around them.

Models asked for JSON wrap it in fences, explain it in prose, or write an object that is almost JSON (a
raw line break inside a string: the most common slip when a model writes code into a string). ``json_spans``
walks the text from each opening bracket, finds where it closes with a scanner that understands JSON strings
and escapes (so brackets inside strings do not count), and decodes the span, leniently. CodeAct reads its
protocol object with it, the model-backed planner its list of steps; each decides what a span means.

Pure functions and values: no I/O, no awaits. JSON goes through orjson. The work is bounded, because a
model's answer can be anything (a runaway model may write a megabyte of ``{``): at most ``max_spans`` spans
are tried, and finding where they close is linear in the text however many spans overlap (see
``_Closings``). Decoding reads each span again, so callers also bound the text they pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import repeat
from typing import Any, Final

import attrs
import orjson

from ..exact_json import loads as exact_loads

__all__ = ["MAX_SCANNED_CHARS", "JsonSpan", "json_spans"]

MAX_SCANNED_CHARS: Final = 200_000
"""The most characters of a model's answer the runtimes read for JSON (CodeAct's protocol, the planner's
plan): a bound on the work a runaway answer can cause."""

_CONTROL_ESCAPES: Final = {code: f"\\u{code:04x}" for code in range(0x20)} | str.maketrans(
    {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
)
_UNCLOSED: Final = "the text ends before the bracket closes"
_MISMATCH: Final = "the brackets do not match"

_GAP: Final = re.compile(r'(?:[^"{}\[\]]++|"(?:[^"\\]++|\\.)*+")*+', re.S)
"""What lies between two brackets outside strings: plain text and whole (closed) strings. It stops at a
bracket, at a string that never closes, or at the end; possessive, so it never backtracks."""
_STRING: Final = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.S)
_STRING_SPLIT: Final = re.compile(f"({_STRING.pattern})", re.S)
_RAW_CONTROL: Final = re.compile(r"(\\.)|[\x00-\x1f]", re.S)
_CONTROL: Final = re.compile(r"[\x00-\x1f]")
_ESCAPED_CONTROL: Final = re.compile(r"\\[\x00-\x1f]")
_ESCAPE_SLACK: Final = 65_536
"""Characters every text may have escaped besides twice its length (see ``json_spans``)."""


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
    (invalid JSON, but what a model means) are read as their escapes, for spans adding up to at most twice
    the text's length (plus 64 KiB): past that, a span that needs it is reported as orjson's error (spans
    that do not overlap add up to the text at most, so only a hostile text, nesting many, gets there). The
    search stops after ``max_spans`` spans, or after ``max_unclosed`` spans that do not close before the
    end of the text.

    >>> [s.value for s in json_spans('Here: ```json\\n{"a": [1, 2]}\\n``` and [3]')]
    [{'a': [1, 2]}, [3]]
    >>> [s.value for s in json_spans('{"a": [1, 2]}', nested=True)]
    [{'a': [1, 2]}, [1, 2]]
    >>> [(s.start, s.error is None, s.complete) for s in json_spans("{oops} [1} {")]
    [(0, False, True), (7, False, True), (11, False, False)]
    """
    closings = _Closings(text)
    openings = _Openings(text, opening)
    escape_budget = 2 * len(text) + _ESCAPE_SLACK
    spans = unclosed = 0
    start = openings.next(0)
    while start != -1 and (max_spans is None or spans < max_spans) and unclosed < max_unclosed:
        spans += 1
        end, problem = closings.of(start)
        if problem is not None:
            unclosed += problem == _UNCLOSED
            yield JsonSpan(start, end, error=problem, complete=problem != _UNCLOSED)
        else:
            candidate = text[start:end]
            value, error, escaped = _decode(candidate, len(candidate) <= escape_budget)
            escape_budget -= len(candidate) if escaped else 0
            yield JsonSpan(start, end, value=value, error=error)
            if error is None and not nested:
                start = openings.next(end)
                continue
        start = openings.next(start + 1)


class _Openings:
    """The next opening bracket at or after an index that only grows: each ``find`` is reused until passed,
    so the whole search reads the text once per kind of bracket."""

    def __init__(self, text: str, opening: str) -> None:
        self._text = text
        self._found = dict.fromkeys(opening, -2)  # -2: not searched yet; -1: none left

    def next(self, index: int) -> int:
        best = -1
        for bracket, found in self._found.items():
            if -1 < found < index or found == -2:
                found = self._found[bracket] = self._text.find(bracket, index)
            if found != -1 and (best == -1 or found < best):
                best = found
        return best


class _Closings:
    """Where the span opened at each bracket ends, and what is wrong with its brackets.

    The scan from an opening bracket depends only on the text after it, and every bracket it meets outside
    a string opens a span that scans exactly as it does from there. So one scan settles every bracket it
    pushes: popped means closed there, left on the stack means it fails where this scan fails (the same
    mismatch, or the same end of text). A later scan that meets a settled bracket jumps over its span, or
    stops where that span stopped; chains of jumps over sibling spans are shortened as they are followed.
    Each bracket is pushed once over all the spans of a text, and the text between brackets is skipped by
    a regex, so finding every span's end costs time linear in the text, not spans x text.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._ends: dict[int, tuple[int, str | None]] = {}  # opening index -> (end, problem)
        self._jumps: dict[int, int] = {}  # settled, closed bracket -> the next unsettled point after it

    def of(self, start: int) -> tuple[int, str | None]:
        """Where the span opened at ``start`` ends (exclusive) and what is wrong with its brackets:
        ``None`` (nothing), ``_MISMATCH`` (the end is after the bracket that does not match) or
        ``_UNCLOSED`` (the end is the text's end)."""
        ends = self._ends
        known = ends.get(start)
        if known is not None:
            return known
        # Hot loop (a runaway answer may be a megabyte of brackets): names bound locally, one branch per char.
        text, size, jumps = self._text, len(self._text), self._jumps
        skip_gap, settled = _GAP.match, ends.get
        stack = [start]
        push, pop = stack.append, stack.pop
        jumped: list[int] = []  # closed spans jumped over since the last stop, to shorten later walks
        index = start + 1
        while True:
            if index >= size:
                outcome: tuple[int, str | None] = (size, _UNCLOSED)
                break
            char = text[index]
            if char == "{" or char == "[":
                known = settled(index)
                if known is None:
                    push(index)
                elif known[1] is None:
                    jumped.append(index)
                    index = jumps.get(index, known[0])
                    continue
                else:
                    outcome = known
                    break
            elif char == "}" or char == "]":
                opener = pop()
                if (char == "}") != (text[opener] == "{"):
                    push(opener)
                    outcome = (index + 1, _MISMATCH)
                    break
                ends[opener] = (index + 1, None)
                if not stack:
                    self._shorten(jumped, index)
                    return ends[start]
            else:
                index = skip_gap(text, index).end()  # type: ignore[union-attr]  # it matches "" at least
                if index < size and text[index] == '"':  # a string that never closes: to the end
                    index = size
                continue
            if jumped:
                self._shorten(jumped, index)
            index += 1
        self._shorten(jumped, index)
        ends.update(dict.fromkeys(stack, outcome))
        return outcome

    def _shorten(self, jumped: list[int], stop: int) -> None:
        """Remember that a walk from each of the ``jumped`` spans' brackets next stops at ``stop``."""
        if jumped:
            self._jumps.update(dict.fromkeys(jumped, stop))
            jumped.clear()


def _escape_controls(candidate: str) -> str:
    """``candidate`` with raw control characters inside its strings escaped (what the model meant); a
    character right after a backslash is left alone (it is that escape's second half)."""
    if _ESCAPED_CONTROL.search(candidate) is None:  # the usual case: every string can be translated whole
        parts = _STRING_SPLIT.split(candidate)  # outside, string, outside, string, …, outside
        parts[1::2] = map(str.translate, parts[1::2], repeat(_CONTROL_ESCAPES))
        return "".join(parts)
    return _STRING.sub(_escape_string, candidate)


def _escape_string(match: re.Match[str]) -> str:
    return _RAW_CONTROL.sub(_escape_control, match[0])


def _escape_control(match: re.Match[str]) -> str:
    return match[1] or _CONTROL_ESCAPES[ord(match[0])]


def _decode(candidate: str, may_escape: bool) -> tuple[Any, str | None, bool]:
    """The value of ``candidate`` or orjson's complaint, and whether its control characters were escaped."""
    try:
        return exact_loads(candidate), None, False  # a 30-digit id in a fence stays exact
    except orjson.JSONDecodeError as exc:
        # Escaping changes only strings holding raw control characters. If none is in the part read up to
        # the error, the same error comes back, so the retry (and a search of the whole span) is skipped.
        if not may_escape or _CONTROL.search(candidate, 0, exc.pos + 1) is None:
            return None, str(exc), False
    try:
        return exact_loads(_escape_controls(candidate)), None, True
    except orjson.JSONDecodeError as exc:
        return None, str(exc), True

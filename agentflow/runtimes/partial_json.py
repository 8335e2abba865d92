"""Read a JSON value while it is still being written: the text so far in, the most complete value out.

A model streams its structured answer a few characters at a time. ``PartialJson`` is fed those pieces and
keeps, between pieces, the state of a JSON tokenizer (the open objects and arrays, whether it is inside a
string or a number, how far each open container is complete), so a piece costs time in its own length
only, however long the answer has grown. Asked for the value, it closes what is open and decodes the text
once, with orjson:

- an open string is kept, closed where the text stops (``{"name": "Par`` reads as ``{"name": "Par"}``),
  short of an escape still being written (``\\u00``, or a high surrogate waiting for its pair);
- an object key still being written, a key without its value yet, a number still being written (``12``
  may become ``120``) and a partial ``true`` / ``false`` / ``null`` are left out (``{"a": 1, "b": tr``
  reads as ``{"a": 1}``); a number counts once a character after it ends it;
- open arrays and objects are closed (``[1, {"b": 2`` reads as ``[1, {"b": 2}]``);
- once an array or object opens more than ``MAX_DEPTH`` (128) levels deep, the value read stops growing
  (it is what it was just before that bracket) until the whole value is complete: a value read before then
  never nests deeper, so code given one (comparing it, copying it, ``orjson.dumps``, which refuses 255
  levels) cannot run out of recursion, and reading it costs nothing more however deep the text goes (an
  answer nested thousands of levels deep, prompt-injected, say). The complete value is read whole (orjson
  refuses more than 1024 levels: such a text has no value), as ``OutputType.parse`` reads it.

So each value read is a *prefix* of the next one and of the whole: every value but the last member of
each open container is final, and the last one can only grow (a string gets longer, a container gets more
members; see ``is_prefix``). Once the text is whole, the value is what ``json.loads`` gives.

What comes before the JSON is skipped, as ``OutputType.parse`` reads answers: prose, a Markdown fence, a
leading ``<think>…</think>`` (or ``<thinking>``) block. A value begins at an opening bracket (``opening``,
``"{["`` by default); when the text after one turns out not to be JSON (``{as requested}`` in prose) the
search goes on after that bracket (at most ``MAX_RESTARTS`` times: the text is read again each time).
When a value is complete and another begins later, the later one is read (the last value wins, as in
``parse``); if that one is not JSON after all, the complete one stays.

Cost: ``feed`` is amortised O(len(piece)) (strings, whitespace and numbers are skipped by regular
expressions, structure characters one by one: a 20 kB answer in 5-character pieces takes about 2 ms in
all); ``value`` is one orjson decode of the text so far (O(n), in C: tens of microseconds for 20 kB), so
call it when you need a value, not per piece. ``version`` tells, cheaply, whether the value could have
changed since the last time, in constant time. ``cuts()`` and ``value(cut)`` read the value with its
unfinished parts left out, for a reader that needs whole parts: at most ``MAX_CUTS + 2`` cuts, however deep
the value.

Not ``jiter`` (pydantic's parser, which has a partial mode): it parses the whole text again at each call,
keeps a number still being written (``12`` of ``120``), and knows nothing of prose, fences or think blocks
before the JSON; orjson does the decoding here.

Pure: no I/O, nothing async.

>>> reader = PartialJson()
>>> for piece in ['Here you go: ```json\\n{"name": "Par', 'is", "tags": ["a", "b', '"], "pop', 'ulation": 21',
...               '02650}\\n```']:
...     reader.feed(piece)
...     print(reader.value())
{'name': 'Par'}
{'name': 'Paris', 'tags': ['a', 'b']}
{'name': 'Paris', 'tags': ['a', 'b']}
{'name': 'Paris', 'tags': ['a', 'b']}
{'name': 'Paris', 'tags': ['a', 'b'], 'population': 2102650}
>>> reader.complete
True
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import Any, Final, TypeAlias

import orjson

from ..exact_json import loads as exact_loads
from .json_text import _escape_controls

__all__ = ["MAX_CUTS", "MAX_DEPTH", "MAX_RESTARTS", "NO_VALUE", "Cut", "PartialJson", "is_prefix"]

MAX_RESTARTS: Final = 16
"""How many times a reader looks for a value again after a bracket that did not open one, before it
stops reading (each time, the text after that bracket is read again)."""

MAX_DEPTH: Final = 128
"""How deep a value read before it is complete may nest: once an array or object opens deeper, the value read
stops growing until the whole value is complete. Far beyond any real answer, and well within what code given
a partial value can take (``orjson.dumps`` refuses 255 levels; ``copy.deepcopy`` and comparisons recurse in
Python)."""

MAX_CUTS: Final = 32
"""How many levels ``PartialJson.cuts`` leaves out one at a time: for a value nested deeper, the innermost
half and the outermost half (so a reader tries at most ``MAX_CUTS + 2`` cuts, however deep the value)."""


class _NoValue:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"

    def __bool__(self) -> bool:
        return False


NO_VALUE: Final[Any] = _NoValue()
"""What ``PartialJson.value`` returns when the text holds no value yet (``None`` is a JSON value)."""

Cut: TypeAlias = tuple[int, int, str]
"""A place a value being read may be cut (``PartialJson.cuts``): its text from the first to the second
index, then the third to close what is open there."""

_THINK_TAGS: Final = (("<think>", "</think>"), ("<thinking>", "</thinking>"))

# Phases of the whole text.
_LEAD = 0  # the very beginning: whitespace, maybe the start of a think tag
_THINK = 1  # inside a leading think block, looking for its close tag
_SEEK = 2  # looking for an opening bracket
_VALUE = 3  # inside a value
_STOPPED = 4  # too many false starts: nothing more is read

# What the tokenizer is in, inside a value.
_STRUCT = 0  # between tokens
_STRING = 1
_ESCAPE = 2  # right after a backslash
_UNICODE = 3  # inside \uXXXX
_NUMBER = 4
_LITERAL = 5

# What the innermost open container expects next (between tokens).
_OBJ_FIRST = 0  # after "{": a key or "}"
_OBJ_KEY = 1  # after ",": a key
_COLON = 2
_VALUE_NEXT = 3  # after ":" or an array's ",": a value
_ARR_FIRST = 4  # after "[": a value or "]"
_AFTER = 5  # after a member: "," or the closing bracket

_WS: Final = re.compile(r"[ \t\n\r]*")
_PLAIN: Final = re.compile(r'[^"\\]*')
_NUMBER_CHARS: Final = re.compile(r"[-+0-9.eE]*")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_CLOSERS: Final = {"{": "}", "[": "]"}
_LITERALS: Final = {"t": "true", "f": "false", "n": "null"}
_NUMBER_START: Final = frozenset("-0123456789")
_CONTROL: Final = re.compile(r"[\x00-\x1f]")


class _Restart(Exception):
    """The value being read is not JSON: the search starts again after its opening bracket."""


class PartialJson:
    """An incremental reader of one JSON value being written (see the module's docstring).

    ``feed(piece)`` adds text; ``value()`` is the most complete value so far (``NO_VALUE`` before one
    begins); ``complete`` tells whether it is the whole value; ``version`` changes whenever ``value()``
    may have; ``cuts()`` and ``value(cut)`` give the value with its unfinished parts left out.
    ``opening`` is the brackets a value may begin with (``"{"``: objects only).
    """

    __slots__ = (
        "_best",
        "_cut",
        "_expect",
        "_frozen",
        "_hex",
        "_high",
        "_is_key",
        "_kinds",
        "_length",
        "_literal",
        "_mode",
        "_opening",
        "_parts",
        "_phase",
        "_restarts",
        "_safes",
        "_start",
        "_tail",
        "_think_close",
    )

    def __init__(self, *, opening: str = "{[") -> None:
        if not opening or any(c not in "{[" for c in opening):
            raise ValueError(f"opening must be '{{', '[' or both, got {opening!r}")
        self._opening = opening
        self._parts: list[str] = []
        self._length = 0
        self._phase = _LEAD
        self._think_close = ""
        self._tail = ""  # held text: the lead before a decision, or the end of a think block's text
        self._restarts = 0
        self._best: tuple[int, int] | None = None  # the last complete value: (start, end)
        self._start = -1  # where the value being read begins
        self._kinds: list[str] = []  # the open containers, outermost first: "{" or "["
        self._safes: list[
            int
        ] = []  # for each, where its complete members end (its text up to there is sound)
        self._mode = _STRUCT
        self._expect = _OBJ_FIRST
        self._is_key = False
        self._cut = -1  # inside a string: where its unfinished escape begins (-1: none)
        self._high = False  # the last escape was a high surrogate, waiting for its pair
        self._hex = ""
        self._literal = ""
        # The cuts of the value being read when a part of it opened deeper than MAX_DEPTH: they stay its
        # cuts until it is complete (None: no part did).
        self._frozen: tuple[Cut, ...] | None = None

    def __repr__(self) -> str:
        return f"PartialJson({self._length} chars, complete={self.complete})"

    # -- reading -----------------------------------------------------------------------------------------

    def feed(self, piece: str) -> None:
        """Add the next piece of the text."""
        if not piece:
            return
        self._parts.append(piece)
        base = self._length
        self._length += len(piece)
        if self._phase == _STOPPED:
            return
        try:
            self._scan(piece, base)
        except _Restart:
            self._restart()

    @property
    def text(self) -> str:
        """All the text fed so far."""
        parts = self._parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]  # joined once per read, not once per piece
        return parts[0] if parts else ""

    @property
    def complete(self) -> bool:
        """Whether ``value()`` is a whole value (its closing bracket was read), not a partial one."""
        return self._phase != _VALUE and self._best is not None

    @property
    def version(self) -> Hashable:
        """Unchanged between two reads when ``value()`` is too: compare it to skip decoding again (it costs
        the same however deep or long the value is)."""
        if self._phase != _VALUE:
            return self._best
        if self._frozen is not None:
            return (self._start, self._best)  # the value stays as it is until it is complete
        keep, string = self._keep()
        return (self._start, keep, string, len(self._kinds), self._best)

    @property
    def structure(self) -> Hashable:
        """Unchanged while only the text of a string being written grows (a reader that found the value
        did not fit for a reason other than that string's text may skip trying again)."""
        if self._phase != _VALUE:
            return self._best
        if self._frozen is not None:
            return (self._start, None)
        return (self._start, tuple(self._safes), self._keep()[1])

    def cuts(self) -> tuple[Cut, ...]:
        """Where the value so far may be cut, fullest first, for ``value(cut)``: the value so far (what
        ``value()`` reads), then with its unfinished parts left out one level more each time: the string the
        text stops in (if any), the innermost open container, the one holding it, and so on up to the
        outermost one's last member; last, a complete value read before (the later one may not fit). For a
        reader that needs whole parts (a type that cannot take half an object). A ``Cut`` is hashable, and
        equal cuts read equal values: remember what one read to. Empty before any value.

        Bounded however deep the value is: nothing nests deeper than ``MAX_DEPTH`` (the cuts stay as they
        were once a part opens deeper, until the value is complete), and for a value open more than
        ``MAX_CUTS`` levels deep only the innermost and the outermost ``MAX_CUTS // 2`` levels are left out
        one at a time (what a type does not take is most likely the part being written, or a whole member
        of the outermost containers).

        >>> reader = PartialJson()
        >>> reader.feed('{"cities": [{"name": "Paris"}, {"name": "Ly')
        >>> for cut in reader.cuts():
        ...     print(reader.value(cut))
        {'cities': [{'name': 'Paris'}, {'name': 'Ly'}]}
        {'cities': [{'name': 'Paris'}, {}]}
        {'cities': [{'name': 'Paris'}]}
        {}
        """
        best = self._best
        if self._phase != _VALUE:
            return () if best is None else ((best[0], best[1], ""),)
        cuts = self._frozen
        if cuts is None:
            keep, string = self._keep()
            if best is not None and keep == self._start + 1 and not string:
                return ((best[0], best[1], ""),)  # a later value that holds nothing yet does not hide it
            cuts = self._cuts(keep, string)
        return cuts if best is None else (*cuts, (best[0], best[1], ""))

    def value(self, cut: Cut | None = None) -> Any:
        """The most complete value the text so far holds, or ``NO_VALUE``; with ``cut`` (one of ``cuts()``),
        the value cut there.

        A new object each time (decoded afresh): yours to keep or change. Large integers stay exact, and
        raw control characters in strings are read as their escapes, as ``OutputType.parse`` reads them. A
        value that does not decode (text that is not quite JSON, such as ``01``) reads as ``NO_VALUE``, or
        as a complete value read before it.
        """
        if cut is not None:
            return _decode(self.text[cut[0] : cut[1]] + cut[2])
        cuts = self.cuts()
        if not cuts:
            return NO_VALUE
        value = self.value(cuts[0])
        if value is NO_VALUE and self._phase == _VALUE and self._best is not None:
            return self.value(cuts[-1])  # the complete value before
        return value

    def snapshot(self) -> str | None:
        """The text ``value()`` decodes: the value so far, its open parts closed (``None``: no value yet)."""
        cuts = self.cuts()
        if not cuts:
            return None
        start, end, suffix = cuts[0]
        return self.text[start:end] + suffix

    # -- the tokenizer -----------------------------------------------------------------------------------

    def _cuts(self, keep: int, string: bool) -> tuple[Cut, ...]:
        """The cuts of the value being read (``cuts()`` but the complete value before), its sound text ending
        at ``keep`` (inside a string value with ``string``)."""
        start, safes, depth = self._start, self._safes, len(self._kinds)
        # The open levels' closing brackets, innermost first: level L's cut closes the last L + 1 of them.
        closes = "".join([_CLOSERS[kind] for kind in reversed(self._kinds)])
        cuts = [(start, keep, ('"' if string else "") + closes)]
        levels: Sequence[int] = range(depth - 1 if string else depth - 2, -1, -1)
        if len(levels) > MAX_CUTS:
            levels = [*levels[: MAX_CUTS // 2], *levels[-(MAX_CUTS // 2) :]]
        for level in levels:
            cuts.append((start, safes[level], closes[depth - 1 - level :]))
        return tuple(cuts)

    def _keep(self) -> tuple[int, bool]:
        """Where the sound text of the value being read ends, and whether it ends inside a string value
        (which is then closed with a quote)."""
        mode = self._mode
        if mode in (_STRING, _ESCAPE, _UNICODE) and not self._is_key:
            return (self._cut if self._cut != -1 else self._length), True
        return self._safes[-1], False

    def _restart(self) -> None:
        """The value at ``_start`` is not JSON: look for one again right after its bracket."""
        start = self._start
        self._kinds.clear()
        self._safes.clear()
        self._frozen = None
        self._start = -1
        self._restarts += 1
        if self._restarts > MAX_RESTARTS:
            self._phase = _STOPPED
            return
        self._phase = _SEEK
        try:
            self._scan(self.text[start + 1 :], start + 1)
        except _Restart:
            self._restart()

    def _scan(self, piece: str, base: int) -> None:
        index = 0
        size = len(piece)
        while index < size:
            phase = self._phase
            if phase == _VALUE:
                index = self._scan_value(piece, base, index)
            elif phase == _SEEK:
                index = self._seek(piece, base, index)
            elif phase == _LEAD:
                index = self._lead(piece, base, index)
            elif phase == _THINK:
                index = self._think(piece, index)
            else:
                return

    def _seek(self, piece: str, base: int, index: int) -> int:
        found = -1
        for bracket in self._opening:
            at = piece.find(bracket, index)
            if at != -1 and (found == -1 or at < found):
                found = at
        if found == -1:
            return len(piece)
        self._open_value(base + found, piece[found])
        return found + 1

    def _lead(self, piece: str, base: int, index: int) -> int:
        # The text so far is held until it is clear whether it opens with a think tag: it is only
        # whitespace and part of a tag until then, all of it from position 0.
        held = self._tail + piece[index:]
        lead = held.lstrip()
        for open_tag, close_tag in _THINK_TAGS:
            if lead.startswith(open_tag):
                self._phase = _THINK
                self._think_close = close_tag
                self._tail = ""
                after = len(held) - len(lead) + len(open_tag)
                self._scan(held[after:], after)
                return len(piece)
        if not lead or any(tag.startswith(lead) for tag, _ in _THINK_TAGS):
            self._tail = held  # maybe a tag still being written
            return len(piece)
        self._phase = _SEEK
        self._tail = ""
        self._scan(held, 0)
        return len(piece)

    def _think(self, piece: str, index: int) -> int:
        # A close tag split across pieces is found in the tail kept from the piece before.
        close = self._think_close
        tail = self._tail
        window = tail + piece[index:]
        at = window.find(close)
        if at == -1:
            self._tail = window[max(0, len(window) - len(close) + 1) :]
            return len(piece)
        self._tail = ""
        self._phase = _SEEK
        return index - len(tail) + at + len(close)

    def _open_value(self, at: int, bracket: str) -> None:
        self._phase = _VALUE
        self._start = at
        self._kinds = [bracket]
        self._safes = [at + 1]
        self._frozen = None
        self._mode = _STRUCT
        self._expect = _OBJ_FIRST if bracket == "{" else _ARR_FIRST

    def _scan_value(self, piece: str, base: int, index: int) -> int:
        size = len(piece)
        kinds, safes = self._kinds, self._safes
        while index < size:
            mode = self._mode
            if mode == _STRING:
                end = _PLAIN.match(piece, index).end()  # type: ignore[union-attr]  # matches "" at least
                if end > index:
                    self._cut = -1
                    self._high = False
                if end == size:
                    return size
                if piece[end] == '"':
                    self._mode = _STRUCT
                    if self._is_key:
                        self._expect = _COLON
                    else:
                        safes[-1] = base + end + 1
                        self._expect = _AFTER
                else:  # a backslash
                    if not self._high:
                        self._cut = base + end
                    self._mode = _ESCAPE
                index = end + 1
                continue
            if mode == _ESCAPE:
                if piece[index] == "u":
                    self._mode = _UNICODE
                    self._hex = ""
                else:
                    self._mode = _STRING
                    self._cut = -1
                    self._high = False
                index += 1
                continue
            if mode == _UNICODE:
                take = piece[index : index + 4 - len(self._hex)]
                if not _HEX.issuperset(take):
                    raise _Restart
                self._hex += take
                index += len(take)
                if len(self._hex) == 4:
                    self._mode = _STRING
                    high = 0xD800 <= int(self._hex, 16) <= 0xDBFF
                    if high and not self._high:
                        self._high = True  # the cut stays at this escape until its pair is read
                    else:
                        self._high = False
                        self._cut = -1
                continue
            if mode == _NUMBER:
                end = _NUMBER_CHARS.match(piece, index).end()  # type: ignore[union-attr]
                if end == size:
                    return size
                safes[-1] = base + end
                self._mode = _STRUCT
                self._expect = _AFTER
                index = end
                continue
            if mode == _LITERAL:
                literal = self._literal
                take = piece[index : index + len(literal)]
                if not literal.startswith(take):
                    raise _Restart
                index += len(take)
                self._literal = literal[len(take) :]
                if not self._literal:
                    safes[-1] = base + index
                    self._mode = _STRUCT
                    self._expect = _AFTER
                continue
            # Between tokens.
            char = piece[index]
            if char in " \t\n\r":
                index = _WS.match(piece, index).end()  # type: ignore[union-attr]
                continue
            expect = self._expect
            if expect == _AFTER:
                if char == ",":
                    self._expect = _OBJ_KEY if kinds[-1] == "{" else _VALUE_NEXT
                elif char == _CLOSERS[kinds[-1]]:
                    self._close(base + index)
                    if self._phase != _VALUE:
                        return index + 1
                else:
                    raise _Restart
            elif expect == _COLON:
                if char != ":":
                    raise _Restart
                self._expect = _VALUE_NEXT
            elif expect in (_OBJ_FIRST, _OBJ_KEY):
                if char == '"':
                    self._mode = _STRING
                    self._is_key = True
                elif char == "}" and expect == _OBJ_FIRST:
                    self._close(base + index)
                    if self._phase != _VALUE:
                        return index + 1
                else:
                    raise _Restart
            elif char == "]" and expect == _ARR_FIRST:
                self._close(base + index)
                if self._phase != _VALUE:
                    return index + 1
            elif char == '"':
                self._mode = _STRING
                self._is_key = False
                self._cut = -1
                self._high = False
            elif char == "{" or char == "[":
                if len(kinds) == MAX_DEPTH and self._frozen is None:
                    # Too deep to read before the value is whole: the value stops growing here (what comes
                    # after this part cannot be added without it, or the values read would not be prefixes).
                    self._frozen = self._cuts(safes[-1], False)
                kinds.append(char)
                safes.append(base + index + 1)
                self._expect = _OBJ_FIRST if char == "{" else _ARR_FIRST
            elif char in _NUMBER_START:
                self._mode = _NUMBER
            elif char in _LITERALS:
                self._mode = _LITERAL
                self._literal = _LITERALS[char][1:]
            else:
                raise _Restart
            index += 1
        return index

    def _close(self, at: int) -> None:
        """The closing bracket of the innermost container is at ``at``."""
        self._kinds.pop()
        self._safes.pop()
        if self._kinds:
            self._safes[-1] = at + 1
            self._expect = _AFTER
            return
        self._best = (self._start, at + 1)
        self._start = -1
        self._phase = _SEEK


def _decode(text: str) -> Any:
    try:
        return exact_loads(text)
    except orjson.JSONDecodeError:
        if _CONTROL.search(text) is None:
            return NO_VALUE
    try:
        return exact_loads(_escape_controls(text))
    except orjson.JSONDecodeError:
        return NO_VALUE


def is_prefix(partial: Any, whole: Any) -> bool:
    """Whether ``partial`` is what ``PartialJson`` may read of ``whole`` before it is complete: equal, or a
    string that ``whole`` starts with, or a container whose members are ``whole``'s first ones, each equal
    except the last, which is again a prefix of ``whole``'s (for an object: the same keys in the same
    order, some last ones missing).

    >>> is_prefix({"a": [1, "x"]}, {"a": [1, "xy", 3], "b": 2}), is_prefix({"a": 12}, {"a": 123})
    (True, False)
    """
    if isinstance(partial, str) and isinstance(whole, str):
        return whole.startswith(partial)
    if isinstance(partial, list) and isinstance(whole, list):
        if len(partial) > len(whole):
            return False
        if not partial:
            return True
        return partial[:-1] == whole[: len(partial) - 1] and is_prefix(partial[-1], whole[len(partial) - 1])
    if isinstance(partial, dict) and isinstance(whole, dict):
        keys = list(partial)
        if keys != list(whole)[: len(keys)]:
            return False
        if not keys:
            return True
        *done, last = keys
        return all(partial[k] == whole[k] for k in done) and is_prefix(partial[last], whole[last])
    return type(partial) is type(whole) and bool(partial == whole)

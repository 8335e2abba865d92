"""A string that a JSON schema's ``pattern`` (a regular expression) finds: what ``schema_values`` writes for
a ``{"type": "string", "pattern": …}``.

The pattern is read with Python's own regular-expression parser (``re._parser``, the one ``re.compile``
uses: the same dialect agentflow's validation checks ``pattern`` with) and a string is written from its
parts: a literal as it is, a class as one of its characters, a repeat as few times as it allows, a group as
its first branch. Lookarounds and anchors are left out when writing, so each candidate is checked with
``re.search`` (JSON schema's ``pattern`` is unanchored) and a few variants are tried: more repeats, other
branches, other characters. A pattern none of them matches (a lookahead that forbids what the rest writes,
say) is reported as ``None``; the caller says what to do about it.

Pure: no I/O. Deterministic: the same pattern and bounds always give the same string.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["pattern_text"]

_parser: Any = importlib.import_module("re._parser")  # private, but stable since Python 3.0 (sre_parse)

_MAX_VARIANTS: Final = 12
_MAX_REPEAT_TEXT: Final = 4096
"""Characters a single repeat may write, so that ``a{100000000}`` fails fast instead of filling memory."""
_FALLBACK_CHARS: Final = "a0A_-.b1B c2C~!\t\n"
"""Characters tried, in order, for a negated class (``[^…]``) or a category."""
_CATEGORIES: Final[dict[str, Callable[[str], bool]]] = {
    "CATEGORY_DIGIT": lambda c: c.isdigit(),
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
    "CATEGORY_SPACE": lambda c: c.isspace(),
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
    "CATEGORY_LINEBREAK": lambda c: c == "\n",
    "CATEGORY_NOT_LINEBREAK": lambda c: c != "\n",
}


class _Unsupported(Exception):
    """A part of the pattern this writer has no string for."""


def pattern_text(pattern: str, *, min_length: int = 0, max_length: int | None = None) -> str | None:
    """A string that ``re.search(pattern, …)`` finds, with ``min_length`` to ``max_length`` characters, or
    ``None`` when none of the variants tried is one (or the pattern is not a valid regular expression).

    >>> pattern_text(r"^[A-Z]{3}-\\d{2,4}$")
    'ABC-01'
    >>> pattern_text(r"^(red|green)$", min_length=4)
    'green'
    >>> pattern_text(r"^(?!x)[a-z]+$") is not None
    True
    """
    try:
        compiled = re.compile(pattern)
        parsed = _parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    for variant in range(_MAX_VARIANTS + min_length):
        try:
            text = _Writer(variant).write(list(parsed))
        except (_Unsupported, RecursionError):
            return None
        if len(text) < min_length:
            # An unanchored pattern is found inside a longer string too.
            text += "a" * (min_length - len(text))
        if max_length is not None and len(text) > max_length:
            continue
        if compiled.search(text) is not None:
            return text
    return None


class _Writer:
    """Writes one candidate; ``variant`` moves repeats, branches and characters off the first choice."""

    def __init__(self, variant: int) -> None:
        self.variant = variant
        self.groups: dict[int, str] = {}

    def write(self, items: list[tuple[Any, Any]]) -> str:
        return "".join(self._part(op, arg) for op, arg in items)

    def _part(self, op: Any, arg: Any) -> str:
        name = getattr(op, "name", str(op))
        if name == "LITERAL":
            return chr(arg)
        if name == "NOT_LITERAL":
            return _first(lambda c: ord(c) != arg, self.variant)
        if name == "ANY":
            return _first(lambda c: c != "\n", self.variant)
        if name == "IN":
            return self._in(arg)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            count = low + self.variant if high == _parser.MAXREPEAT else min(low + self.variant, high)
            if count > _MAX_REPEAT_TEXT:
                raise _Unsupported("a repeat too long to write")
            base, parts = self.variant, []
            try:
                for index in range(count):
                    self.variant = base + index  # "a0A_" rather than "aaaa": lookaheads want variety
                    parts.append(self.write(list(sub)))
            finally:
                self.variant = base
            return "".join(parts)
        if name == "SUBPATTERN":
            group, _add_flags, _del_flags, sub = arg
            text = self.write(list(sub))
            if group is not None:
                self.groups[group] = text
            return text
        if name == "ATOMIC_GROUP":
            return self.write(list(arg))
        if name == "BRANCH":
            _, branches = arg
            return self.write(list(branches[self.variant % len(branches)]))
        if name == "GROUPREF":
            return self.groups.get(arg, "")
        if name == "GROUPREF_EXISTS":
            group, yes, no = arg
            chosen = yes if group in self.groups else no
            return self.write(list(chosen)) if chosen is not None else ""
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            return ""  # anchors and lookarounds write nothing; the search of the candidate checks them
        raise _Unsupported(name)

    def _in(self, members: list[tuple[Any, Any]]) -> str:
        negated = bool(members) and getattr(members[0][0], "name", "") == "NEGATE"
        if negated:
            return _first(lambda c: not _member(c, members[1:]), self.variant)
        choices: list[str] = []
        for op, arg in members:
            name = getattr(op, "name", str(op))
            if name == "LITERAL":
                choices.append(chr(arg))
            elif name == "RANGE":
                low, high = arg
                choices.append(chr(low + self.variant % (high - low + 1)))
            elif name == "CATEGORY":
                test = _CATEGORIES.get(getattr(arg, "name", str(arg)))
                if test is None:
                    raise _Unsupported(str(arg))
                choices.append(_first(test, self.variant))
            else:
                raise _Unsupported(name)
        if not choices:
            raise _Unsupported("an empty class")
        return choices[self.variant % len(choices)]


def _member(char: str, members: list[tuple[Any, Any]]) -> bool:
    for op, arg in members:
        name = getattr(op, "name", str(op))
        if name == "LITERAL" and ord(char) == arg:
            return True
        if name == "RANGE" and arg[0] <= ord(char) <= arg[1]:
            return True
        if name == "CATEGORY":
            test = _CATEGORIES.get(getattr(arg, "name", str(arg)))
            if test is None or test(char):
                return True  # an unknown category: count the character as taken, try the next
    return False


def _first(test: Callable[[str], bool], variant: int) -> str:
    fitting = [c for c in _FALLBACK_CHARS if test(c)]
    if not fitting:
        fitting = [c for c in map(chr, range(0x21, 0x2FF)) if test(c)][:8]
    if not fitting:
        raise _Unsupported("no character fits the class")
    return fitting[variant % len(fitting)]

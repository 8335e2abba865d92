"""JSON whose integers keep every digit: orjson, with an exact path for integers beyond 64 bits.

orjson reads an integer literal outside ``[-2**63, 2**64 - 1]`` as a float (``10**20 + 1`` arrives as
``1e20``) and refuses to write a Python ``int`` outside that range. JSON itself has no such limit, and a
tool's 30-digit account number, or the ``2**64`` it returns, must survive both ways. ``loads`` and ``dumps``
behave like orjson's (same validation, same error types) at close to its speed: ``loads`` adds a type
check per value of the parsed containers (nothing for texts under 19 characters), ``dumps`` nothing until
orjson has already failed.

Pure functions, no I/O. This module must not change what valid JSON means: whatever orjson rejects is still
rejected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    # Not at run time: ``decimal`` costs ~1 ms to import, and whoever holds a Decimal has imported it.
    from decimal import Decimal

__all__ = ["decimal_value", "dumps", "loads"]

_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**64 - 1
_MAX_DEPTH: Final = 254
"""The deepest nesting orjson writes; the walk stops below it and lets orjson refuse the rest."""
_ROUNDED: Final = 2.0**63
"""orjson reads every integer literal outside its range as a float at least this large (in magnitude)."""
_SHORTEST_ROUNDED: Final = 19
"""Digits in the shortest literal orjson rounds (``-9223372036854775809``): shorter texts are exact."""


def decimal_value(value: Decimal) -> float | str:
    """A ``Decimal`` as JSON writes it without rounding: a number when a float says it exactly (prices:
    ``9.99``), else its digits as text. One rule for a tool's output, its events and what CodeAct code gets.

    >>> from decimal import Decimal
    >>> decimal_value(Decimal("9.99")), decimal_value(Decimal("0.1000000000000000000000001"))
    (9.99, '0.1000000000000000000000001')
    """
    from decimal import Decimal

    number = float(value)
    return number if value.is_finite() and Decimal(repr(number)) == value else str(value)


def loads(text: str | bytes) -> Any:
    """Parse JSON like ``orjson.loads``, except that integers beyond 64 bits are read exactly.

    Raises ``orjson.JSONDecodeError`` (a ``ValueError``) for whatever orjson rejects, which includes
    integers of more than 308 digits (orjson cannot even hold those as a float), and for the rare text
    orjson accepts that nests too deeply to re-read.

    >>> loads('{"id": 123456789012345678901234567890, "n": 1.5}')
    {'id': 123456789012345678901234567890, 'n': 1.5}
    >>> loads(b"[18446744073709551616]")
    [18446744073709551616]
    """
    value = orjson.loads(text)  # validates: NaN, lone surrogates, trailing commas… are refused here
    # Looking for large floats in the result, not for long digit runs in the text: the cost follows the
    # number of values, never the length of the strings (a 50 kB file's content costs one type check).
    if len(text) < _SHORTEST_ROUNDED or not _holds_large_float(value):
        return value
    # Rare: maybe a rounded integer (or just a float such as 1e300). The stdlib reads every integer
    # exactly and, on text orjson has accepted, agrees with it on everything else.
    try:
        return json.loads(text)
    except RecursionError:
        document = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise orjson.JSONDecodeError(
            "the JSON nests too deeply to read its large integers exactly", document, 0
        ) from None


def _holds_large_float(value: Any) -> bool:
    """Whether ``value`` (as orjson parsed it) holds a float where a rounded integer could be."""
    # A loop, not recursion: orjson accepts nesting deeper than Python's recursion limit.
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            children = item.values()
        elif kind is list:
            children = item
        else:
            if kind is float and not -_ROUNDED < item < _ROUNDED:
                return True
            continue
        for child in children:
            kind = type(child)
            if kind is float:
                if not -_ROUNDED < child < _ROUNDED:
                    return True
            elif kind is dict or kind is list:
                pending.append(child)
    return False


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None, option: int | None = None) -> bytes:
    """Serialize like ``orjson.dumps``, writing integers beyond 64 bits with all their digits.

    Only when orjson fails is the value walked (``dict``, ``list`` and ``tuple``, and what ``default``
    returns) and its large integers written as literal digits; with ``orjson.OPT_NON_STR_KEYS`` a large
    integer key becomes its decimal string. Whatever else orjson cannot write still raises its error.

    >>> dumps({"total": 10**30, "n": [2**64, -(2**63) - 1]})
    b'{"total":1000000000000000000000000000000,"n":[18446744073709551616,-9223372036854775809]}'
    """
    try:
        return orjson.dumps(value, default=default, option=option)
    except orjson.JSONEncodeError as exc:
        error = exc
    walk = _BigIntWalk(default, non_str_keys=option is not None and bool(option & orjson.OPT_NON_STR_KEYS))
    try:
        copy = walk.value(value)
    except ValueError:  # an integer of over 4300 digits, which Python will not turn into text
        raise error from None
    # If this fails too, its error names what is really wrong (the large integers are no longer in the way).
    return orjson.dumps(copy, default=None if default is None else walk.default, option=option)


class _BigIntWalk:
    """A copy of a value in which the integers orjson cannot write are ``orjson.Fragment`` digits."""

    def __init__(self, default: Callable[[Any], Any] | None, non_str_keys: bool) -> None:
        self._default = default
        self._non_str_keys = non_str_keys

    def default(self, obj: Any) -> Any:
        assert self._default is not None
        # What ``default`` returns (an attrs instance as a dict…) is written by orjson, so walk it too.
        return self.value(self._default(obj))

    def value(self, obj: Any, depth: int = 0) -> Any:
        kind = type(obj)
        if kind is int:
            return obj if _MIN_INT <= obj <= _MAX_INT else orjson.Fragment(str(obj))
        if depth > _MAX_DEPTH:
            return obj  # a cycle, or nesting orjson refuses anyway: never a RecursionError here
        if kind is dict:
            return {self._key(k): self.value(v, depth + 1) for k, v in obj.items()}
        if kind is list or kind is tuple:
            return [self.value(item, depth + 1) for item in obj]
        return obj

    def _key(self, key: Any) -> Any:
        if self._non_str_keys and type(key) is int and not _MIN_INT <= key <= _MAX_INT:
            return str(key)
        return key

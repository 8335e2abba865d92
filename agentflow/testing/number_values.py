"""A number within a JSON schema's bounds: what ``schema_values`` writes for ``integer`` and ``number``.

``number_value(schema, n)`` reads ``minimum``/``maximum`` (draft 6+ numbers, or draft 4's boolean
``exclusiveMinimum``/``exclusiveMaximum``), the exclusive bounds and ``multipleOf``, and returns a number
made from the counter ``n`` that keeps to them: the integer ``n`` shifted into the range, the number
``n + 0.5`` (or a tenth-step inside a closed range), a multiple decided as fastjsonschema decides it
(through ``Decimal`` for a float step, so that ``19.01`` is a multiple of ``0.01``). Bounds no number meets
raise ``NoNumber``. Pure: no I/O; ``decimal`` is imported only for a ``multipleOf``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["NoNumber", "number_value"]

_MAX_TRIES: Final = 1000
"""Candidates tried for a multiple, each way from the first."""


class NoNumber(ValueError):
    """No number meets the schema's bounds (the message says which)."""


def number_value(schema: Mapping[str, Any], number: int, *, integer: bool) -> int | float:
    """A number (an ``int`` when ``integer``) that meets ``schema``'s bounds, derived from ``number``.

    >>> number_value({"minimum": 1, "maximum": 10, "multipleOf": 4}, 0, integer=True)
    4
    >>> number_value({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, 3, integer=False)
    0.4
    """
    low, low_open = _bound(schema, "minimum", "exclusiveMinimum")
    high, high_open = _bound(schema, "maximum", "exclusiveMaximum")
    step = schema.get("multipleOf")
    step = step if isinstance(step, int | float) and not isinstance(step, bool) and step > 0 else None
    if integer:
        lowest = None if low is None else (math.floor(low) + 1 if low_open else math.ceil(low))
        highest = None if high is None else (math.ceil(high) - 1 if high_open else math.floor(high))
        start = _integer_in(number, lowest, highest)
        if step is None:
            return start
        for candidate in _around(start, lowest, highest):
            if _multiple(candidate, step):
                return candidate
        raise NoNumber(f"no integer in range is a multiple of {step}")
    if step is not None:
        return _multiple_in(step, low, low_open, high, high_open, number)
    return _float_in(number, low, low_open, high, high_open)


def _number_or_none(value: Any) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _bound(schema: Mapping[str, Any], inclusive: str, exclusive: str) -> tuple[float | int | None, bool]:
    """A bound and whether it is open, in draft 6+ form (a number) or draft 4's (a boolean flag)."""
    closed = _number_or_none(schema.get(inclusive))
    flag = schema.get(exclusive)
    if flag is True:
        return closed, closed is not None
    opened = _number_or_none(flag)
    if opened is None:
        return closed, False
    if closed is None:
        return opened, True
    # Both: the tighter one wins.
    tighter_open = opened >= closed if inclusive == "minimum" else opened <= closed
    return (opened, True) if tighter_open else (closed, False)


def _integer_in(number: int, lowest: int | None, highest: int | None) -> int:
    if lowest is not None and highest is not None:
        if lowest > highest:
            raise NoNumber(f"no integer lies between {lowest} and {highest}")
        return lowest + number % (highest - lowest + 1)
    if lowest is not None:
        return lowest + number
    if highest is not None:
        return min(number, highest)
    return number


def _around(start: int, lowest: int | None, highest: int | None) -> list[int]:
    """Integers to try for a multiple: from ``start`` up, then down, within the bounds."""
    up = range(start, start + _MAX_TRIES if highest is None else min(start + _MAX_TRIES, highest + 1))
    down = range(start - 1, start - _MAX_TRIES if lowest is None else max(start - _MAX_TRIES, lowest - 1), -1)
    return [*up, *down]


def _multiple(value: int | float, step: int | float) -> bool:
    """Whether ``value`` is a multiple of ``step``, decided as fastjsonschema decides it."""
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    if value / step == math.inf:
        return False
    if isinstance(step, float):
        import decimal

        exact = decimal.Decimal(repr(value)) / decimal.Decimal(repr(step))
        return int(exact) == exact
    quotient = value / step
    return int(quotient) == quotient


def _inside(
    value: float, low: float | int | None, low_open: bool, high: float | int | None, hi_open: bool
) -> bool:
    if low is not None and (value <= low if low_open else value < low):
        return False
    return not (high is not None and (value >= high if hi_open else value > high))


def _float_in(
    number: int,
    low: float | int | None,
    low_open: bool,
    high: float | int | None,
    high_open: bool,
) -> float:
    if low is not None and high is not None:
        if low == high and not (low_open or high_open):
            return float(low)
        candidate = low + (high - low) * ((number % 9 + 1) / 10)
    elif low is not None:
        candidate = low + number + 0.5
    elif high is not None:
        candidate = min(number + 0.5, high - 0.5)
    else:
        candidate = number + 0.5
    if not _inside(candidate, low, low_open, high, high_open):
        raise NoNumber(f"no number lies between {low} and {high}")
    return float(candidate)


def _multiple_in(
    step: int | float,
    low: float | int | None,
    low_open: bool,
    high: float | int | None,
    high_open: bool,
    number: int,
) -> float:
    import decimal

    exact = decimal.Decimal(repr(step))
    first = 0 if low is None else math.ceil(decimal.Decimal(repr(low)) / exact)
    start = first + (number if low is None and high is None else 0)
    if high is not None and low is None:
        start = min(start, math.floor(decimal.Decimal(repr(high)) / exact))
    for k in [*range(start, start + _MAX_TRIES), *range(start - 1, start - _MAX_TRIES, -1)]:
        value = float(exact * k)
        if _inside(value, low, low_open, high, high_open) and _multiple(value, step):
            return value
    raise NoNumber(f"no multiple of {step} found between {low} and {high}")

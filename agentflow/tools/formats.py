"""Parameter types that JSON carries as strings: dates and times, UUIDs, decimals and paths.

``string_type(tp)`` says how such an annotation looks on the wire (a ``string`` with a JSON-schema
``format``, a decimal as a number or a string) and how a validated value becomes the Python object.
``FORMATS`` are the checks ``ArgumentParser`` compiles into the validator for those ``format`` keywords: the
very parsers the converters use, so that what validates also converts (``fastjsonschema``'s own
``date-time`` wants a time zone, which a model often leaves out). Pure: no I/O; nothing here knows about
tools.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import sys
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    import decimal

__all__ = [
    "DECIMAL_TYPES",
    "FORMATS",
    "FORMAT_EXAMPLES",
    "NumberLiteral",
    "StringType",
    "json_text",
    "read_number_literals",
    "string_type",
    "uses_formats",
]


@attrs.frozen
class StringType:
    """How one string-borne type looks on the wire and is read back."""

    schema: dict[str, Any]
    convert: Callable[[Any], Any]
    accepts: Callable[[Any], bool]


def _parses(parse: Callable[[str], Any]) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        try:
            parse(value)
        except (ValueError, TypeError):
            return False
        return True

    return check


_PARSERS: Final[dict[str, Callable[[str], Any]]] = {
    "date-time": datetime.datetime.fromisoformat,
    "date": datetime.date.fromisoformat,
    "time": datetime.time.fromisoformat,
    "uuid": uuid.UUID,
}
_BY_TYPE: Final[dict[type, str]] = {
    datetime.datetime: "date-time",
    datetime.date: "date",
    datetime.time: "time",
    uuid.UUID: "uuid",
}

FORMATS: Final[Mapping[str, Callable[[Any], bool]]] = MappingProxyType(
    {name: _parses(parse) for name, parse in _PARSERS.items()}
)
"""``format`` checks for ``fastjsonschema.compile(formats=…)``: Python's ISO 8601 parsers, ``uuid.UUID``."""

FORMAT_EXAMPLES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "date-time": "an ISO 8601 date and time such as 2024-05-31T14:30:00+02:00",
        "date": "an ISO 8601 date such as 2024-05-31",
        "time": "an ISO 8601 time such as 14:30:00",
        "uuid": "a UUID such as 123e4567-e89b-12d3-a456-426614174000",
    }
)
"""What a value of each ``format`` looks like, for error messages."""


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_decimal(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


DECIMAL_TYPES: Final = ("string", "number")
"""The JSON types of a ``Decimal`` parameter's schema (``{"type": ["string", "number"]}``)."""


class NumberLiteral(float):
    """A JSON number whose literal holds more digits than a float keeps (``1.000000000000000001``): it is
    that float, and ``literal`` keeps the digits for a ``Decimal`` parameter (see ``read_number_literals``).
    """

    __slots__ = ("literal",)

    literal: str


def read_number_literals(text: str | bytes) -> Any:
    """Valid JSON (orjson has checked it) read with every number literal a float would round kept as a
    ``NumberLiteral``: what a tool with a ``Decimal`` parameter reads its arguments with, so that an amount
    the model writes as a number keeps its digits. Integers are exact, as ``json`` reads them.

    >>> value = read_number_literals('{"amount": 1.000000000000000001, "rate": 0.5}')
    >>> value["amount"].literal, type(value["rate"]).__name__
    ('1.000000000000000001', 'float')
    """
    return json.loads(text, parse_float=_float_literal)


def _float_literal(text: str) -> float:
    import decimal  # loaded already: only tools with a ``Decimal`` parameter read their arguments so

    number = float(text)
    if decimal.Decimal(text) == decimal.Decimal(repr(number)):
        return number
    kept = NumberLiteral(number)
    kept.literal = text
    return kept


def _to_decimal(value: Any) -> decimal.Decimal:
    import decimal  # loaded already: a ``Decimal`` annotation brought this converter in (``string_type``)

    # A float goes through its shortest repr, so the JSON 0.1 is Decimal("0.1"), not 0.1000000000000000055…
    # (and a number the float rounded, through the literal the model wrote).
    if isinstance(value, NumberLiteral):
        value = value.literal
    try:
        number = decimal.Decimal(repr(value) if isinstance(value, float) else value)
    except decimal.InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        shown = f"the string {json.dumps(value)}" if isinstance(value, str) else f"the number {value!r}"
        raise ValueError(f'must be a decimal number such as "12.50", got {shown}')
    return number


def string_type(tp: Any) -> StringType | None:
    """The wire form of ``tp`` if JSON carries it as a string (or, for ``Decimal``, a number), else None.

    >>> string_type(datetime.date).schema
    {'type': 'string', 'format': 'date'}
    >>> import decimal
    >>> string_type(decimal.Decimal).convert("12.50")
    Decimal('12.50')
    """
    if not isinstance(tp, type) and tp is not os.PathLike:
        return None
    name = _BY_TYPE.get(tp)
    if name is not None:
        return StringType({"type": "string", "format": name}, _PARSERS[name], _is_str)
    if tp is _decimal_type():
        # A string keeps every digit ("0.10"); a number is accepted too, as models write prices so.
        return StringType({"type": list(DECIMAL_TYPES)}, _to_decimal, _is_decimal)
    if tp is os.PathLike:
        return StringType({"type": "string"}, pathlib.Path, _is_str)
    if issubclass(tp, pathlib.PurePath):
        return StringType({"type": "string"}, tp, _is_str)
    return None


def json_text(value: Any) -> str | None:
    """A default of one of these types as the JSON string the schema shows, else None."""
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | pathlib.PurePath):
        return str(value)
    number = _decimal_type()
    if number is not None and isinstance(value, number):
        return str(value)
    return None


def _decimal_type() -> type[decimal.Decimal] | None:
    """``decimal.Decimal`` once something has imported ``decimal``, else ``None``: without the module there
    can be no ``Decimal`` annotation or value, and importing it here would cost every ``import agentflow``
    about a millisecond."""
    module = sys.modules.get("decimal")
    return None if module is None else module.Decimal


def uses_formats(schema: Any) -> bool:
    """Whether ``schema`` has a ``format`` that ``FORMATS`` checks.

    A validator compiled with custom formats is called through a wrapper that costs every call some 150 ns,
    so ``ArgumentParser`` passes ``FORMATS`` only to the schemas that need them.
    """
    if isinstance(schema, Mapping):
        if schema.get("format") in FORMATS:
            return True
        return any(uses_formats(v) for v in schema.values())
    if isinstance(schema, list):
        return any(uses_formats(v) for v in schema)
    return False

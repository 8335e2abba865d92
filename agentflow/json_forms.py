"""The JSON form of values JSON has no type for, one rule wherever agentflow writes them.

A tool's return value is written for the model (``tools.outcome``), handed to CodeAct code
(``sandbox.frames``) and travels in the run's events (``to_dict()``, ``sse_stream``): all write bytes,
pydantic models and NumPy values alike, so what a browser receives and what code gets is what the model
read. Known without importing pydantic or NumPy.

Pure functions, no I/O.

>>> foreign_form(b"hello"), foreign_form(b"\\x89PNG\\x00"), foreign_form(object()) is NO_FORM
('hello', '<5 bytes of binary data>', True)
"""

from __future__ import annotations

import datetime
import enum
import os
import sys
from typing import Any, Final

import attrs

from .exact_json import decimal_value

__all__ = [
    "NO_FORM",
    "bytes_text",
    "encodable_text",
    "foreign_form",
    "iso_duration",
    "json_form",
    "lenient_form",
    "plain_text",
    "safe_repr",
]

NO_FORM: Final[Any] = object()
"""What ``foreign_form`` returns for a value it has no JSON form for."""


def bytes_text(data: bytes) -> str:
    """Bytes as text: UTF-8 when they are, else a note of their size (raw binary means nothing to a model)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes of binary data>"


def iso_duration(value: datetime.timedelta) -> str:
    """A ``timedelta`` as an ISO 8601 duration, as pydantic writes one (``PT1M30S``), not its ``repr``.

    >>> day, cut = datetime.timedelta(days=1, seconds=90), datetime.timedelta(milliseconds=-1500)
    >>> iso_duration(day), iso_duration(cut)
    ('P1DT1M30S', '-PT1.5S')
    """
    sign = "-" if value < datetime.timedelta(0) else ""
    value = abs(value)
    minutes, seconds = divmod(value.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    text = f"{sign}P{value.days}D" if value.days else f"{sign}P"
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if value.microseconds:
        fraction = f"{value.microseconds / 1_000_000:.6f}".rstrip("0")[1:]  # ".5"
        clock += f"{seconds}{fraction}S"
    elif seconds or not (value.days or clock):
        clock += f"{seconds}S"
    return text + ("T" + clock if clock else "")


def foreign_form(value: Any) -> Any:
    """The JSON-ready form of bytes, a pydantic model (``model_dump(mode="json")``) or a NumPy value
    (``tolist()``), or ``NO_FORM``. What the value's own method raises propagates."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_text(bytes(value))
    # A pydantic model (what pydantic-ai users return) or a NumPy value, without importing either.
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    as_list = getattr(value, "tolist", None)
    if callable(as_list) and not isinstance(value, type):
        return as_list()
    return NO_FORM


def json_form(value: Any) -> Any:
    """A form orjson can write for one value it cannot write itself (orjson's ``default``); ``TypeError``
    when there is none.

    attrs instances become dicts keyed by the names the class is built with, sets lists, paths text, enums
    their value, a ``timedelta`` an ISO 8601 duration (``iso_duration``), a ``Decimal`` a number when a
    float says it exactly (else its digits), and bytes, pydantic models and NumPy values their
    ``foreign_form``. The form may itself hold such values (orjson asks again).

    >>> json_form({1, 2}), json_form(b"ok")
    ([1, 2], 'ok')
    """
    if attrs.has(type(value)):
        # By the names the class is built with (``_price`` is ``price``), as the tool's parameters are.
        return {
            f.alias if f.init and f.alias else f.name: getattr(value, f.name)
            for f in attrs.fields(type(value))
        }
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.timedelta):
        return iso_duration(value)
    decimal = sys.modules.get("decimal")  # whoever holds a Decimal has imported it (~1 ms otherwise)
    if decimal is not None and isinstance(value, decimal.Decimal):
        return decimal_value(value)
    form = foreign_form(value)
    if form is not NO_FORM:
        return form
    raise TypeError(f"values of type {type(value).__qualname__} cannot be turned into JSON")


def lenient_form(value: Any) -> Any:
    """``json_form``, but a value with no JSON form (or whose own method fails) becomes its ``str()``.

    >>> class Opaque:
    ...     def __str__(self) -> str:
    ...         return "opaque"
    >>> lenient_form(Opaque()), lenient_form(frozenset())
    ('opaque', [])
    """
    try:
        return json_form(value)
    except Exception:
        return plain_text(value)


def plain_text(value: Any) -> str:
    """``str(value)``, or ``object.__repr__`` when ``__str__`` raises."""
    try:
        return str(value)
    except Exception:
        return object.__repr__(value)


def encodable_text(text: str) -> str:
    """``text``, with lone surrogates (``os.fsdecode`` of a non-UTF-8 file name) escaped as ``\\udcff``:
    they cannot be written as UTF-8, and would fail whatever carries the text on instead of the tool.

    >>> encodable_text("caf\\udce9")
    'caf\\\\udce9'
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def safe_repr(value: object) -> str:
    """``repr(value)``, or ``<Class object>`` when ``__repr__`` raises (an ORM row whose session closed)."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__qualname__} object>"

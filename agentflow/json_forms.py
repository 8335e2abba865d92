"""The JSON form of values JSON has no type for, one rule wherever agentflow writes them.

A tool's return value is written for the model (``tools.outcome``), and the same value travels in the
run's events (``to_dict()``, ``sse_stream``): both write bytes, pydantic models and NumPy values alike, so
what a browser receives is what the model read. Known without importing pydantic or NumPy.

Pure functions, no I/O.

>>> foreign_form(b"hello"), foreign_form(b"\\x89PNG\\x00"), foreign_form(object()) is NO_FORM
('hello', '<5 bytes of binary data>', True)
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["NO_FORM", "bytes_text", "foreign_form", "safe_repr"]

NO_FORM: Final[Any] = object()
"""What ``foreign_form`` returns for a value it has no JSON form for."""


def bytes_text(data: bytes) -> str:
    """Bytes as text: UTF-8 when they are, else a note of their size (raw binary means nothing to a model)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes of binary data>"


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


def safe_repr(value: object) -> str:
    """``repr(value)``, or ``<Class object>`` when ``__repr__`` raises (an ORM row whose session closed)."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__qualname__} object>"

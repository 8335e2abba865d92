"""How a property's default shows in its schema: a ``default`` keyword, or in strict mode a note.

``MISSING`` marks a property without a default. ``json_default`` turns a Python default into the JSON the
schema shows (or ``NO_JSON`` when it has none: the default still applies, it is only not shown);
``default_note`` is the text strict mode puts in the description instead, since Azure's strict mode
refuses the ``default`` keyword. Kept apart from ``schema`` because it is about values, not type hints.
Pure code, run only when a schema is built: argument parsing never reads it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

import attrs

from .formats import json_text

__all__ = ["MISSING", "NO_JSON", "default_note", "json_default"]


class _Missing(enum.Enum):
    MISSING = "MISSING"


MISSING: Any = _Missing.MISSING
"""Marks a property without a default."""

NO_JSON: Any = object()
"""What ``json_default`` returns for a default that has no JSON form."""

_JSON_SCALARS = (str, bool, int, float)
_MAX_DEFAULT_CHARS = 200
"""A default longer than this as JSON is not written into a strict description (it would crowd it)."""


def default_note(default: Any, *, null_means_default: bool) -> str | None:
    """What a strict schema's description says about an optional property's default, if anything."""
    shown = NO_JSON if default is MISSING else json_default(default)
    text = None
    if shown is not NO_JSON and shown is not None:
        dumped = json.dumps(shown, ensure_ascii=False)
        text = dumped if len(dumped) <= _MAX_DEFAULT_CHARS else None
    if null_means_default:
        return f"default: {text}; null for the default" if text else "null for the default"
    return f"default: {text}" if text else None


def json_default(value: Any) -> Any:
    """A default as JSON for the schema, or ``NO_JSON`` when it has no JSON form (it still applies)."""
    if value is None or type(value) in _JSON_SCALARS:
        return value
    text = json_text(value)
    if text is not None:
        return text
    if isinstance(value, enum.Enum):
        return json_default(value.value)
    if isinstance(value, list | tuple | set | frozenset):
        items = [json_default(v) for v in value]
        return NO_JSON if any(i is NO_JSON for i in items) else items
    if isinstance(value, dict):
        out = {k: json_default(v) for k, v in value.items()}
        ok = all(isinstance(k, str) for k in out) and all(v is not NO_JSON for v in out.values())
        return out if ok else NO_JSON
    if attrs.has(type(value)):
        # Keyed as the schema's properties are, by alias (``_limit`` is ``limit``), so that the default shown
        # is itself valid; fields without ``init`` are not properties.
        fields = attrs.fields(type(value))
        return json_default({f.alias or f.name: getattr(value, f.name) for f in fields if f.init})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return json_default({f.name: getattr(value, f.name) for f in fields if f.init})
    if hasattr(type(value), "model_json_schema") and callable(getattr(value, "model_dump", None)):
        # A pydantic model, read by duck typing (pydantic is never imported here): keyed by alias, as
        # pydantic's schema is.
        try:
            return json_default(value.model_dump(mode="json", by_alias=True))
        except Exception:
            return NO_JSON
    return NO_JSON

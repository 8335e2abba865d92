"""What other libraries' ``Annotated`` metadata says about a parameter: a description and JSON-schema bounds.

``Annotated[int, Field(ge=1, description="…")]`` (pydantic), ``Annotated[str, MaxLen(20)]``
(``annotated_types``) and ``Annotated[str, Doc("…")]`` (``typing_extensions``) mean something to the schema
walker too. It lives apart from ``schema`` because it is knowledge of those libraries, not of type hints: it
reads their objects by duck typing and must import none of them (nor ``schema``, which imports it). Pure
code, run only when a tool's schema is built, never while its arguments are parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["flat_metadata", "foreign_constraints", "foreign_description"]

# Constraint attributes of annotated-types objects (``Ge(1)``, ``Interval(gt=0, le=9)``; pydantic's ``Field``
# keeps them in ``.metadata``) as JSON-schema keywords.
_BOUNDS = (
    ("gt", "exclusiveMinimum"),
    ("ge", "minimum"),
    ("lt", "exclusiveMaximum"),
    ("le", "maximum"),
    ("multiple_of", "multipleOf"),
)
_LENGTH_KEYWORDS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def flat_metadata(metadata: tuple[Any, ...], own: tuple[type, ...]) -> list[Any]:
    """``Annotated`` metadata, with a pydantic ``FieldInfo``'s own ``metadata`` (its constraints) after it.

    ``own`` are the metadata types agentflow reads itself (``str``, ``Param``): they are not looked into.
    """
    flat: list[Any] = []
    for meta in metadata:
        flat.append(meta)
        inner = getattr(meta, "metadata", None) if not isinstance(meta, own) else None
        if isinstance(inner, list):
            flat.extend(inner)
    return flat


def foreign_description(meta: Any) -> str | None:
    """The text of ``typing_extensions.Doc("…")`` or of a pydantic ``Field(description="…")``."""
    for attribute in ("documentation", "description"):
        text = getattr(meta, attribute, None)
        if isinstance(text, str) and text:
            return text
    return None


def foreign_constraints(meta: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-schema keywords for an annotated-types constraint (or pydantic's ``pattern``) on ``schema``."""
    if isinstance(meta, type | int | float | bool) or meta is None:
        return {}
    keywords: dict[str, Any] = {}
    for attribute, keyword in _BOUNDS:
        bound = getattr(meta, attribute, None)
        if isinstance(bound, int | float) and not isinstance(bound, bool):
            keywords[keyword] = bound
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    lengths = _LENGTH_KEYWORDS.get(kind) if isinstance(kind, str) else None
    for attribute, index in (("min_length", 0), ("max_length", 1)):
        length = getattr(meta, attribute, None)
        if lengths is not None and isinstance(length, int) and not isinstance(length, bool):
            keywords[lengths[index]] = length
    pattern = getattr(meta, "pattern", None)
    if isinstance(pattern, str) and kind == "string":
        keywords["pattern"] = pattern
    return keywords

"""What an annotation means on the wire (``Shape``), and how named properties make an object of them.

A ``Shape`` is a JSON schema, a converter from validated JSON to the Python type and a structural check
that picks the member of a ``Union``; ``Prop`` is one named property; ``object_shape`` closes properties
into an object schema (strict mode's rules applied) with its converter. A value the schema allowed but
its type refused is a ``ConversionError`` carrying the path to it. ``schema`` walks type hints into these;
``schema_classes`` and ``schema_pydantic`` make them for classes. All are re-exported by ``schema``.

Pure code: no I/O, nothing async, nothing of tools' execution.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .defaults import MISSING, NO_JSON, default_note, json_default
from .schema_defs import Definitions, ref_free

__all__ = [
    "Check",
    "ConversionError",
    "Converter",
    "Prop",
    "Shape",
    "allows_null",
    "always",
    "described",
    "located",
    "nullable_schema",
    "object_shape",
]

Converter = Callable[[Any], Any]
Check = Callable[[Any], bool]


class ConversionError(ValueError):
    """A value the schema allowed but its type refused (an attrs validator, a constructor's own check).

    ``error`` is what was raised; ``path`` leads from the converted value to the one that failed (property
    names and item indexes); ``type_name`` names the class whose constructor refused it, if one did;
    ``reason``, if set, says what is wrong in words of its own (``must be a decimal number…``). ``also``
    holds further refusals of the same value (pydantic reports every field it refused), each a path and a
    reason; their paths start where the last ``depth`` keys of ``path`` do.
    """

    def __init__(self, error: Exception, type_name: str | None = None, reason: str | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.type_name = type_name
        self.reason = reason
        self.path: list[str | int] = []
        self.also: list[tuple[list[str | int], str]] = []
        self.depth = 0


def located(key: str | int, exc: Exception) -> Exception:
    """``exc`` as a ``ConversionError`` one step further from the value that failed (at ``key``).

    A ``RecursionError`` (data of a recursive type nested deeper than the stack) stays what it is: the
    parser reports it as such, not as a refusal at the end of a path hundreds of keys long.
    """
    if isinstance(exc, RecursionError):
        return exc
    error = exc if isinstance(exc, ConversionError) else ConversionError(exc)
    error.path.insert(0, key)
    return error


def always(_: Any) -> bool:
    """The check of a shape that accepts any value."""
    return True


@attrs.frozen
class Shape:
    """What an annotation means on the wire: a schema, a converter (``None``: keep the JSON), a check."""

    schema: dict[str, Any]
    convert: Converter | None = None
    accepts: Check = always
    nullable: bool = False
    class_description: str | None = None
    """The class docstring that is ``schema["description"]``, if that is where it came from: a parameter's own
    description goes before it, rather than being dropped (two ``Address`` parameters stay distinct)."""


@attrs.frozen
class Prop:
    """One named property of an object shape (a parameter, an attrs field, a TypedDict key)."""

    name: str
    shape: Shape
    required: bool
    default: Any = MISSING
    description: str | None = None
    target: str | None = None
    """The keyword the converter writes (an attrs alias); defaults to ``name``."""


def object_shape(props: list[Prop], *, strict: bool = False, build: Converter | None = None) -> Shape:
    """An object schema over ``props`` (closed: ``additionalProperties: false``) and its converter.

    The converter returns ``build(kwargs)`` (or the converted dict when ``build`` is None). In strict mode
    every property is required and a default is told in the description (``(default: 10)``), not as a
    ``default`` keyword (which Azure's strict mode refuses). An optional property whose type has no ``null``
    becomes nullable, and there a ``null`` means "use the default"; where ``null`` is a value of the type
    (``int | None = 10``), it stays that value, and the model sends the default to get it. The ``$defs`` of
    the properties' schemas (recursive types) move to the object's root.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    defs = Definitions()
    for prop in props:
        schema = dict(defs.take(prop.shape.schema))
        if prop.description and "description" not in schema:
            schema["description"] = prop.description
        elif prop.description and prop.shape.class_description is not None:
            schema["description"] = described(prop.description, prop.shape.class_description)
        if strict:
            if not prop.required:
                note = default_note(prop.default, null_means_default=not prop.shape.nullable)
                if note:
                    own = schema.get("description")
                    schema["description"] = f"{own} ({note})" if own else note[0].upper() + note[1:]
                if not prop.shape.nullable:
                    schema = nullable_schema(schema)
            required.append(prop.name)
        else:
            if prop.required:
                required.append(prop.name)
            elif prop.default is not MISSING:
                default = json_default(prop.default)
                if default is not NO_JSON:
                    schema["default"] = default
        properties[prop.name] = ref_free(schema)
    schema_out: dict[str, Any] = {"type": "object", "properties": properties}
    if required or strict:
        schema_out["required"] = required  # strict mode wants the list even when it is empty
    schema_out["additionalProperties"] = False

    steps = [
        (
            p.name,
            p.target or p.name,
            p.shape.convert,
            p.shape.accepts,
            strict and not p.required and not p.shape.nullable,
        )
        for p in props
    ]
    known = {p.name for p in props}
    needed = {p.name for p in props if p.required}

    def convert(obj: Any) -> Any:
        out: dict[str, Any] = {}
        for name, target, conv, _, null_means_default in steps:
            if name not in obj:
                continue
            value = obj[name]
            if value is None and null_means_default:
                continue
            if conv is None:
                out[target] = value
                continue
            try:
                out[target] = conv(value)
            except Exception as exc:
                raise located(name, exc) from None
        return out if build is None else build(out)

    def accepts(obj: Any) -> bool:
        # Values too, not only keys: in ``ById | ByName`` ({"key": int} / {"key": str}) the keys match both.
        if not (isinstance(obj, dict) and needed <= obj.keys() <= known):
            return False
        for name, _, _, check, null_means_default in steps:
            if name in obj:
                value = obj[name]
                if not (value is None and null_means_default) and not check(value):
                    return False
        return True

    return Shape(defs.rooted(schema_out), convert, accepts)


def described(own: str, class_description: str | None) -> str:
    """A parameter's own description, then its class's docstring (unless that says the same)."""
    if not class_description or class_description == own:
        return own
    return f"{own}\n\n{class_description}"


def allows_null(schema: Any) -> bool:
    """Whether a JSON schema accepts ``null``: every keyword of it that constrains the value does.

    ``true`` accepts it; ``type`` must be ``"null"`` or a list holding it, ``enum`` must hold ``null``,
    ``const`` must be ``null``, and of an ``anyOf`` / ``oneOf`` one member must accept it. A schema that
    says none of these (``{}``, a bare ``$ref``, which is not followed) is not counted as nullable: what
    strict mode sends always says.

    >>> allows_null({"type": ["integer", "null"]}), allows_null({"enum": ["a", None]}), allows_null(True)
    (True, True, True)
    >>> allows_null({"anyOf": [{"type": "string"}]}), allows_null({"type": ["string", "null"], "enum": ["a"]})
    (False, False)
    """
    if not isinstance(schema, Mapping):
        return schema is True
    said = False
    kind = schema.get("type")
    if kind is not None:
        if not (kind == "null" or (isinstance(kind, list) and "null" in kind)):
            return False
        said = True
    values = schema.get("enum")
    if isinstance(values, list):
        if None not in values:
            return False
        said = True
    if "const" in schema:
        if schema["const"] is not None:
            return False
        said = True
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list):
            if not any(allows_null(member) for member in members):
                return False
            said = True
    return said


def nullable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts ``null``: a type list where it is a bare type, else an ``anyOf``."""
    kind = schema.get("type")
    if set(schema) <= {"type", "description"} and isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    if inner.keys() == {"anyOf"} and len(inner["anyOf"]) == 1:
        inner = inner["anyOf"][0]  # a reference kept apart from its description (``ref_free``)
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description:
        out["description"] = description
    return out

"""JSON schemas from Python type hints, and the converters that turn validated JSON back into those types.

``shape_of(annotation)`` walks one annotation once and returns a ``Shape``: the JSON schema the model sees,
a converter from validated JSON to the annotated type (Enum members, attrs/dataclass instances, tuples,
sets…), and a cheap structural test used to pick the member of a ``Union``. ``object_shape`` does the same
for a set of named properties (a function's parameters, an attrs class, a TypedDict).

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``list``/``Sequence``/``set``/
``frozenset``, ``tuple`` (``tuple[int, str]``, ``tuple[int, ...]``), ``dict``/``Mapping`` with ``str`` keys,
``Optional``/``Union``/``X | None``, ``Literal``, ``Enum``, attrs classes, dataclasses, ``TypedDict``
(``Required``/``NotRequired``), pydantic models, ``NewType``, what JSON carries as strings
(``datetime``/``date``/``time``, ``UUID``, ``Decimal``, ``Path``: see ``formats``) and
``Annotated[X, "description"]``,
``Annotated[X, Param(...)]`` or the constraints of pydantic's ``Field``, ``annotated_types`` and ``Doc``.
Anything else raises ``TypeError`` naming the parameter, and so does, in strict mode, what OpenAI's strict
mode cannot express (``Any``, free-form mappings, fixed-length tuples).

Recursive classes (a tree ``Node`` with ``children: list[Node]``, or ``A`` → ``B`` → ``A``) refer to
themselves through ``$defs``/``$ref`` at the schema's root (``schema_defs``), the only recursion OpenAI's
strict mode accepts; a schema without recursion has no ``$defs``. A pydantic ``BaseModel`` is described and
validated by pydantic itself (``schema_pydantic`` says why), without agentflow importing pydantic.

Its neighbours hold what is not the walk itself: ``schema_shapes`` the ``Shape``/``Prop`` types and
``object_shape``, ``schema_classes`` the fields of attrs classes, dataclasses and ``TypedDict``s,
``schema_pydantic`` pydantic models, ``schema_defs`` the ``$defs``, ``foreign_metadata`` other libraries'
``Annotated`` metadata, ``defaults`` how a default shows in a schema (``MISSING`` lives there), and
``strict`` the check of a hand-written schema for strict mode. Their public names are re-exported here so
that the old import paths keep working.

Pure code: no I/O, nothing async. It must not know about tools' execution or the event bus.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs

from .defaults import MISSING
from .foreign_metadata import flat_metadata, foreign_constraints, foreign_description
from .formats import string_type
from .schema_classes import (
    Expansions,
    attrs_shape,
    dataclass_shape,
    is_typeddict,
    typeddict_shape,
    unresolved_note,
)
from .schema_defs import DEFS, Definitions, ref_free
from .schema_pydantic import is_pydantic_model, pydantic_shape
from .schema_shapes import (
    Check,
    ConversionError,
    Converter,
    Prop,
    Shape,
    always,
    described,
    located,
    object_shape,
)
from .strict import strict_schema_problems

__all__ = [
    "MISSING",
    "ConversionError",
    "Param",
    "Prop",
    "Shape",
    "object_shape",
    "shape_of",
    "strict_schema_problems",
    "unresolved_note",
]

_JSON_TYPES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_SEQUENCES = (list, collections.abc.Sequence, collections.abc.MutableSequence, collections.abc.Iterable)
_SETS = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _schema_copy(keywords: Mapping[str, Any]) -> dict[str, Any]:
    return dict(keywords)


@attrs.frozen
class Param:
    """Extra information for one parameter, used as ``Annotated[T, Param(...)]``.

    ``schema`` holds JSON-schema keywords merged into the parameter's schema (and enforced when the
    arguments are validated).

    >>> from typing import Annotated
    >>> shape_of(Annotated[int, Param("Days ahead", schema={"minimum": 1})]).schema
    {'type': 'integer', 'description': 'Days ahead', 'minimum': 1}
    """

    description: str | None = None
    schema: Mapping[str, Any] = attrs.field(factory=dict, converter=_schema_copy)


def _accept_none(value: Any) -> bool:
    return value is None


def _accept_str(value: Any) -> bool:
    return isinstance(value, str)


def _accept_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _accept_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _accept_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _to_int(value: Any) -> Any:
    # JSON schema counts 3.0 as an integer; the function asked for an int.
    return int(value) if isinstance(value, float) else value


def _to_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


_PRIMITIVE_CHECKS: dict[type, Check] = {
    str: _accept_str,
    bool: _accept_bool,
    int: _accept_int,
    float: _accept_number,
}
_PRIMITIVE_CONVERTERS: dict[type, Converter | None] = {str: None, bool: None, int: _to_int, float: _to_float}


class _Walker:
    """One schema generation: carries strict mode, the error context, the classes being expanded and the
    ``$defs`` of the recursive ones (and of pydantic models), which go to the root of the walk's schema."""

    def __init__(self, strict: bool, where: str) -> None:
        self.strict = strict
        self.where = where
        self.defs = Definitions()
        self.expansions = Expansions(self.defs)
        self.fields: list[str] = []
        """``Class.field`` for each class field being walked: an error names the innermost one."""

    def fail(self, message: str) -> TypeError:
        field = f"field {self.fields[-1]}: " if self.fields else ""
        return TypeError(f"{self.where}: {field}{message}")

    def field(self, cls: type, name: str, hint: Any) -> Shape:
        """The shape of one field of ``cls`` (its errors name the field)."""
        self.fields.append(f"{cls.__name__}.{name}")
        try:
            return self.shape(hint)
        finally:
            self.fields.pop()

    def shape(self, tp: Any) -> Shape:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self._annotated(args[0], args[1:])
        if tp is Any:
            if self.strict:
                raise self.fail(
                    "typing.Any cannot be expressed in strict mode; use a concrete type or strict=False"
                )
            return Shape({})
        if tp is None or tp is type(None):
            return Shape({"type": "null"}, accepts=_accept_none, nullable=True)
        if tp in _JSON_TYPES:
            return Shape({"type": _JSON_TYPES[tp]}, _PRIMITIVE_CONVERTERS[tp], _PRIMITIVE_CHECKS[tp])
        if isinstance(tp, typing.NewType):
            return self.shape(tp.__supertype__)
        borne = string_type(tp)
        if borne is not None:
            return Shape(dict(borne.schema), _said(borne.convert), borne.accepts)
        if origin is typing.Literal:
            return self._literal(args)
        if origin is typing.Union or origin is types.UnionType:
            return self._union(args)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return self._enum(tp)
        if tp in _SEQUENCES or origin in _SEQUENCES:
            return self._array(args, list)
        if tp in _SETS or origin in _SETS:
            # No "uniqueItems": duplicates from the model are harmless, the set drops them.
            return self._array(args, frozenset if (origin or tp) is frozenset else set)
        if tp is tuple or origin is tuple:
            return self._tuple(tp, args)
        if tp in _MAPPINGS or origin in _MAPPINGS:
            return self._mapping(args)
        if is_pydantic_model(tp):
            return self._pydantic(tp)
        if isinstance(tp, type) and attrs.has(tp):
            return self.expansions.shape(tp, self._attrs_class)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self.expansions.shape(tp, self._dataclass)
        if is_typeddict(tp):
            return self.expansions.shape(tp, self._typeddict)
        if isinstance(tp, str | typing.ForwardRef):
            raise self.fail(f"the annotation {tp!r} could not be resolved; define the type at module level")
        raise self.fail(
            f"unsupported annotation {tp!r}; use str, int, float, bool, None, list, tuple, set, "
            "dict[str, X], Optional/Union, Literal, an Enum, an attrs class, a dataclass, a TypedDict, "
            "a pydantic model, datetime/date/time, UUID, Decimal or Path"
        )

    # -- combinators -------------------------------------------------------------------------------------

    def _annotated(self, tp: Any, metadata: tuple[Any, ...]) -> Shape:
        base = self.shape(tp)
        schema = dict(base.schema)
        for meta in flat_metadata(metadata, (str, Param)):
            if isinstance(meta, str):
                schema["description"] = described(meta, base.class_description)
            elif isinstance(meta, Param):
                if meta.description is not None:
                    schema["description"] = described(meta.description, base.class_description)
                schema.update(meta.schema)
            else:
                description = foreign_description(meta)
                if description is not None:
                    schema["description"] = described(description, base.class_description)
                schema.update(foreign_constraints(meta, schema))
        schema = ref_free(schema)  # a recursive class met inside itself is a bare ``$ref``
        if schema.get("description") == base.class_description:
            return attrs.evolve(base, schema=schema)
        # The description is now the parameter's own: a docstring's must not be added to it.
        return attrs.evolve(base, schema=schema, class_description=None)

    def _literal(self, values: tuple[Any, ...]) -> Shape:
        wire: list[Any] = []
        members: dict[tuple[type, Any], Any] = {}
        for value in values:
            raw = value.value if isinstance(value, enum.Enum) else value
            if raw is not None and type(raw) not in _JSON_TYPES:
                raise self.fail(
                    f"Literal values must be str, int, float, bool, None or Enum members, got {value!r}"
                )
            wire.append(raw)
            members[_member_key(raw)] = value
        schema = _typed_enum(wire)
        # Enum members must be looked up; numbers too, so that a JSON 1.0 becomes the literal 1.
        converts = any(isinstance(v, enum.Enum) or type(v) in (int, float) for v in values)

        def accepts(value: Any) -> bool:
            return _member_key(value) in members

        def convert(value: Any) -> Any:
            return members[_member_key(value)]

        return Shape(schema, convert if converts else None, accepts, nullable=None in wire)

    def _enum(self, cls: type[enum.Enum]) -> Shape:
        members: dict[tuple[type, Any], enum.Enum] = {}
        for member in cls:
            if member.value is not None and type(member.value) not in _JSON_TYPES:
                raise self.fail(
                    f"Enum {cls.__name__} has a member with a non-JSON value {member.value!r}; "
                    "use str or int values"
                )
            members[_member_key(member.value)] = member
        schema = _typed_enum([m.value for m in cls])

        def accepts(value: Any) -> bool:
            return _member_key(value) in members

        def convert(value: Any) -> Any:
            return members[_member_key(value)]

        return Shape(schema, convert, accepts)

    def _union(self, members: tuple[Any, ...]) -> Shape:
        shapes = [self.shape(m) for m in members]
        nullable = any(s.nullable for s in shapes)
        schema = _merge_simple(shapes) or {"anyOf": [s.schema for s in shapes]}
        convertible = [s for s in shapes if not (s.nullable and s.schema == {"type": "null"})]
        # Try float members last, so that in ``float | int`` a JSON 3 stays the int 3.
        convertible.sort(key=lambda s: s.schema.get("type") == "number")

        def accepts(value: Any) -> bool:
            return any(s.accepts(value) for s in shapes)

        if all(s.convert is None for s in convertible):
            return Shape(schema, None, accepts, nullable)

        def convert(value: Any) -> Any:
            refused: Exception | None = None
            for s in convertible:
                if s.accepts(value):
                    if s.convert is None:
                        return value
                    try:
                        return s.convert(value)
                    except Exception as exc:
                        # ``Small | Bulk`` (qty <= 10 / qty > 10): the next member that fits may take it.
                        refused = refused or exc
            if refused is not None:
                raise refused
            return value

        return Shape(schema, convert, accepts, nullable)

    def _array(self, args: tuple[Any, ...], kind: type) -> Shape:
        schema: dict[str, Any] = {"type": "array"}
        item = self.shape(args[0]) if args else None
        if kind is not list and kind is not tuple and args:
            unhashable = _unhashable(args[0])
            if unhashable is not None:
                raise self.fail(
                    f"the items of a set must be hashable, but {unhashable}; use a list instead (or, for a "
                    "class, make it frozen: @attrs.frozen, @dataclass(frozen=True))"
                )
        if item is None and self.strict:
            raise self.fail(
                "a bare list/set/tuple has no item type, which strict mode requires; write list[str] etc."
            )
        # Always "items", even ``{}`` (any value) for a bare list or list[Any]: OpenAI rejects an array
        # schema without it ("array schema missing items"), strict mode or not.
        schema["items"] = item.schema if item is not None else {}
        item_convert = item.convert if item is not None else None
        item_accepts = item.accepts if item is not None else always

        def accepts(value: Any) -> bool:
            return isinstance(value, list) and all(item_accepts(v) for v in value)

        if item_convert is None and kind is list:
            return Shape(schema, None, accepts)

        def convert(value: Any) -> Any:
            if item_convert is None:
                return kind(value)
            out = []
            for index, v in enumerate(value):
                try:
                    out.append(item_convert(v))
                except Exception as exc:
                    raise located(index, exc) from None
            return out if kind is list else kind(out)

        return Shape(schema, convert, accepts)

    def _tuple(self, tp: Any, args: tuple[Any, ...]) -> Shape:
        if tp is tuple or not args:
            return self._array((), tuple)
        if len(args) == 2 and args[1] is Ellipsis:
            return self._array(args[:1], tuple)
        if self.strict:
            # Strict mode takes one "items" schema for the whole array, not one per position.
            shown = repr(tp).replace("typing.Tuple[", "tuple[")
            raise self.fail(
                f"a fixed-length {shown} cannot be expressed in strict mode; use an attrs class or a "
                "TypedDict (named fields), tuple[X, ...] or list[X], or strict=False"
            )
        items = [self.shape(a) for a in args]
        schema = {
            "type": "array",
            "items": [s.schema for s in items],
            "minItems": len(items),
            "maxItems": len(items),
        }

        def accepts(value: Any) -> bool:
            return (
                isinstance(value, list)
                and len(value) == len(items)
                and all(s.accepts(v) for s, v in zip(items, value, strict=True))
            )

        def convert(value: Any) -> Any:
            out = []
            for index, (s, v) in enumerate(zip(items, value, strict=True)):
                try:
                    out.append(v if s.convert is None else s.convert(v))
                except Exception as exc:
                    raise located(index, exc) from None
            return tuple(out)

        return Shape(schema, convert, accepts)

    def _mapping(self, args: tuple[Any, ...]) -> Shape:
        if self.strict:
            raise self.fail(
                "dict/Mapping parameters (free-form keys) cannot be expressed in strict mode; "
                "use an attrs class or a TypedDict, or strict=False"
            )
        if args and args[0] is not str:
            raise self.fail(f"mapping keys must be str (JSON object keys are strings), got {args[0]!r}")
        schema: dict[str, Any] = {"type": "object"}
        value = self.shape(args[1]) if len(args) == 2 else None
        if value is not None and value.schema:
            schema["additionalProperties"] = value.schema
        value_convert = value.convert if value is not None else None
        value_accepts = value.accepts if value is not None else always

        def accepts(obj: Any) -> bool:
            return isinstance(obj, dict) and all(value_accepts(v) for v in obj.values())

        if value_convert is None:
            return Shape(schema, None, accepts)

        def convert(obj: Any) -> Any:
            out = {}
            for k, v in obj.items():
                try:
                    out[k] = value_convert(v)
                except Exception as exc:
                    raise located(k, exc) from None
            return out

        return Shape(schema, convert, accepts)

    # -- classes -------------------------------------------------------------------------------------------

    def _attrs_class(self, cls: type) -> Shape:
        return attrs_shape(self, cls)

    def _dataclass(self, cls: type) -> Shape:
        return dataclass_shape(self, cls)

    def _typeddict(self, cls: type) -> Shape:
        return typeddict_shape(self, cls)

    def _pydantic(self, cls: type) -> Shape:
        # Not an expansion: pydantic describes a model's recursion itself, and a model holds no attrs class.
        shape, defs = pydantic_shape(cls, strict=self.strict, fail=self.fail)
        if not defs:
            return shape
        # pydantic's names for its recursive models join this walk's: one that is taken is renamed.
        return attrs.evolve(shape, schema=self.defs.take({**shape.schema, DEFS: defs}))


def shape_of(tp: Any, *, strict: bool = False, where: str = "annotation") -> Shape:
    """The ``Shape`` of one annotation; ``where`` names it in ``TypeError`` messages.

    >>> shape_of(list[int] | None).schema
    {'anyOf': [{'type': 'array', 'items': {'type': 'integer'}}, {'type': 'null'}]}
    >>> shape_of(tuple[int, str]).convert([1, "a"])
    (1, 'a')
    """
    walker = _Walker(strict, where)
    shape = walker.shape(tp)
    if not walker.defs:
        return shape
    return attrs.evolve(shape, schema=walker.defs.rooted(shape.schema))


# -- helpers -------------------------------------------------------------------------------------------


def _said(convert: Converter) -> Converter:
    """``convert``, whose ``ValueError`` already says what the value must be (``must be a decimal…``)."""

    def said(value: Any) -> Any:
        try:
            return convert(value)
        except ValueError as exc:
            raise ConversionError(exc, reason=str(exc)) from None

    return said


def _unhashable(tp: Any) -> str | None:
    """Why values of ``tp`` are unhashable (so cannot go into a set), or None when they are hashable."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unhashable(typing.get_args(tp)[0])
    if isinstance(tp, typing.NewType):
        return _unhashable(tp.__supertype__)
    if origin is typing.Union or origin is types.UnionType or origin is tuple:
        found = (_unhashable(a) for a in typing.get_args(tp) if a is not Ellipsis)
        return next((f for f in found if f is not None), None)
    if origin is frozenset:
        return _unhashable(typing.get_args(tp)[0]) if typing.get_args(tp) else None
    kind = origin or tp
    name = getattr(tp, "__name__", None) or repr(tp)
    if (
        kind in _SEQUENCES
        or kind in _MAPPINGS
        or kind in (set, collections.abc.Set, collections.abc.MutableSet)
    ):
        return f"{name} values are lists, dicts or sets"
    if is_typeddict(kind):
        return f"{name} values are dicts"
    if isinstance(kind, type) and getattr(kind, "__hash__", None) is None:
        return f"{name} has no __hash__ (a mutable attrs class or dataclass compared by value)"
    return None


def _member_key(value: Any) -> tuple[type, Any]:
    """How a JSON value finds its ``Literal``/``Enum`` member: JSON has one number type, so ``1.0`` finds the
    member ``1`` (and ``2`` the member ``2.0``), while ``true`` never finds ``1``."""
    kind = type(value)
    return (int, value) if kind is float else (kind, value)


def _json_type(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES[type(value)]


def _typed_enum(values: list[Any]) -> dict[str, Any]:
    kinds = list(dict.fromkeys(_json_type(v) for v in values))
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _merge_simple(shapes: list[Shape]) -> dict[str, Any] | None:
    """``{"type": [...]}`` (with a joint ``enum``) when every member is a bare type or enum; else None."""
    kinds: list[str] = []
    enums: list[Any] = []
    open_member = False  # a member other than null that accepts any value of its type
    for s in shapes:
        keys = s.schema.keys()
        if keys == {"type", "enum"}:
            enums.extend(s.schema["enum"])
        elif keys != {"type"}:
            return None
        elif s.schema["type"] != "null":
            open_member = True
        kind = s.schema["type"]
        kinds.extend(kind if isinstance(kind, list) else [kind])
    if enums and open_member:
        return None  # e.g. Literal["a"] | int: keep anyOf so the enum still constrains its own member
    unique = list(dict.fromkeys(kinds))
    merged: dict[str, Any] = {"type": unique[0] if len(unique) == 1 else unique}
    if enums:
        if "null" in unique and None not in enums:
            enums.append(None)
        merged["enum"] = enums
    return merged

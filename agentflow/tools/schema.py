"""JSON schemas from Python type hints, and the converters that turn validated JSON back into those types.

``shape_of(annotation)`` walks one annotation once and returns a ``Shape``: the JSON schema the model sees,
a converter from validated JSON to the annotated type (Enum members, attrs/dataclass instances, tuples,
sets…), and a cheap structural test used to pick the member of a ``Union``. ``object_shape`` does the same
for a set of named properties (a function's parameters, an attrs class, a TypedDict).

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``list``/``Sequence``/``set``/
``frozenset``, ``tuple`` (``tuple[int, str]``, ``tuple[int, ...]``), ``dict``/``Mapping`` with ``str`` keys,
``Optional``/``Union``/``X | None``, ``Literal``, ``Enum``, attrs classes, dataclasses, ``TypedDict``
(``Required``/``NotRequired``), ``NewType``, what JSON carries as strings (``datetime``/``date``/``time``,
``UUID``, ``Decimal``, ``Path``: see ``formats``) and ``Annotated[X, "description"]``,
``Annotated[X, Param(...)]`` or the constraints of pydantic's ``Field``, ``annotated_types`` and ``Doc``.
Anything else raises ``TypeError`` naming the parameter, and so does, in strict mode, what OpenAI's strict
mode cannot express (``Any``, free-form mappings, fixed-length tuples).

Its neighbours hold what is not the walk itself: ``foreign_metadata`` reads other libraries' ``Annotated``
metadata, ``defaults`` says how a default shows in a schema (``MISSING`` lives there), and ``strict``
checks a hand-written schema for strict mode. ``MISSING`` and ``strict_schema_problems`` are re-exported
here so that their old import path keeps working.

Pure code: no I/O, nothing async. It must not know about tools' execution or the event bus.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .defaults import MISSING, NO_JSON, default_note, json_default
from .foreign_metadata import flat_metadata, foreign_constraints, foreign_description
from .formats import string_type
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
]

Converter = Callable[[Any], Any]
Check = Callable[[Any], bool]

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


class ConversionError(ValueError):
    """A value the schema allowed but its type refused (an attrs validator, a constructor's own check).

    ``error`` is what was raised; ``path`` leads from the converted value to the one that failed (property
    names and item indexes); ``type_name`` names the class whose constructor refused it, if one did;
    ``reason``, if set, says what is wrong in words of its own (``must be a decimal number…``).
    """

    def __init__(self, error: Exception, type_name: str | None = None, reason: str | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.type_name = type_name
        self.reason = reason
        self.path: list[str | int] = []


def _located(key: str | int, exc: Exception) -> ConversionError:
    """``exc`` as a ``ConversionError`` one step further from the value that failed (at ``key``)."""
    error = exc if isinstance(exc, ConversionError) else ConversionError(exc)
    error.path.insert(0, key)
    return error


def _always(_: Any) -> bool:
    return True


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


@attrs.frozen
class Shape:
    """What an annotation means on the wire: a schema, a converter (``None``: keep the JSON), a check."""

    schema: dict[str, Any]
    convert: Converter | None = None
    accepts: Check = _always
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


class _Walker:
    """One schema generation: carries strict mode, the error context and the classes being expanded."""

    def __init__(self, strict: bool, where: str) -> None:
        self.strict = strict
        self.where = where
        self.expanding: list[type] = []
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
        if isinstance(tp, type) and attrs.has(tp):
            return self._guarded(tp, self._attrs_class)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._guarded(tp, self._dataclass)
        if _is_typeddict(tp):
            return self._guarded(tp, self._typeddict)
        if isinstance(tp, str | typing.ForwardRef):
            raise self.fail(f"the annotation {tp!r} could not be resolved; define the type at module level")
        raise self.fail(
            f"unsupported annotation {tp!r}; use str, int, float, bool, None, list, tuple, set, "
            "dict[str, X], Optional/Union, Literal, an Enum, an attrs class, a dataclass, a TypedDict, "
            "datetime/date/time, UUID, Decimal or Path"
        )

    # -- combinators -------------------------------------------------------------------------------------

    def _annotated(self, tp: Any, metadata: tuple[Any, ...]) -> Shape:
        base = self.shape(tp)
        schema = dict(base.schema)
        for meta in flat_metadata(metadata, (str, Param)):
            if isinstance(meta, str):
                schema["description"] = _described(meta, base.class_description)
            elif isinstance(meta, Param):
                if meta.description is not None:
                    schema["description"] = _described(meta.description, base.class_description)
                schema.update(meta.schema)
            else:
                description = foreign_description(meta)
                if description is not None:
                    schema["description"] = _described(description, base.class_description)
                schema.update(foreign_constraints(meta, schema))
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
        item_accepts = item.accepts if item is not None else _always

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
                    raise _located(index, exc) from None
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
                    raise _located(index, exc) from None
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
        value_accepts = value.accepts if value is not None else _always

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
                    raise _located(k, exc) from None
            return out

        return Shape(schema, convert, accepts)

    # -- classes -------------------------------------------------------------------------------------------

    def _guarded(self, cls: type, build: Callable[[type], Shape]) -> Shape:
        if cls in self.expanding:
            raise self.fail(f"recursive type {cls.__name__} is not supported")
        self.expanding.append(cls)
        try:
            return build(cls)
        finally:
            self.expanding.pop()

    def _class_hints(self, cls: type) -> dict[str, Any]:
        try:
            return typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            raise self.fail(
                f"cannot resolve the annotations of {cls.__name__}: {exc}{unresolved_note(exc)}"
            ) from exc

    def _attrs_class(self, cls: type) -> Shape:
        hints = self._class_hints(cls)
        docs = _class_doc(cls)
        props = []
        for field in attrs.fields(cls):
            if not field.init:
                continue
            default = MISSING if field.default is attrs.NOTHING else field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = MISSING if default.takes_self else default.factory()
            hint = hints.get(field.name, field.type if field.type is not None else Any)
            description = field.metadata.get("description") or docs.params.get(field.name)
            props.append(
                Prop(
                    field.alias or field.name,
                    self.field(cls, field.name, hint),
                    required=field.default is attrs.NOTHING,
                    default=default,
                    description=description,
                )
            )
        return self._object(props, docs.description, _construct(cls))

    def _dataclass(self, cls: type) -> Shape:
        hints = self._class_hints(cls)
        docs = _class_doc(cls)
        props = []
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            has_default = field.default is not dataclasses.MISSING
            has_factory = field.default_factory is not dataclasses.MISSING
            if has_default:
                default = field.default
            elif has_factory:
                default = field.default_factory()  # type: ignore[operator]
            else:
                default = MISSING
            props.append(
                Prop(
                    field.name,
                    self.field(cls, field.name, hints.get(field.name, Any)),
                    required=not (has_default or has_factory),
                    default=default,
                    description=field.metadata.get("description") or docs.params.get(field.name),
                )
            )
        return self._object(props, docs.description, _construct(cls))

    def _typeddict(self, cls: type) -> Shape:
        hints = self._class_hints(cls)
        docs = _class_doc(cls)
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        props = []
        for key, hint in hints.items():
            required = key in required_keys
            # With string annotations Python 3.11 cannot see Required/NotRequired, so read them from the hint.
            while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
                required = typing.get_origin(hint) is typing.Required
                hint = typing.get_args(hint)[0]
            shape = self.field(cls, key, hint)
            props.append(Prop(key, shape, required=required, description=docs.params.get(key)))
        return self._object(props, docs.description, None)

    def _object(self, props: list[Prop], description: str | None, build: Converter | None) -> Shape:
        shape = object_shape(props, strict=self.strict, build=build)
        if description:
            schema = {"description": description, **shape.schema}
            shape = attrs.evolve(shape, schema=schema, class_description=description)
        return shape


def shape_of(tp: Any, *, strict: bool = False, where: str = "annotation") -> Shape:
    """The ``Shape`` of one annotation; ``where`` names it in ``TypeError`` messages.

    >>> shape_of(list[int] | None).schema
    {'anyOf': [{'type': 'array', 'items': {'type': 'integer'}}, {'type': 'null'}]}
    >>> shape_of(tuple[int, str]).convert([1, "a"])
    (1, 'a')
    """
    return _Walker(strict, where).shape(tp)


def object_shape(props: list[Prop], *, strict: bool = False, build: Converter | None = None) -> Shape:
    """An object schema over ``props`` (closed: ``additionalProperties: false``) and its converter.

    The converter returns ``build(kwargs)`` (or the converted dict when ``build`` is None). In strict mode
    every property is required and a default is told in the description (``(default: 10)``), not as a
    ``default`` keyword (which Azure's strict mode refuses). An optional property whose type has no ``null``
    becomes nullable, and there a ``null`` means "use the default"; where ``null`` is a value of the type
    (``int | None = 10``), it stays that value, and the model sends the default to get it.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for prop in props:
        schema = dict(prop.shape.schema)
        if prop.description and "description" not in schema:
            schema["description"] = prop.description
        elif prop.description and prop.shape.class_description is not None:
            schema["description"] = _described(prop.description, prop.shape.class_description)
        if strict:
            if not prop.required:
                note = default_note(prop.default, null_means_default=not prop.shape.nullable)
                if note:
                    own = schema.get("description")
                    schema["description"] = f"{own} ({note})" if own else note[0].upper() + note[1:]
                if not prop.shape.nullable:
                    schema = _nullable(schema)
            required.append(prop.name)
        else:
            if prop.required:
                required.append(prop.name)
            elif prop.default is not MISSING:
                default = json_default(prop.default)
                if default is not NO_JSON:
                    schema["default"] = default
        properties[prop.name] = schema
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
                raise _located(name, exc) from None
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

    return Shape(schema_out, convert, accepts)


# -- helpers -------------------------------------------------------------------------------------------


def _construct(cls: type) -> Converter:
    def construct(kwargs: Any) -> Any:
        try:
            return cls(**kwargs)
        except Exception as exc:
            raise ConversionError(exc, cls.__name__) from None

    return construct


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
    if _is_typeddict(kind):
        return f"{name} values are dicts"
    if isinstance(kind, type) and getattr(kind, "__hash__", None) is None:
        return f"{name} has no __hash__ (a mutable attrs class or dataclass compared by value)"
    return None


def _described(own: str, class_description: str | None) -> str:
    """A parameter's own description, then its class's docstring (unless that says the same)."""
    if not class_description or class_description == own:
        return own
    return f"{own}\n\n{class_description}"


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


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if set(schema) <= {"type", "description"} and isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


def unresolved_note(exc: Exception) -> str:
    """What to add to a ``NameError`` from resolving string annotations (``from __future__ import
    annotations``): they are looked up in the module's globals, where a class local to a function is not."""
    if not isinstance(exc, NameError):
        return ""
    return (
        " (string annotations, as `from __future__ import annotations` makes them, are resolved in the "
        "module's globals: define it at module level)"
    )


def _is_typeddict(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__required_keys__")
        and hasattr(tp, "__annotations__")
    )


@attrs.frozen
class _ClassDoc:
    description: str | None
    params: dict[str, str]


def _class_doc(cls: type) -> _ClassDoc:
    from .docstrings import parse_docstring

    doc = cls.__dict__.get("__doc__")
    if doc and dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        doc = None  # the "Name(field: type, ...)" text dataclasses invent is not a description
    parsed = parse_docstring(doc)
    return _ClassDoc(parsed.description or None, parsed.params)

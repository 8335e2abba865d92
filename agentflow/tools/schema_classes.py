"""The shapes of classes with named fields: attrs classes, dataclasses and ``TypedDict``s, recursive or not.

Each field becomes a ``Prop`` (its name or attrs alias, its default, its description from the field's
metadata or the class docstring's ``Args``) whose shape the schema walker gives (``FieldWalker.field``);
``object_shape`` closes them into an object whose converter calls the class. ``Expansions`` keeps track of
the classes a walk is inside of: a class met again inside its own expansion (a tree ``Node`` with
``children: list[Node]``, or ``A`` → ``B`` → ``A``) is a ``$ref`` to a definition of its schema, and its
converter and check reach the class's own once it is built, so that they follow the data as deep as it
goes and no further (the data, not the type, bounds the recursion).

Pure code: no I/O. Pydantic models are ``schema_pydantic``'s.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from .defaults import MISSING
from .schema_defs import Definitions, ref
from .schema_shapes import ConversionError, Converter, Prop, Shape, object_shape

__all__ = [
    "Expansions",
    "FieldWalker",
    "attrs_shape",
    "dataclass_shape",
    "is_typeddict",
    "typeddict_shape",
    "unresolved_note",
]


class FieldWalker(Protocol):
    """What a class's shape needs of the walk it is part of."""

    strict: bool

    def fail(self, message: str) -> TypeError:
        """The error to raise, naming the parameter and the field being walked."""
        ...

    def field(self, cls: type, name: str, hint: Any) -> Shape:
        """The shape of one field of ``cls`` (its errors name the field)."""
        ...


class _Recursion:
    """A class met inside its own expansion: a reference, converted and checked by the class's shape."""

    __slots__ = ("name", "target")

    def __init__(self, name: str) -> None:
        self.name = name
        self.target: Shape | None = None

    def shape(self) -> Shape:
        return Shape(ref(self.name), self._convert, self._accepts)

    def _convert(self, value: Any) -> Any:
        assert self.target is not None
        convert = self.target.convert
        return value if convert is None else convert(value)

    def _accepts(self, value: Any) -> bool:
        assert self.target is not None
        return self.target.accepts(value)


class Expansions:
    """The classes one walk is inside of, and the definitions of those that turned out to be recursive.

    A class's schema is written inline where it is first met, as before; only a class met again inside
    its own expansion also becomes a definition (``Definitions``), which the inner occurrences refer to.
    """

    __slots__ = ("_defs", "_names", "_open", "_stack")

    def __init__(self, defs: Definitions) -> None:
        self._defs = defs
        self._stack: list[type] = []
        self._open: dict[type, _Recursion] = {}
        self._names: dict[type, str] = {}

    def shape(self, cls: type, build: Callable[[type], Shape]) -> Shape:
        """``build(cls)``, or a reference to it when the walk is already inside ``cls``."""
        if cls in self._stack:
            recursion = self._open.get(cls)
            if recursion is None:
                recursion = self._open[cls] = _Recursion(self._name(cls))
            return recursion.shape()
        self._stack.append(cls)
        try:
            shape = build(cls)
        finally:
            self._stack.pop()
        recursion = self._open.pop(cls, None)
        if recursion is not None:
            recursion.target = shape
            self._defs.define(recursion.name, shape.schema)
        return shape

    def _name(self, cls: type) -> str:
        # One name per class and walk: a class expanded twice (two fields of the type) defines it twice alike.
        name = self._names.get(cls)
        if name is None:
            name = self._names[cls] = self._defs.reserve(cls.__name__)
        return name


def attrs_shape(walker: FieldWalker, cls: type) -> Shape:
    """The shape of an attrs class: its ``init`` fields, by alias, built with ``cls(**kwargs)``."""
    hints = _class_hints(walker, cls)
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
                walker.field(cls, field.name, hint),
                required=field.default is attrs.NOTHING,
                default=default,
                description=description,
            )
        )
    return _object(walker, props, docs.description, _construct(cls))


def dataclass_shape(walker: FieldWalker, cls: type) -> Shape:
    """The shape of a dataclass: its ``init`` fields, built with ``cls(**kwargs)``."""
    hints = _class_hints(walker, cls)
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
                walker.field(cls, field.name, hints.get(field.name, Any)),
                required=not (has_default or has_factory),
                default=default,
                description=field.metadata.get("description") or docs.params.get(field.name),
            )
        )
    return _object(walker, props, docs.description, _construct(cls))


def typeddict_shape(walker: FieldWalker, cls: type) -> Shape:
    """The shape of a ``TypedDict`` (``Required``/``NotRequired`` honoured); its values stay a dict."""
    hints = _class_hints(walker, cls)
    docs = _class_doc(cls)
    required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    props = []
    for key, hint in hints.items():
        required = key in required_keys
        # With string annotations Python 3.11 cannot see Required/NotRequired, so read them from the hint.
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            required = typing.get_origin(hint) is typing.Required
            hint = typing.get_args(hint)[0]
        shape = walker.field(cls, key, hint)
        props.append(Prop(key, shape, required=required, description=docs.params.get(key)))
    return _object(walker, props, docs.description, None)


def _object(
    walker: FieldWalker, props: list[Prop], description: str | None, build: Converter | None
) -> Shape:
    shape = object_shape(props, strict=walker.strict, build=build)
    if description:
        schema = {"description": description, **shape.schema}
        shape = attrs.evolve(shape, schema=schema, class_description=description)
    return shape


def _class_hints(walker: FieldWalker, cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise walker.fail(
            f"cannot resolve the annotations of {cls.__name__}: {exc}{unresolved_note(exc)}"
        ) from exc


def _construct(cls: type) -> Converter:
    def construct(kwargs: Any) -> Any:
        try:
            return cls(**kwargs)
        except Exception as exc:
            raise ConversionError(exc, cls.__name__) from None

    return construct


def unresolved_note(exc: Exception) -> str:
    """What to add to a ``NameError`` from resolving string annotations (``from __future__ import
    annotations``): they are looked up in the module's globals, where a class local to a function is not."""
    if not isinstance(exc, NameError):
        return ""
    return (
        " (string annotations, as `from __future__ import annotations` makes them, are resolved in the "
        "module's globals: define it at module level)"
    )


def is_typeddict(tp: Any) -> bool:
    """Whether ``tp`` is a ``TypedDict`` class."""
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

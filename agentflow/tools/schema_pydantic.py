"""Pydantic models as parameter and output types: pydantic's own schema, made OpenAI-ready, and validation.

Why pydantic's ``model_json_schema()`` and ``model_validate_json()`` rather than walking the fields as for
an attrs class: a pydantic model means what pydantic makes of it (``field_validator``s and
``model_validator``s, aliases and ``alias_generator``s, ``Field`` constraints, types such as ``EmailStr``,
``HttpUrl`` or ``SecretStr``, a custom ``__get_pydantic_json_schema__``, ``json_schema_extra``). Walking the
fields would cover a part of that, and would hand the user's validators values agentflow had already
converted instead of the JSON they are written for. So the schema is pydantic's, rewritten only where the
model's API needs it, and the arguments are validated by pydantic in JSON mode, on the JSON the model sent,
as pydantic-ai and the Agents SDK do (only data nested deeper than pydantic's JSON parser goes, a tree of
over some 100 levels, is validated as the decoded value). The value is the model instance; a refusal is a
``ConversionError`` with pydantic's location and message for every field it refused, which the model reads
in its ``TOOL_ERROR`` or output retry.

The rewrite, in both modes:

- pydantic defines every nested model in ``$defs``; the ones that are not recursive are written inline (as
  agentflow writes attrs classes), so only recursion leaves ``$defs``, and a recursive root (pydantic's
  ``{"$ref": "#/$defs/Node"}``) is written out, since OpenAI wants an object at the root;
- no ``$ref`` keeps sibling keywords (OpenAI's strict mode refuses ``{"$ref": …, "description": …}``): an
  inlined model takes the field's description before its docstring, a recursive one sits in a one-member
  ``anyOf`` beside it;
- pydantic's field titles (each field's name again) are not generated; explicit titles stay;
- an object is closed (``additionalProperties: false``) unless the model allows extra keys;
- a discriminated union's ``discriminator`` (OpenAPI's keyword) goes: its ``mapping`` names definitions that
  are now inline, and each member's ``const`` says the same.

In strict mode, as ``object_shape`` does for other classes: every property is required, an optional one is
told with its default in its description, no ``default`` keyword, and becomes nullable if it was not, a
``null`` there meaning "the default" (such nulls are dropped before pydantic validates, so that pydantic
applies its default), except a field with one possible value (a discriminator's ``Literal["cat"] =
"cat"``), which is required as that value; ``oneOf`` becomes ``anyOf``; a set's ``uniqueItems`` is dropped
(the set removes duplicates). What strict mode cannot express (``Any``, a ``dict`` field, a fixed-length
tuple, ``extra="allow"``) raises ``TypeError``: an output type then falls back to a plain schema, and
``@tool(strict=True)`` refuses the type, as for any other.

Detection imports nothing: a class can only be a pydantic model once ``pydantic`` is in ``sys.modules``,
so ``import agentflow`` never loads pydantic. Pure code: no I/O.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, Final

import attrs

from ..exact_json import dumps as exact_dumps
from .defaults import MISSING, default_note
from .schema_defs import cyclic_names, ref, ref_free, ref_name
from .schema_shapes import (
    Check,
    ConversionError,
    Converter,
    Shape,
    allows_null,
    always,
    described,
    nullable_schema,
)

__all__ = ["is_pydantic_model", "pydantic_shape"]

_MAX_ALSO: Final = 9
"""Refusals after the first that an error names: a model with many bad fields gets them all at once."""
_SUBSCHEMAS: Final = frozenset(
    {
        "prefixItems",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
"""Keywords holding schemas that agentflow's checks do not read (strict mode refuses them all)."""
_SCHEMA_MAPS: Final = frozenset({"patternProperties", "dependentSchemas"})
_UNSUPPORTED: Final = (
    ("prefixItems", "a fixed-length tuple (use tuple[X, ...], a list or a model)"),
    ("patternProperties", "patternProperties"),
    ("propertyNames", "propertyNames"),
    ("not", "not"),
    ("if", "if/then/else"),
    ("allOf", "allOf"),
    ("dependentSchemas", "dependentSchemas"),
    ("unevaluatedProperties", "unevaluatedProperties"),
    ("unevaluatedItems", "unevaluatedItems"),
    ("dependentRequired", "dependentRequired"),
    ("contains", "contains"),
    ("minProperties", "minProperties"),
    ("maxProperties", "maxProperties"),
)
"""Keywords OpenAI's strict mode refuses, with what the type is in words."""


def is_pydantic_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic (v2) ``BaseModel`` subclass; never imports pydantic."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(tp, type):
        return False
    base = getattr(pydantic, "BaseModel", None)
    return isinstance(base, type) and issubclass(tp, base) and tp is not base


def pydantic_shape(
    cls: type, *, strict: bool, fail: Callable[[str], TypeError]
) -> tuple[Shape, dict[str, Any]]:
    """The shape of the pydantic model ``cls``, and the ``$defs`` (its recursive models) its schema refers to.

    ``fail`` makes the ``TypeError`` for what cannot be described (in strict mode, or at all).
    """
    model: Any = cls
    try:
        raw = model.model_json_schema(by_alias=True, mode="validation", schema_generator=_generator())
    except Exception as exc:
        raise fail(f"pydantic cannot describe {cls.__name__} in JSON schema: {exc}") from exc
    defs = dict(raw.pop("$defs", None) or {})
    rewrite = _Rewrite(cls.__name__, defs, strict, fail)
    definitions = rewrite.definitions()
    root = ref_name(raw)
    if root is not None and root in defs:
        # A recursive root: written out, as OpenAI wants an object (not a reference) at the root.
        raw = {**defs[root], **{k: v for k, v in raw.items() if k != "$ref"}}
    node = rewrite.node(raw)
    schema = node.schema
    own = schema.get("description")
    shape = Shape(
        schema,
        _validator(model, node.strip),
        node.accepts,
        nullable=allows_null(schema),
        class_description=own if isinstance(own, str) and schema.get("type") == "object" else None,
    )
    return shape, definitions


@functools.cache
def _generator() -> type[Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class WithoutFieldTitles(GenerateJsonSchema):
        """pydantic's schema less the titles it makes of field names (``"title": "Customer Id"``): tokens
        that repeat the property name. A title given with ``Field(title=…)`` is kept."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return WithoutFieldTitles


def _validator(model: Any, strip: Converter | None) -> Converter:
    from pydantic import ValidationError

    validate_json = model.model_validate_json
    validate_python = model.model_validate
    name = model.__name__

    def convert(value: Any) -> Any:
        data = value if strip is None else strip(value)
        try:
            text: bytes | None = exact_dumps(data)
        except TypeError:  # nested deeper than orjson writes
            text = None
        if text is not None:
            try:
                return validate_json(text)
            except ValidationError as exc:
                if not any(e["type"] == "json_invalid" for e in exc.errors()):
                    raise _refusal(exc, name) from None
        # pydantic parses JSON 200 levels deep (a tree of some 100): a taller one, already decoded and
        # checked against the schema, is validated as the decoded value (python mode, alike when lax).
        try:
            return validate_python(data)
        except ValidationError as exc:
            raise _refusal(exc, name) from None

    return convert


def _refusal(exc: Any, model: str) -> ConversionError:
    """pydantic's ``ValidationError`` as a ``ConversionError``: the first refusal's path, then the others'."""
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    error = ConversionError(exc, model, reason=_reason(errors[0], model) if errors else None)
    if errors:
        error.path = list(errors[0]["loc"])
        error.depth = len(error.path)
        error.also = [(list(e["loc"]), _reason(e, model)) for e in errors[1 : 1 + _MAX_ALSO]]
    return error


def _reason(error: Any, model: str) -> str:
    if error.get("type") == "missing":
        return "is missing"
    message = error.get("msg", "")
    return f"is not valid: {message}" if error.get("loc") else f"is not a valid {model}: {message}"


@attrs.frozen
class _Node:
    """One rewritten schema node: the schema, its structural check and what drops its default-nulls."""

    schema: Any
    accepts: Check = always
    strip: Converter | None = None


class _Rewrite:
    """One pydantic schema made OpenAI-ready (see the module docstring), with its checks and null-dropping."""

    def __init__(
        self, model: str, defs: dict[str, Any], strict: bool, fail: Callable[[str], TypeError]
    ) -> None:
        self.model = model
        self.defs = defs
        self.strict = strict
        self._fail = fail
        self.cyclic = cyclic_names(defs)
        self.inline: dict[str, _Node] = {}
        self.defined: dict[str, _Node] = {}
        self.path: list[str] = []

    def fail(self, problem: str) -> TypeError:
        where = f" at {'.'.join(self.path)}" if self.path else ""
        return self._fail(
            f"pydantic model {self.model}{where}: {problem}, which strict mode cannot express; change the "
            "type or use strict=False"
        )

    def definitions(self) -> dict[str, Any]:
        """The recursive definitions, rewritten (the others are written inline where they are used)."""
        for name in self.defs:
            if name in self.cyclic:
                self.path.append(name)
                self.defined[name] = self.node(self.defs[name])
                self.path.pop()
        return {name: node.schema for name, node in self.defined.items()}

    def node(self, schema: Any) -> _Node:
        """``schema`` rewritten, with its check and null-dropping."""
        if not isinstance(schema, dict):
            if self.strict:
                raise self.fail(f"the schema {schema!r}")
            return _Node(schema, always if schema is not False else _never)
        members = schema.get("allOf")
        if isinstance(members, list) and len(members) == 1 and isinstance(members[0], dict):
            # Older pydantic wraps a described reference so: {"allOf": [{"$ref": …}], "description": …}.
            schema = {**{k: v for k, v in schema.items() if k != "allOf"}, **members[0]}
        name = ref_name(schema)
        if name is not None:
            return self._reference(name, {k: v for k, v in schema.items() if k != "$ref"})
        out: dict[str, Any] = {}
        properties: dict[str, _Node] | None = None
        alternatives: list[_Node] = []
        items: _Node | None = None
        values: _Node | None = None
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                properties = {}
                for prop, sub in value.items():
                    self.path.append(prop)
                    properties[prop] = self.node(sub)
                    self.path.pop()
                out[key] = {prop: n.schema for prop, n in properties.items()}
            elif key in ("anyOf", "oneOf") and isinstance(value, list):
                alternatives = [self.node(v) for v in value]
                out["anyOf" if self.strict else key] = [n.schema for n in alternatives]
            elif key == "items" and isinstance(value, dict):
                self.path.append("[]")
                items = self.node(value)
                self.path.pop()
                out[key] = items.schema
            elif key == "additionalProperties" and isinstance(value, dict):
                values = self.node(value)
                out[key] = values.schema
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {k: self._walked(v) for k, v in value.items()}
            elif key in _SUBSCHEMAS:
                out[key] = self._walked(value)
            elif key == "discriminator":
                continue  # OpenAPI's, not JSON schema's; its mapping names definitions now written inline
            else:
                out[key] = value  # data (enum, default, discriminator…) or a keyword without schemas
        if self.strict:
            self._strict(out)
        nulled: frozenset[str] = frozenset()
        if properties is not None:
            nulled = self._object(out, properties)
        elif out.get("type") == "object" and self.strict:
            raise self.fail("an object with free-form keys (a dict)")
        check = _check(out, properties, nulled, alternatives, items, values)
        strip = _strip(properties, nulled, alternatives, items, values)
        return _Node(out, check, strip)

    def _walked(self, value: Any) -> Any:
        """The schemas under a keyword agentflow does not check (``prefixItems``…), rewritten all the same:
        a reference in them must not point at a definition that was written inline."""
        if isinstance(value, list):
            return [self.node(v).schema if isinstance(v, dict) else v for v in value]
        return self.node(value).schema if isinstance(value, dict) else value

    def _reference(self, name: str, siblings: dict[str, Any]) -> _Node:
        if name not in self.defs:
            raise self._fail(f"pydantic model {self.model}: its schema refers to an unknown #/$defs/{name}")
        if name in self.cyclic:
            lazy = _Lazy(self.defined, name)
            schema = ref_free({**ref(name), **siblings})
            return _Node(schema, lazy.accepts, lazy.strip if self.strict else None)
        target = self.inline.get(name)
        if target is None:
            target = self.inline[name] = self.node(self.defs[name])
        if not siblings:
            return target
        schema = {**target.schema, **siblings}
        own, theirs = siblings.get("description"), target.schema.get("description")
        if isinstance(own, str) and isinstance(theirs, str):
            schema["description"] = described(own, theirs)
        return attrs.evolve(target, schema=schema)

    def _strict(self, out: dict[str, Any]) -> None:
        for keyword, what in _UNSUPPORTED:
            if keyword in out:
                raise self.fail(what)
        out.pop("uniqueItems", None)
        if not any(k in out for k in ("type", "anyOf", "enum", "const")):
            raise self.fail("a value of any type (Any)")
        if out.get("type") == "array" and not isinstance(out.get("items"), dict):
            raise self.fail("a list without an item type")

    def _object(self, out: dict[str, Any], properties: dict[str, _Node]) -> frozenset[str]:
        """Close the object; in strict mode, require every property and make the optional ones nullable.

        Returns the properties where a ``null`` means "the default" (dropped before validation).
        """
        extra = out.get("additionalProperties", MISSING)
        if extra is MISSING:
            out["additionalProperties"] = False
        elif extra is not False and self.strict:
            raise self.fail("a model that allows extra keys (extra='allow')")
        if not self.strict:
            return frozenset()
        required = set(out.get("required") or ())
        nulled = set()
        schemas = {}
        for name, node in properties.items():
            schema = node.schema
            if name not in required:
                default = schema.get("default", MISSING)
                schema = {k: v for k, v in schema.items() if k != "default"}
                if _only_value(schema) == [default]:
                    # A discriminator (``kind: Literal["cat"] = "cat"``): its one value, never a null that
                    # would fit every member of the union.
                    schemas[name] = schema
                    continue
                null_means_default = not allows_null(schema)
                note = default_note(default, null_means_default=null_means_default)
                if note:
                    own = schema.get("description")
                    schema["description"] = f"{own} ({note})" if own else note[0].upper() + note[1:]
                if null_means_default:
                    schema = nullable_schema(schema)
                    nulled.add(name)
            schemas[name] = ref_free(schema)
        out["properties"] = schemas
        out["required"] = list(schemas)
        out["additionalProperties"] = False
        return frozenset(nulled)


class _Lazy:
    """A reference to a recursive definition: its check and null-dropping, found once they are built."""

    __slots__ = ("defined", "name")

    def __init__(self, defined: dict[str, _Node], name: str) -> None:
        self.defined = defined
        self.name = name

    def accepts(self, value: Any) -> bool:
        return self.defined[self.name].accepts(value)

    def strip(self, value: Any) -> Any:
        strip = self.defined[self.name].strip
        return value if strip is None else strip(value)


def _only_value(schema: dict[str, Any]) -> list[Any] | None:
    """The one value ``schema`` allows (a ``const``, a one-member ``enum``), as a list; else None."""
    if "const" in schema:
        return [schema["const"]]
    choices = schema.get("enum")
    return list(choices) if isinstance(choices, list) and len(choices) == 1 else None


def _never(_: Any) -> bool:
    return False


def _kind_fits(value: Any, kinds: frozenset[str]) -> bool:
    if value is None:
        return "null" in kinds
    if isinstance(value, bool):
        return "boolean" in kinds
    if isinstance(value, int):
        return "integer" in kinds or "number" in kinds
    if isinstance(value, float):
        return "number" in kinds or ("integer" in kinds and value.is_integer())
    if isinstance(value, str):
        return "string" in kinds
    if isinstance(value, list):
        return "array" in kinds
    return isinstance(value, dict) and "object" in kinds


def _json_key(value: Any) -> tuple[str, Any]:
    """A value as JSON compares it: ``1`` and ``1.0`` alike, ``true`` and ``1`` not."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    return (type(value).__name__, value if isinstance(value, str) else repr(value))


def _check(
    out: dict[str, Any],
    properties: dict[str, _Node] | None,
    nulled: frozenset[str],
    alternatives: list[_Node],
    items: _Node | None,
    values: _Node | None,
) -> Check:
    """The structural check of one node (types, enums, required and known keys, items), like the attrs
    shapes' ``accepts``: it picks a union's member, and the member of an ``anyOf`` whose nulls to drop."""
    checks: list[Check] = []
    kind = out.get("type")
    if isinstance(kind, str | list):
        kinds = frozenset([kind] if isinstance(kind, str) else kind)
        checks.append(lambda v: _kind_fits(v, kinds))
    choices = out.get("enum") if isinstance(out.get("enum"), list) else None
    if "const" in out:
        choices = [out["const"]]
    if choices is not None:
        allowed = {_json_key(c) for c in choices if not isinstance(c, dict | list)}
        checks.append(lambda v: isinstance(v, dict | list) or _json_key(v) in allowed)
    if alternatives:
        checks.append(lambda v: any(a.accepts(v) for a in alternatives))
    if properties is not None:
        needed = frozenset(out.get("required") or ())
        closed = out.get("additionalProperties") is False
        props = {name: node.accepts for name, node in properties.items()}

        def fits(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            if not needed <= v.keys() or (closed and not v.keys() <= props.keys()):
                return False
            return all((x is None and k in nulled) or k not in props or props[k](x) for k, x in v.items())

        checks.append(fits)
    if items is not None:
        item = items.accepts
        checks.append(lambda v: not isinstance(v, list) or all(item(x) for x in v))
    if values is not None:
        value = values.accepts
        checks.append(lambda v: not isinstance(v, dict) or all(value(x) for x in v.values()))
    if not checks:
        return always
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _strip(
    properties: dict[str, _Node] | None,
    nulled: frozenset[str],
    alternatives: list[_Node],
    items: _Node | None,
    values: _Node | None,
) -> Converter | None:
    """What drops the nulls that mean "the default" in one node and below it (None: there are none)."""
    if properties is not None:
        inner = {name: node.strip for name, node in properties.items() if node.strip is not None}
        if nulled or inner:

            def strip_object(v: Any) -> Any:
                if not isinstance(v, dict):
                    return v
                out = {}
                for k, x in v.items():
                    if x is None and k in nulled:
                        continue
                    s = inner.get(k)
                    out[k] = x if s is None or x is None else s(x)
                return out

            return strip_object
    if items is not None and items.strip is not None:
        item = items.strip
        return lambda v: [item(x) for x in v] if isinstance(v, list) else v
    if values is not None and values.strip is not None:
        value = values.strip
        return lambda v: {k: value(x) for k, x in v.items()} if isinstance(v, dict) else v
    if any(a.strip is not None for a in alternatives):

        def strip_member(v: Any) -> Any:
            for a in alternatives:
                if a.accepts(v):
                    return v if a.strip is None else a.strip(v)
            return v

        return strip_member
    return None

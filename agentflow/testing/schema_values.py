"""A JSON value that matches a JSON schema, made up deterministically: the arguments ``AutoModelClient``
sends a tool, and the structured answers it gives.

``schema_value(schema, seed=0)`` reads the schemas agentflow writes (``agentflow.tools.schema``: objects,
arrays and fixed-length tuples, ``enum``/``const``, ``anyOf`` and type lists, ``$defs``/``$ref`` recursion,
formats, bounds and lengths, strict mode's "null for the default") and pydantic's (``allOf``,
``prefixItems``, ``oneOf`` with a discriminator), and writes the smallest plausible value:

- an object has its required properties only (the optional ones keep their defaults, as a model that
  leaves them out gets; but a tag with one possible value, ``kind: Literal["cat"] = "cat"``, is sent, as
  pydantic's discriminated unions want it), and a strict schema's "null for the default" properties are
  ``null`` for the same reason; ``fill_optional=True`` fills them all in instead;
- an array has one item (or ``minItems``), a free-form object one entry, a union its first member that is
  not ``null`` (and not a string when a number may stand there instead: ``Decimal`` is "a number or a
  string", and only a string of digits is one);
- leaves come from a counter that starts at ``seed`` and moves on at each one: strings ``"a"``, ``"b"``…,
  integers ``0``, ``1``…, numbers ``0.5``, ``1.5``…, formats a value of their kind (``2024-01-01``, an
  email at ``example.com``, a UUID…), kept within ``minimum``/``maximum``/``multipleOf``, lengths and
  ``uniqueItems``; ``seed`` also picks which member of a union is taken (``seed % members``);
- a recursive type is expanded once more inside itself, then as little as it allows (an empty list, a
  ``null``);
- a string with a ``pattern`` comes from ``pattern_text`` (the regular expression written out and
  checked); a pattern it cannot satisfy (lookaheads that forbid the obvious) raises ``SchemaValueError``.

What the schema cannot say is not known here: a class's own checks (an attrs validator, a pydantic
``field_validator``) may still refuse the value. ``not``, ``if``/``then``/``else``, ``patternProperties``
and ``dependentRequired`` are not read. Pure: no I/O, no randomness, nothing imported beyond the standard
library.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any, Final

from .number_values import NoNumber, number_value
from .pattern_text import pattern_text

__all__ = ["SchemaValueError", "schema_value"]

NULL_FOR_THE_DEFAULT: Final = "null for the default"
"""How a strict schema's description marks a property whose ``null`` means "use the default"
(``agentflow.tools.defaults.default_note``)."""

_MAX_DEPTH: Final = 64
_MAX_TRIES: Final = 1000
_BASE_DATE: Final = datetime.date(2024, 1, 1)
_OBJECT_KEYS: Final = frozenset(
    {"properties", "required", "additionalProperties", "minProperties", "maxProperties", "propertyNames"}
)
_ARRAY_KEYS: Final = frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"})
_STRING_KEYS: Final = frozenset({"minLength", "maxLength", "pattern", "format"})
_NUMBER_KEYS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})


class SchemaValueError(ValueError):
    """No value could be made for a schema: ``path`` says where (``""``: the root, ``.items[0]``…), and
    ``reason`` why."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{path.lstrip('.')}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


def schema_value(schema: Mapping[str, Any] | bool, *, seed: int = 0, fill_optional: bool = False) -> Any:
    """A JSON value (dicts, lists, strings, numbers, booleans, ``None``) that matches ``schema``.

    The same schema and ``seed`` always give the same value. ``fill_optional=True`` gives every optional
    property (and every strict "null for the default" one) a value of its own instead of leaving it out.
    Raises ``SchemaValueError`` when it finds none (see the module docstring for what it reads).

    >>> schema_value({"type": "object", "properties": {"city": {"type": "string"},
    ...     "days": {"type": "integer", "minimum": 1}, "unit": {"enum": ["C", "F"], "default": "C"}},
    ...     "required": ["city", "days"]})
    {'city': 'a', 'days': 2}
    >>> schema_value({"type": "array", "items": {"type": "string", "format": "date"}}, seed=3)
    ['2024-01-04']
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    root: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    return _Generator(root, seed, fill_optional).value(schema, "")


class _Generator:
    """One value: the root (for ``$ref``), the leaf counter and the definitions being expanded."""

    def __init__(self, root: Mapping[str, Any], seed: int, optional: bool) -> None:
        self.root = root
        self.seed = seed
        self.counter = seed
        self.optional = optional
        self.expanding: list[str] = []
        """The references being expanded, outermost first."""
        self.shallow = 0
        """How many references inside their own expansion we are in: then values are as small as allowed."""

    def next(self) -> int:
        number = self.counter
        self.counter += 1
        return number

    # -- any schema ----------------------------------------------------------------------------------------

    def value(self, schema: Any, path: str, *, prefer_null: bool = False) -> Any:
        if schema is True:
            return self.string({}, path)
        if schema is False:
            raise SchemaValueError("the schema `false` accepts no value", path)
        if not isinstance(schema, Mapping):
            raise SchemaValueError(f"{schema!r} is not a JSON schema", path)
        if len(self.expanding) + path.count(".") + path.count("[") > _MAX_DEPTH:
            raise SchemaValueError("the schema nests too deeply (a recursive type with no end?)", path)
        target = schema.get("$ref")
        if isinstance(target, str):
            return self.reference(target, schema, path, prefer_null)
        if "allOf" in schema:
            return self.value(self.all_of(schema, path), path, prefer_null=prefer_null)
        if "const" in schema:
            return schema["const"]
        if prefer_null and _accepts_null(schema):
            return None
        members = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(members, list):
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            chosen = self.choose(members, path)
            return self.value({**rest, **chosen} if _validating(rest) else chosen, path)
        if isinstance(schema.get("enum"), list):
            return self.enum(schema, path)
        kind = self.kind(schema, path)
        if kind == "object":
            return self.object(schema, path)
        if kind == "array":
            return self.array(schema, path)
        if kind == "string":
            return self.string(schema, path)
        if kind in ("integer", "number"):
            return self.number(schema, path, integer=kind == "integer")
        if kind == "boolean":
            return self.next() % 2 == 0
        return None

    def reference(self, target: str, schema: Mapping[str, Any], path: str, prefer_null: bool) -> Any:
        resolved = self.resolve(target, path)
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        if _validating(rest):
            resolved = {**resolved, **rest}
        again = target in self.expanding
        self.expanding.append(target)
        self.shallow += again
        try:
            return self.value(resolved, path, prefer_null=prefer_null or self.shallow > 0)
        finally:
            self.expanding.pop()
            self.shallow -= again

    def resolve(self, target: str, path: str) -> Mapping[str, Any]:
        if target == "#":
            return self.root
        node: Any = self.root
        if target.startswith("#/"):
            for part in target[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                node = node.get(part) if isinstance(node, Mapping) else None
        else:
            node = None
        if not isinstance(node, Mapping):
            raise SchemaValueError(f"the reference {target!r} points at no schema of the root", path)
        return node

    def all_of(self, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, Mapping) and isinstance(part.get("$ref"), str):
                part = {**self.resolve(part["$ref"], path), **{k: v for k, v in part.items() if k != "$ref"}}
            if not isinstance(part, Mapping):
                continue
            for key, value in part.items():
                if key == "properties" and isinstance(merged.get(key), Mapping):
                    merged[key] = {**merged[key], **value}
                elif key == "required" and isinstance(merged.get(key), list):
                    merged[key] = list(dict.fromkeys([*merged[key], *value]))
                else:
                    merged[key] = value
        return merged

    def choose(self, members: list[Any], path: str) -> Any:
        """The member of a union to write: as deep inside a recursion, one that ends it; else not ``null``,
        the ``seed``-th of the others."""
        if not members:
            raise SchemaValueError("an empty anyOf accepts no value", path)
        real = [m for m in members if not _is_null(m)] or members
        if any(_declares(m, "number", "integer") for m in real):
            # ``Decimal`` is a number or a string (pydantic's too): a number is one whatever it is, a string
            # only when it holds digits.
            real = [m for m in real if not _declares(m, "string")] or real
        if self.shallow:
            ending = [m for m in real if not _has_reference(m)]
            return (ending or real)[0]
        return real[self.seed % len(real)]

    def kind(self, schema: Mapping[str, Any], path: str) -> str:
        declared = schema.get("type")
        if isinstance(declared, str):
            return declared
        if isinstance(declared, list) and declared:
            kinds = [k for k in declared if k != "null"] or ["null"]
            if "string" in kinds and ("number" in kinds or "integer" in kinds):
                # A ``Decimal`` (and ``str | float``) is ``["string", "number"]``: a number is one whatever it
                # is, a string only when it holds digits.
                kinds.remove("string")
            if self.shallow and "null" in declared:
                return "null"
            return str(kinds[self.seed % len(kinds)])
        keys = schema.keys()
        for kind, known in (
            ("object", _OBJECT_KEYS),
            ("array", _ARRAY_KEYS),
            ("string", _STRING_KEYS),
            ("number", _NUMBER_KEYS),
        ):
            if keys & known:
                return kind
        return "string"  # ``{}``: any value; a string is the plainest

    # -- leaves ----------------------------------------------------------------------------------------------

    def enum(self, schema: Mapping[str, Any], path: str) -> Any:
        values = schema["enum"]
        real = [v for v in values if v is not None] or values
        if not real:
            raise SchemaValueError("an empty enum accepts no value", path)
        return real[self.next() % len(real)]

    def string(self, schema: Mapping[str, Any], path: str) -> str:
        number = self.next()
        low = _int(schema.get("minLength")) or 0
        high = _int(schema.get("maxLength"))
        pattern = schema.get("pattern")
        shape = schema.get("format")
        text = _FORMATS[shape](number) if isinstance(shape, str) and shape in _FORMATS else None
        if isinstance(pattern, str):
            if text is not None and _found(pattern, text):
                return text
            found = pattern_text(pattern, min_length=low, max_length=high)
            if found is None:
                raise SchemaValueError(
                    f"no string found that matches the pattern {pattern!r}"
                    + (f" with {low} to {high} characters" if high is not None else ""),
                    path,
                )
            return found
        if text is not None:
            return text
        text = _letters(number)
        if len(text) < low:
            text += "a" * (low - len(text))
        if high is not None:
            if high < low:
                raise SchemaValueError(f"maxLength {high} is below minLength {low}", path)
            text = text[:high]
        return text

    def number(self, schema: Mapping[str, Any], path: str, *, integer: bool) -> int | float:
        try:
            return number_value(schema, self.next(), integer=integer)
        except NoNumber as exc:
            raise SchemaValueError(str(exc), path) from None

    # -- containers ------------------------------------------------------------------------------------------

    def object(self, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        extra = schema.get("additionalProperties", True)
        out: dict[str, Any] = {}
        fill = self.optional and not self.shallow
        for name, sub in properties.items():
            where = f"{path}.{name}"
            if name in required:
                null_default = _null_means_default(sub)
                if null_default and not fill:
                    out[name] = None
                else:
                    out[name] = self.value(sub, where, prefer_null=bool(self.shallow) and not null_default)
            elif fill or _single_valued(sub):
                # A tag (``kind: Literal["cat"] = "cat"``) goes out even when optional: pydantic's
                # discriminated unions want it, and it is the default anyway.
                out[name] = self.value(sub, where)
        for name in required:
            if name not in out:  # required without a schema of its own
                out[name] = self.value(extra if isinstance(extra, Mapping) else {}, f"{path}.{name}")
        wanted = _int(schema.get("minProperties")) or 0
        if not properties and isinstance(extra, Mapping) and _validating(extra) and not self.shallow:
            wanted = max(wanted, 1)  # ``dict[str, int]``: one entry shows what the values are
        for name, sub in properties.items():
            if len(out) >= wanted:
                break
            if name not in out:
                out[name] = self.value(sub, f"{path}.{name}")
        while len(out) < wanted:
            if extra is False:
                raise SchemaValueError(f"minProperties {wanted} needs more properties than it allows", path)
            key = self.key(schema.get("propertyNames"), out, path)
            out[key] = self.value(extra if isinstance(extra, Mapping) else {}, f"{path}.{key}")
        most = _int(schema.get("maxProperties"))
        if most is not None and len(out) > most:
            for name in [n for n in out if n not in required][: len(out) - most]:
                del out[name]
            if len(out) > most:
                raise SchemaValueError(f"maxProperties {most} is below the required properties", path)
        return out

    def key(self, names: Any, taken: Mapping[str, Any], path: str) -> str:
        for _ in range(_MAX_TRIES):
            key = self.string(names, f"{path}(key)") if isinstance(names, Mapping) else _letters(self.next())
            if key not in taken:
                return key
        raise SchemaValueError("no new property name found", path)

    def array(self, schema: Mapping[str, Any], path: str) -> list[Any]:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft 4's tuple form, which agentflow writes for ``tuple[int, str]``
            prefix, items = items, schema.get("additionalItems", True)
        low = _int(schema.get("minItems")) or 0
        high = _int(schema.get("maxItems"))
        if high is not None and high < low:
            raise SchemaValueError(f"maxItems {high} is below minItems {low}", path)
        out: list[Any] = []
        for index, sub in enumerate(prefix if isinstance(prefix, list) else ()):
            if high is not None and index >= high:
                break
            out.append(self.value(sub, f"{path}[{index}]"))
        if items is False:
            if len(out) < low:
                raise SchemaValueError(f"minItems {low} needs more items than the schema allows", path)
            return out
        count = low if self.shallow or prefix else max(low, 1)
        if high is not None:
            count = min(count, high)
        contains = schema.get("contains")
        if isinstance(contains, Mapping) and len(out) < max(count, 1):
            out.append(self.value(contains, f"{path}[{len(out)}]"))
        unique = schema.get("uniqueItems") is True
        seen = {_identity(v) for v in out} if unique else set()
        tries = 0
        while len(out) < count:
            tries += 1
            if tries > _MAX_TRIES:
                raise SchemaValueError(f"no {count} different items found (uniqueItems)", path)
            value = self.value(items if items is not None else {}, f"{path}[{len(out)}]")
            if unique:
                identity = _identity(value)
                if identity in seen:
                    continue
                seen.add(identity)
            out.append(value)
        return out


# -- helpers ---------------------------------------------------------------------------------------------


def _letters(number: int) -> str:
    """``0`` → ``"a"``, ``25`` → ``"z"``, ``26`` → ``"ba"``: a short, distinct string per number."""
    number = abs(number)
    text = ""
    while True:
        number, digit = divmod(number, 26)
        text = chr(ord("a") + digit) + text
        if not number:
            return text


def _date(number: int) -> datetime.date:
    return _BASE_DATE + datetime.timedelta(days=number % 3650)


_FORMATS: Final[dict[str, Callable[[int], str]]] = {
    "date-time": lambda n: f"{_date(n).isoformat()}T12:00:00+00:00",
    "date": lambda n: _date(n).isoformat(),
    "time": lambda n: f"{n % 24:02d}:00:00",
    "duration": lambda n: f"P{n % 365 + 1}D",
    "uuid": lambda n: f"00000000-0000-4000-8000-{n % 16**12:012x}",
    "email": lambda n: f"{_letters(n)}@example.com",
    "idn-email": lambda n: f"{_letters(n)}@example.com",
    "hostname": lambda n: f"{_letters(n)}.example.com",
    "idn-hostname": lambda n: f"{_letters(n)}.example.com",
    "ipv4": lambda n: f"192.0.2.{n % 254 + 1}",
    "ipv6": lambda n: f"2001:db8::{n % 0xFFFF + 1:x}",
    "uri": lambda n: f"https://example.com/{_letters(n)}",
    "url": lambda n: f"https://example.com/{_letters(n)}",
    "iri": lambda n: f"https://example.com/{_letters(n)}",
    "uri-reference": lambda n: f"https://example.com/{_letters(n)}",
    "iri-reference": lambda n: f"https://example.com/{_letters(n)}",
    "uri-template": lambda n: "https://example.com/{id}",
    "json-pointer": lambda n: f"/{_letters(n)}",
    "relative-json-pointer": lambda n: str(n % 10),
    "regex": lambda n: _letters(n),
    "byte": lambda n: "YQ==",
    "base64": lambda n: "YQ==",
    "path": lambda n: f"{_letters(n)}.txt",
}
"""A value of each known ``format``, from the leaf counter (what fastjsonschema and agentflow check)."""


def _found(pattern: str, text: str) -> bool:
    import re

    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_null(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    return kind == "null" or kind == ["null"] or ("const" in schema and schema["const"] is None)


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` says ``null`` is one of its values (its type list, its enum, a member)."""
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        return "enum" not in schema or None in schema["enum"]
    if kind == "null":
        return True
    if isinstance(schema.get("enum"), list) and "type" not in schema:
        return None in schema["enum"]
    members = schema.get("anyOf", schema.get("oneOf"))
    return isinstance(members, list) and any(_is_null(m) for m in members)


def _null_means_default(schema: Any) -> bool:
    """A strict schema's optional property: nullable, with ``null`` standing for its default."""
    if not isinstance(schema, Mapping):
        return False
    description = schema.get("description")
    return (
        isinstance(description, str) and NULL_FOR_THE_DEFAULT in description.lower() and _accepts_null(schema)
    )


def _declares(schema: Any, *kinds: str) -> bool:
    """Whether ``schema`` says its type is one of ``kinds``."""
    declared = schema.get("type") if isinstance(schema, Mapping) else None
    return declared in kinds if isinstance(declared, str) else False


def _single_valued(schema: Any) -> bool:
    """Whether ``schema`` allows one value only (``const``, or a one-member ``enum``)."""
    if not isinstance(schema, Mapping):
        return False
    values = schema.get("enum")
    return "const" in schema or (isinstance(values, list) and len(values) == 1)


def _has_reference(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        return "$ref" in schema or any(
            _has_reference(v) for k, v in schema.items() if k not in ("enum", "const")
        )
    if isinstance(schema, list):
        return any(_has_reference(v) for v in schema)
    return False


_ANNOTATIONS: Final = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "discriminator",
    }
)


def _validating(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` has a keyword that constrains values (not only a description or a default)."""
    return any(key not in _ANNOTATIONS for key in schema)


def _identity(value: Any) -> Any:
    """A hashable key under which JSON-equal values are equal (``uniqueItems``): ``1`` and ``1.0`` alike,
    ``true`` and ``1`` not."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, float) and value.is_integer():
        return ("number", int(value))
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("list", tuple(_identity(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _identity(v)) for k, v in value.items())))
    return ("string", value)

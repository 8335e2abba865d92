"""Tool arguments: raw JSON text → validated, converted keyword arguments, or a precise error.

The model's arguments arrive as JSON text. ``ArgumentParser.parse`` treats ``""`` as ``{}``, rejects
invalid JSON and non-objects, validates against the tool's JSON schema (``fastjsonschema``, compiled once
per tool and imported on first use) and converts the values to the annotated Python types. Every failure
is a ``ToolArgumentsError`` whose message names the path and the reason, e.g.
``arguments.items[0].name must be string``. A schema may refer to definitions at its root (``$defs``, for
recursive types): the alternatives of a union are compiled and described with them. Pure: no I/O, nothing
async.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ..exact_json import dumps as exact_dumps
from ..exact_json import loads as exact_loads
from .formats import DECIMAL_TYPES, FORMAT_EXAMPLES, FORMATS, read_number_literals, uses_formats
from .outcome import MAX_ERROR_CHARS, exception_message
from .schema_defs import DEFS, ref_name
from .schema_shapes import ConversionError

__all__ = ["ArgumentParser", "ToolArgumentsError"]


class ToolArgumentsError(ValueError):
    """The arguments of a tool call are not valid: ``path`` (``""`` for the whole object) and ``reason``."""

    def __init__(self, message: str, *, path: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason or message


def _kind(value: Any) -> str:
    """How a JSON value looks, for error messages: ``an array``, ``the string "x"``, ``the number 3``."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "null"
    text = exact_dumps(value).decode() if isinstance(value, str | int | float) else repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    if isinstance(value, bool):
        return text
    return f"the string {text}" if isinstance(value, str) else f"the number {text}"


_MAX_NAMES = 8


def _object_kind(value: dict[str, Any]) -> str:
    """``an object with email, key``: the keys tell which alternative of a union the model meant."""
    return f"an object with {_listed(list(value))}" if value else "an empty object"


def _listed(names: list[Any]) -> str:
    shown = ", ".join(str(n) for n in names[:_MAX_NAMES])
    return shown + (", …" if len(names) > _MAX_NAMES else "")


def _describe(schema: Any, defs: Mapping[str, Any]) -> str:
    schema = _resolved(schema, defs)
    if not isinstance(schema, Mapping):
        return "a value"
    if "enum" in schema:
        return "one of " + ", ".join(exact_dumps(v).decode() for v in schema["enum"])
    kind = schema.get("type")
    properties = schema.get("properties")
    if kind == "object" and isinstance(properties, Mapping):
        # Alternatives of a union of classes all say "object": their properties tell them apart.
        required = [p for p in schema.get("required") or () if p in properties]
        optional = [p for p in properties if p not in required]
        text = f"an object with {_listed(required)}" if required else "an object"
        if optional:
            text += f" (optional: {_listed(optional)})"
        title = schema.get("title")
        return f"{title} ({text})" if isinstance(title, str) and title else text
    if isinstance(kind, list):
        return " or ".join(kind)
    if isinstance(kind, str):
        return kind
    return "a value matching its schema"


def _has_decimal(schema: Any) -> bool:
    """Whether ``schema`` has a ``Decimal``'s ``{"type": ["string", "number"]}`` anywhere in it."""
    pending = [schema]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            kind = item.get("type")
            if isinstance(kind, list) and tuple(kind) == DECIMAL_TYPES:
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class ArgumentParser:
    """Validates and converts one tool's arguments. Build it once per tool (the schema is compiled here).

    ``root`` names the whole value in error paths (``arguments.items[0]``) and ``subject`` the value in the
    other messages (default: ``"<tool> arguments"``); an agent's structured output is checked the same way.
    """

    __slots__ = (
        "_checks",
        "_convert",
        "_decimals",
        "_defs",
        "_invalid",
        "_root",
        "_schema",
        "_subject",
        "_undefinable",
        "_validate",
    )

    def __init__(
        self,
        tool: str,
        schema: Mapping[str, Any],
        convert: Callable[[Any], Any] | None,
        *,
        root: str = "arguments",
        subject: str | None = None,
    ) -> None:
        import fastjsonschema

        try:
            self._validate: Callable[[Any], Any] = fastjsonschema.compile(
                dict(schema), use_default=False, formats=_formats_for(schema)
            )
        except fastjsonschema.JsonSchemaDefinitionException as exc:
            raise ValueError(f"tool {tool!r} has an invalid parameters schema: {exc}") from exc
        # Kept here so a call never imports anything (``fastjsonschema`` loads with the first tool).
        self._invalid: type[Exception] = fastjsonschema.JsonSchemaValueException
        self._undefinable: type[Exception] = fastjsonschema.JsonSchemaDefinitionException
        self._schema = schema
        self._checks: dict[tuple[int, str], tuple[Any, Callable[[Any], Any]]] | None = None
        """The sub-schemas' validators ``_Collector`` compiled, kept for the next invalid value (made on the
        first one: a retried structured answer is read again and again while it streams)."""
        self._root = root
        self._subject = subject if subject is not None else f"{tool} arguments"
        self._convert = convert
        defs = schema.get(DEFS)
        self._defs: Mapping[str, Any] = defs if isinstance(defs, Mapping) else {}
        self._decimals = convert is not None and _has_decimal(schema)
        """Whether a ``Decimal`` is among the arguments: then number literals keep their digits."""

    def parse(self, raw: str | Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments for the tool's function (a mapping is taken as already-decoded JSON)."""
        if isinstance(raw, str):
            if not raw.strip():
                value: Any = {}
            else:
                try:
                    value = exact_loads(raw)  # an account number of 30 digits stays exact
                except orjson.JSONDecodeError as exc:
                    raise ToolArgumentsError(f"{self._subject} are not valid JSON: {exc}") from None
                if self._decimals:
                    value = read_number_literals(raw)  # an amount of 1.000000000000000001 too
        else:
            value = dict(raw)
        if not isinstance(value, dict):
            raise ToolArgumentsError(f"{self._subject} must be a JSON object, got {_kind(value)}")
        self._check(value)
        if self._convert is None:
            return value
        try:
            converted: dict[str, Any] = self._convert(value)
        except ConversionError as exc:
            # attrs validators, a class's own __init__ checks and the like: the schema allowed the value but
            # the annotated type did not. Whatever the constructor raised, it is the arguments' fault.
            raise self._conversion_error(exc) from None
        except RecursionError:
            raise self._too_deep() from None
        except Exception as exc:
            reason = exception_message(exc, MAX_ERROR_CHARS)
            raise ToolArgumentsError(f"{self._subject} could not be converted: {reason}") from None
        return converted

    def _conversion_error(self, exc: ConversionError) -> ToolArgumentsError:
        path = _path_text(exc.path)
        cause = exception_message(exc.error, MAX_ERROR_CHARS)
        if exc.reason is not None:
            reason = exc.reason
        elif exc.type_name is not None:
            reason = f"is not a valid {exc.type_name}: {cause}"
        else:
            reason = f"could not be converted: {cause}"
        message = f"{self._root}{path} {reason}"
        # Every field pydantic refused, so that the model fixes them all in one go.
        base = exc.path[: len(exc.path) - exc.depth]
        for other, other_reason in exc.also:
            message += f"; {self._root}{_path_text(base + other)} {other_reason}"
        return ToolArgumentsError(message, path=path.lstrip("."), reason=reason)

    def _too_deep(self) -> ToolArgumentsError:
        # A recursive type's data may nest deeper than Python's stack: an answer to fix, not a crash.
        reason = "nest too deeply"
        return ToolArgumentsError(f"{self._subject} {reason}", reason=reason)

    def _check(self, value: dict[str, Any]) -> None:
        try:
            self._validate(value)
        except self._invalid as exc:
            first = self._error(exc)
        except RecursionError:
            raise self._too_deep() from None
        else:
            return
        try:
            found = _Collector(self).errors(self._schema, value)
        except RecursionError:
            found = []
        except self._undefinable:
            # A part of the schema that cannot be compiled alone: a reference to another part of it than its
            # ``$defs`` (``#/definitions/A``, ``#/properties/a``, as hand-written schemas have). The first
            # mistake is still told.
            found = []
        if len(found) <= 1:
            raise first
        # Every mistake at once, so that the model fixes them in one turn rather than one per turn.
        message = "; ".join(str(e) for e in found[:_MAX_ERRORS])
        if len(found) > _MAX_ERRORS:
            message += "; and more"  # the search stopped there: how many more is not known
        raise ToolArgumentsError(message, path=found[0].path, reason=found[0].reason)

    def _error(self, exc: Any, prefix: str = "") -> ToolArgumentsError:
        name: str = exc.name or "data"
        closest: ToolArgumentsError | None = None
        if exc.rule == "anyOf" and isinstance(exc.rule_definition, list):
            inner, only = _narrow(exc.rule_definition, exc.value, self._defs)
            if inner is not None:
                nested = self._error(inner, prefix + name[len("data") :])
                if only:
                    # The only alternative of the value's JSON type (Optional[X] given an X): its error.
                    return nested
                closest = nested
        message: str = exc.message or ""
        reason = message[len(name) :].strip() if message.startswith(name) else message
        name = "data" + prefix + name[len("data") :] if prefix and name.startswith("data") else name
        value = exc.value
        definition = exc.definition if isinstance(exc.definition, Mapping) else {}
        if exc.rule == "required" and isinstance(value, dict):
            missing = [k for k in exc.rule_definition or () if k not in value]
            reason = f"is missing the required {_plural('property', missing)} {_names(missing)}"
        elif exc.rule == "additionalProperties" and isinstance(value, dict) and exc.rule_definition is False:
            known = definition.get("properties") or {}
            extra = [k for k in value if k not in known]
            reason = f"has unknown {_plural('property', extra)} {_names(extra)}"
            if known:
                reason += f" (expected: {', '.join(known)})"
        elif exc.rule == "enum" and isinstance(exc.rule_definition, list):
            choices = ", ".join(exact_dumps(v).decode() for v in exc.rule_definition)
            reason = f"must be one of {choices}, got {_kind(value)}"
        elif exc.rule == "type" and isinstance(definition.get("enum"), list):
            # An IntEnum given a name ("HIGH"): the type is wrong, but the choices are what helps.
            choices = ", ".join(exact_dumps(v).decode() for v in definition["enum"])
            reason = f"must be one of {choices}, got {_kind(value)}"
        elif exc.rule == "type":
            reason = f"{reason}, got {_kind(value)}"
        elif exc.rule == "format" and exc.rule_definition in FORMAT_EXAMPLES:
            reason = f"must be {FORMAT_EXAMPLES[exc.rule_definition]}, got {_kind(value)}"
        elif exc.rule == "anyOf" and isinstance(exc.rule_definition, list):
            got = _object_kind(value) if isinstance(value, dict) else _kind(value)
            described = " or ".join(_describe(s, self._defs) for s in exc.rule_definition)
            reason = f"must be {described}, got {got}"
            if closest is not None:
                reason += f"; closest: {closest}"
        path = name[len("data") :].lstrip(".") if name.startswith("data") else name
        where = self._root + name[len("data") :] if name.startswith("data") else name
        return ToolArgumentsError(f"{where} {reason}", path=path, reason=reason)


_MAX_ERRORS = 10
"""Mistakes one error message lists (the first ones, in the order of the value's keys)."""


class _Collector:
    """Finds every mistake in a value that failed validation, not only the first (``fastjsonschema`` stops
    there): objects and arrays are checked on their own (their required and known keys, their type), then
    each property and item against its own schema, down to the leaves, whose first error is the mistake.

    The error path only: the sub-schemas are compiled here, each once per parser (its schema holds them,
    so their ids stay theirs).
    """

    def __init__(self, parser: ArgumentParser) -> None:
        self._parser = parser
        if parser._checks is None:
            parser._checks = {}
        self._compiled = parser._checks
        self._found: list[ToolArgumentsError] = []

    def errors(self, schema: Any, value: Any) -> list[ToolArgumentsError]:
        self._walk(schema, value, "")
        return self._found

    def _walk(self, schema: Any, value: Any, prefix: str) -> None:
        if len(self._found) > _MAX_ERRORS or self._check(schema, value, prefix, record=False):
            return  # enough said, or nothing wrong in this part: the cost follows the mistakes, not the size
        defs = self._parser._defs
        resolved = _resolved(schema, defs)
        if not isinstance(resolved, Mapping):
            self._check(schema, value, prefix)
            return
        members = resolved.get("anyOf")
        if members is not None:
            # The one alternative of the value's JSON type (an Optional's X, given an X) is the one meant;
            # among several, the first mistake of the closest one is all ``_error`` can tell.
            kinds = _json_types(value)
            fitting = (
                [m for m in members if _declared_types(_resolved(m, defs)) & kinds]
                if isinstance(members, list)
                else []
            )
            if len(fitting) == 1:
                self._walk(fitting[0], value, prefix)
            else:
                self._check(schema, value, prefix)
            return
        properties = resolved.get("properties")
        items = resolved.get("items")
        values = resolved.get("additionalProperties")
        if isinstance(value, dict) and (isinstance(properties, Mapping) or isinstance(values, Mapping)):
            known: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
            if "required" in resolved:  # apart, so that missing keys and unknown ones are both told
                self._check(resolved, value, prefix, part="required")
            self._check(resolved, value, prefix, part="object")
            for key, item in value.items():
                if key in known:
                    self._walk(known[key], item, f"{prefix}.{key}")
                elif isinstance(values, Mapping):
                    self._walk(values, item, f"{prefix}.{key}")
        elif isinstance(value, list) and isinstance(items, Mapping):
            self._check(resolved, value, prefix, part="array")
            for index, item in enumerate(value):
                self._walk(items, item, f"{prefix}[{index}]")
        else:
            self._check(schema, value, prefix)

    def _check(self, schema: Any, value: Any, prefix: str, part: str = "", *, record: bool = True) -> bool:
        """Check ``value`` against ``schema`` (its ``part`` only: ``"required"``, or the rules of an
        ``"object"`` or ``"array"`` without its members' schemas); record the first mistake (unless not
        ``record``). Whether it passed."""
        import fastjsonschema

        known = self._compiled.get((id(schema), part))
        if known is not None and known[0] is schema:
            validate = known[1]
        else:
            validate = self._compile(_part(schema, part))
            # The schema is kept with its validator: an id is only unique while its object lives.
            self._compiled[(id(schema), part)] = (schema, validate)
        try:
            validate(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            if record:
                self._found.append(self._parser._error(exc, prefix))
            return False
        return True

    def _compile(self, schema: Any) -> Callable[[Any], Any]:
        import fastjsonschema

        defs = self._parser._defs
        whole = {**schema, DEFS: defs} if defs and isinstance(schema, Mapping) else schema
        return fastjsonschema.compile(whole, use_default=False, formats=_formats_for(whole))


def _part(schema: Any, part: str) -> Any:
    """The rules of ``schema`` that ``_Collector._check`` checks for ``part``."""
    if part == "required":
        return {"required": schema["required"]}
    if part == "object":
        shallow = {k: v for k, v in schema.items() if k != "required"}
        shallow["properties"] = {key: {} for key in schema.get("properties") or ()}
        if isinstance(schema.get("additionalProperties"), Mapping):
            shallow["additionalProperties"] = {}
        return shallow
    if part == "array":
        return {**schema, "items": {}}
    return schema


def _formats_for(schema: Any) -> dict[str, Any]:
    return dict(FORMATS) if uses_formats(schema) else {}


def _path_text(path: list[str | int]) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path)


def _resolved(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema``, or the definition it refers to (through a one-member ``anyOf`` that only describes it)."""
    for _ in range(8):  # a reference to a reference…, never a loop
        if not isinstance(schema, Mapping):
            return schema
        members = schema.get("anyOf")
        if isinstance(members, list) and len(members) == 1 and set(schema) <= {"anyOf", "description"}:
            schema = members[0]
            continue
        name = ref_name(schema)
        if name is None or name not in defs:
            return schema
        schema = defs[name]
    return schema


def _json_types(value: Any) -> set[str]:
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"integer", "number"} if value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    return {"array"} if isinstance(value, list) else {"object"}


def _declared_types(schema: Any) -> set[str]:
    """The JSON types a (resolved) schema declares."""
    declared = schema.get("type") if isinstance(schema, Mapping) else None
    return {declared} if isinstance(declared, str) else set(declared or ())


def _narrow(alternatives: list[Any], value: Any, defs: Mapping[str, Any]) -> tuple[Any | None, bool]:
    """The validation error of the ``anyOf`` alternative ``value`` comes closest to, if one does, and
    whether it is the only alternative of the value's JSON type.

    Among several of that type (a union of classes, all objects) the closest is the one whose properties
    the value's keys match best, then the one it gets deepest into; a tie names none (the keys fit two
    alternatives equally, and the model must choose) unless they fail alike. Runs only when validation
    failed, so the alternatives are compiled here rather than kept compiled for every call.
    """
    kinds = _json_types(value)
    fitting = []
    for alt in alternatives:
        if _declared_types(_resolved(alt, defs)) & kinds:
            fitting.append(alt)
    if not fitting:
        return None, False
    import fastjsonschema

    ranked: list[tuple[tuple[int, int], Any]] = []
    for alt in fitting:
        # The root's definitions go with the alternative, whose references point at them.
        whole = {**alt, DEFS: defs} if defs and isinstance(alt, Mapping) else alt
        try:
            fastjsonschema.compile(whole, use_default=False, formats=_formats_for(whole))(value)
        except fastjsonschema.JsonSchemaValueException as inner:
            ranked.append(((_key_match(_resolved(alt, defs), value), len(inner.path)), inner))
        except fastjsonschema.JsonSchemaDefinitionException:
            continue
    if not ranked:
        return None, False
    if len(fitting) == 1:
        return ranked[0][1], True
    ranked.sort(key=lambda r: r[0], reverse=True)
    tied = [inner for rank, inner in ranked if rank == ranked[0][0]]
    if len({(inner.name, inner.message) for inner in tied}) > 1:
        return None, False  # equally close alternatives that disagree: neither is the one meant
    return tied[0], False


def _key_match(schema: Mapping[str, Any], value: Any) -> int:
    """How well an object's keys match an object schema: keys it knows, less keys it lacks or forbids."""
    properties = schema.get("properties")
    if not isinstance(value, dict) or not isinstance(properties, Mapping):
        return 0
    keys = value.keys()
    known = len(keys & properties.keys())
    unknown = len(keys - properties.keys()) if schema.get("additionalProperties") is False else 0
    missing = len(set(schema.get("required") or ()) - keys)
    return known - unknown - missing


def _plural(word: str, items: list[Any]) -> str:
    if len(items) == 1:
        return word
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def _names(items: list[Any]) -> str:
    return ", ".join(repr(str(i)) for i in items)

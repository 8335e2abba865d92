"""Tool arguments: raw JSON text → validated, converted keyword arguments, or a precise error.

The model's arguments arrive as JSON text. ``ArgumentParser.parse`` treats ``""`` as ``{}``, rejects
invalid JSON and non-objects, validates against the tool's JSON schema (``fastjsonschema``, compiled once
per tool and imported on first use) and converts the values to the annotated Python types. Every failure
is a ``ToolArgumentsError`` whose message names the path and the reason, e.g.
``arguments.items[0].name must be string``. Pure: no I/O, nothing async.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ..exact_json import dumps as exact_dumps
from ..exact_json import loads as exact_loads
from .outcome import exception_message

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


def _describe(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return "a value"
    if "enum" in schema:
        return "one of " + ", ".join(exact_dumps(v).decode() for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if isinstance(kind, str):
        return kind
    return "a value matching its schema"


class ArgumentParser:
    """Validates and converts one tool's arguments. Build it once per tool (the schema is compiled here).

    ``root`` names the whole value in error paths (``arguments.items[0]``) and ``subject`` the value in the
    other messages (default: ``"<tool> arguments"``); an agent's structured output is checked the same way.
    """

    __slots__ = ("_convert", "_invalid", "_root", "_subject", "_validate")

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
            self._validate: Callable[[Any], Any] = fastjsonschema.compile(dict(schema), use_default=False)
        except fastjsonschema.JsonSchemaDefinitionException as exc:
            raise ValueError(f"tool {tool!r} has an invalid parameters schema: {exc}") from exc
        # Kept here so a call never imports anything (``fastjsonschema`` loads with the first tool).
        self._invalid: type[Exception] = fastjsonschema.JsonSchemaValueException
        self._root = root
        self._subject = subject if subject is not None else f"{tool} arguments"
        self._convert = convert

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
        else:
            value = dict(raw)
        if not isinstance(value, dict):
            raise ToolArgumentsError(f"{self._subject} must be a JSON object, got {_kind(value)}")
        self._check(value)
        if self._convert is None:
            return value
        try:
            converted: dict[str, Any] = self._convert(value)
        except Exception as exc:
            # attrs validators, a class's own __init__ checks and the like: the schema allowed the value but
            # the annotated type did not. Whatever the constructor raised, it is the arguments' fault.
            reason = exception_message(exc)
            raise ToolArgumentsError(f"{self._subject} could not be converted: {reason}") from None
        return converted

    def _check(self, value: dict[str, Any]) -> None:
        try:
            self._validate(value)
        except self._invalid as exc:
            raise self._error(exc) from None

    def _error(self, exc: Any, prefix: str = "") -> ToolArgumentsError:
        name: str = exc.name or "data"
        if exc.rule == "anyOf" and isinstance(exc.rule_definition, list):
            inner = _narrow(exc.rule_definition, exc.value)
            if inner is not None:
                # One alternative has the value's JSON type (Optional[X] given an X): report its own error.
                return self._error(inner, prefix + name[len("data") :])
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
        elif exc.rule == "type":
            reason = f"{reason}, got {_kind(value)}"
        elif exc.rule == "anyOf" and isinstance(exc.rule_definition, list):
            reason = (
                "must be " + " or ".join(_describe(s) for s in exc.rule_definition) + f", got {_kind(value)}"
            )
        path = name[len("data") :].lstrip(".") if name.startswith("data") else name
        where = self._root + name[len("data") :] if name.startswith("data") else name
        return ToolArgumentsError(f"{where} {reason}", path=path, reason=reason)


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


def _narrow(alternatives: list[Any], value: Any) -> Any | None:
    """The validation error of the only ``anyOf`` alternative whose type fits ``value``, if there is one."""
    kinds = _json_types(value)
    fitting = []
    for alt in alternatives:
        declared = alt.get("type") if isinstance(alt, Mapping) else None
        declared_set = {declared} if isinstance(declared, str) else set(declared or ())
        if declared_set & kinds:
            fitting.append(alt)
    if len(fitting) != 1:
        return None
    import fastjsonschema

    try:
        fastjsonschema.compile(fitting[0], use_default=False)(value)
    except fastjsonschema.JsonSchemaValueException as inner:
        return inner
    return None


def _plural(word: str, items: list[Any]) -> str:
    if len(items) == 1:
        return word
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def _names(items: list[Any]) -> str:
    return ", ".join(repr(str(i)) for i in items)

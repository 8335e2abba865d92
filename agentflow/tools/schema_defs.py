"""``$defs`` and ``$ref``: how a recursive type's schema refers to itself, and how such schemas combine.

A recursive type (a tree ``Node`` whose ``children`` are ``Node``s, or ``A`` → ``B`` → ``A``) cannot be
written out inline: its schema names a definition, ``{"$ref": "#/$defs/Node"}``, kept in the ``$defs`` of
the schema's root, which is the one place OpenAI's strict mode looks for them. Only recursion makes a
definition: a schema without it has no ``$defs`` and reads exactly as it did before they existed.

``Definitions`` gathers the definitions of the schemas put into one (the parameters of a tool, the fields
of one walk) and renames one whose name another already took with a different body, in that schema's
references too. ``ref_free`` keeps keywords from sitting beside a ``$ref`` (OpenAI's strict mode refuses
``{"$ref": …, "description": …}``, and draft-07 validators ignore such siblings): the reference goes into a
one-member ``anyOf`` instead. ``cyclic_names`` tells which definitions of a foreign schema (pydantic's,
which defines every model) are recursive, so that the others can be written inline.

Pure code on JSON-schema dicts: no I/O, no type hints, nothing of agentflow's ``Shape``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["DEFS", "Definitions", "cyclic_names", "ref", "ref_free", "ref_name", "renamed"]

DEFS: Final = "$defs"
_PREFIX: Final = "#/$defs/"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")
_VALUES: Final = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are JSON data, not schemas: a ``$ref`` key inside them is not a reference."""


def ref(name: str) -> dict[str, Any]:
    """The schema that refers to the definition ``name`` of the root's ``$defs``."""
    return {"$ref": _PREFIX + name}


def ref_name(schema: Any) -> str | None:
    """The definition ``schema`` refers to (``#/$defs/<name>``), or None when it is no such reference."""
    target = schema.get("$ref") if isinstance(schema, Mapping) else None
    if isinstance(target, str) and target.startswith(_PREFIX):
        return target[len(_PREFIX) :]
    return None


def ref_free(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``, with a ``$ref`` that has sibling keywords moved into a one-member ``anyOf``."""
    if "$ref" not in schema or len(schema) == 1:
        return schema
    return {"anyOf": [{"$ref": schema["$ref"]}], **{k: v for k, v in schema.items() if k != "$ref"}}


def renamed(schema: Any, names: Mapping[str, str]) -> Any:
    """``schema`` with its references to the definitions in ``names`` pointing at their new names."""
    if isinstance(schema, list):
        return [renamed(item, names) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_PREFIX):
            name = value[len(_PREFIX) :]
            out[key] = _PREFIX + names.get(name, name)
        elif key in _VALUES:
            out[key] = value
        elif key in (DEFS, "properties"):
            out[key] = {k: renamed(v, names) for k, v in value.items()} if isinstance(value, dict) else value
        else:
            out[key] = renamed(value, names)
    return out


def cyclic_names(defs: Mapping[str, Any]) -> set[str]:
    """The definitions that refer to themselves, directly or through others (the recursive ones)."""
    edges = {name: _references(body) & defs.keys() for name, body in defs.items()}
    cyclic: set[str] = set()
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            name = todo.pop()
            if name == start:
                cyclic.add(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(edges.get(name, ()))
    return cyclic


def _references(schema: Any) -> set[str]:
    found: set[str] = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            name = ref_name(node)
            if name is not None:
                found.add(name)
            todo.extend(v for k, v in node.items() if k not in _VALUES)
    return found


class Definitions:
    """The ``$defs`` of the schemas combined into one, each name standing for one body.

    ``take(schema)`` keeps a schema's ``$defs`` here and returns the schema without them (renamed where a
    name clashed); ``reserve`` gives a name for a definition that is still being built (a class met inside
    its own expansion); ``rooted(schema)`` puts what was gathered at the root of the combined schema.
    """

    __slots__ = ("_defs", "_reserved")

    def __init__(self) -> None:
        self._defs: dict[str, Any] = {}
        self._reserved: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self._defs)

    def reserve(self, wanted: str) -> str:
        """A name no definition here has or will have: ``wanted`` (made pointer-safe) if it is free."""
        name = self._free(_UNSAFE.sub("_", wanted) or "Def", set())
        self._reserved.add(name)
        return name

    def define(self, name: str, body: dict[str, Any]) -> None:
        """Set the body of a name ``reserve`` gave (again, with the same body, when a class is re-walked)."""
        self._defs[name] = body

    def take(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` without its ``$defs``, which are kept here; a name already taken by another body (or
        reserved) is renamed in them and in ``schema``. A schema without ``$defs`` is returned as it is."""
        incoming = schema.get(DEFS)
        if not incoming:
            return schema
        rest = {k: v for k, v in schema.items() if k != DEFS}
        incoming = dict(incoming)
        # Renaming a definition changes the bodies that refer to it, which may then clash in turn; each
        # name is renamed at most once (a fresh name never clashes), so this ends.
        while clashes := [name for name, body in incoming.items() if self._clashes(name, body)]:
            chosen: set[str] = set()
            names = {}
            for name in clashes:
                names[name] = self._free(name, incoming.keys() | chosen)
                chosen.add(names[name])
            incoming = {names.get(n, n): renamed(body, names) for n, body in incoming.items()}
            rest = renamed(rest, names)
        self._defs.update(incoming)
        return rest

    def rooted(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with the definitions gathered here as its ``$defs`` (none: ``schema`` as it is)."""
        if not self._defs:
            return schema
        return {**schema, DEFS: dict(self._defs)}

    def _clashes(self, name: str, body: Any) -> bool:
        if name in self._defs:
            return bool(self._defs[name] != body)
        return name in self._reserved

    def _free(self, name: str, also_taken: set[str] | Any) -> str:
        candidate, number = name, 1
        while candidate in self._defs or candidate in self._reserved or candidate in also_taken:
            number += 1
            candidate = f"{name}{number}"
        return candidate

"""An MCP tool's ``inputSchema`` as the parameters schema of an agentflow tool.

MCP servers write their schemas with many generators (pydantic, zod-to-json-schema, hand-written JSON), and
the protocol asks little of them. The schema a tool gets is the server's, made ready for a model's API and
for agentflow's validator, and changed only where it has to be:

- the root is an object schema: ``"type": "object"`` when it says no type, ``"properties": {}`` when it has
  none (OpenAI refuses a function whose parameters have no ``properties``);
- ``$schema`` and ``$id`` are dropped (``$id`` would make references resolve against a URL);
- draft-07 ``definitions`` become ``$defs``, and every local reference points into ``$defs``: one to another
  place of the document (``#/properties/a``, as zod-to-json-schema writes a schema used twice, or ``#``)
  gets a definition of its own, a copy of what it pointed at;
- a reference that is not local (``https://…``, ``other.json``) or points nowhere is removed, leaving the
  keywords beside it (so nothing is ever fetched: the server still validates what the model sends).

``additionalProperties``, ``anyOf``/``oneOf``/``allOf``, formats and the other keywords are left as they are;
a validator ignores the ones it does not know. Pure: no I/O.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

__all__ = ["tool_parameters"]

_DEFS: Final = "$defs"
_DEFS_PREFIX: Final = "#/$defs/"
_DATA_KEYWORDS: Final = frozenset({"enum", "const", "default", "examples", "example"})
"""Keywords whose values are JSON data, not schemas: a ``$ref`` inside them is no reference."""
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")


def tool_parameters(schema: Any) -> dict[str, Any]:
    """The parameters schema for an MCP tool whose ``inputSchema`` is ``schema`` (never changed in place).

    >>> tool_parameters({"properties": {"q": {"type": "string"}}})
    {'properties': {'q': {'type': 'string'}}, 'type': 'object'}
    >>> tool_parameters({"type": "object", "definitions": {"P": {"type": "integer"}},
    ...                  "properties": {"a": {"$ref": "#/definitions/P"}, "b": {"$ref": "#/properties/a"}}})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'type': 'object', 'properties': {'a': {'$ref': '#/$defs/P'}, 'b': {'$ref': '#/$defs/properties.a'}},
     '$defs': {'P': {'type': 'integer'}, 'properties.a': {'$ref': '#/$defs/P'}}}
    """
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    root: dict[str, Any] = copy.deepcopy(dict(schema))
    root.pop("$schema", None)
    if "type" not in root:
        root["type"] = "object"
    if root["type"] == "object" and not isinstance(root.get("properties"), Mapping):
        root["properties"] = {}
    legacy = root.pop("definitions", None)
    if isinstance(legacy, Mapping):
        defs = root.get(_DEFS)
        merged = dict(legacy)
        if isinstance(defs, Mapping):
            merged.update(defs)  # a name in both: ``$defs`` is the newer spelling, and wins
        root[_DEFS] = merged
    _References(root).rewrite()
    return root


class _References:
    """Rewrites every ``$ref`` of one schema document to point into its root's ``$defs`` (see the module)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root
        self._document = copy.deepcopy(root)  # what pointers resolve against, whatever the rewrite changes
        existing = root.get(_DEFS)
        self._names: set[str] = set(existing) if isinstance(existing, Mapping) else set()
        self._added: dict[str, Any] = {}
        self._by_pointer: dict[str, str] = {}

    def rewrite(self) -> None:
        self._walk(self._root)
        pending = list(self._added.items())
        while pending:  # a definition copied from elsewhere may hold references of its own
            _, schema = pending.pop()
            before = set(self._added)
            self._walk(schema)
            pending.extend((n, self._added[n]) for n in set(self._added) - before)
        if self._added:
            defs = self._root.get(_DEFS)
            self._root[_DEFS] = {**(defs if isinstance(defs, Mapping) else {}), **self._added}

    def _walk(self, node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                self._walk(item)
            return
        if not isinstance(node, dict):
            return
        node.pop("$id", None)
        target = node.get("$ref")
        if isinstance(target, str):
            resolved = self._local(target)
            if resolved is None:
                del node["$ref"]  # not ours to follow: the keywords beside it still apply
            else:
                node["$ref"] = resolved
        for key, value in node.items():
            if key not in _DATA_KEYWORDS:
                self._walk(value)

    def _local(self, target: str) -> str | None:
        """The ``#/$defs/<name>`` reference for ``target``, or None when it is not a local reference that
        resolves."""
        if not target.startswith("#"):
            return None
        pointer = unquote(target[1:])
        if pointer.startswith("/definitions/"):
            pointer = "/$defs/" + pointer[len("/definitions/") :]
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]] if pointer else []
        if len(parts) == 2 and parts[0] == _DEFS:
            return _DEFS_PREFIX + parts[1] if parts[1] in self._names else None
        known = self._by_pointer.get(pointer)
        if known is not None:
            return _DEFS_PREFIX + known
        found = _resolve(self._document, parts)
        if found is None:
            return None
        name = self._fresh_name(".".join(parts) or "root")
        self._by_pointer[pointer] = name
        if not parts:
            found = {k: v for k, v in found.items() if k != _DEFS}  # the root's definitions stay at the root
        self._added[name] = copy.deepcopy(found)
        return _DEFS_PREFIX + name

    def _fresh_name(self, wanted: str) -> str:
        base = _UNSAFE.sub("_", wanted).strip("_") or "ref"
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name


def _resolve(document: Any, parts: list[str]) -> dict[str, Any] | None:
    """The schema at ``parts`` of ``document`` (a JSON pointer's steps), or None when there is none."""
    node = document
    for part in parts:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, dict) else None

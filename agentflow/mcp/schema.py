"""An MCP tool's ``inputSchema`` as the parameters schema of an agentflow tool.

MCP servers write their schemas with many generators (pydantic, zod-to-json-schema, hand-written JSON), and
the protocol asks little of them. The schema a tool gets is the server's, made ready for a model's API and
for agentflow's validator, and changed only where it has to be:

- the root is an object schema: ``"type": "object"`` when it says no type, ``"properties": {}`` when it has
  none (OpenAI refuses a function whose parameters have no ``properties``);
- ``$schema`` and ``$id`` are dropped (``$id`` would make references resolve against a URL); a property
  named ``$id`` or ``default`` is a property like any other: the names in ``properties``,
  ``patternProperties``, ``$defs`` and the like are never taken for keywords;
- draft-07 ``definitions`` become ``$defs`` (one whose name a different ``$defs`` schema has is renamed
  ``definitions.<name>``), and every local reference points into ``$defs``: one to another
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
from urllib.parse import quote, unquote

__all__ = ["tool_parameters"]

_DEFS: Final = "$defs"
_DEFS_PREFIX: Final = "#/$defs/"
_DATA_KEYWORDS: Final = frozenset({"enum", "const", "default", "examples", "example"})
"""Keywords whose values are JSON data, not schemas: a ``$ref`` inside them is no reference."""
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
"""Keywords whose values map names to schemas: the names are the user's (a property may be called
``default`` or ``$id``), so only the schemas under them are walked."""
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
    renamed: dict[str, str] = {}
    if isinstance(legacy, Mapping):
        defs = root.get(_DEFS)
        merged = dict(defs) if isinstance(defs, Mapping) else {}
        for name, definition in legacy.items():
            if name in merged and merged[name] != definition:
                # Two schemas of one name: the draft-07 one gets another, its references follow it.
                new = _unused(merged, f"definitions.{name}")
                renamed[name] = new
                merged[new] = definition
            else:
                merged.setdefault(name, definition)
        root[_DEFS] = merged
    _References(root, renamed).rewrite()
    return root


def _unused(taken: Mapping[str, Any] | set[str], wanted: str) -> str:
    """``wanted`` made safe for a definition's name (and a pointer), numbered until no name in ``taken``."""
    base = _UNSAFE.sub("_", wanted).strip("_") or "ref"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _token(name: str) -> str:
    """``name`` as a step of a JSON pointer in a URI fragment: ``~`` and ``/`` escaped (``~0``, ``~1``),
    then what a URI may not hold percent-encoded.

    >>> _token("a/b~c d")
    'a~1b~0c%20d'
    """
    return quote(name.replace("~", "~0").replace("/", "~1"), safe="!$&'()*+,;=:@")


class _References:
    """Rewrites every ``$ref`` of one schema document to point into its root's ``$defs`` (see the module)."""

    def __init__(self, root: dict[str, Any], renamed: Mapping[str, str]) -> None:
        self._root = root
        self._renamed = renamed
        """Draft-07 definitions given another name in ``$defs`` (a ``$defs`` one had theirs)."""
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
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                for schema in value.values():
                    self._walk(schema)
            elif key not in _DATA_KEYWORDS:
                self._walk(value)

    def _local(self, target: str) -> str | None:
        """The ``#/$defs/<name>`` reference for ``target``, or None when it is not a local reference that
        resolves."""
        if not target.startswith("#"):
            return None
        pointer = unquote(target[1:])
        if pointer and not pointer.startswith("/"):
            return None  # an anchor (``#node``): nothing here defines one
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]] if pointer else []
        if len(parts) >= 2 and parts[0] == "definitions":
            parts = [_DEFS, self._renamed.get(parts[1], parts[1]), *parts[2:]]
        if len(parts) == 2 and parts[0] == _DEFS:
            return _DEFS_PREFIX + _token(parts[1]) if parts[1] in self._names else None
        key = "/".join(parts)
        known = self._by_pointer.get(key)
        if known is not None:
            return _DEFS_PREFIX + known
        found = _resolve(self._document, parts)
        if found is None:
            return None
        name = _unused(self._names, ".".join(parts) or "root")
        self._names.add(name)
        self._by_pointer[key] = name
        if not parts:
            found = {k: v for k, v in found.items() if k != _DEFS}  # the root's definitions stay at the root
        self._added[name] = copy.deepcopy(found)
        return _DEFS_PREFIX + name


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

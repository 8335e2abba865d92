"""The check that a hand-written JSON schema is one OpenAI's strict mode accepts.

A tool built from type hints gets a strict schema from ``schema.object_shape``; a strict ``Tool`` whose
``ToolSpec`` carries a schema of its own is checked with this, so that the mistake is a ``ValueError`` when
the tool is made rather than a 400 from the provider when the request is sent. It only reports problems,
never rewrites a schema, and knows nothing of type hints (``schema`` re-exports it for the old import
path). References (``$ref``, for recursive types) are strict-mode ones when they point into the root's
``$defs`` and stand alone: OpenAI refuses ``{"$ref": …, "description": …}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["strict_schema_problems"]


def strict_schema_problems(schema: Any, where: str = "parameters") -> list[str]:
    """What keeps a hand-written schema from being an OpenAI strict-mode one (``[]``: nothing).

    Strict mode wants every object closed (``additionalProperties: false``) with every property in
    ``required``; without that the provider answers 400 when the request is sent, not when the tool is made.
    A ``$ref`` must name a definition of the root's ``$defs`` and have no sibling keywords (put it in a
    one-member ``anyOf`` beside them).

    >>> for problem in strict_schema_problems({"type": "object", "properties": {"a": {"type": "string"}}}):
    ...     print(problem)
    parameters must have additionalProperties: false
    parameters must list 'a' in required
    """
    defs = schema.get("$defs") if isinstance(schema, Mapping) else None
    return _problems(schema, where, defs if isinstance(defs, Mapping) else {})


def _problems(schema: Any, where: str, defs: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            problems += _problems(item, f"{where}[{index}]", defs)
        return problems
    if not isinstance(schema, Mapping):
        return problems
    target = schema.get("$ref")
    if isinstance(target, str):
        if len(schema) > 1:
            problems.append(f"{where} must have no keyword beside $ref (put the $ref in a one-member anyOf)")
        if target.startswith("#/$defs/") and target[len("#/$defs/") :] not in defs:
            problems.append(f"{where} refers to {target}, which the root's $defs does not define")
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, Mapping):
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where} must have additionalProperties: false")
        listed = schema.get("required") or ()
        for name in properties if isinstance(properties, Mapping) else ():
            if name not in listed:
                problems.append(f"{where} must list {name!r} in required")
    for name, sub in (properties or {}).items() if isinstance(properties, Mapping) else ():
        problems += _problems(sub, f"{where}.{name}", defs)
    for keyword in ("items", "anyOf", "prefixItems"):
        if keyword in schema:
            problems += _problems(schema[keyword], f"{where}.{keyword}", defs)
    for keyword in ("$defs", "definitions"):
        for name, sub in (schema.get(keyword) or {}).items():
            problems += _problems(sub, f"{where}.{keyword}.{name}", defs)
    return problems

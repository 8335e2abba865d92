"""What the CodeAct runtime tells the model: its instructions, the tools as text, and its corrections.

Prompts are data: every model-facing sentence of CodeAct lives here, apart from the loop. The instructions
are agentflow's own, written for Python (not the reference's wording, which mixed in JavaScript habits and
``__codeact_result``). How code reaches tools is described by ``agentflow.sandbox.code_api_text``, next to
the sandbox that implements it. Pure text functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from ..model.tools import ToolSpec
from ..sandbox.code_api import callable_by_name

__all__ = [
    "CODEACT_INSTRUCTIONS",
    "FINAL_STEP_REMINDER",
    "REACT_OFF_NOTE",
    "REACT_ON_NOTE",
    "correction_text",
    "not_run_text",
    "tools_guide",
    "unsupported_language_text",
]

CODEACT_INSTRUCTIONS: Final = """\
You are a CodeAct agent: you act by writing Python code that runs in a sandbox, and your code calls the tools.
Answer every turn with exactly one JSON object and no other text:
- to run code: {"type": "code", "language": "python", "code": "<Python source>"}
- to give the final answer: {"type": "final", "output": "<the answer for the user>"}
The code is a JSON string: write line breaks as \\n and escape double quotes as \\".
After a code step you get a message CODE_RESULT: {"result": ..., "stdout": ...} with the step's value and \
what it printed, or CODE_ERROR: {"error": ..., "stdout": ...} when it failed; then read the error, fix the \
code and try again. Base your answer on tool results and computed values, never on guesses."""
"""The CodeAct instructions, added to the system prompt after the agent's own system prompt."""

REACT_OFF_NOTE: Final = (
    "The value of a code step that succeeds is given to the user as the final answer, so make the last "
    "expression the complete answer (or call `final_answer(x)`)."
)
"""How a step ends the run with ``CodeActOptions(react=False)`` (the default)."""

REACT_ON_NOTE: Final = (
    "After each code step you see its result and decide: run more code, or answer with "
    '{"type": "final", "output": "..."}. Call `final_answer(x)` in code to finish with `x` at once.'
)
"""How a step ends the run with ``CodeActOptions(react=True)``."""

FINAL_STEP_REMINDER: Final = 'Do not write code: answer with {"type": "final", "output": "..."}.'
"""Appended to ``AgentOptions.final_answer_prompt`` for the last call after ``max_steps``."""

_CORRECTION = (
    "PROTOCOL_ERROR: your last answer was not a CodeAct JSON object ({reason}). Answer with exactly one "
    'JSON object: {{"type": "code", "language": "python", "code": "..."}} to run code, or '
    '{{"type": "final", "output": "..."}} to give the final answer.'
)

_PY_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


def correction_text(reason: str) -> str:
    """The system message that sends a non-protocol answer back (``CodeActOptions(correct_format=True)``).

    >>> correction_text("the answer holds no JSON object")[:70]
    'PROTOCOL_ERROR: your last answer was not a CodeAct JSON object (the an'
    """
    return _CORRECTION.format(reason=reason)


def unsupported_language_text(language: str) -> str:
    """The ``CODE_ERROR`` message for code in another language.

    >>> unsupported_language_text("javascript")
    'unsupported language "javascript": only Python is supported; answer with "language": "python"'
    """
    name = orjson.dumps(language).decode()
    return f'unsupported language {name}: only Python is supported; answer with "language": "python"'


def not_run_text(why: str) -> str:
    """The ``CODE_ERROR`` message for code the runtime did not run (a limit was reached).

    >>> not_run_text("the run reached its step limit")
    'not run: the run reached its step limit'
    """
    return f"not run: {why}"


# --- the tools, as text ------------------------------------------------------------------------------------


def _literal(value: Any) -> str:
    """A JSON value written as a Python literal (``true`` → ``True``…), for defaults and enums."""
    if value is None or isinstance(value, bool):
        return repr(value)
    return orjson.dumps(value, default=repr).decode()


def _type_text(schema: Any) -> str:
    """A JSON schema as a short, Python-flavoured type: ``str``, ``list of int``, ``"C" or "F"``."""
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " or ".join(_literal(v) for v in schema["enum"]) or "any"
    if "const" in schema:
        return _literal(schema["const"])
    ref = schema.get("$ref")
    if isinstance(ref, str):  # a recursive type, defined in the tool's "where" lines
        return ref.rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " or ".join(dict.fromkeys(_type_text(option) for option in options))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(_type_text({**schema, "type": k}) for k in kind) or "any"
    if kind == "array":
        items = schema.get("items")
        return f"list of {_type_text(items)}" if isinstance(items, Mapping) and items else "list"
    if kind == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        # A nested object is easiest to read as its schema.
        return "dict " + orjson.dumps(schema).decode()
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"dict of {_type_text(schema['additionalProperties'])}"
    return _PY_TYPES.get(kind, "any") if isinstance(kind, str) else "any"


def _call_example(spec: ToolSpec, properties: Mapping[str, Any], required: Sequence[str]) -> str:
    if callable_by_name(spec.name):
        parts = []
        for name, schema in properties.items():
            if name in required:
                parts.append(name)
            elif isinstance(schema, Mapping) and "default" in schema:
                parts.append(f"{name}={_literal(schema['default'])}")
            else:
                parts.append(f"{name}=...")
        return f"{spec.name}({', '.join(parts)})"
    keys = ", ".join(f"{orjson.dumps(name).decode()}: ..." for name in properties)
    return f"call_tool({orjson.dumps(spec.name).decode()}, {{{keys}}})"


def _tool_text(spec: ToolSpec) -> str:
    schema = spec.parameters if isinstance(spec.parameters, Mapping) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = [r for r in schema.get("required") or () if isinstance(r, str)]
    lines = [f"- {_call_example(spec, properties, required)}"]
    if spec.description.strip():
        lines.extend(f"  {line}" for line in spec.description.strip().splitlines())
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        facts = [_type_text(prop), "required" if name in required else "optional"]
        if name not in required and "default" in prop:
            facts[-1] = f"default {_literal(prop['default'])}"
        text = f"  {name}: {', '.join(facts)}"
        description = prop.get("description")
        if isinstance(description, str) and description.strip():
            text += f". {' '.join(description.split())}"
        lines.append(text)
    definitions = schema.get("$defs")
    if isinstance(definitions, Mapping):
        # What the parameters' "$ref"s name (recursive types): without them "Node" would mean nothing.
        for name, definition in definitions.items():
            lines.append(f"  where {name} is {_type_text(definition)}")
    return "\n".join(lines)


def tools_guide(specs: Iterable[ToolSpec], api_text: str, *, react: bool) -> str:
    """The tools as text for the system prompt: a call line, the description and the parameters of each
    tool (read from its JSON schema), then how code reaches tools (``api_text``) and how a step ends.

    Tools whose names are not Python identifiers are shown as ``call_tool("name", {...})`` calls.

    >>> spec = ToolSpec("get_weather", "Current weather.", {"type": "object",
    ...     "properties": {"city": {"type": "string", "description": "A city."}}, "required": ["city"]})
    >>> print(tools_guide([spec], "(api)", react=True).split("\\n\\n")[0])
    Tools you can call from your code:
    - get_weather(city)
      Current weather.
      city: str, required. A city.
    """
    specs = list(specs)
    if specs:
        tools = "Tools you can call from your code:\n" + "\n".join(_tool_text(spec) for spec in specs)
    else:
        tools = "No tools are available: solve the task with Python alone."
    return "\n\n".join((tools, api_text, REACT_ON_NOTE if react else REACT_OFF_NOTE))

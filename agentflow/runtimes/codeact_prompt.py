"""What the CodeAct runtime tells the model: its instructions, the tools as text, and its corrections.

Prompts are data: every model-facing sentence of CodeAct lives here, apart from the loop. The instructions
are agentflow's own, written for Python (not the reference's wording, which mixed in JavaScript habits and
``__codeact_result``). How code reaches tools is described by ``agentflow.sandbox.code_api_text``, next to
the sandbox that implements it; the tools themselves by ``codeact_tools_text``. Pure text functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from ..model.tools import ToolSpec
from ..tools.tool import Tool
from .codeact_tools_text import tools_text, type_text

__all__ = [
    "CODEACT_INSTRUCTIONS",
    "CUT_ANSWER",
    "CUT_CODE",
    "EMPTY_ANSWER",
    "EMPTY_CUT_ANSWER",
    "FINAL_STEP_REMINDER",
    "OUTPUT_ERROR_PREFIX",
    "OUTPUT_MISMATCH",
    "OUTPUT_NOTE",
    "OUTPUT_REJECTED",
    "REACT_OFF_NOTE",
    "REACT_ON_NOTE",
    "correction_text",
    "not_run_text",
    "output_error_text",
    "output_note",
    "skipped_code_text",
    "tools_guide",
    "unsupported_language_text",
]

CODEACT_INSTRUCTIONS: Final = """\
You are a CodeAct agent: you act by writing Python code that runs in a sandbox, and your code calls the tools.
Answer every turn with exactly one JSON object and no other text:
- to run code: {"type": "code", "language": "python", "code": "<Python source>"}
- to give the final answer: {"type": "final", "output": "<the answer for the user>"}
The code is a JSON string: write line breaks as \\n and escape double quotes as \\". Instead of a code \
object you may send the code alone in one ```python fenced block: it runs the same way, and needs no escaping.
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

OUTPUT_NOTE: Final = (
    "Your final answer must be a value of this type:\n{type}\n"
    'Give it as a Python value to `final_answer(value)` in code, or as the JSON value of "output" in '
    '{{"type": "final", "output": ...}}: the value itself, not a string holding it.'
)
"""What the prompt says of an agent's ``output_type`` (``{type}``: as the tools guide writes types)."""

OUTPUT_ERROR_PREFIX: Final = "OUTPUT_ERROR: "
"""Starts the message that sends back a final message (or prose) that is not a valid answer; a code step's
answer goes back in its ``CODE_ERROR`` instead."""

OUTPUT_MISMATCH: Final = (
    "your final answer does not match the required type: {error}. Give a value of this type:\n{type}"
)
"""Why a final answer was sent back: it is not of the output type (``{error}``: what is wrong)."""

OUTPUT_REJECTED: Final = (
    "your final answer was rejected: {error}\nCorrect it and give the final answer again."
)
"""Why a final answer was sent back: an output validator rejected it (``{error}``: its message). The answer
matched the type, so the type is not repeated."""

FINAL_STEP_REMINDER: Final = 'Do not write code: answer with {"type": "final", "output": "..."}.'
"""Appended to ``AgentOptions.final_answer_prompt`` for the last call after ``max_steps``."""

EMPTY_ANSWER: Final = "it was empty"
"""The ``PROTOCOL_ERROR`` reason for an answer with no text (or only a reasoning block, ``answer_body``)."""

EMPTY_CUT_ANSWER: Final = (
    "it was empty: the output-token limit was reached before any answer (keep your reasoning shorter)"
)
"""The ``PROTOCOL_ERROR`` reason for an answer with no text that hit the output-token limit (a reasoning
model that spent its budget thinking)."""

CUT_ANSWER: Final = "it was cut at the output-token limit before its JSON object ended; give a shorter answer"
"""The ``PROTOCOL_ERROR`` reason for a final (or unreadable) object cut at the output-token limit."""

CUT_CODE: Final = (
    "your code was cut at the output-token limit before it ended; write shorter code (compute or load "
    "large data instead of writing it out in the code), or split the work over several steps"
)
"""Why code cut at the output-token limit was not run (its ``CODE_ERROR``)."""

_CORRECTION = (
    "PROTOCOL_ERROR: your last answer was not a CodeAct JSON object ({reason}). Answer with exactly one "
    'JSON object: {{"type": "code", "language": "python", "code": "..."}} to run code (or the code alone '
    'in a ```python block), or {{"type": "final", "output": "..."}} to give the final answer.'
)


def correction_text(reason: str) -> str:
    """The message that sends an answer the runtime cannot use back to the model, saying why.

    >>> correction_text("the answer holds no JSON object")[:70]
    'PROTOCOL_ERROR: your last answer was not a CodeAct JSON object (the an'
    """
    return _CORRECTION.format(reason=reason)


def unsupported_language_text(language: str, *, fenced: bool = False) -> str:
    """The ``CODE_ERROR`` message for code in another language: a code object's, or (``fenced``) the
    Markdown fences of a prose answer whose only code is in that language.

    Such a fence may be code the model meant to run or an example in its answer for the user, so the message
    names both ways on: Python to run, a final object to answer.

    >>> unsupported_language_text("javascript")
    'unsupported language "javascript": only Python is supported; answer with "language": "python"'
    >>> unsupported_language_text("bash", fenced=True)[:89]
    'unsupported language "bash": only Python is supported, so your ```bash block was not run.'
    """
    name = orjson.dumps(language).decode()
    if not fenced:
        return f'unsupported language {name}: only Python is supported; answer with "language": "python"'
    return (
        f"unsupported language {name}: only Python is supported, so your ```{language} block was not run. "
        "To run code, write it in Python (a code object or a ```python block). If the block was part of "
        'your final answer for the user, give that answer as {"type": "final", "output": "..."}.'
    )


def skipped_code_text(languages: Sequence[str]) -> str:
    """The note on a step's outcome when the same answer also held code in other ``languages``, not run.

    >>> skipped_code_text(["bash"])
    'only the Python code of your answer ran; its "bash" code did not: only Python is supported'
    """
    names = " and ".join(orjson.dumps(language).decode() for language in languages)
    return f"only the Python code of your answer ran; its {names} code did not: only Python is supported"


def not_run_text(why: str) -> str:
    """The ``CODE_ERROR`` message for code the runtime did not run (a limit was reached, it was cut…).

    >>> not_run_text("the run reached its step limit")
    'not run: the run reached its step limit'
    """
    return f"not run: {why}"


def output_note(schema: Mapping[str, Any]) -> str:
    """What the prompt says of the final answer's type, ``schema`` written as the tools guide writes types.

    >>> print(output_note({"type": "array", "items": {"type": "integer"}}).splitlines()[1])
    list of int
    """
    return OUTPUT_NOTE.format(type=type_text(schema))


def output_error_text(error: str, schema: Mapping[str, Any] | None) -> str:
    """Why a final answer goes back to the model: not of the type (``schema`` given, shown again) or
    rejected by a validator (``schema`` ``None``: ``error`` is the validator's message).

    >>> output_error_text("give a positive number", None)
    'your final answer was rejected: give a positive number\\nCorrect it and give the final answer again.'
    """
    if schema is None:
        return OUTPUT_REJECTED.replace("{error}", error, 1)
    return OUTPUT_MISMATCH.format(error="{error}", type=type_text(schema)).replace("{error}", error, 1)


def tools_guide(
    tools: Iterable[Tool[..., Any] | ToolSpec], api_text: str, *, react: bool, output: str | None = None
) -> str:
    """The tools as text for the system prompt: a call line, the description, the parameters and what it
    returns of each tool (``codeact_tools_text``), then how code reaches tools (``api_text``), how a step
    ends and, for an agent with an ``output_type``, the type of the final answer (``output``, an
    ``output_note``).

    Tools whose names are not Python identifiers are shown as ``call_tool("name", {...})`` calls.

    >>> spec = ToolSpec("get_weather", "Current weather.", {"type": "object",
    ...     "properties": {"city": {"type": "string", "description": "A city."}}, "required": ["city"]})
    >>> print(tools_guide([spec], "(api)", react=True).split("\\n\\n")[0])
    Tools you can call from your code:
    - get_weather(city)
      Current weather.
      city: str, required. A city.
    """
    parts = [tools_text(tools), api_text, REACT_ON_NOTE if react else REACT_OFF_NOTE]
    if output is not None:
        parts.append(output)
    return "\n\n".join(parts)

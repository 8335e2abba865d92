"""The bundled scripted model: a ``ScriptedServer`` responder that plays a sensible agent conversation.

``respond(body)`` reads a Chat Completions or Responses request (the parsed JSON body) and answers the way a
model would at that point of an agent run, from what the request holds:

- the DeepResearch planner's prompt → a JSON plan (one step per piece of evidence, then a summary step); the
  re-planner's prompt → the same plan with statuses read from the progress it is shown;
- the CodeAct instructions → a ``{"type": "code", …}`` step that calls the tools from Python, and once a
  ``CODE_RESULT`` is present, a ``{"type": "final", …}`` answer;
- otherwise (ReAct and DeepResearch) → tool calls for what the question asks (``calculator`` for each
  arithmetic expression in it, ``utc_now`` when it asks for the time; all at once for ReAct, one plan step at
  a time for DeepResearch), and once every result is in, a final answer built from the results (a structured
  summary for DeepResearch).

It only "understands" arithmetic and the time, which is what the built-in tools (``agentflow.demo.tools``)
do. ``read_request`` and ``respond`` are pure: no I/O, no clock, no randomness, so a run is reproducible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
import orjson

from ..testing import Reply, ScriptedToolCall

__all__ = [
    "CODEACT_MARK",
    "DEEP_RESEARCH_MARK",
    "PLANNER_MARK",
    "REPLANNER_MARK",
    "Exchange",
    "Said",
    "find_expressions",
    "read_request",
    "respond",
]

PLANNER_MARK = "You are the planner of a research agent"
"""Starts the system prompt of ``ModelPlanner`` (first plan and re-plans)."""
REPLANNER_MARK = "Revise the plan"
"""In the re-planner's system prompt only."""
CODEACT_MARK = "You are a CodeAct agent"
"""Starts the CodeAct runtime's instructions."""
DEEP_RESEARCH_MARK = "Provide a structured final summary"
"""Ends the DeepResearch runtime's instructions."""

_NUMBER = r"\d+(?:\.\d+)?"
_EXPRESSION = re.compile(rf"[-(]*\s*{_NUMBER}(?:\s*(?:\*\*|[-+*/%×÷^])\s*[-(]*\s*{_NUMBER}\s*\)*)+")
_TIME_WORDS = re.compile(r"\b(time|date|today|clock|utc)\b", re.I)
_PLAN_LINE = re.compile(r"^\s*(\d+)\.\s+(?P<text>.*?)(?:\s+\((?P<status>done|in progress|skipped)\))?\s*$")


@attrs.frozen
class Said:
    """One message of the conversation, whatever the protocol: role, text, and for tool traffic the tool.

    ``role`` is ``system``, ``user``, ``assistant``, ``tool_call`` (``tool`` and ``arguments`` set) or
    ``tool_result`` (``tool`` set when the call is known, ``text`` the output).
    """

    role: str
    text: str = ""
    tool: str | None = None
    arguments: str | None = None


@attrs.frozen
class Exchange:
    """A request reduced to what the responder needs: the system text, the messages and the tools offered."""

    api: Literal["chat", "responses"]
    system: str
    messages: tuple[Said, ...]
    tools: tuple[str, ...]

    @property
    def question(self) -> str:
        """The last user message."""
        for said in reversed(self.messages):
            if said.role == "user":
                return said.text
        return ""

    @property
    def since_question(self) -> tuple[Said, ...]:
        """The messages after the last user message (this run's work so far)."""
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == "user":
                return self.messages[index + 1 :]
        return self.messages


# --- reading a request -------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return name if isinstance(name, str) else None


def _chat_messages(messages: Sequence[Any]) -> tuple[list[str], list[Said]]:
    system: list[str] = []
    said: list[Said] = []
    names: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        text = _text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
            said.append(Said("system", text))
        elif role == "user":
            said.append(Said("user", text))
        elif role == "assistant":
            if text:
                said.append(Said("assistant", text))
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    name = str(function.get("name", ""))
                    names[str(call.get("id", ""))] = name
                    said.append(Said("tool_call", tool=name, arguments=str(function.get("arguments", ""))))
        elif role == "tool":
            said.append(Said("tool_result", text, tool=names.get(str(message.get("tool_call_id", "")))))
    return system, said


def _responses_input(items: Any) -> tuple[list[str], list[Said]]:
    if isinstance(items, str):
        return [], [Said("user", items)]
    system: list[str] = []
    said: list[Said] = []
    names: dict[str, str] = {}
    for item in items if isinstance(items, Sequence) else ():
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = _text(item.get("content"))
            if role in ("system", "developer"):
                system.append(text)
                said.append(Said("system", text))
            elif role in ("user", "assistant"):
                said.append(Said(str(role), text))
        elif kind == "function_call":
            name = str(item.get("name", ""))
            names[str(item.get("call_id", ""))] = name
            said.append(Said("tool_call", tool=name, arguments=str(item.get("arguments", ""))))
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output)
            said.append(Said("tool_result", text, tool=names.get(str(item.get("call_id", "")))))
    return system, said


def read_request(body: Mapping[str, Any]) -> Exchange:
    """Reduce a Chat Completions or a Responses request body to an ``Exchange``.

    >>> ex = read_request({"messages": [{"role": "system", "content": "Be brief."},
    ...                                 {"role": "user", "content": "What is 2 + 2?"}]})
    >>> ex.api, ex.system, ex.question
    ('chat', 'Be brief.', 'What is 2 + 2?')
    """
    tools = tuple(n for n in map(_tool_name, body.get("tools") or ()) if n)
    if "messages" in body:
        system, said = _chat_messages(body.get("messages") or ())
        return Exchange("chat", "\n\n".join(system), tuple(said), tools)
    system, said = _responses_input(body.get("input") or ())
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        system.insert(0, instructions)
    return Exchange("responses", "\n\n".join(system), tuple(said), tools)


# --- understanding a question ------------------------------------------------------------------------------


def find_expressions(text: str) -> list[str]:
    """The arithmetic expressions in a text, normalised (``^`` → ``**``), in order, without repeats.

    >>> find_expressions("Is 3.14159 * 15 ^ 2 more than 2 * 3.14159 * 10 ** 2? And 17*23?")
    ['3.14159 * 15 ** 2', '2 * 3.14159 * 10 ** 2', '17*23']
    """
    from .tools import CalculatorError, evaluate

    found: list[str] = []
    for match in _EXPRESSION.finditer(text):
        expression = match.group(0).strip().replace("^", "**")
        # Drop unbalanced brackets picked up at the edges ("(17 * 23" from "(17 * 23 + 1" is still fine).
        while expression.count("(") > expression.count(")") and expression.startswith("("):
            expression = expression[1:].strip()
        while expression.count(")") > expression.count("(") and expression.endswith(")"):
            expression = expression[:-1].strip()
        while _wrapped(expression):
            expression = expression[1:-1].strip()
        try:
            evaluate(expression)
        except CalculatorError:
            continue
        if expression not in found:
            found.append(expression)
    return found


def _wrapped(expression: str) -> bool:
    """Whether one pair of brackets encloses the whole expression: ``(1 + 2)``, not ``(1) + (2)``."""
    if not (expression.startswith("(") and expression.endswith(")")):
        return False
    depth = 0
    for index, ch in enumerate(expression):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and index < len(expression) - 1:
            return False
    return depth == 0


def _wants_time(text: str) -> bool:
    return bool(_TIME_WORDS.search(text))


@attrs.frozen
class _Need:
    """One piece of evidence the question calls for: a tool call, and the plan step that gets it."""

    tool: str
    arguments: Mapping[str, Any]
    step: str

    @property
    def arguments_json(self) -> str:
        return orjson.dumps(dict(self.arguments)).decode()


def _needs(question: str, offered: Sequence[str] | None) -> list[_Need]:
    """The tool calls the question calls for (only tools in ``offered``; ``None``: any tool)."""
    needs: list[_Need] = []
    if offered is None or "calculator" in offered:
        for expression in find_expressions(question):
            needs.append(
                _Need("calculator", {"expression": expression}, f"Compute {expression} with the calculator")
            )
    if (offered is None or "utc_now" in offered) and _wants_time(question):
        needs.append(_Need("utc_now", {}, "Look up the current UTC time"))
    return needs


# --- answers -----------------------------------------------------------------------------------------------


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _shown(value: float) -> str:
    # The digits the evidence shows: ``:g`` would write 7006652 as 7.00665e+06, ``repr`` a difference of
    # two decimals with its binary noise (78.53975000000003).
    return str(int(value)) if value.is_integer() else f"{value:.12g}"


def _findings(exchange: Exchange) -> list[tuple[str, Mapping[str, Any], str]]:
    """``(tool, arguments, output)`` of every tool result of this run, in order."""
    calls = [s for s in exchange.since_question if s.role == "tool_call"]
    results = [s for s in exchange.since_question if s.role == "tool_result"]
    found = []
    for call, result in zip(calls, results, strict=False):
        try:
            arguments = orjson.loads(call.arguments or "{}")
        except orjson.JSONDecodeError:
            arguments = {}
        found.append((call.tool or "?", arguments if isinstance(arguments, Mapping) else {}, result.text))
    return found


def _finding_text(tool: str, arguments: Mapping[str, Any], output: str) -> str:
    if output.startswith("TOOL_ERROR"):
        return f"{tool} failed: {output}"
    if tool == "calculator":
        return f"{arguments.get('expression', '?')} = {output}"
    if tool == "utc_now":
        return f"the current UTC time is {output}"
    return f"{tool} returned {output}"


def _react_final(exchange: Exchange) -> str:
    parts = [_finding_text(*found) for found in _findings(exchange)]
    return "Here is what I found: " + "; ".join(parts) + "."


def _research_final(exchange: Exchange) -> str:
    findings = _findings(exchange)
    evidence = [f"{i}. {_finding_text(*f)}" for i, f in enumerate(findings, start=1)]
    numbers = [
        (str(args.get("expression")), value)
        for tool, args, output in findings
        if tool == "calculator" and (value := _number(output)) is not None
    ]
    if len(numbers) >= 2:
        (top, high), (low_expr, low) = max(numbers, key=lambda n: n[1]), min(numbers, key=lambda n: n[1])
        gap = high - low
        share = f" ({gap / low:.1%} more)" if low > 0 else ""
        conclusion = (
            f"{top} gives the largest value, {_shown(high)}: {_shown(gap)} more than {low_expr}{share}."
        )
    elif numbers:
        conclusion = f"The answer is {_shown(numbers[0][1])}."
    else:
        conclusion = "The evidence above answers the question."
    return (
        f"## Question\n{exchange.question.strip()}\n\n## Evidence\n"
        + "\n".join(evidence)
        + f"\n\n## Conclusion\n{conclusion}"
    )


def _no_tools_answer(question: str) -> str:
    return (
        "I am the bundled scripted model (offline): with my tools I can work out arithmetic and tell the "
        f"current UTC time, and I found neither in your question: {question.strip()!r}. "
        "Set OPENAI_API_KEY (or pass --base-url) to ask a real model."
    )


def _react_turn(exchange: Exchange) -> Reply:
    research = DEEP_RESEARCH_MARK in exchange.system
    needs = _needs(exchange.question, exchange.tools)
    made = {(s.tool, s.arguments) for s in exchange.since_question if s.role == "tool_call"}
    missing = [n for n in needs if (n.tool, n.arguments_json) not in made]
    if not missing:
        if not needs:
            return Reply(text=_no_tools_answer(exchange.question))
        return Reply(text=_research_final(exchange) if research else _react_final(exchange))
    if research:
        # DeepResearch: follow the plan, one step's evidence per model turn.
        step = missing[0]
        return Reply(
            text=f"Next step of the plan: {step.step.lower()}.",
            tool_calls=[ScriptedToolCall(step.tool, step.arguments_json)],
        )
    names = " and ".join(dict.fromkeys(n.tool for n in missing))
    if len(missing) > 1:
        reasoning = f"The question needs {names}; the calls are independent, so I make them at once."
    else:
        reasoning = f"The question needs {names}, so I call it."
    return Reply(
        reasoning=reasoning,
        text="Let me look that up.",
        tool_calls=[ScriptedToolCall(n.tool, n.arguments_json) for n in missing],
    )


def _planner_turn(exchange: Exchange) -> Reply:
    request = exchange.question
    goal_match = re.search(r"^Goal:\s*(.*)$", request, re.M)
    goal = goal_match.group(1) if goal_match else request
    needs = _needs(goal, None)
    if REPLANNER_MARK not in exchange.system:
        steps = [n.step for n in needs] or [f"Work out what is being asked: {goal.strip()}"]
        steps.append("Compare the results and write a structured summary")
        return Reply(text=orjson.dumps({"steps": steps}).decode())
    plan_block = request.partition("Current plan:")[2].partition("\n\n")[0]
    progress = request.partition("Progress so far")[2]
    lines = [m for m in map(_PLAN_LINE.match, plan_block.splitlines()) if m]
    texts = [m["text"] for m in lines]
    statuses = []
    for line, text in zip(lines, texts, strict=True):
        evidence = next((n for n in needs if n.step == text), None)
        got = evidence is not None and (
            (evidence.tool == "utc_now" and "utc_now(" in progress)
            or str(evidence.arguments.get("expression", "\0")) in progress
        )
        # The progress shows the calls since the current plan only: what that plan marks done stays done.
        statuses.append("done" if got or line["status"] == "done" else "pending")
    if "pending" in statuses:
        statuses[statuses.index("pending")] = "in_progress"
    steps_json = [{"step": t, "status": s} for t, s in zip(texts, statuses, strict=True)]
    return Reply(text=orjson.dumps({"steps": steps_json}).decode())


def _codeact_turn(exchange: Exchange) -> Reply:
    since = exchange.since_question
    outcome = next(
        (s.text for s in reversed(since) if s.text.startswith(("CODE_RESULT:", "CODE_ERROR:"))), None
    )
    if outcome is not None:
        head, _, payload = outcome.partition(":")
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            data = {}
        result = data.get("result") if isinstance(data, Mapping) else None
        if head == "CODE_ERROR":
            output = f"The code failed: {payload.strip()}"
        else:
            output = str(result) if result is not None else payload.strip()
        return Reply(text=orjson.dumps({"type": "final", "output": output}).decode())
    offered = [name for name in ("calculator", "utc_now") if f"{name}(" in exchange.system]
    needs = _needs(exchange.question, offered)
    if not needs:
        # Nothing to compute: answer at once, as a model would, instead of running empty code.
        final = {"type": "final", "output": _no_tools_answer(exchange.question)}
        return Reply(text=orjson.dumps(final).decode())
    lines = ["# Independent tool calls run concurrently with parallel().", "found = []"]
    if len(needs) > 1:
        calls = ", ".join(repr((n.tool, dict(n.arguments))) for n in needs)
        lines.append(f"values = parallel({calls})")
    else:
        lines.append("values = [" + ", ".join(f"{n.tool}({_kwargs(n.arguments)})" for n in needs) + "]")
    lines.append(f"labels = {[_label(n) for n in needs]!r}")
    lines.append("for label, value in zip(labels, values):")
    lines.append("    found.append(f'{label} {value}')")
    lines.append("'Computed in the sandbox: ' + '; '.join(found)")
    code = "\n".join(lines)
    return Reply(text=orjson.dumps({"type": "code", "language": "python", "code": code}).decode())


def _kwargs(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())


def _label(need: _Need) -> str:
    if need.tool == "calculator":
        return f"{need.arguments['expression']} ="
    return "the UTC time is"


def respond(body: Mapping[str, Any]) -> Reply:
    """The scripted model's answer to one request (see the module docstring).

    >>> body = {"messages": [{"role": "user", "content": "What is 17 * 23?"}],
    ...         "tools": [{"type": "function", "function": {"name": "calculator"}}]}
    >>> respond(body).tool_calls[0].arguments
    '{"expression":"17 * 23"}'
    >>> body["messages"] += [
    ...     {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "calculator", "arguments": '{"expression":"17 * 23"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "391"}]
    >>> respond(body).text
    'Here is what I found: 17 * 23 = 391.'
    """
    exchange = read_request(body)
    if PLANNER_MARK in exchange.system:
        return _planner_turn(exchange)
    if CODEACT_MARK in exchange.system:
        return _codeact_turn(exchange)
    return _react_turn(exchange)

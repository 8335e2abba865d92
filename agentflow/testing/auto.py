"""``AutoModelClient``: a fake ``ModelClient`` that needs no script (pydantic-ai's ``TestModel``).

It reads each prompt and answers as a dutiful model would:

- while the conversation has no tool result since the user's latest message, it calls every tool the
  prompt offers (or those ``call_tools`` names), once each, all in one turn, with arguments made up from
  each tool's JSON schema (``schema_values.schema_value``: the schema the model sees, so they pass the
  tool's own validation);
- then it answers: ``text`` if given, else ``output`` (a structured answer's value) as JSON, else, when the
  prompt asks for JSON matching a schema (an ``output_type``'s ``response_format``, or its schema in the
  system prompt in ``mode="prompted"``), a value made up from that schema, else the tool results as JSON
  (``{"get_price": "9.5"}``), or ``"success (no tool calls)"`` when no tool was called.

::

    model = AutoModelClient()
    result = await Agent(model, tools=[get_price]).run("How much is A-1?")
    assert model.last_tool_calls[0].arguments == '{"sku":"a"}'  # made up from the schema
    assert result.output_text == '{"get_price":"0.0"}'  # what get_price("a") returned

It keeps to what the prompt allows: ``tool_choice="none"`` gets no call, a forced function that call alone
(the others follow once the runtime lifts the choice), ``parallel_tool_calls=False`` one call per turn (the
next turn calls the next tool). A DeepResearch planning prompt (system prompt "You are the planner…") gets a
two-step plan. A CodeAct prompt is refused with a ``TypeError``: CodeAct's model writes code, and the tools
it would call are described to it in prose, which leaves no schema to make arguments from; script those
turns with ``FakeModelClient``.

Nothing here does I/O, and nothing is random: the same prompts and ``seed`` give the same answers (call ids
aside: they are unique in the process, so that memories holding turns of two fakes never mix them up).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Any, Final, Literal

import attrs

from ..agent.items import (
    is_model_output_item,
    is_runtime_note,
    is_tool_output_item,
    is_user_item,
    message_to_item,
    tool_call_ids,
    tool_output_call_id,
)
from ..agent.prompt import AgentModelResult, AgentPrompt
from ..exact_json import dumps
from ..model.events import ModelEvent
from ..model.messages import AiMessage, Message, ToolCall, ToolResultMessage
from ..model.stream import ModelStream
from ..model.tools import ToolChoice, ToolSpec
from ..runtimes.output import OUTPUT_INSTRUCTIONS
from ..tools.defaults import NO_JSON, json_default
from .fake import reply, stream_events
from .schema_values import SchemaValueError, schema_value

__all__ = ["NO_TOOL_CALLS", "AutoModelClient"]

NO_TOOL_CALLS: Final = "success (no tool calls)"
"""The final answer when no tool was called and nothing else was asked for (pydantic-ai's words)."""

PLAN: Final = '{"steps": ["Call the tools", "Answer from their results"]}'
"""The answer to a DeepResearch planning prompt."""

CODEACT_MARK: Final = "You are a CodeAct agent"
"""How a CodeAct prompt's instructions begin (``runtimes.codeact_prompt.CODEACT_INSTRUCTIONS``); written out
here because importing CodeAct would load the sandbox."""

PLANNER_MARK: Final = "You are the planner"
"""How a planning prompt's system prompt begins (``runtimes.planner.PLANNER_PROMPT`` and
``REPLANNER_PROMPT``)."""

_PROMPTED_LEAD: Final = OUTPUT_INSTRUCTIONS.split("{schema}", 1)[0]
_WORD: Final = re.compile(r"\w+")


class _NoOutput:
    def __repr__(self) -> str:
        return "NO_OUTPUT"


_NO_OUTPUT: Final[Any] = _NoOutput()
_ids = itertools.count(1)


@attrs.frozen
class _Turn:
    """What happened since the user's latest message: the tools called, their results, and whether the
    model's latest turn was an answer (no tool calls), as it is when an answer was sent back for a retry."""

    called: frozenset[str]
    results: tuple[tuple[str, str], ...]
    answered: bool


class AutoModelClient:
    """A ``ModelClient`` answering every prompt by itself: tool calls with made-up arguments, then an answer
    (see the module docstring).

    - ``call_tools``: ``"all"`` (default), or the names of the tools to call (``[]``: none); a name the
      prompt does not offer is skipped.
    - ``text``: the final answer's text, instead of the summary of the tool results.
    - ``output``: the final answer's value for a structured ``output_type`` (a dict, a list, an attrs
      class, a dataclass, a pydantic model, an Enum…), sent as JSON; not with ``text``.
    - ``arguments``: arguments of your own per tool (``{"get_price": {"sku": "A-1"}}``), used as they are;
      the tool's other arguments are still made up. For values the schema cannot lead to (a ``pattern``
      too hard to satisfy, an ID that must exist).
    - ``seed``: where the made-up values start (``"a"``, ``0``… for ``seed=0``) and which member of a union
      they take; the same seed always gives the same values.
    - ``fill_optional``: give optional parameters (and optional fields of a structured answer) values too,
      rather than leaving them to their defaults.
    - ``chunk_size``: characters per text delta when streamed (``None``: one delta), as ``FakeModelClient``.

    It records ``prompts`` (every prompt), ``results`` (every answer) and ``tool_calls`` (every call it made);
    ``last_tool_calls`` are those of its latest turn that made some.

    >>> import anyio
    >>> from agentflow.model.tools import ToolSpec
    >>> spec = ToolSpec("get_price", "", {"type": "object", "properties": {"sku": {"type": "string"}},
    ...                                   "required": ["sku"]})
    >>> model = AutoModelClient()
    >>> anyio.run(model.create, AgentPrompt(tools=[spec])).tool_calls[0].arguments
    '{"sku":"a"}'
    >>> anyio.run(model.create, AgentPrompt()).output_text
    'success (no tool calls)'
    """

    def __init__(
        self,
        *,
        call_tools: Literal["all"] | Iterable[str] = "all",
        text: str | None = None,
        output: Any = _NO_OUTPUT,
        arguments: Mapping[str, Mapping[str, Any]] | None = None,
        seed: int = 0,
        fill_optional: bool = False,
        chunk_size: int | None = None,
    ) -> None:
        self.call_tools: tuple[str, ...] | None = _tool_names(call_tools)
        """The tools to call (``None``: every one offered)."""
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if text is not None and output is not _NO_OUTPUT:
            raise TypeError(
                "give AutoModelClient text= (a text answer) or output= (a structured one), not both"
            )
        self.text = text
        self._output_text = None if output is _NO_OUTPUT else _json_text(output, "output")
        self.arguments: dict[str, dict[str, Any]] = _given_arguments(arguments)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.seed = seed
        self.fill_optional = bool(fill_optional)
        self.chunk_size = chunk_size
        self.prompts: list[AgentPrompt] = []
        """Every prompt received, in order."""
        self.results: list[AgentModelResult] = []
        """Every answer given, in order."""
        self.tool_calls: list[ToolCall] = []
        """Every tool call made, in order."""
        self.streams_opened = 0
        """Streaming calls whose stream was entered or iterated."""
        self.streams_closed = 0
        """Streams that were closed (finished, broken out of, or cancelled)."""
        self.closed = False
        """Whether ``aclose()`` was called."""

    def __repr__(self) -> str:
        return f"AutoModelClient({len(self.prompts)} calls, {len(self.tool_calls)} tool calls)"

    @property
    def last_tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the latest answer that made some (``()`` before any)."""
        for result in reversed(self.results):
            if result.tool_calls:
                return result.tool_calls
        return ()

    @property
    def streams_open(self) -> int:
        """Streams started and not yet closed (0 once every stream was closed)."""
        return self.streams_opened - self.streams_closed

    async def create(self, prompt: AgentPrompt) -> AgentModelResult:
        """The answer to ``prompt``."""
        return self._answer(prompt)

    def create_stream(self, prompt: AgentPrompt) -> ModelStream[AgentModelResult]:
        """The answer to ``prompt`` as the events a provider streams, ending with ``ModelCompleted``.

        The answer is made now, so a prompt it cannot answer raises here, before anything is streamed.
        """
        result = self._answer(prompt)
        events = stream_events(
            result,
            text=result.output_text,
            tool_calls=result.tool_calls,
            usage=result.usage,
            chunk_size=self.chunk_size,
        )

        async def stream() -> AsyncGenerator[ModelEvent, None]:
            self.streams_opened += 1
            try:
                for event in events:
                    yield event
            finally:
                self.streams_closed += 1

        return ModelStream(stream)

    async def aclose(self) -> None:
        """Mark the fake closed (it holds no resources)."""
        self.closed = True

    # -- the answer ------------------------------------------------------------------------------------------

    def _answer(self, prompt: AgentPrompt) -> AgentModelResult:
        if not isinstance(prompt, AgentPrompt):
            raise TypeError(f"AutoModelClient answers an AgentPrompt, got {type(prompt).__name__}")
        self.prompts.append(prompt)
        system = prompt.system_prompt or ""
        if CODEACT_MARK in system:
            raise TypeError(
                "AutoModelClient makes native tool calls, and a CodeAct agent's model answers with code that "
                "calls the tools (described to it in prose, with no schema to make arguments from): script "
                "its turns with FakeModelClient, a reply() holding "
                '{"type": "code", "language": "python", "code": "..."} then one holding '
                '{"type": "final", "output": "..."}'
            )
        if system.lstrip().startswith(PLANNER_MARK):
            result = self._reply(prompt, PLAN, ())
        else:
            turn = _turn(prompt.items)
            pending = () if turn.answered else self._pending(prompt, turn)
            if pending:
                calls = tuple(
                    ToolCall(f"auto_call_{next(_ids)}", s.name, self._arguments(s)) for s in pending
                )
                result = self._reply(prompt, "", calls)
                self.tool_calls.extend(calls)
            else:
                result = self._reply(prompt, self._final_text(prompt, turn), ())
        self.results.append(result)
        return result

    def _pending(self, prompt: AgentPrompt, turn: _Turn) -> tuple[ToolSpec, ...]:
        """The tools to call now: those selected and offered, not called yet since the user's message."""
        offered = {spec.name: spec for spec in prompt.tools}
        if not offered:
            return ()
        choice = _choice(prompt.tool_choice)
        if choice is not None and choice.mode == "none":
            return ()
        if choice is not None and choice.name is not None:
            names: Iterable[str] = (choice.name,)  # a forced function, whatever call_tools says
        else:
            names = offered if self.call_tools is None else self.call_tools
        pending = tuple(offered[n] for n in dict.fromkeys(names) if n in offered and n not in turn.called)
        return pending[:1] if prompt.parallel_tool_calls is False else pending

    def _arguments(self, spec: ToolSpec) -> str:
        given = self.arguments.get(spec.name, {})
        schema = _without(spec.parameters, given) if given else spec.parameters
        try:
            value = schema_value(schema, seed=self.seed, fill_optional=self.fill_optional)
        except SchemaValueError as exc:
            error = SchemaValueError(
                f"AutoModelClient cannot make arguments for tool {spec.name!r} ({exc}); give them yourself: "
                f"AutoModelClient(arguments={{{spec.name!r}: {{...}}}})"
            )
            error.path = exc.path
            raise error from None
        if given and isinstance(value, dict):
            value.update(given)
        return dumps(value).decode()

    def _final_text(self, prompt: AgentPrompt, turn: _Turn) -> str:
        if self.text is not None:
            return self.text
        if self._output_text is not None:
            return self._output_text
        schema = _output_schema(prompt)
        if schema is not None:
            try:
                value = schema_value(schema, seed=self.seed, fill_optional=self.fill_optional)
            except SchemaValueError as exc:
                error = SchemaValueError(
                    f"AutoModelClient cannot make a structured answer ({exc}); give it yourself: "
                    "AutoModelClient(output=...)"
                )
                error.path = exc.path
                raise error from None
            return dumps(value).decode()
        summary = dict(turn.results)
        json_mode = isinstance(prompt.response_format, Mapping) and (
            prompt.response_format.get("type") == "json_object"
        )
        if summary or json_mode:
            return dumps(summary).decode()
        return NO_TOOL_CALLS

    def _reply(self, prompt: AgentPrompt, text: str, calls: tuple[ToolCall, ...]) -> AgentModelResult:
        said = text + "".join(f" {call.name} {call.arguments}" for call in calls)
        return reply(text, tool_calls=calls, usage=(_prompt_tokens(prompt), _tokens(said)))


# -- reading the prompt ----------------------------------------------------------------------------------


def _turn(items: tuple[Any, ...]) -> _Turn:
    start = 0
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if is_user_item(item) and not is_runtime_note(item):
            start = index + 1
            break
    names: dict[str, str] = {}
    called: set[str] = set()
    results: list[tuple[str, str]] = []
    in_turn = turn_calls = turn_message = False
    for item in items[start:]:
        if is_model_output_item(item):
            if not in_turn:
                in_turn, turn_calls, turn_message = True, False, False
            for call_id, name in _calls_of(item):
                names[call_id] = name
                called.add(name)
                turn_calls = True
            turn_message = turn_message or (_is_message(item) and not tool_call_ids(item))
            continue
        in_turn = False
        if is_tool_output_item(item):
            call_id = tool_output_call_id(item) or ""
            results.append((names.get(call_id, call_id), _output_of(item)))
    return _Turn(frozenset(called), tuple(results), answered=turn_message and not turn_calls)


def _calls_of(item: Any) -> list[tuple[str, str]]:
    """``(call id, tool name)`` of each call an assistant turn or ``*_call`` item makes."""
    if isinstance(item, AiMessage):
        return [(call.id, call.name) for call in item.tool_calls]
    if not isinstance(item, Mapping):
        return []
    if item.get("role") == "assistant":
        out = []
        for entry in item.get("tool_calls") or ():
            if isinstance(entry, Mapping):
                body = entry.get("function") or entry.get("custom") or {}
                out.append((str(entry.get("id") or ""), str(body.get("name") or "")))
        return out
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith("_call") and isinstance(item.get("name"), str):
        return [(str(item.get("call_id") or ""), item["name"])]
    return []


def _is_message(item: Any) -> bool:
    if isinstance(item, AiMessage):
        return True
    return isinstance(item, Mapping) and item.get("role") == "assistant"


def _output_of(item: Any) -> str:
    if isinstance(item, ToolResultMessage):
        return item.text
    value = item.get("output", item.get("content")) if isinstance(item, Mapping) else None
    return value if isinstance(value, str) else dumps(value).decode()


def _choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    try:
        return ToolChoice.coerce(value)
    except (TypeError, ValueError):
        return None  # a form with no ToolChoice (allowed_tools): treated as "auto"


def _output_schema(prompt: AgentPrompt) -> Mapping[str, Any] | None:
    """The JSON schema the final answer must match: the ``response_format``'s, or the one a prompted
    ``OutputType`` wrote into the system prompt; ``None`` for a text answer."""
    shape = prompt.response_format
    if isinstance(shape, Mapping) and shape.get("type") == "json_schema":
        spec = shape.get("json_schema", shape)  # Chat nests it; Responses' text.format is flat
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if isinstance(schema, Mapping):
            return schema
    for text in (prompt.system_prompt, prompt.instructions):
        at = text.find(_PROMPTED_LEAD) if text else -1
        if text and at >= 0:
            try:
                found, _end = json.JSONDecoder().raw_decode(text, at + len(_PROMPTED_LEAD))
            except ValueError:
                continue
            if isinstance(found, Mapping):
                return found
    return None


def _without(schema: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without the properties whose arguments were given."""
    out = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {k: v for k, v in properties.items() if k not in given}
    required = schema.get("required")
    if isinstance(required, list):
        out["required"] = [name for name in required if name not in given]
    return out


# -- checking the options --------------------------------------------------------------------------------


def _tool_names(value: Any) -> tuple[str, ...] | None:
    if value == "all":
        return None
    if isinstance(value, str):
        raise TypeError(f"call_tools takes 'all' or a list of tool names, got {value!r}; write [{value!r}]")
    try:
        names = tuple(value)
    except TypeError:
        raise TypeError(f"call_tools takes 'all' or a list of tool names, got {value!r}") from None
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"call_tools takes tool names (str), got {name!r}")
    return names


def _given_arguments(value: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"arguments takes {{tool name: {{argument: value}}}}, got {value!r}")
    out: dict[str, dict[str, Any]] = {}
    for name, given in value.items():
        if not isinstance(name, str) or not isinstance(given, Mapping):
            raise TypeError(f"arguments takes {{tool name: {{argument: value}}}}, got {name!r}: {given!r}")
        converted = json_default(dict(given))
        if converted is NO_JSON:
            raise TypeError(f"arguments for {name!r} must be JSON values (or attrs/dataclass/pydantic ones)")
        out[name] = converted
    return out


def _json_text(value: Any, option: str) -> str:
    converted = json_default(value)
    if converted is NO_JSON:
        raise TypeError(
            f"{option}= must be a JSON value, or an attrs class, dataclass, pydantic model, Enum, date… "
            f"holding them; got {value!r:.80}"
        )
    return dumps(converted).decode()


# -- usage -----------------------------------------------------------------------------------------------


def _tokens(text: str) -> int:
    return len(_WORD.findall(text))


def _prompt_tokens(prompt: AgentPrompt) -> int:
    """A rough count, as pydantic-ai's ``TestModel`` makes one: 50 plus the words of the prompt."""
    total = 50 + _tokens(prompt.system_prompt or "") + _tokens(prompt.instructions or "")
    for item in prompt.items:
        total += sum(_tokens(text) for text in _strings(item))
    return total


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _strings(inner)
    elif isinstance(value, Message):
        yield from _strings(message_to_item(value))

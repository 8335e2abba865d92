"""What a model call was sent, for its ``chat`` span: the ``AgentPrompt`` its ``ModelRequest`` carries, as the
GenAI conventions' attributes.

- ``request_attributes``: the request's parameters (temperature, top_p, maximum tokens, streaming, seed,
  stop sequences…): not content, recorded always;
- ``prompt_messages``: the items, each in whichever shape memory holds it (Chat- or Responses-shaped dicts,
  ``Message`` values), as messages of ``role`` and ``parts``, the newest first within a size;
- ``system_instructions``: the system prompt and the instructions, a text part each;
- ``tool_definitions``: the function tools with their descriptions and schemas, hosted tools by type;
- ``PromptContent``: those three together, for a recorder that captures content (it keeps the definitions
  of the tools it last saw, and a run's converted items are reused by its later calls: ``ItemCache``).

The last four are content: the recorder calls them only when content is captured. No I/O.
They never raise on an item of an unexpected shape (the run may send what the server alone judges): what
has no form of its own is a part of its ``type`` only. Each text is cut at ``limit``; images and files go in
as the conventions' ``blob`` (a ``data:`` URL's payload, cut as a text is), ``uri`` or ``file`` parts.
Reasoning is shown where the item holds readable text (a Responses ``reasoning`` item's summary, a Chat
assistant item's ``reasoning_content``); encrypted reasoning never is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..agent.prompt import AgentPrompt
from ..model.events import to_jsonable
from ..model.messages import (
    AiMessage,
    DeveloperMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..model.tools import ToolSpec
from . import _names as attr
from ._content import arguments_value, capped, json_text
from ._otel import AttributeValue

__all__ = [
    "ItemCache",
    "PromptContent",
    "prompt_messages",
    "request_attributes",
    "system_instructions",
    "tool_definitions",
]

Part = dict[str, Any]
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_IMAGE_PARTS = frozenset({"input_image", "image_url"})
_JSON_FORMATS = frozenset({"json_schema", "json_object"})
_CALL_ARGUMENTS = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "computer_call": "action",
    "local_shell_call": "action",
    "shell_call": "action",
    "apply_patch_call": "operation",
}
"""The calls a model asks the client to run (Responses items), each with the field holding its arguments."""
_ANSWER_PARTS = frozenset({"text", "refusal", "tool_call"})
"""What makes an assistant message an answer: a whole message after one of these starts a turn of its own."""
_SERVER_ITEMS = frozenset({"mcp_list_tools", "mcp_approval_request", "compaction"})
"""Other items a server answers with: part of the model's turn."""

# Request parameters a prompt carries in ``extra_body`` (no field of its own), and their attributes.
_EXTRA_NUMBERS = (
    ("top_k", attr.REQUEST_TOP_K),
    ("frequency_penalty", attr.REQUEST_FREQUENCY_PENALTY),
    ("presence_penalty", attr.REQUEST_PRESENCE_PENALTY),
)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def request_attributes(prompt: AgentPrompt) -> dict[str, AttributeValue]:
    """The request parameters ``prompt`` sets, as the conventions name them (``gen_ai.request.*``, and
    ``gen_ai.output.type`` for a structured output); those it leaves to the model's defaults are left out.

    >>> prompt = AgentPrompt(temperature=0, max_output_tokens=200, stream=True, extra_body={"seed": 7})
    >>> request_attributes(prompt)  # doctest: +NORMALIZE_WHITESPACE
    {'gen_ai.request.temperature': 0.0, 'gen_ai.request.max_tokens': 200, 'gen_ai.request.stream': True,
     'gen_ai.request.seed': 7}
    """
    out: dict[str, AttributeValue] = {}
    if (temperature := _number(prompt.temperature)) is not None:
        out[attr.REQUEST_TEMPERATURE] = temperature
    if (top_p := _number(prompt.top_p)) is not None:
        out[attr.REQUEST_TOP_P] = top_p
    if (max_tokens := _count(prompt.max_output_tokens)) is not None:
        out[attr.REQUEST_MAX_TOKENS] = max_tokens
    if prompt.stream:
        out[attr.REQUEST_STREAM] = True
    response_format = prompt.response_format
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
        if kind in _JSON_FORMATS or kind == "text":
            out[attr.OUTPUT_TYPE] = "json" if kind in _JSON_FORMATS else "text"
    extra = prompt.extra_body
    if extra:  # nearly always empty
        if (seed := _count(extra.get("seed"))) is not None:
            out[attr.REQUEST_SEED] = seed
        for key, name in _EXTRA_NUMBERS:
            if (number := _number(extra.get(key))) is not None:
                out[name] = number
        stop = extra.get("stop")
        if isinstance(stop, str):
            stop = (stop,)
        if isinstance(stop, list | tuple) and stop and all(isinstance(s, str) for s in stop):
            out[attr.REQUEST_STOP_SEQUENCES] = tuple(stop)
        choices = _count(extra.get("n"))
        if choices is not None and choices != 1:  # the conventions' condition: set, and not 1
            out[attr.REQUEST_CHOICE_COUNT] = choices
    return out


def system_instructions(prompt: AgentPrompt, limit: int) -> str | None:
    """``gen_ai.system_instructions``: the system prompt and the instructions, a text part each, as JSON text;
    ``None`` when there is neither.

    >>> system_instructions(AgentPrompt(system_prompt="Be brief.", instructions="It is noon."), 100)
    '[{"type":"text","content":"Be brief."},{"type":"text","content":"It is noon."}]'
    """
    parts = [_text(text, limit) for text in (prompt.system_prompt, prompt.instructions) if text]
    return orjson.dumps(parts).decode() if parts else None


def tool_definitions(
    tools: Iterable[ToolSpec], hosted: Iterable[Mapping[str, Any]], limit: int
) -> str | None:
    """``gen_ai.tool.definitions``: each function tool's type, name, description and parameters (its JSON
    schema as a value, or as text cut at ``limit`` when longer), then each hosted tool by its type alone (its
    configuration may hold credentials: an MCP server's headers); ``None`` when there is none.

    >>> tool_definitions([ToolSpec("add", "Add.", {"type": "object"})], [{"type": "web_search"}], 100)
    ... # doctest: +NORMALIZE_WHITESPACE
    '[{"type":"function","name":"add","description":"Add.","parameters":{"type":"object"}},\
{"type":"web_search","name":"web_search"}]'
    """
    out: list[dict[str, Any]] = []
    for spec in tools:
        definition: dict[str, Any] = {"type": "function", "name": spec.name}
        if spec.description:
            definition["description"] = capped(spec.description, limit)
        schema = to_jsonable(spec.parameters)
        text = orjson.dumps(schema).decode()
        definition["parameters"] = schema if len(text) <= limit else capped(text, limit)
        out.append(definition)
    for tool in hosted:
        kind = str(tool.get("type"))
        label = tool.get("server_label") or tool.get("name")  # an MCP server's label
        out.append({"type": kind, "name": label if isinstance(label, str) else kind})
    return orjson.dumps(out).decode() if out else None


class PromptContent:
    """A prompt's content attributes, for one recorder that captures content: ``gen_ai.input.messages`` (and
    ``agentflow.input.dropped_messages``), ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``.

    The tool definitions of the last tools seen are kept: every call of an agent's runs offers the same
    tuple of tools, so their JSON is made once.
    """

    __slots__ = ("_limit", "_messages_limit", "_tools")

    def __init__(self, limit: int, messages_limit: int) -> None:
        self._limit = limit
        self._messages_limit = messages_limit
        self._tools: tuple[object, object, str | None] | None = None  # tools, hosted tools, their JSON

    def attributes(self, prompt: AgentPrompt, items: ItemCache) -> dict[str, AttributeValue]:
        """What ``prompt`` sends, as content (``items``: the run's converted items, reused and added to)."""
        out: dict[str, AttributeValue] = {}
        text, dropped = prompt_messages(prompt.items, self._limit, self._messages_limit, items)
        if text != "[]":
            out[attr.INPUT_MESSAGES] = text
        if dropped:
            out[attr.INPUT_DROPPED_MESSAGES] = dropped
        system = system_instructions(prompt, self._limit)
        if system is not None:
            out[attr.SYSTEM_INSTRUCTIONS] = system
        tools, hosted = prompt.tools, prompt.hosted_tools
        if tools or hosted:
            known = self._tools
            if known is None or known[0] is not tools or known[1] is not hosted:
                known = self._tools = (tools, hosted, tool_definitions(tools, hosted, self._limit))
            if known[2] is not None:
                out[attr.TOOL_DEFINITIONS] = known[2]
        return out


# How a converted item goes into the messages: a message of its own, or into the model's turn, as a whole
# assistant message (a Chat turn, a Responses ``message``) or as one item of it (reasoning, a call…).
_OWN, _WHOLE, _TURN = 0, 1, 2
_Converted = tuple[int, dict[str, Any]]  # (how it goes in, its message: never mutated once made)

ItemCache = dict[int, tuple[Any, _Converted]]
"""Items converted already, by ``id(item)`` (with the item: an id is unique only while its object lives), for
one run: its later calls convert only their new items. Items are never mutated once in memory."""


def prompt_messages(
    items: Iterable[Any], limit: int, max_chars: int, cache: ItemCache | None = None
) -> tuple[str, int]:
    """``gen_ai.input.messages`` for a call sent ``items``: the messages as JSON text, the newest that fit in
    ``max_chars`` characters (the newest always), and how many older ones were left out.

    >>> from agentflow.agent.items import function_call_output_item, user_item
    >>> from agentflow.model.messages import AiMessage, ToolCall
    >>> text, dropped = prompt_messages(
    ...     [user_item("Add 1 and 2."), AiMessage(tool_calls=[ToolCall("c1", "add", '{"a":1,"b":2}')]),
    ...      function_call_output_item("c1", "3")], 100, 10_000)
    >>> [m["role"] for m in orjson.loads(text)], dropped
    (['user', 'assistant', 'tool'], 0)
    """
    messages = _messages(items, limit, {} if cache is None else cache)
    chosen: list[bytes] = []
    size = 2  # the brackets
    for message in reversed(messages):
        fragment = orjson.dumps(message)
        grown = size + len(fragment) + (1 if chosen else 0)
        if chosen and grown > max_chars:
            break
        chosen.append(fragment)
        size = grown
    chosen.reverse()
    return (b"[" + b",".join(chosen) + b"]").decode(), len(messages) - len(chosen)


# -- items to messages ---------------------------------------------------------------------------------------


def _messages(items: Iterable[Any], limit: int, cache: ItemCache) -> list[dict[str, Any]]:
    """The messages ``items`` are: one per item, except that a model turn's items (Responses: reasoning, the
    server's tool calls, the message, the calls, each an item) make one assistant message, as a Chat
    assistant message is one. A whole assistant message joins the turn only while the turn holds no answer
    (text, refusal, call) yet: reasoning and the server's tool calls come before the message."""
    out: list[dict[str, Any]] = []
    turn: list[Part] | None = None  # the parts of the model's turn being gathered (a new list of its own)
    for item in items:
        key = id(item)
        known = cache.get(key)
        if known is not None and known[0] is item:
            how, message = known[1]
        else:
            how, message = converted = _convert(item, limit)
            cache[key] = (item, converted)
        if how == _OWN:
            out.append(message)
            turn = None
        elif not message["parts"]:  # reasoning that is encrypted only
            continue
        elif turn is not None and (how == _TURN or not any(p["type"] in _ANSWER_PARTS for p in turn)):
            turn.extend(message["parts"])
        else:
            turn = list(message["parts"])
            out.append({"role": "assistant", "parts": turn})
    return out


def _message(role: str, parts: list[Part], name: object = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(name, str):
        message["name"] = name
    return message


def _convert(item: object, limit: int) -> _Converted:
    if type(item) is dict or isinstance(item, Mapping):
        return _convert_map(item, limit)
    if isinstance(item, UserMessage):
        return _OWN, _message("user", _parts(item.content, limit), item.name)
    if isinstance(item, SystemMessage | DeveloperMessage):
        return _OWN, _message(item.role, [_text(item.text, limit)])
    if isinstance(item, AiMessage):
        parts: list[Part] = []
        if item.reasoning:
            parts.append({"type": "reasoning", "content": capped(item.reasoning, limit)})
        if item.text:
            parts.append(_text(item.text, limit))
        if item.refusal:
            parts.append({"type": "refusal", "content": capped(item.refusal, limit)})
        parts.extend(_call(call.id, call.name, call.arguments, limit) for call in item.tool_calls)
        return _WHOLE, _message("assistant", parts)
    if isinstance(item, ToolResultMessage):
        return _OWN, _tool(item.call_id, item.text, limit)
    return _OWN, _message("user", [{"type": type(item).__name__}])


def _convert_map(item: Mapping[str, Any], limit: int) -> _Converted:
    kind = item.get("type")
    if type(kind) is not str:
        kind = "message" if "role" in item else "unknown"
    if kind == "message":
        role = item.get("role")
        if role == "assistant":
            return _WHOLE, _message("assistant", _assistant_parts(item, limit))
        if role == "tool":  # Chat's shape of a tool result
            return _OWN, _tool(item.get("tool_call_id"), item.get("content"), limit)
        role = role if isinstance(role, str) else "user"
        return _OWN, _message(role, _parts(item.get("content"), limit), item.get("name"))
    if kind.endswith("_call_output"):  # a function's, a custom tool's; a shell's, a computer's… too
        return _OWN, _tool(item.get("call_id"), item.get("output"), limit)
    if kind == "reasoning":
        text = _reasoning_text(item)  # encrypted only: nothing to show
        return _TURN, _message(
            "assistant", [{"type": "reasoning", "content": capped(text, limit)}] if text else []
        )
    if kind in _CALL_ARGUMENTS:  # a call the client runs: a function, a custom tool, a shell, a computer…
        name = item.get("name") or kind[: -len("_call")]
        arguments = item.get(_CALL_ARGUMENTS[kind])
        return _TURN, _message("assistant", [_call(item.get("call_id"), name, arguments, limit)])
    if kind.endswith("_call"):  # a hosted tool's call (web search, code interpreter…): the server runs it
        call: Part = {
            "type": "server_tool_call",
            "name": kind[: -len("_call")],
            "server_tool_call": {"type": kind},
        }
        if isinstance(ident := item.get("id"), str):
            call["id"] = ident
        return _TURN, _message("assistant", [call])
    # MCP items, an item reference, compaction, a type added later: shown by their type.
    part: Part = {"type": kind}
    if isinstance(ident := item.get("id"), str):
        part["id"] = ident
    if kind in _SERVER_ITEMS:
        return _TURN, _message("assistant", [part])
    role = item.get("role")
    return _OWN, _message(role if isinstance(role, str) else "user", [part])


def _assistant_parts(item: Mapping[str, Any], limit: int) -> list[Part]:
    """An assistant message item's parts: its Chat reasoning (``reasoning_content`` / ``reasoning``), its
    content, its Chat-style ``tool_calls``."""
    parts: list[Part] = []
    for key in ("reasoning_content", "reasoning"):
        reasoning = item.get(key)
        if isinstance(reasoning, str) and reasoning:
            parts.append({"type": "reasoning", "content": capped(reasoning, limit)})
            break
    parts.extend(_parts(item.get("content"), limit))
    calls = item.get("tool_calls")
    if isinstance(calls, list | tuple):
        for entry in calls:
            if not isinstance(entry, Mapping):
                continue
            if entry.get("type") == "custom" and isinstance(custom := entry.get("custom"), Mapping):
                parts.append(_call(entry.get("id"), custom.get("name"), custom.get("input"), limit))
            elif isinstance(function := entry.get("function"), Mapping):
                parts.append(_call(entry.get("id"), function.get("name"), function.get("arguments"), limit))
    return parts


def _reasoning_text(item: Mapping[str, Any]) -> str:
    """A Responses reasoning item's readable text: its summary, else its reasoning text."""
    for key in ("summary", "content"):
        entries = item.get(key)
        if isinstance(entries, list | tuple):
            texts = [e["text"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("text"), str)]
            if texts:
                return "\n\n".join(texts)
    return ""


def _text(text: str, limit: int) -> Part:
    return {"type": "text", "content": capped(text, limit)}


def _call(call_id: object, name: object, arguments: object, limit: int) -> Part:
    part: Part = {"type": "tool_call", "id": call_id if isinstance(call_id, str) else None, "name": str(name)}
    if arguments is not None:
        # JSON text as the model wrote it; an object (a compatible server's arguments, a shell's action) too.
        text = arguments if isinstance(arguments, str) else json_text(arguments, limit + 1)
        part["arguments"] = arguments_value(text, limit)
    return part


def _tool(call_id: object, output: object, limit: int) -> dict[str, Any]:
    """A tool result: a ``tool`` message with one ``tool_call_response`` part (its text, or its parts)."""
    if isinstance(output, str):
        response: Any = capped(output, limit)
    elif isinstance(output, list | tuple):
        response = _parts(output, limit)
    else:
        response = json_text(output, limit)
    ident = call_id if isinstance(call_id, str) else None
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": ident, "response": response}]}


def _parts(content: object, limit: int) -> list[Part]:
    """A message's content as parts: a text, or each part of a list in its kind (``ToolCall`` values aside,
    what an item may hold: Chat and Responses part shapes, ``TextPart`` / ``ImagePart``)."""
    if isinstance(content, str):
        return [_text(content, limit)] if content else []
    if not isinstance(content, list | tuple):
        return [] if content is None else [_text(json_text(content, limit), limit)]
    parts: list[Part] = []
    for part in content:
        if type(part) is dict or isinstance(part, Mapping):
            parts.append(_map_part(part, limit))
        elif isinstance(part, TextPart):
            parts.append(_text(part.text, limit))
        elif isinstance(part, ImagePart):
            parts.append(_media(part.url, "image", limit))
        elif isinstance(part, ToolCall):  # never in content; kept readable rather than dropped
            parts.append(_call(part.id, part.name, part.arguments, limit))
        else:
            parts.append({"type": type(part).__name__})
    return parts


def _map_part(part: Mapping[str, Any], limit: int) -> Part:
    kind = part.get("type")
    if kind in _TEXT_PARTS and isinstance(text := part.get("text"), str):
        return _text(text, limit)
    if kind in _IMAGE_PARTS:
        image = part.get("image_url")
        if isinstance(image, Mapping):  # Chat's ``{"url", "detail"}``
            image = image.get("url")
        if isinstance(image, str):
            return _media(image, "image", limit)
        return _file(part.get("file_id"), "image")
    if kind == "refusal":
        return {"type": "refusal", "content": capped(str(part.get("refusal") or ""), limit)}
    if kind == "input_file":
        data, url = part.get("file_data"), part.get("file_url")
        if isinstance(data, str):
            return _media(data if data.startswith("data:") else "data:," + data, "document", limit)
        if isinstance(url, str):
            return _media(url, "document", limit)
        return _file(part.get("file_id"), "document")
    if kind == "input_audio" and isinstance(audio := part.get("input_audio"), Mapping):
        blob: Part = {"type": "blob", "modality": "audio", "content": capped(str(audio.get("data")), limit)}
        if isinstance(audio_format := audio.get("format"), str):
            blob["mime_type"] = f"audio/{audio_format}"
        return blob
    return {"type": str(kind)}


def _media(url: str, modality: str, limit: int) -> Part:
    """A ``blob`` part for a ``data:`` URL (its payload cut at ``limit``), else a ``uri`` part."""
    if not url.startswith("data:"):
        return {"type": "uri", "modality": modality, "uri": capped(url, limit)}
    head, _, data = url.partition(",")
    blob: Part = {"type": "blob", "modality": modality}
    mime = head[len("data:") :].split(";", 1)[0]
    if mime:
        blob["mime_type"] = mime
    blob["content"] = capped(data, limit)
    return blob


def _file(file_id: object, modality: str) -> Part:
    return {"type": "file", "modality": modality, "file_id": str(file_id)}

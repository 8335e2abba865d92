"""Conversation items to Responses ``input`` items: ``to_responses_input``, with the checks and fixes of
content parts, ``function_call``, ``custom_tool_call`` and ``function_call_output`` items, and the
conversion of ``Message`` values and Chat-shaped items (Chat-style ``tool_calls``, custom calls among them,
``{"role": "tool"}``, Chat content parts) to Responses items.

Pure functions only: no I/O, no awaits. Nothing is silently dropped: an item the API would certainly refuse
raises ``TypeError`` / ``ValueError`` naming its position; a Chat assistant item's reasoning, its provider
fields (OpenRouter's ``reasoning_details``, Gemini's per-call ``extra_content``) and a Chat message's ``name``
are the documented omissions. Runs over the whole memory on every Responses request:
keep it lean. Import it from ``agentflow.agent.items``, which re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model.messages import (
    MESSAGE_PROVIDER_FIELDS,
    REASONING_FIELDS,
    ContentPart,
    DeveloperMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .chat_items import _chat_tool_calls, _image_part, _output_text
from .item_shapes import (
    _SEQUENCES,
    MAPPINGS,
    _arguments_text,
    _call_id,
    _is_message_value,
    _kind,
    _where,
    assistant_item,
    developer_item,
    function_call_item,
    function_call_output_item,
    message_item,
    system_item,
)

__all__ = ["to_responses_input"]


def _parts_to_responses(content: Sequence[ContentPart]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "input_text", "text": part.text})
        else:
            # As ``OpenAIResponsesModel`` sends an ``ImagePart``: some servers (vLLM) require a detail level.
            parts.append({"type": "input_image", "image_url": part.url, "detail": part.detail or "auto"})
    return parts


def _calls_to_responses(calls: Iterable[ToolCall], custom: set[str]) -> list[dict[str, Any]]:
    """One Responses item per call: a ``function_call``, or for a custom call (``ToolCall.kind``) a
    ``custom_tool_call`` with its ``input``, whose id joins ``custom`` (its output goes back in its shape).
    Provider fields (Gemini's ``extra_content``) have no Responses form and are left out."""
    out: list[dict[str, Any]] = []
    for call in calls:
        if call.kind == "custom":
            custom.add(call.id)
            out.append(
                {"type": "custom_tool_call", "call_id": call.id, "name": call.name, "input": call.arguments}
            )
        else:
            out.append(function_call_item(call.id, call.name, call.arguments))
    return out


def _answering(item: Mapping[str, Any], custom: set[str]) -> Mapping[str, Any]:
    """A ``function_call_output`` as sent: a ``custom_tool_call_output`` (a copy) when it answers a custom
    call of ``custom``. The runtime writes every result as a ``function_call_output``; Responses wants a
    custom call's in its own shape."""
    if custom and item.get("call_id") in custom:
        return {**item, "type": "custom_tool_call_output"}
    return item


def _message_to_responses(message: Message, custom: set[str]) -> list[dict[str, Any]]:
    if isinstance(message, SystemMessage):
        return [system_item(message.text)]
    if isinstance(message, DeveloperMessage):
        return [developer_item(message.text)]
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return [message_item("user", message.content)]
        return [{"type": "message", "role": "user", "content": _parts_to_responses(message.content)}]
    if isinstance(message, ToolResultMessage):
        output = function_call_output_item(message.call_id, message.text)
        return [output if message.call_id not in custom else {**output, "type": "custom_tool_call_output"}]
    # AiMessage: the text (if any) as an assistant message, then one call item per call.
    # Reasoning text cannot be sent back on Responses without its encrypted item, so it is not sent, nor are
    # provider fields (Chat-only wire fields).
    out: list[dict[str, Any]] = []
    if message.text or message.refusal:
        head = assistant_item(message.text, refusal=message.refusal)
        out.append(head)
    out.extend(_calls_to_responses(message.tool_calls, custom))
    return out


def _assistant_map_to_responses(item: Mapping[str, Any], index: int, custom: set[str]) -> list[Any]:
    """An assistant message dict in the Chat memory shape, made valid Responses input.

    Its Chat reasoning (``reasoning_content`` / ``reasoning``) and provider fields (OpenRouter's
    ``reasoning_details``; Gemini's ``extra_content`` on its calls) are left out: Responses takes reasoning
    back only as its own ``reasoning`` items, and rejects unknown fields. Its calls become ``function_call``
    items, custom ones ``custom_tool_call`` items (``_calls_to_responses``).
    """
    content = item.get("content")
    fixed_content: Any = content
    if (
        isinstance(content, Sequence)
        and not isinstance(content, str)
        and any(isinstance(p, Mapping) and p.get("type") == "input_text" for p in content)
    ):
        fixed_content = [
            {**part, "type": "output_text"}
            if isinstance(part, Mapping) and part.get("type") == "input_text"
            else part
            for part in content
        ]
    if fixed_content is content and _CHAT_ONLY_KEYS.isdisjoint(item):
        return [item]
    calls = _chat_tool_calls(item.get("tool_calls"), index)
    head = {k: v for k, v in item.items() if k not in _CHAT_ONLY_KEYS}
    out: list[Any] = []
    if fixed_content or "tool_calls" not in item:  # an item that made no calls stays, minus its reasoning
        if fixed_content:
            head["content"] = fixed_content
        out.append(head)
    out.extend(_calls_to_responses(calls, custom))
    return out


_CHAT_ONLY_KEYS = frozenset({"tool_calls", *REASONING_FIELDS, *MESSAGE_PROVIDER_FIELDS})
"""Keys of a Chat assistant item that no Responses message has (OpenAI refuses unknown fields)."""

_RESPONSES_ROLES = frozenset({"user", "system", "developer"})
"""Message roles sent verbatim; ``assistant`` and ``tool`` (Chat shapes) may need converting first."""

_RESPONSES_TEXT_PARTS = frozenset({"input_text", "output_text"})


def _responses_parts(content: Sequence[Any], index: int, text_type: str = "input_text") -> Sequence[Any]:
    """A Responses ``content`` (or tool ``output``) list, checked, as it is to be sent: ``content`` itself
    when every part is, else a fixed copy.

    Fixed: an ``input_image`` without a ``detail`` gets ``"auto"`` (some servers, vLLM's ``/responses``,
    require one), and the Chat part shapes become their Responses ones (``{"type": "text"}`` →
    ``text_type``, ``input_text`` or, for an assistant, ``output_text``; ``{"type": "image_url", "image_url":
    {"url", "detail"}}`` → ``input_image``), which Responses would refuse. Checked: each part is an object
    with a type, and the part types every server knows are well formed. Only what the API would certainly
    refuse is an error: other part types (``input_file``, ``input_audio``, future ones) are for the server to
    judge, as are fields beyond the ones checked here.
    """
    fixed: list[Any] | None = None
    for position, part in enumerate(content):
        kind = part.get("type") if isinstance(part, MAPPINGS) else None
        new: dict[str, Any] | None = None
        if kind in _RESPONSES_TEXT_PARTS:
            if not isinstance(part.get("text"), str):
                raise ValueError(f"{_where(index)}: a {kind} part needs a string 'text'")
        elif kind == "input_image":
            url = part.get("image_url")
            file_id = part.get("file_id")
            if not (isinstance(url, str) and url.strip()) and not (isinstance(file_id, str) and file_id):
                raise ValueError(
                    f"{_where(index)}: an input_image part needs a non-blank string 'image_url' or a "
                    f"'file_id', got image_url={url!r:.80}"
                )
            if part.get("detail") is None:
                new = {**part, "detail": "auto"}
        elif kind == "refusal":
            if not isinstance(part.get("refusal"), str):
                raise ValueError(f"{_where(index)}: a refusal part needs a string 'refusal'")
        elif kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise ValueError(f"{_where(index)}: a text part needs a string 'text'")
            new = {"type": text_type, "text": text}
        elif kind == "image_url":
            image = _image_part(part, index)
            new = {"type": "input_image", "image_url": image.url, "detail": image.detail or "auto"}
        elif not isinstance(kind, str):
            raise ValueError(
                f"{_where(index)}: each content part must be an object with a 'type', got {part!r:.80}"
            )
        if new is not None:
            if fixed is None:
                fixed = list(content[:position])
            fixed.append(new)
        elif fixed is not None:
            fixed.append(part)
    return content if fixed is None else fixed


def _responses_content(content: Any, index: int, text_type: str = "input_text") -> Any:
    """A Responses message's ``content`` as it is to be sent: a string, or a list of parts
    (``_responses_parts``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, _SEQUENCES):
        raise ValueError(f"{_where(index)}: 'content' must be a string or a list of parts")
    return _responses_parts(content, index, text_type)


def _with_content(item: Mapping[str, Any], index: int, text_type: str = "input_text") -> Mapping[str, Any]:
    """A message item with its ``content`` as it is to be sent (the item itself when that needs no fix)."""
    content = item.get("content")
    sent = _responses_content(content, index, text_type)
    return item if sent is content else {**item, "content": sent}


def _responses_function_call(item: Mapping[str, Any], index: int) -> Mapping[str, Any]:
    """A ``function_call`` item as sent: checked, and with its ``arguments`` made JSON text when they are not.

    Arguments given as an object (or left out) are what some compatible servers answer, and what
    ``tool_call_from_item`` accepts, so memory can hold them: they go out as the JSON text the API wants, as
    on the Chat path. Anything else that is not a string is an error.
    """
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{_where(index)}: a function_call item needs a non-empty 'name'")
    _call_id(item, index)
    arguments = item.get("arguments")
    if isinstance(arguments, str):
        return item
    if arguments is not None and not isinstance(arguments, MAPPINGS):
        raise ValueError(
            f"{_where(index)}: a function_call item's 'arguments' must be JSON text (a string), "
            f"got {type(arguments).__name__}"
        )
    try:
        text = _arguments_text(arguments)
    except TypeError as exc:  # a value JSON has no form for (a Decimal, a set…)
        raise TypeError(f"{_where(index)}: a function_call item's 'arguments' cannot be JSON: {exc}") from exc
    return {**item, "arguments": text}


def _responses_custom_call(item: Mapping[str, Any], index: int) -> Mapping[str, Any]:
    """A ``custom_tool_call`` item as sent: checked (a non-empty ``call_id`` and ``name``, a string
    ``input``; one left out goes out as ``""``)."""
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{_where(index)}: a custom_tool_call item needs a non-empty 'name'")
    _call_id(item, index)
    text = item.get("input")
    if isinstance(text, str):
        return item
    if text is not None:
        raise ValueError(
            f"{_where(index)}: a custom_tool_call item's 'input' must be a string, got {type(text).__name__}"
        )
    return {**item, "input": ""}


def _responses_tool_output(item: Mapping[str, Any], index: int) -> Mapping[str, Any]:
    """A ``function_call_output`` item as sent: checked (a call id, and an ``output`` string or list of
    content parts), its parts fixed as ``_responses_parts`` does."""
    _call_id(item, index)
    output = item.get("output")
    if isinstance(output, str):
        return item
    if not isinstance(output, _SEQUENCES):
        raise ValueError(
            f"{_where(index)}: a function_call_output item's 'output' must be a string or a list of "
            f"content parts, got {type(output).__name__}"
        )
    sent = _responses_parts(output, index)
    return item if sent is output else {**item, "output": sent}


def to_responses_input(items: Iterable[Any]) -> list[Any]:
    """Convert conversation items to Responses ``input`` items, in order.

    Dict items are sent verbatim (unknown fields such as ``encrypted_content`` survive), except the Chat
    shapes that the Responses API would reject: an assistant message with Chat-style ``tool_calls`` becomes
    the message plus ``function_call`` items (a custom call's entry, ``{"type": "custom", "custom": {"name",
    "input"}}``, a ``custom_tool_call`` item; its ``input_text`` parts become ``output_text``; its Chat
    ``reasoning_content`` / ``reasoning``, OpenRouter's ``reasoning_details`` and its calls' Gemini
    ``extra_content`` are left out), a ``{"role": "tool"}`` dict becomes a ``function_call_output``, and
    Chat content parts (``{"type": "text"}``, ``{"type": "image_url"}``) become
    ``input_text`` (``output_text`` for an assistant) and ``input_image``. An ``input_image`` without a
    ``detail`` is sent with ``"auto"``. A message's ``name`` (a Chat field: ``UserMessage.name``) is left
    out. A fixed item is a copy; memory keeps its own. ``Message`` values are converted to items (an
    ``AiMessage``'s reasoning and provider fields are not sent either). The output of a custom call (a
    ``function_call_output``, as the runtime writes every result; a ``{"role": "tool"}`` dict; a
    ``ToolResultMessage``) goes out as a ``custom_tool_call_output``, which is what Responses pairs with it.

    The item types this module builds are checked before anything is sent, as on the Chat path: a ``message``
    (a dict with a ``role`` and no ``type`` is one) needs a known role (``user``, ``assistant``, ``system``,
    ``developer``, or the Chat ``tool``) and a string or a list of content parts (``input_text`` /
    ``output_text`` with a string ``text``, ``input_image`` with a non-blank ``image_url`` or a ``file_id``,
    ``refusal`` with a string ``refusal``; other part types pass); a ``function_call`` a non-empty ``call_id``
    and ``name`` and JSON-text ``arguments`` (an object is serialised, as on Chat); a ``custom_tool_call`` a
    non-empty ``call_id`` and ``name`` and a string ``input``; a ``function_call_output`` a non-empty
    ``call_id`` and an ``output`` string or list of content parts. A dict with neither ``type``
    nor ``role`` is an error. A problem raises ``ValueError`` (``TypeError`` for what is not an item at all,
    or object arguments JSON cannot encode) naming the item's position. Other item types (``reasoning``,
    hosted tool calls, item references, types added later) are forwarded verbatim: the server knows them
    better than this function does.

    >>> from agentflow.model.messages import ToolCall
    >>> to_responses_input([assistant_item("", [ToolCall("c1", "f", "{}")])])
    [{'type': 'function_call', 'call_id': 'c1', 'name': 'f', 'arguments': '{}'}]
    >>> to_responses_input([assistant_item("", [ToolCall("c2", "sql", "SELECT 1", "custom")]),
    ...                     function_call_output_item("c2", "1 row")])  # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'custom_tool_call', 'call_id': 'c2', 'name': 'sql', 'input': 'SELECT 1'},
     {'type': 'custom_tool_call_output', 'call_id': 'c2', 'output': '1 row'}]
    >>> to_responses_input([{"role": "robot", "content": "hi"}])
    Traceback (most recent call last):
    ...
    ValueError: item 0: unknown message role 'robot'
    """
    out: list[Any] = []
    custom: set[str] = set()  # the ids of the custom calls so far: their outputs go back in their shape
    for index, item in enumerate(items):
        # Nearly every item is a plain dict: it skips both checks.
        if type(item) is not dict and _is_message_value(item, index):
            out.extend(_message_to_responses(item, custom))
            continue
        kind = item.get("type")
        if type(kind) is not str:  # a typeless message dict, or no kind at all
            kind = _kind(item)
        # Most frequent kinds first, and the usual shape of each checked with a few lookups: this runs over
        # the whole memory on every request.
        if kind == "function_call_output":
            call_id = item.get("call_id")
            if type(call_id) is not str or not call_id or type(item.get("output")) is not str:
                item = _responses_tool_output(item, index)
            out.append(_answering(item, custom) if custom else item)
        elif kind == "message":
            role = item.get("role")
            if role == "assistant":
                if item.get("content") is not None or "tool_calls" not in item:  # Chat calls alone need none
                    item = _with_content(item, index, "output_text")
                out.extend(_assistant_map_to_responses(item, index, custom))
            elif isinstance(role, str) and role in _RESPONSES_ROLES:
                if "name" in item:  # a Chat message's name (``UserMessage.name``): no Responses field
                    item = {key: value for key, value in item.items() if key != "name"}
                out.append(_with_content(item, index))
            elif role == "tool":
                call_id = item.get("tool_call_id")
                if not isinstance(call_id, str) or not call_id:
                    raise ValueError(f"{_where(index)}: a tool message needs a non-empty 'tool_call_id'")
                output = function_call_output_item(call_id, _output_text(item.get("content"), index))
                out.append(_answering(output, custom))
            else:
                raise ValueError(f"{_where(index)}: unknown message role {role!r}")
        elif kind == "function_call":
            out.append(_responses_function_call(item, index))
        elif kind == "custom_tool_call":
            item = _responses_custom_call(item, index)
            custom.add(item["call_id"])
            out.append(item)
        elif kind is None:
            raise ValueError(
                f"{_where(index)}: an item needs a string 'type' (or a 'role', for a message), "
                f"got keys {sorted(map(str, item))}"
            )
        else:
            out.append(item)  # reasoning, hosted tool calls, item references, future types: verbatim
    return out

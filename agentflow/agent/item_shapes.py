"""The memory-item shape: the ``Item`` type, the constructors that build items (plain JSON-able dicts in the
OpenAI Responses item shape), ``message_to_item`` / ``to_items`` (``Message`` values as items), their
classification for pair-aware memory trimming, ``with_call_ids``, and the few shape checks both protocol
conversions share.

Pure functions only: no I/O, no awaits, and no protocol conversion (that is ``chat_items`` and
``responses_items``, which build on this module; it imports neither). Import these names from
``agentflow.agent.items``, which re-exports them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import orjson

from ..model.messages import (
    REASONING_FIELDS,
    AiMessage,
    ContentPart,
    DeveloperMessage,
    ImagePart,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "MAPPINGS",
    "NOTE_ROLES",
    "RUNTIME_NOTE_PREFIXES",
    "Item",
    "NoteRole",
    "assistant_item",
    "check_note_role",
    "developer_item",
    "function_call_item",
    "function_call_output_item",
    "is_model_output_item",
    "is_runtime_note",
    "is_system_item",
    "is_tool_output_item",
    "is_user_item",
    "item_text",
    "message_item",
    "message_to_item",
    "system_item",
    "to_items",
    "tool_call_ids",
    "tool_output_call_id",
    "user_item",
    "with_call_ids",
]

Item: TypeAlias = Mapping[str, Any] | Message
"""One conversation item: a Responses-shaped dict or a ``Message``."""


def item_text(item: Any) -> str:
    """The text an item holds: a message's text, its text parts joined; ``""`` for anything else.

    >>> item_text({"role": "user", "content": [{"type": "input_text", "text": "Hi"}, {"type": "input_file"}]})
    'Hi'
    >>> item_text(UserMessage("Hello"))
    'Hello'
    """
    if isinstance(item, UserMessage):
        return item.text
    if isinstance(item, Message):
        return getattr(item, "text", None) or ""
    if isinstance(item, Mapping):
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, Sequence):
            return "".join(
                str(p.get("text", ""))
                for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            )
    return ""


_MESSAGE_TYPES = (SystemMessage, DeveloperMessage, UserMessage, AiMessage, ToolResultMessage)

MAPPINGS = (dict, Mapping)
"""What ``isinstance`` checks for a mapping item or part. ``dict`` comes first: items are nearly always plain
dicts, and a check against the ``Mapping`` ABC alone costs several times more (conversion runs every step)."""
_SEQUENCES = (list, tuple, Sequence)


# --- constructors ------------------------------------------------------------------------------------------


def message_item(role: str, text: str) -> dict[str, Any]:
    """A text message item of any role; assistant text is an ``output_text`` part, others ``input_text``.

    >>> message_item("user", "hi")
    {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'hi'}]}
    """
    part_type = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part_type, "text": text}]}


def user_item(text: str, images: Iterable[str] = ()) -> dict[str, Any]:
    """A user message item: the text, then one ``input_image`` part per image URL (``https:`` or ``data:``),
    with ``detail: "auto"`` (the API's default, which some servers, vLLM's ``/responses``, require).

    The text part is left out only when it is empty and there are images. A blank URL is a ``ValueError``.

    >>> user_item("What is this?", ["https://x/cat.png"])["content"][1]
    {'type': 'input_image', 'image_url': 'https://x/cat.png', 'detail': 'auto'}
    """
    urls = [images] if isinstance(images, str) else list(images)
    content: list[dict[str, Any]] = []
    if text or not urls:
        content.append({"type": "input_text", "text": text})
    for url in urls:
        if not isinstance(url, str) or not url.strip():
            raise ValueError(f"user_item: image URLs must be non-blank strings, got {url!r}")
        content.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return {"type": "message", "role": "user", "content": content}


def system_item(text: str) -> dict[str, Any]:
    """A system message item."""
    return message_item("system", text)


def developer_item(text: str) -> dict[str, Any]:
    """A developer message item (the role newer OpenAI models use for instructions)."""
    return message_item("developer", text)


def assistant_item(
    text: str | None,
    tool_calls: Iterable[ToolCall] = (),
    *,
    refusal: str | None = None,
    reasoning: str | None = None,
    reasoning_field: str | None = None,
    provider_fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An assistant turn in the Chat memory shape: text and, when present, Chat-style ``tool_calls``.

    ``content`` is present only when there is text (or a refusal), ``tool_calls`` only when there are calls.
    ``reasoning`` is kept only with a ``reasoning_field`` (``"reasoning_content"`` or ``"reasoning"``: the
    wire field the server sent it in, see ``AiMessage.reasoning_field``), under that key (``""`` when the
    server sent the field empty), for Chat Completions to send back.

    Provider fields are kept under their wire names, for Chat Completions to send back as they came: the
    message's (``provider_fields``, e.g. OpenRouter's ``reasoning_details``) on the item, each call's
    (``ToolCall.provider_fields``, e.g. Gemini's ``extra_content``) on its ``tool_calls`` entry. A ``custom``
    call is kept in its Chat shape, ``{"id", "type": "custom", "custom": {"name", "input"}}``.

    >>> assistant_item("", [ToolCall("call_1", "f", "{}")])["tool_calls"][0]["function"]
    {'name': 'f', 'arguments': '{}'}
    >>> assistant_item("4", reasoning="2+2", reasoning_field="reasoning_content")["reasoning_content"]
    '2+2'
    """
    item: dict[str, Any] = {"type": "message", "role": "assistant"}
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "output_text", "text": text})
    if refusal:
        content.append({"type": "refusal", "refusal": refusal})
    if content:
        item["content"] = content
    calls = [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        if call.kind == "function" and call.provider_fields is None  # the usual call: nothing else to keep
        else _call_entry(call)
        for call in tool_calls
    ]
    if calls:
        item["tool_calls"] = calls
    if reasoning_field is not None:
        if reasoning_field not in REASONING_FIELDS:
            raise ValueError(
                f"assistant_item: reasoning_field must be one of {', '.join(map(repr, REASONING_FIELDS))} "
                f"or None, got {reasoning_field!r}"
            )
        item[reasoning_field] = reasoning or ""
    if provider_fields:
        for key, value in provider_fields.items():
            item.setdefault(key, value)  # never over the item's own fields
    return item


def _call_entry(call: ToolCall) -> dict[str, Any]:
    """The ``tool_calls`` entry of a call that is custom or carries provider fields (as the Chat codec sends
    it)."""
    entry: dict[str, Any] = (
        {"id": call.id, "type": "custom", "custom": {"name": call.name, "input": call.arguments}}
        if call.kind == "custom"
        else {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    )
    if call.provider_fields:
        for key, value in call.provider_fields.items():
            entry.setdefault(key, value)
    return entry


def function_call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A Responses ``function_call`` item (one tool call, arguments as raw JSON text)."""
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def function_call_output_item(call_id: str, output: str) -> dict[str, Any]:
    """A tool result item, paired with its call by ``call_id``.

    >>> function_call_output_item("call_1", "18°C")
    {'type': 'function_call_output', 'call_id': 'call_1', 'output': '18°C'}
    """
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def message_to_item(message: Message) -> dict[str, Any]:
    """The item a ``Message`` value is kept as: what both protocols send for it, as a plain JSON-ready dict.

    Runs store ``Message`` inputs this way (``chat.run(UserMessage(...))``), so memory holds only JSON-ready
    items; the next request is the one the ``Message`` itself would have made, on Chat Completions and on
    Responses. An ``AiMessage`` becomes ``assistant_item`` (text, refusal, Chat-style ``tool_calls``, and its
    reasoning under its ``reasoning_field`` and its provider fields, which the Chat path sends back); a
    ``ToolResultMessage`` a
    ``function_call_output``; a ``UserMessage`` a user message (its ``name`` kept for Chat, which alone sends
    it), its parts ``input_text`` / ``input_image`` (an image's ``detail`` only when set). Left out is only
    what neither protocol sends: a ``ToolResultMessage``'s ``name``, and reasoning without a
    ``reasoning_field``. Degenerate messages read back a little differently: on Chat, a ``UserMessage`` made
    of text parts alone goes as their joined text (as any item with text parts), and an ``AiMessage`` whose
    text is ``""`` beside tool calls with ``null`` content; on Responses, an ``AiMessage`` with no text,
    refusal or call goes as an assistant message with empty text (the ``AiMessage`` sent nothing there).

    >>> message_to_item(UserMessage("hi"))
    {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'hi'}]}
    >>> message_to_item(AiMessage(None, [ToolCall("c1", "f", "{}")], reasoning="why",
    ...                           reasoning_field="reasoning_content"))["reasoning_content"]
    'why'
    """
    if isinstance(message, UserMessage):
        content = message.content
        if isinstance(content, str):
            item = message_item("user", content)
        else:
            item = {"type": "message", "role": "user", "content": [_part_item(part) for part in content]}
        if message.name is not None:
            item["name"] = message.name
        return item
    if isinstance(message, AiMessage):
        item = assistant_item(
            message.text,
            message.tool_calls,
            refusal=message.refusal,
            reasoning=message.reasoning,
            reasoning_field=message.reasoning_field,
            provider_fields=message.provider_fields,
        )
        if "content" not in item and "tool_calls" not in item:
            # A message without content is refused by Responses; Chat reads this one back as ``content: ""``,
            # which the message itself sends.
            item["content"] = [{"type": "output_text", "text": ""}]
        return item
    if isinstance(message, ToolResultMessage):
        return function_call_output_item(message.call_id, message.text)
    if isinstance(message, SystemMessage):
        return system_item(message.text)
    if isinstance(message, DeveloperMessage):
        return developer_item(message.text)
    raise TypeError(f"message_to_item takes a Message, got {type(message).__name__}")


def _part_item(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        # No ``detail`` unless the part has one: Chat then sends none, as for the part itself, and Responses
        # sends ``"auto"``, as it does for the part.
        image: dict[str, Any] = {"type": "input_image", "image_url": part.url}
        if part.detail is not None:
            image["detail"] = part.detail
        return image
    return {"type": "input_text", "text": part.text}


def to_items(items: Iterable[Item]) -> list[Any]:
    """``items`` with every ``Message`` value as its item (``message_to_item``); item dicts as they are.

    >>> to_items([UserMessage("hi"), {"type": "function_call_output", "call_id": "c1", "output": "3"}])
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'hi'}]},
     {'type': 'function_call_output', 'call_id': 'c1', 'output': '3'}]
    """
    return [
        item if type(item) is dict or not isinstance(item, _MESSAGE_TYPES) else message_to_item(item)
        for item in items
    ]


def with_call_ids(calls: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    """The calls with blank ids replaced by fresh unique ones and names stripped of surrounding spaces.

    Some OpenAI-compatible servers send no id; an id is needed to pair the call with its output in memory.

    >>> [call.id.startswith("call_") for call in with_call_ids([ToolCall("", " f ", "{}")])]
    [True]
    """
    out: list[ToolCall] = []
    for call in calls:
        call_id = call.id.strip() or f"call_{uuid.uuid4().hex[:24]}"
        name = call.name.strip()
        # ``evolve`` keeps what else the call holds (its kind, its provider fields).
        out.append(
            call if call_id == call.id and name == call.name else attrs.evolve(call, id=call_id, name=name)
        )
    return tuple(out)


# --- classification (used by pair-aware memory trimming) ---------------------------------------------------


def _kind(item: Mapping[str, Any]) -> str | None:
    """The item's type; a dict with a role and no type is a message (the Responses "easy" input form)."""
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def tool_call_ids(item: Any) -> tuple[str, ...]:
    """The ids of the tool calls this item makes (an assistant turn with tool calls, a ``*_call`` item).

    >>> tool_call_ids(function_call_item("c1", "f", "{}")), tool_call_ids(user_item("hi"))
    (('c1',), ())
    """
    if isinstance(item, AiMessage):
        return tuple(call.id for call in item.tool_calls)
    if not isinstance(item, Mapping):
        return ()
    kind = _kind(item)
    if kind == "message" and item.get("role") == "assistant":
        calls = item.get("tool_calls") or ()
        return tuple(str(c.get("id") or "") for c in calls if isinstance(c, Mapping))
    if kind is not None and kind.endswith("_call") and item.get("call_id") is not None:
        return (str(item["call_id"]),)
    return ()


def tool_output_call_id(item: Any) -> str | None:
    """The call id a tool output item answers (``function_call_output`` and the like), else ``None``."""
    if isinstance(item, ToolResultMessage):
        return item.call_id
    if not isinstance(item, Mapping):
        return None
    kind = _kind(item)
    if kind == "message" and item.get("role") == "tool":
        return str(item.get("tool_call_id") or "")
    if kind is not None and kind.endswith("_call_output"):
        return str(item.get("call_id") or "")
    return None


def is_tool_output_item(item: Any) -> bool:
    """Whether the item is a tool result."""
    return tool_output_call_id(item) is not None


def is_system_item(item: Any) -> bool:
    """Whether the item is a system or developer message."""
    if isinstance(item, SystemMessage | DeveloperMessage):
        return True
    return (
        isinstance(item, Mapping) and _kind(item) == "message" and item.get("role") in ("system", "developer")
    )


def is_user_item(item: Any) -> bool:
    """Whether the item is a user message: what a run's input writes, and the notes some runtimes write
    as user messages (``is_runtime_note`` tells those apart).

    >>> is_user_item(user_item("hi")), is_user_item(system_item("be brief"))
    (True, False)
    """
    if isinstance(item, UserMessage):
        return True
    return isinstance(item, Mapping) and _kind(item) == "message" and item.get("role") == "user"


RUNTIME_NOTE_PREFIXES: Final = (
    # A plan and a re-plan (``Planning.plan_item``; ``Plan.to_text``'s header line).
    "Plan:\n",
    "Updated plan:\n",
    # CodeAct's observations (``codeact_protocol.CODE_RESULT_PREFIX`` / ``CODE_ERROR_PREFIX``, the
    # ``PROTOCOL_ERROR`` of ``codeact_prompt.correction_text``, ``codeact_prompt.OUTPUT_ERROR_PREFIX``).
    "CODE_RESULT: ",
    "CODE_ERROR: ",
    "PROTOCOL_ERROR: ",
    "OUTPUT_ERROR: ",
    # An answer sent back for another try (``output.OUTPUT_RETRY_PROMPT`` / ``OUTPUT_REJECTED_PROMPT``).
    "Your final answer does not match the required output format: ",
    "Your final answer was rejected: ",
)
"""How the messages a runtime writes into the conversation for the model begin (``is_runtime_note``).

Written out here rather than imported: the runtimes that own these texts build on this module. A test
checks that every such text of theirs is recognised."""


NoteRole: TypeAlias = Literal["system", "user", "developer"]
"""The role a runtime writes its notes for the model in (CodeAct's ``observation_role``, DeepResearch's
``plan_role``): ``system`` as the reference does, ``user`` or ``developer`` for chat templates that refuse
a system message after the first."""

NOTE_ROLES: Final[tuple[NoteRole, ...]] = ("system", "user", "developer")


def check_note_role(option: str, value: object) -> None:
    """``ValueError`` unless ``value`` is a ``NoteRole``; ``option`` names the setting in the message.

    >>> check_note_role("plan_role", "assistant")
    Traceback (most recent call last):
    ...
    ValueError: plan_role must be 'system', 'user' or 'developer', got 'assistant'
    """
    if value not in NOTE_ROLES:
        raise ValueError(f"{option} must be 'system', 'user' or 'developer', got {value!r}")


def is_runtime_note(item: Any) -> bool:
    """Whether the item is a message a runtime wrote for the model, not one a person wrote: a DeepResearch
    plan, a CodeAct ``CODE_RESULT`` or correction, an output retry prompt (``RUNTIME_NOTE_PREFIXES``).

    Runtimes may write these as user messages (``plan_role="user"``, ``observation_role="user"``, and
    always for an output retry prompt), so ``is_user_item`` alone does not find what the user asked.

    >>> is_runtime_note(user_item("CODE_RESULT: {}")), is_runtime_note(user_item("What is CODE_RESULT?"))
    (True, False)
    """
    if isinstance(item, UserMessage):
        content: Any = item.content
    elif isinstance(item, SystemMessage | DeveloperMessage):
        content = item.text
    elif isinstance(item, Mapping) and _kind(item) == "message" and item.get("role") != "assistant":
        content = item.get("content")
    else:
        return False
    if isinstance(content, _SEQUENCES) and not isinstance(content, str) and content:
        first = content[0]  # a runtime writes one text part
        content = first.get("text") if isinstance(first, Mapping) else getattr(first, "text", None)
    return isinstance(content, str) and content.startswith(RUNTIME_NOTE_PREFIXES)


def is_model_output_item(item: Any) -> bool:
    """Whether the item is part of a model's answer: an assistant message, a reasoning item or a call.

    Consecutive model output items come from one model turn and stay together when memory is trimmed (a
    Responses ``function_call`` must travel with the ``reasoning`` item before it).
    """
    if isinstance(item, AiMessage):
        return True
    if not isinstance(item, Mapping):
        return False
    kind = _kind(item)
    if kind == "message":
        return item.get("role") == "assistant"
    return kind == "reasoning" or (kind is not None and kind.endswith("_call"))


# --- checks shared by the Chat and Responses conversions ----------------------------------------------


def _is_message_value(item: Any, index: int) -> bool:
    """For an item that is not a plain dict: whether it is a ``Message`` (else it is a mapping).

    Raises ``TypeError`` when it is neither, so it is no conversation item at all.
    """
    if isinstance(item, _MESSAGE_TYPES):
        return True
    if not isinstance(item, Mapping):
        raise TypeError(
            f"{_where(index)}: cannot use a {type(item).__name__} as a conversation item; "
            "pass a Message or an item dict (see agentflow.agent.items)"
        )
    return False


def _where(index: int) -> str:
    return f"item {index}"


def _arguments_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _call_id(item: Mapping[str, Any], index: int) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"{_where(index)}: a {item.get('type')} item needs a non-empty string 'call_id'")
    return call_id

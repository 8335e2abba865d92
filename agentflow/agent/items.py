"""Memory items: plain JSON-able dicts in the OpenAI Responses item shape, and their conversions.

A conversation is a sequence of items. An item is either a dict in the Responses item shape (what the
constructors below build, and what the Responses API returns as output items) or an agentflow ``Message``.
This module builds items, classifies them (for pair-aware memory trimming), and converts a conversation to
each protocol: ``to_chat_messages`` for Chat Completions, ``to_responses_input`` for Responses.

Pure functions only: no I/O, no awaits. Nothing is silently dropped: an item that has no form on the target
protocol raises ``TypeError`` (not an item at all) or ``ValueError`` (an item this protocol cannot carry),
naming the item's position. Two documented exceptions, both about reasoning, which goes back only in the
form the protocol that made it takes: ``reasoning`` items (Responses) are skipped on Chat Completions, and a
Chat assistant item's ``reasoning_content`` / ``reasoning`` text is left out on Responses.

A Chat assistant item keeps its reasoning under the key the server sent it in (``reasoning_content`` from
DeepSeek, ``reasoning`` from OpenRouter or Groq), so the next Chat request sends it back under that name —
DeepSeek's thinking mode answers 400 without it — and a server that never sent one (OpenAI) never gets one.

Where this differs from the reference's ``AgentInputItem`` shapes, on purpose, so that every item built
here is also valid Responses input: assistant text is an ``output_text`` part (the Responses API rejects
``input_text`` on assistant messages), and an image part's ``image_url`` is the URL string.

>>> to_chat_messages([system_item("Be brief."), user_item("hi")])
[SystemMessage(text='Be brief.'), UserMessage(content='hi', name=None)]
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

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
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "ChatMessageCache",
    "Item",
    "assistant_item",
    "developer_item",
    "function_call_item",
    "function_call_output_item",
    "is_model_output_item",
    "is_system_item",
    "is_tool_output_item",
    "message_item",
    "system_item",
    "to_chat_messages",
    "to_responses_input",
    "tool_call_ids",
    "tool_output_call_id",
    "user_item",
    "with_call_ids",
]

Item: TypeAlias = Mapping[str, Any] | Message
"""One conversation item: a Responses-shaped dict or a ``Message``."""

_MESSAGE_TYPES = (SystemMessage, DeveloperMessage, UserMessage, AiMessage, ToolResultMessage)

MAPPINGS = (dict, Mapping)
"""What ``isinstance`` checks for a mapping item or part. ``dict`` comes first: items are nearly always plain
dicts, and a check against the ``Mapping`` ABC alone costs several times more (conversion runs every step)."""
_SEQUENCES = (list, tuple, Sequence)
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_IMAGE_PARTS = frozenset({"input_image", "image_url"})


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
) -> dict[str, Any]:
    """An assistant turn in the Chat memory shape: text and, when present, Chat-style ``tool_calls``.

    ``content`` is present only when there is text (or a refusal), ``tool_calls`` only when there are calls.
    ``reasoning`` is kept only with a ``reasoning_field`` (``"reasoning_content"`` or ``"reasoning"``: the
    wire field the server sent it in, see ``AiMessage.reasoning_field``), under that key (``""`` when the
    server sent the field empty), for Chat Completions to send back.

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
    return item


def function_call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A Responses ``function_call`` item (one tool call, arguments as raw JSON text)."""
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def function_call_output_item(call_id: str, output: str) -> dict[str, Any]:
    """A tool result item, paired with its call by ``call_id``.

    >>> function_call_output_item("call_1", "18°C")
    {'type': 'function_call_output', 'call_id': 'call_1', 'output': '18°C'}
    """
    return {"type": "function_call_output", "call_id": call_id, "output": output}


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
    """Whether the item is a user message (what a run's input writes; runtimes write no user items).

    >>> is_user_item(user_item("hi")), is_user_item(system_item("be brief"))
    (True, False)
    """
    if isinstance(item, UserMessage):
        return True
    return isinstance(item, Mapping) and _kind(item) == "message" and item.get("role") == "user"


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


# --- Chat Completions ---------------------------------------------------------------------------------


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


def _chat_tool_calls(raw: Any, index: int) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, _SEQUENCES) or isinstance(raw, str):
        raise ValueError(f"{_where(index)}: 'tool_calls' must be a list, got {type(raw).__name__}")
    calls: list[ToolCall] = []
    for entry in raw:
        function = entry.get("function") if isinstance(entry, MAPPINGS) else None
        if not isinstance(function, MAPPINGS) or not isinstance(name := function.get("name"), str):
            raise ValueError(
                f"{_where(index)}: each tool call needs a 'function' with a 'name', got {entry!r}"
            )
        calls.append(ToolCall(str(entry.get("id") or ""), name, _arguments_text(function.get("arguments"))))
    return calls


def _image_part(part: Mapping[str, Any], index: int) -> ImagePart:
    image = part.get("image_url")
    detail = part.get("detail")
    if isinstance(image, Mapping):
        detail = image.get("detail", detail)
        image = image.get("url")
    if not isinstance(image, str) or not image.strip():
        if part.get("file_id") is not None:
            raise ValueError(f"{_where(index)}: images by file_id have no Chat Completions form; use a URL")
        raise ValueError(f"{_where(index)}: an image part needs a non-blank 'image_url', got {part!r}")
    return ImagePart(image, detail if isinstance(detail, str) else None)


class _Content:
    """The parts of one message's content, read once.

    ``parts`` (text and image parts, in order) is filled only when there is an image: only a multimodal user
    message needs it, and building a ``TextPart`` for every text would cost every other message.
    """

    __slots__ = ("has_image", "has_text", "parts", "refusal", "text")

    def __init__(self, content: Any, index: int) -> None:
        self.parts: list[ContentPart] = []
        self.refusal: str | None = None
        self.has_image = False
        self.has_text = False
        if content is None:
            self.text = ""
            return
        if isinstance(content, str):
            self.text, self.has_text = content, True
            return
        if not isinstance(content, _SEQUENCES):
            raise ValueError(f"{_where(index)}: 'content' must be a string or a list of parts")
        texts: list[str] = []
        pieces: list[str | ImagePart] = []
        for part in content:
            is_map = isinstance(part, MAPPINGS)
            kind = part.get("type") if is_map else None
            if is_map and kind in _TEXT_PARTS:
                text = part.get("text")
                if not isinstance(text, str):
                    raise ValueError(f"{_where(index)}: a {kind} part needs a string 'text'")
                texts.append(text)
                pieces.append(text)
                self.has_text = True
            elif is_map and kind in _IMAGE_PARTS:
                pieces.append(_image_part(part, index))
                self.has_image = True
            elif is_map and kind == "refusal":
                self.refusal = str(part.get("refusal") or "")
            else:
                raise ValueError(
                    f"{_where(index)}: content part {kind or part!r} has no Chat Completions form"
                )
        # The reference concatenates text parts with no separator; so do we.
        self.text = "".join(texts)
        if self.has_image:
            self.parts = [TextPart(piece) if isinstance(piece, str) else piece for piece in pieces]


def _message_from_map(item: Mapping[str, Any], index: int) -> Message:
    role = item.get("role")
    body = _Content(item.get("content"), index)
    if body.has_image and role != "user":
        raise ValueError(
            f"{_where(index)}: Chat Completions carries images only in user messages, not {role!r}"
        )
    if role == "user":
        name = item.get("name")
        content: str | list[ContentPart] = body.parts if body.has_image else body.text
        return UserMessage(content, name=name if isinstance(name, str) else None)
    if role == "system":
        return SystemMessage(body.text)
    if role == "developer":
        return DeveloperMessage(body.text)
    if role == "assistant":
        calls = _chat_tool_calls(item.get("tool_calls"), index)
        text = body.text if body.has_text and (body.text or not calls) else None
        reasoning, field = _chat_reasoning(item, index)
        return AiMessage(text, calls, reasoning, body.refusal, field)
    if role == "tool":
        call_id = item.get("tool_call_id")
        if not isinstance(call_id, str):
            raise ValueError(f"{_where(index)}: a tool message needs a string 'tool_call_id'")
        return ToolResultMessage(call_id, body.text)
    raise ValueError(f"{_where(index)}: unknown message role {role!r}")


def _chat_reasoning(item: Mapping[str, Any], index: int) -> tuple[str | None, str | None]:
    """The reasoning an assistant item keeps for Chat Completions, and the key (wire field) it is under.

    Read as the Chat codec reads an answer: a non-empty ``reasoning_content`` first, then ``reasoning``; a
    key that is present but empty still names the field (it goes back empty).
    """
    if "reasoning_content" not in item and "reasoning" not in item:  # the usual case, read at once
        return None, None
    found: tuple[str | None, str | None] = (None, None)
    for key in REASONING_FIELDS:
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"{_where(index)}: {key!r} must be a string, got {type(value).__name__}")
        if value:
            return value, key
        if found[1] is None:
            found = (None, key)
    return found


def _output_text(output: Any, index: int) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, _SEQUENCES):
        body = _Content(output, index)
        if body.has_image:
            raise ValueError(f"{_where(index)}: image tool outputs have no Chat Completions form")
        return body.text
    raise ValueError(f"{_where(index)}: a tool output must be a string or a list of text parts")


def _call_id(item: Mapping[str, Any], index: int) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"{_where(index)}: a {item.get('type')} item needs a non-empty string 'call_id'")
    return call_id


ChatMessageCache: TypeAlias = dict[int, tuple[Any, Message]]
"""Chat messages already converted from dict items, by ``id(item)`` (each with its item: an id is only unique
while its object lives, so the cache keeps the item alive and checks it is the same)."""


def to_chat_messages(items: Iterable[Any], *, cache: ChatMessageCache | None = None) -> list[Message]:
    """Convert conversation items to Chat Completions messages, in order.

    ``Message`` values pass through. ``message`` dicts (string content, or ``input_text``/``output_text``/
    ``input_image``/``refusal`` parts) become the message of their role; text parts are concatenated, and any
    image makes a multimodal ``UserMessage``; an assistant dict's Chat-style ``tool_calls`` are kept.
    ``function_call_output`` becomes a ``ToolResultMessage``. ``function_call`` items become tool calls of
    the assistant message right before them (a Responses turn — text, then calls — is one Chat turn), or of
    a new assistant message. An assistant dict's ``reasoning_content`` or ``reasoning`` (what a Chat server
    sent) becomes the message's ``reasoning`` with that key as its ``reasoning_field``, so it goes back under
    the same name. ``reasoning`` items are skipped: Chat Completions cannot send them back.
    Anything else raises ``TypeError`` / ``ValueError``.

    With a ``cache`` (one per run), a ``message`` or ``function_call_output`` dict converted once is not
    converted again: a run's later steps convert only their new items. Items must not be mutated once in
    memory (see ``InMemoryMemory``), which is what makes this safe.

    >>> to_chat_messages([function_call_item("c1", "f", "{}"), function_call_item("c2", "g", "{}")])
    [AiMessage(text=None, tool_calls=(ToolCall(id='c1', name='f', arguments='{}'), \
ToolCall(id='c2', name='g', arguments='{}')), reasoning=None, refusal=None, reasoning_field=None)]
    """
    out: list[Message] = []
    for index, item in enumerate(items):
        if cache is not None:
            # First: in a run's later steps, most items are ones converted before.
            key = id(item)
            known = cache.get(key)
            if known is not None and known[0] is item:
                out.append(known[1])
                continue
        # Nearly every item is a plain dict: it skips both checks.
        if type(item) is not dict and _is_message_value(item, index):
            out.append(item)
            continue
        kind = item.get("type")
        if type(kind) is not str:  # a typeless message dict, or no kind at all
            kind = _kind(item)
        message: Message
        # Most frequent kinds first: a tool loop's memory is mostly tool outputs and messages.
        if kind == "function_call_output":
            call_id = item.get("call_id")
            output = item.get("output")
            if type(call_id) is str and call_id and type(output) is str:
                message = ToolResultMessage(call_id, output)  # the usual shape: nothing else to check
            else:
                message = ToolResultMessage(_call_id(item, index), _output_text(output, index))
        elif kind == "message":
            message = _message_from_map(item, index)
        elif kind == "function_call":
            # Never cached: it joins the assistant message before it, whatever that is.
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(f"{_where(index)}: a function_call item needs a non-empty 'name'")
            call = ToolCall(_call_id(item, index), name, _arguments_text(item.get("arguments")))
            previous = out[-1] if out else None
            if isinstance(previous, AiMessage):
                out[-1] = attrs.evolve(
                    previous, text=previous.text or None, tool_calls=(*previous.tool_calls, call)
                )
            else:
                out.append(AiMessage(tool_calls=(call,)))
            continue
        elif kind == "reasoning":
            continue
        else:
            raise ValueError(f"{_where(index)}: a {kind or 'typeless'} item has no Chat Completions form")
        out.append(message)
        if cache is not None:
            cache[key] = (item, message)
    return out


# --- Responses ----------------------------------------------------------------------------------------


def _parts_to_responses(content: Sequence[ContentPart]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "input_text", "text": part.text})
        else:
            # As ``OpenAIResponsesModel`` sends an ``ImagePart``: some servers (vLLM) require a detail level.
            parts.append({"type": "input_image", "image_url": part.url, "detail": part.detail or "auto"})
    return parts


def _message_to_responses(message: Message) -> list[dict[str, Any]]:
    if isinstance(message, SystemMessage):
        return [system_item(message.text)]
    if isinstance(message, DeveloperMessage):
        return [developer_item(message.text)]
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return [message_item("user", message.content)]
        return [{"type": "message", "role": "user", "content": _parts_to_responses(message.content)}]
    if isinstance(message, ToolResultMessage):
        return [function_call_output_item(message.call_id, message.text)]
    # AiMessage: the text (if any) as an assistant message, then one function_call item per call.
    # Reasoning text cannot be sent back on Responses without its encrypted item, so it is not sent.
    out: list[dict[str, Any]] = []
    if message.text or message.refusal:
        head = assistant_item(message.text, refusal=message.refusal)
        out.append(head)
    out.extend(function_call_item(c.id, c.name, c.arguments) for c in message.tool_calls)
    return out


def _assistant_map_to_responses(item: Mapping[str, Any], index: int) -> list[Any]:
    """An assistant message dict in the Chat memory shape, made valid Responses input.

    Its Chat reasoning (``reasoning_content`` / ``reasoning``) is left out: Responses takes reasoning back
    only as its own ``reasoning`` items, and rejects unknown message fields.
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
    chat_only = "tool_calls" in item or "reasoning_content" in item or "reasoning" in item
    if fixed_content is content and not chat_only:
        return [item]
    calls = _chat_tool_calls(item.get("tool_calls"), index)
    head = {k: v for k, v in item.items() if k not in _CHAT_ONLY_KEYS}
    out: list[Any] = []
    if fixed_content or "tool_calls" not in item:  # an item that made no calls stays, minus its reasoning
        if fixed_content:
            head["content"] = fixed_content
        out.append(head)
    out.extend(function_call_item(c.id, c.name, c.arguments) for c in calls)
    return out


_CHAT_ONLY_KEYS = frozenset({"tool_calls", *REASONING_FIELDS})

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
    the message plus ``function_call`` items (and its ``input_text`` parts become ``output_text``; its Chat
    ``reasoning_content`` / ``reasoning`` is left out), a ``{"role": "tool"}`` dict becomes a
    ``function_call_output``, and Chat content parts (``{"type": "text"}``, ``{"type": "image_url"}``) become
    ``input_text`` (``output_text`` for an assistant) and ``input_image``. An ``input_image`` without a
    ``detail`` is sent with ``"auto"``. A fixed item is a copy; memory keeps its own. ``Message`` values are
    converted to items (an ``AiMessage``'s reasoning is not sent either).

    The item types this module builds are checked before anything is sent, as on the Chat path: a ``message``
    (a dict with a ``role`` and no ``type`` is one) needs a known role (``user``, ``assistant``, ``system``,
    ``developer``, or the Chat ``tool``) and a string or a list of content parts (``input_text`` /
    ``output_text`` with a string ``text``, ``input_image`` with a non-blank ``image_url`` or a ``file_id``,
    ``refusal`` with a string ``refusal``; other part types pass); a ``function_call`` a non-empty ``call_id``
    and ``name`` and JSON-text ``arguments`` (an object is serialised, as on Chat); a ``function_call_output``
    a non-empty ``call_id`` and an ``output`` string or list of content parts. A dict with neither ``type``
    nor ``role`` is an error. A problem raises ``ValueError`` (``TypeError`` for what is not an item at all,
    or object arguments JSON cannot encode) naming the item's position. Other item types (``reasoning``,
    hosted tool calls, item references, types added later) are forwarded verbatim: the server knows them
    better than this function does.

    >>> to_responses_input([assistant_item("", [ToolCall("c1", "f", "{}")])])
    [{'type': 'function_call', 'call_id': 'c1', 'name': 'f', 'arguments': '{}'}]
    >>> to_responses_input([{"role": "robot", "content": "hi"}])
    Traceback (most recent call last):
    ...
    ValueError: item 0: unknown message role 'robot'
    """
    out: list[Any] = []
    for index, item in enumerate(items):
        # Nearly every item is a plain dict: it skips both checks.
        if type(item) is not dict and _is_message_value(item, index):
            out.extend(_message_to_responses(item))
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
            out.append(item)
        elif kind == "message":
            role = item.get("role")
            if role == "assistant":
                if item.get("content") is not None or "tool_calls" not in item:  # Chat calls alone need none
                    item = _with_content(item, index, "output_text")
                out.extend(_assistant_map_to_responses(item, index))
            elif isinstance(role, str) and role in _RESPONSES_ROLES:
                out.append(_with_content(item, index))
            elif role == "tool":
                call_id = item.get("tool_call_id")
                if not isinstance(call_id, str) or not call_id:
                    raise ValueError(f"{_where(index)}: a tool message needs a non-empty 'tool_call_id'")
                out.append(function_call_output_item(call_id, _output_text(item.get("content"), index)))
            else:
                raise ValueError(f"{_where(index)}: unknown message role {role!r}")
        elif kind == "function_call":
            out.append(_responses_function_call(item, index))
        elif kind is None:
            raise ValueError(
                f"{_where(index)}: an item needs a string 'type' (or a 'role', for a message), "
                f"got keys {sorted(map(str, item))}"
            )
        else:
            out.append(item)  # reasoning, hosted tool calls, item references, future types: verbatim
    return out


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
        out.append(
            call if call_id == call.id and name == call.name else ToolCall(call_id, name, call.arguments)
        )
    return tuple(out)

"""Conversation items to Chat Completions messages: ``to_chat_messages``, with its per-run
``ChatMessageCache``, and the readers of the Chat shapes (content parts, Chat-style ``tool_calls``, Chat
reasoning, tool outputs) that ``responses_items`` reuses to convert those shapes.

Pure functions only: no I/O, no awaits. Nothing is silently dropped: an item with no Chat form raises
``TypeError`` / ``ValueError`` naming its position; ``reasoning`` items (Responses) are the one documented
skip. ``to_chat_messages`` runs over the whole memory on every Chat step (the cache makes later steps convert
only new items): keep it lean. Import it from ``agentflow.agent.items``, which re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

import attrs

from ..model.messages import (
    CALL_PROVIDER_FIELDS,
    MESSAGE_PROVIDER_FIELDS,
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
from .item_shapes import _SEQUENCES, MAPPINGS, _arguments_text, _call_id, _is_message_value, _kind, _where

__all__ = ["ChatMessageCache", "to_chat_messages"]

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_IMAGE_PARTS = frozenset({"input_image", "image_url"})


def _chat_tool_calls(raw: Any, index: int) -> list[ToolCall]:
    """The calls of a Chat-style ``tool_calls`` list: function calls, custom calls (``{"type": "custom",
    "custom": {"name", "input"}}``) and their provider fields (``CALL_PROVIDER_FIELDS``), as the Chat codec
    decodes them from an answer."""
    if raw is None:
        return []
    if not isinstance(raw, _SEQUENCES) or isinstance(raw, str):
        raise ValueError(f"{_where(index)}: 'tool_calls' must be a list, got {type(raw).__name__}")
    calls: list[ToolCall] = []
    for entry in raw:
        is_map = isinstance(entry, MAPPINGS)
        if is_map and entry.get("type") == "custom":
            custom = entry.get("custom")
            if not isinstance(custom, MAPPINGS) or not isinstance(name := custom.get("name"), str):
                raise ValueError(
                    f"{_where(index)}: a custom tool call needs a 'custom' with a 'name', got {entry!r}"
                )
            call = ToolCall(str(entry.get("id") or ""), name, _arguments_text(custom.get("input")), "custom")
        else:
            function = entry.get("function") if is_map else None
            if not isinstance(function, MAPPINGS) or not isinstance(name := function.get("name"), str):
                raise ValueError(
                    f"{_where(index)}: each tool call needs a 'function' with a 'name', got {entry!r}"
                )
            call = ToolCall(str(entry.get("id") or ""), name, _arguments_text(function.get("arguments")))
        # Most entries hold no provider field: a dict gets one ``keys()`` view test, not a lookup per field.
        extra = (
            None
            if type(entry) is dict and entry.keys().isdisjoint(CALL_PROVIDER_FIELDS)
            else (_provider_fields(entry, CALL_PROVIDER_FIELDS))
        )
        calls.append(call if extra is None else attrs.evolve(call, provider_fields=extra))
    return calls


def _provider_fields(item: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The provider fields (``keys``) ``item`` holds, as ``provider_fields``; ``None`` when it holds none."""
    found: dict[str, Any] | None = None
    for key in keys:
        value = item.get(key)
        if value is not None:
            found = found or {}
            found[key] = value
    return found


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
        return AiMessage(
            text, calls, reasoning, body.refusal, field, _provider_fields(item, MESSAGE_PROVIDER_FIELDS)
        )
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


ChatMessageCache: TypeAlias = dict[int, tuple[Any, Message]]
"""Chat messages already converted from dict items, by ``id(item)`` (each with its item: an id is only unique
while its object lives, so the cache keeps the item alive and checks it is the same)."""


def to_chat_messages(items: Iterable[Any], *, cache: ChatMessageCache | None = None) -> list[Message]:
    """Convert conversation items to Chat Completions messages, in order.

    ``Message`` values pass through. ``message`` dicts (string content, or ``input_text``/``output_text``/
    ``input_image``/``refusal`` parts) become the message of their role; text parts are concatenated, and any
    image makes a multimodal ``UserMessage``; an assistant dict's Chat-style ``tool_calls`` are kept (custom
    calls and their provider fields too), and so are its provider fields (``MESSAGE_PROVIDER_FIELDS``:
    OpenRouter's ``reasoning_details``), which the Chat codec sends back as they are.
    ``function_call_output`` becomes a ``ToolResultMessage``. ``function_call`` items become tool calls of
    the assistant message right before them (a Responses turn — text, then calls — is one Chat turn), or of
    a new assistant message. An assistant dict's ``reasoning_content`` or ``reasoning`` (what a Chat server
    sent) becomes the message's ``reasoning`` with that key as its ``reasoning_field``, so it goes back under
    the same name. ``reasoning`` items are skipped: Chat Completions cannot send them back.
    Anything else raises ``TypeError`` / ``ValueError``.

    With a ``cache`` (one per run), a ``message`` or ``function_call_output`` dict converted once is not
    converted again: a run's later steps convert only their new items. Items must not be mutated once in
    memory (see ``InMemoryMemory``), which is what makes this safe.

    >>> from agentflow.agent.items import function_call_item
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

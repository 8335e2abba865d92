"""Unified chat messages and tool calls.

Messages are immutable values; a provider codec maps them onto its wire format. Tool-call arguments
stay the raw JSON string the model produced, so nothing is reformatted or lost on a round trip.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

from ..exact_json import loads as exact_loads

__all__ = [
    "CALL_PROVIDER_FIELDS",
    "MESSAGE_PROVIDER_FIELDS",
    "REASONING_FIELDS",
    "AiMessage",
    "ContentPart",
    "DeveloperMessage",
    "ImagePart",
    "Message",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolCallKind",
    "ToolResultMessage",
    "UserMessage",
]


@attrs.frozen
class TextPart:
    """A text part of a multimodal user message."""

    text: str


@attrs.frozen
class ImagePart:
    """An image part of a user message: an ``https:`` or ``data:`` URL, with an optional detail level.

    >>> ImagePart("https://example.com/cat.png", detail="low")
    ImagePart(url='https://example.com/cat.png', detail='low')
    """

    url: str
    detail: str | None = None


ContentPart: TypeAlias = TextPart | ImagePart


def _to_parts(value: str | Sequence[ContentPart]) -> str | tuple[ContentPart, ...]:
    return value if isinstance(value, str) else tuple(value)


@attrs.frozen
class SystemMessage:
    """Instructions from the application (wire role ``system``)."""

    role: ClassVar[str] = "system"
    text: str


@attrs.frozen
class DeveloperMessage:
    """Instructions from the developer (wire role ``developer``, used by newer OpenAI models)."""

    role: ClassVar[str] = "developer"
    text: str


@attrs.frozen
class UserMessage:
    """A user turn: plain text, or a sequence of text and image parts.

    >>> UserMessage("What is CAS?").text
    'What is CAS?'
    >>> UserMessage([TextPart("Describe"), ImagePart("https://x/y.png")]).text
    'Describe'
    """

    role: ClassVar[str] = "user"
    content: str | tuple[ContentPart, ...] = attrs.field(converter=_to_parts)
    name: str | None = None

    @property
    def text(self) -> str:
        """The text of the message; the text parts joined by newlines for multimodal content."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))


ToolCallKind: TypeAlias = Literal["function", "custom"]
"""What a tool call calls: a ``function`` tool (JSON ``arguments``), or a ``custom`` tool (GPT-5's free-form
tools: ``arguments`` holds the tool's ``input`` text, which need not be JSON)."""

CALL_PROVIDER_FIELDS = ("extra_content",)
"""Wire fields of a Chat tool call kept verbatim in ``ToolCall.provider_fields`` and sent back with the call:
Gemini's ``extra_content`` (``{"google": {"thought_signature": …}}``, which Gemini 3 wants back on the next
turn of a tool loop)."""

MESSAGE_PROVIDER_FIELDS = ("reasoning_details",)
"""Wire fields of a Chat assistant message kept verbatim in ``AiMessage.provider_fields`` and sent back with
it: OpenRouter's ``reasoning_details`` (its reasoning blocks, with their signatures and encrypted data)."""


@attrs.frozen(repr=False)
class ToolCall:
    """A tool call requested by the model.

    ``arguments`` is the raw JSON text exactly as the model produced it; ``parse_arguments()`` decodes it
    (an empty string means ``{}``). For a ``custom`` call (``kind``) it is the tool's free-form ``input``.

    ``provider_fields`` holds provider-specific wire fields of the call (``CALL_PROVIDER_FIELDS``) exactly as
    the server sent them, or is ``None`` (the usual case): opaque data a codec sends back with the call, and
    only then. It is left out of event JSON (``to_dict()``) and of the hash.
    """

    id: str
    name: str
    arguments: str = ""
    kind: ToolCallKind = "function"
    provider_fields: Mapping[str, Any] | None = attrs.field(
        default=None, hash=False, metadata={"json": False}
    )

    def parse_arguments(self) -> Any:
        """Decode ``arguments``; ``""`` (some servers send it for no-argument calls) is ``{}``.

        Integers keep every digit, even beyond 64 bits. Raises ``orjson.JSONDecodeError`` (a ``ValueError``)
        when the text is not JSON.

        >>> ToolCall("call_1", "store", '{"account": 100000000000000000001}').parse_arguments()
        {'account': 100000000000000000001}
        """
        if not self.arguments.strip():
            return {}
        return exact_loads(self.arguments)

    def __repr__(self) -> str:
        # The usual call (a function call without provider fields) reads as it always has.
        text = f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={self.arguments!r}"
        if self.kind != "function":
            text += f", kind={self.kind!r}"
        if self.provider_fields is not None:
            text += f", provider_fields={self.provider_fields!r}"
        return text + ")"


def _to_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return tuple(value)


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""The wire fields an assistant turn's reasoning comes in and goes back in (``AiMessage.reasoning_field``):
DeepSeek's ``reasoning_content``, and ``reasoning`` (OpenRouter, Groq)."""


@attrs.frozen(repr=False)
class AiMessage:
    """An assistant turn: text, tool calls, reasoning and refusal (any of them may be absent).

    ``text`` is ``None`` when the model only called tools, as on the wire.

    ``reasoning_field`` names the wire field the reasoning came in (``"reasoning_content"`` from DeepSeek,
    ``"reasoning"`` from OpenRouter or Groq), or is ``None`` when the server sent none. A codec sends the
    reasoning back under that name, and only then: DeepSeek's thinking mode rejects a tool-call turn without
    its ``reasoning_content``, while OpenAI rejects fields it does not know. It may be set while
    ``reasoning`` is ``None``: the server sent the field empty (the Chat codec sends it back empty only on a
    turn with tool calls, where DeepSeek requires it). A field other than
    those of ``REASONING_FIELDS`` is refused (``ValueError``) when the message is sent.

    ``provider_fields`` holds provider-specific wire fields of the message (``MESSAGE_PROVIDER_FIELDS``:
    OpenRouter's ``reasoning_details``) exactly as the server sent them, or is ``None`` (the usual case). The
    Chat codec sends them back with the message, and only then (OpenRouter wants its reasoning blocks back on
    a tool loop; other servers never see them). Left out of event JSON (``to_dict()``) and of the hash.

    >>> AiMessage("4", reasoning="2+2", reasoning_field="reasoning_content").reasoning_field
    'reasoning_content'
    """

    role: ClassVar[str] = "assistant"
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_to_calls)
    reasoning: str | None = None
    refusal: str | None = None
    # Not validated here (an attrs validator costs every answer decoded): a codec refuses a field it does not
    # know (``REASONING_FIELDS``) when it sends the message.
    reasoning_field: str | None = None
    provider_fields: Mapping[str, Any] | None = attrs.field(
        default=None, hash=False, metadata={"json": False}
    )

    @property
    def has_tool_calls(self) -> bool:
        """Whether the model asked for at least one tool call."""
        return bool(self.tool_calls)

    def __repr__(self) -> str:
        text = (
            f"AiMessage(text={self.text!r}, tool_calls={self.tool_calls!r}, reasoning={self.reasoning!r}, "
            f"refusal={self.refusal!r}, reasoning_field={self.reasoning_field!r}"
        )
        if self.provider_fields is not None:
            text += f", provider_fields={self.provider_fields!r}"
        return text + ")"


@attrs.frozen
class ToolResultMessage:
    """The result of one tool call, sent back to the model (wire role ``tool``)."""

    role: ClassVar[str] = "tool"
    call_id: str
    text: str
    name: str | None = None


Message: TypeAlias = SystemMessage | DeveloperMessage | UserMessage | AiMessage | ToolResultMessage


def message_from_mapping(data: Mapping[str, Any]) -> Message:
    """Build a message from a plain ``{"role": …, "content": …}`` mapping (a convenience for users).

    >>> message_from_mapping({"role": "user", "content": "hi"})
    UserMessage(content='hi', name=None)
    """
    role = data.get("role")
    content = data.get("content")
    if role == "system":
        return SystemMessage(str(content or ""))
    if role == "developer":
        return DeveloperMessage(str(content or ""))
    if role == "user":
        return UserMessage(str(content or ""))
    if role == "assistant":
        return AiMessage(text=None if content is None else str(content))
    if role == "tool":
        return ToolResultMessage(str(data.get("tool_call_id", "")), str(content or ""))
    raise ValueError(f"unknown message role {role!r}; expected system, developer, user, assistant or tool")

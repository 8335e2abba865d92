"""Typed values of the OpenAI Responses protocol: ``ResponsesRequest`` and ``ResponsesResponse``.

Plain immutable data. Encoding to and decoding from the wire lives in ``responses_codec``; nothing here does
I/O or knows about HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from ...model.messages import AiMessage, ToolCall, UserMessage
from ...model.response import NOT_IN_JSON, ChatResponse, FinishReason, TokenUsage
from ...model.tools import ToolChoice, ToolSpec

__all__ = [
    "InputItem",
    "ResponsesRequest",
    "ResponsesResponse",
    "ToolChoiceLike",
    "ToolLike",
    "check_request_fields",
    "merge_include",
]

InputItem: TypeAlias = Any
"""An input item: an agentflow message, or a raw wire item (a mapping sent verbatim)."""

ToolLike: TypeAlias = ToolSpec | Mapping[str, Any]
"""A function tool, or a raw tool mapping (hosted tools such as ``{"type": "web_search"}``) sent verbatim."""

ToolChoiceLike: TypeAlias = ToolChoice | str | Mapping[str, Any]
"""``ToolChoice``, one of ``"auto"``/``"none"``/``"required"``, or a raw mapping sent verbatim."""

_TOOL_CHOICE_STRINGS = frozenset({"auto", "none", "required"})


_INPUT_FORMS = "a string or a sequence of input items (agentflow messages or raw item mappings)"


def _to_input(value: str | Iterable[InputItem]) -> tuple[InputItem, ...]:
    if isinstance(value, str):
        return (UserMessage(value),)
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"input must be {_INPUT_FORMS}, not {type(value).__name__}")
    return tuple(value)


def _optional_sequence(value: Iterable[Any] | None, name: str, forms: str) -> tuple[Any, ...] | None:
    """``None``, or any sequence as a tuple; a string, bytes, a mapping or a scalar raise ``TypeError`` naming
    the field (a lone string would otherwise become a tuple of characters)."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be {forms}, not {type(value).__name__}")
    return tuple(value)


def _to_tools(value: Iterable[ToolLike] | None) -> tuple[ToolLike, ...] | None:
    return _optional_sequence(value, "tools", "a sequence of ToolSpec values or tool mappings")


def include_entries(value: Iterable[str] | None, name: str = "include") -> tuple[str, ...] | None:
    """``include`` entries as a tuple of strings (``None`` stays ``None``); ``TypeError`` naming ``name``
    for anything else."""
    forms = "a sequence of strings such as ['reasoning.encrypted_content']"
    entries = _optional_sequence(value, name, forms)
    if entries is not None and not all(isinstance(entry, str) for entry in entries):
        raise TypeError(f"{name} must be {forms}, not {value!r}")
    return entries


def merge_include(*groups: Iterable[str] | None) -> tuple[str, ...] | None:
    """The ``include`` entries of every group, in order, each once; ``None`` when no group is set.

    ``include`` lists extra output to return, so entries from different places add up rather than replace.

    >>> merge_include(["message.output_text.logprobs"], None, ["reasoning.encrypted_content"])
    ('message.output_text.logprobs', 'reasoning.encrypted_content')
    """
    present = [group for group in groups if group is not None]
    if not present:
        return None
    return tuple(dict.fromkeys(entry for group in present for entry in group))


def _check_tool_choice(_: Any, __: attrs.Attribute[Any], value: ToolChoiceLike | None) -> None:
    if isinstance(value, str) and value not in _TOOL_CHOICE_STRINGS:
        raise ValueError(
            f"tool_choice {value!r} is not one of 'auto', 'none', 'required'; use ToolChoice.function(name) "
            "or a mapping such as {'type': 'web_search'}"
        )
    if isinstance(value, Mapping):
        ToolChoice.from_mapping(value)  # a function choice without a name fails here, not at the server
    elif value is not None and not isinstance(value, str | ToolChoice):
        raise TypeError(
            "tool_choice must be a ToolChoice, 'auto', 'none', 'required' or a mapping, "
            f"not {type(value).__name__}"
        )


Validator: TypeAlias = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _optional(kinds: type | tuple[type, ...], forms: str) -> Validator:
    """A validator: ``None``, or an instance of ``kinds`` (``bool`` only when asked for: it is an ``int``).

    The ``TypeError`` names the field and what it takes, so ``reasoning="low"`` does not fail deep in the
    encoder with a message about dictionary update sequences.
    """
    allows_bool = kinds is bool or (isinstance(kinds, tuple) and bool in kinds)

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, kinds) or (isinstance(value, bool) and not allows_bool):
            raise TypeError(f"{attribute.name} must be {forms}, not {type(value).__name__} ({value!r:.80})")

    return check


def _to_extra_body(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"extra_body must be a mapping of top-level body fields, not {type(value).__name__}")
    return value


@attrs.frozen
class ResponsesRequest:
    """One ``POST /responses`` call. Every field but ``input`` is optional; unset (``None``) is not sent.

    ``input`` holds agentflow messages or raw item mappings (e.g. reasoning items with ``encrypted_content``
    from an earlier response, passed through verbatim); a plain string is one user message.
    ``extra_body`` is written into the body first, so any standard field set here wins over it, except
    ``include``, whose entries are added to an ``extra_body`` ``include`` list. A field of the wrong type
    (``reasoning="low"``, ``input=None``) raises ``TypeError`` naming the field and the forms it takes.

    >>> ResponsesRequest("Say hi", model="gpt-5-mini", max_output_tokens=50).input
    (UserMessage(content='Say hi', name=None),)
    """

    input: tuple[InputItem, ...] = attrs.field(converter=_to_input)
    model: str | None = attrs.field(default=None, validator=_optional(str, "a model name"))
    instructions: str | None = attrs.field(default=None, validator=_optional(str, "a string"))
    tools: tuple[ToolLike, ...] | None = attrs.field(default=None, converter=_to_tools)
    tool_choice: ToolChoiceLike | None = attrs.field(default=None, validator=_check_tool_choice)
    parallel_tool_calls: bool | None = attrs.field(default=None, validator=_optional(bool, "True or False"))
    temperature: float | None = attrs.field(default=None, validator=_optional((int, float), "a number"))
    top_p: float | None = attrs.field(default=None, validator=_optional((int, float), "a number"))
    max_output_tokens: int | None = attrs.field(default=None, validator=_optional(int, "an integer"))
    reasoning: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_optional(Mapping, "a mapping such as {'effort': 'low', 'summary': 'auto'}")
    )
    store: bool | None = attrs.field(default=None, validator=_optional(bool, "True or False"))
    user: str | None = attrs.field(default=None, validator=_optional(str, "a string"))
    previous_response_id: str | None = attrs.field(default=None, validator=_optional(str, "a response id"))
    text: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_optional(Mapping, "a mapping such as {'format': {'type': 'json_object'}}")
    )
    include: tuple[str, ...] | None = attrs.field(
        default=None,
        converter=include_entries,
    )
    metadata: Mapping[str, str] | None = attrs.field(
        default=None, validator=_optional(Mapping, "a mapping of string keys to string values")
    )
    truncation: str | None = attrs.field(default=None, validator=_optional(str, "'auto' or 'disabled'"))
    extra_body: Mapping[str, Any] = attrs.field(factory=dict, converter=_to_extra_body)

    @classmethod
    def coerce(cls, value: ResponsesRequest | str | Sequence[InputItem]) -> ResponsesRequest:
        """Accept a request, a string (one user message) or a sequence of input items."""
        if isinstance(value, ResponsesRequest):
            return value
        return cls(value)

    def merged(
        self, defaults: Mapping[str, Any] | None = None, overrides: Mapping[str, Any] | None = None
    ) -> ResponsesRequest:
        """This request with ``defaults`` filling its unset fields and ``overrides`` replacing fields.

        ``extra_body`` maps merge key by key (defaults < request < overrides), and so do ``text`` and
        ``reasoning`` objects (defaults < request), whose keys are independent settings (``format``,
        ``verbosity``; ``effort``, ``summary``); ``include`` entries of the defaults are added to the
        request's. An override replaces ``text``, ``reasoning`` or ``include``.
        Unknown names raise ``TypeError``; ``None`` in ``overrides`` leaves a field as it is.

        >>> r = ResponsesRequest("hi", temperature=0.2)
        >>> r = r.merged({"model": "m", "temperature": 1.0}, {"top_p": 0.5})
        >>> (r.model, r.temperature, r.top_p)
        ('m', 0.2, 0.5)
        """
        defaults = check_request_fields(defaults or {})
        overrides = check_request_fields(overrides or {})
        if not defaults and not overrides:
            return self
        changes: dict[str, Any] = {}
        for name, value in defaults.items():
            if name == "extra_body":
                changes["extra_body"] = {**(value or {}), **self.extra_body}
            elif name == "include" and value is not None and self.include is not None:
                # Extra output adds up: a default entry is kept beside the request's own (e.g. the
                # ``reasoning.encrypted_content`` a stateless agent run adds).
                changes["include"] = merge_include(value, self.include)
            elif name in _KEYED_SETTINGS and isinstance(value, Mapping) and getattr(self, name) is not None:
                # A request's ``format`` (an agent's output type) must not drop the model's ``verbosity``,
                # nor its ``effort`` the model's reasoning ``summary``.
                changes[name] = {**value, **getattr(self, name)}
            elif getattr(self, name) is None and value is not None:
                changes[name] = value
        for name, value in overrides.items():
            if name == "extra_body":
                changes["extra_body"] = {**changes.get("extra_body", self.extra_body), **(value or {})}
            elif value is not None:
                changes[name] = value
        return attrs.evolve(self, **changes) if changes else self


_KEYED_SETTINGS = frozenset({"text", "reasoning"})
"""Object fields whose keys are settings of their own: a request's keys go over the model's defaults."""

_REQUEST_FIELDS = frozenset(f.name for f in attrs.fields(ResponsesRequest)) - {"input"}
_HEADERS_HINT = (
    "headers for one call go in extra_headers={...} (a keyword of the call), for every call in "
    "custom_headers={...} on the model"
)
# Names an openai SDK user tries, and where each thing goes instead.
_FIELD_HINTS: dict[str, str] = {
    "custom_parameters": "provider-specific body fields go in extra_body={...}",
    "custom": "provider-specific body fields go in extra_body={...}",
    "extra_headers": _HEADERS_HINT,
    "default_headers": _HEADERS_HINT,
    "custom_headers": _HEADERS_HINT,
    "extra_query": "query parameters go in the model's base_url ('https://host/v1?api-version=...')",
    "timeout": "time limits are set on the model: read_timeout=..., or timeout=Timeout(...)",
}


def check_request_fields(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """``fields`` unchanged if every name is a ``ResponsesRequest`` field other than ``input``.

    Raises ``TypeError`` naming the unknown keys, and where each option goes instead (a misspelt field, a
    header, a provider-specific body field), so a typo never turns into a silently ignored option.
    """
    unknown = set(fields) - _REQUEST_FIELDS
    if unknown:
        from difflib import get_close_matches  # the error path only: difflib costs ~5 ms to import

        names = sorted(unknown)
        notes = [_FIELD_HINTS[name] for name in names if name in _FIELD_HINTS]
        guesses = "".join(
            f" (did you mean {close[0]!r}?)"
            for name in names
            if name not in _FIELD_HINTS and (close := get_close_matches(name, _REQUEST_FIELDS, 1))
        )
        if not notes:
            notes.append("provider-specific body fields go in extra_body={...}")
        raise TypeError(
            f"unknown Responses request option(s) {names}{guesses}; expected some of "
            f"{sorted(_REQUEST_FIELDS)}; " + "; ".join(notes)
        )
    return fields


@attrs.frozen
class ResponsesResponse:
    """A decoded ``/responses`` result: the raw output items verbatim plus derived views.

    - ``output``: every output item exactly as the server sent it (unknown fields such as
      ``encrypted_content`` survive, so the items can be replayed as input of the next call);
    - ``output_text``: the ``output_text`` parts of each message, concatenated, and the texts of separate
      messages joined by a blank line; ``refusal``: all refusal parts, or ``None``;
    - ``reasoning``: reasoning summaries and reasoning text, parts separated by a blank line, or ``None``;
    - ``tool_calls``: the finished ``function_call`` items as ``ToolCall(call_id, name, arguments)``, the
      arguments raw (an ``in_progress`` / ``incomplete`` call may be truncated: it stays in ``output`` only);
    - ``status``: ``completed``, ``incomplete``, ``failed``, ``in_progress`` (a cut-off stream)…;
    - ``raw``: the decoded response object.
    """

    id: str | None
    model: str | None
    status: str | None
    output: tuple[dict[str, Any], ...] = attrs.field(repr=False)
    output_text: str = ""
    refusal: str | None = None
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage | None = None
    incomplete_details: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    raw: Any = attrs.field(default=None, repr=False, eq=False, metadata=NOT_IN_JSON)

    @property
    def incomplete_reason(self) -> str | None:
        """Why the response is incomplete (e.g. ``"max_output_tokens"``, ``"content_filter"``), if it is."""
        details = self.incomplete_details
        reason = details.get("reason") if details else None
        return None if reason is None else str(reason)

    @property
    def finish_reason(self) -> FinishReason:
        """The unified finish reason.

        ``completed`` with tool calls → ``TOOL_EXECUTION``; ``completed`` → ``STOP``; ``incomplete``
        because of ``max_output_tokens`` → ``LENGTH``, because of ``content_filter`` → ``CONTENT_FILTER``;
        anything else → ``OTHER``.
        A missing status (some compatible servers) counts as completed.
        """
        status = self.status
        if status in ("completed", None):
            return FinishReason.TOOL_EXECUTION if self.tool_calls else FinishReason.STOP
        if status == "incomplete":
            reason = self.incomplete_reason
            if reason == "max_output_tokens":
                return FinishReason.LENGTH
            if reason == "content_filter":
                return FinishReason.CONTENT_FILTER
        return FinishReason.OTHER

    def to_chat_response(self) -> ChatResponse:
        """This response as a unified ``ChatResponse`` (the ``ChatModel`` view).

        ``metadata`` holds ``id``, ``model``, ``created``, ``status`` (and ``incomplete_details`` when set);
        ``raw`` is the decoded response object, whose ``output`` holds the raw items.
        """
        message = AiMessage(
            text=self.output_text or None,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
            refusal=self.refusal,
        )
        metadata: dict[str, Any] = {}
        if self.id is not None:
            metadata["id"] = self.id
        if self.model is not None:
            metadata["model"] = self.model
        created = self.raw.get("created_at") if isinstance(self.raw, Mapping) else None
        if created is not None:
            metadata["created"] = created
        if self.status is not None:
            metadata["status"] = self.status
        if self.incomplete_details:
            metadata["incomplete_details"] = dict(self.incomplete_details)
        return ChatResponse(message, self.usage, self.finish_reason, metadata, self.raw)

"""The unified chat request: messages plus parameters.

Every parameter defaults to ``None``, meaning "not set": a provider sends only what is set, so a
server's own defaults apply otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from .messages import Message
from .tools import ToolChoice, ToolSpec

__all__ = ["ChatParameters", "ChatRequest", "coerce_messages", "parameters_from"]


def _opt_tuple(value: Sequence[Any] | None) -> tuple[Any, ...] | None:
    # Already a tuple (or unset) is the usual case: every request of a run converts again.
    return value if value is None or type(value) is tuple else tuple(value)


def _stop(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    # One stop sequence may be given as a plain string (as the OpenAI API allows), never split into letters.
    if isinstance(value, str):
        return (value,)
    return _opt_tuple(value)


def _tools(
    value: Iterable[ToolSpec | Mapping[str, Any]] | None, _spec: type[ToolSpec] = ToolSpec
) -> tuple[ToolSpec, ...] | None:
    # A tuple of ToolSpecs is the usual case (``merged`` passes the converted tuple again): checked, not
    # rebuilt, before any costlier test (``_spec``: a local name, read once per item).
    if value is None:
        return None
    if type(value) is tuple:
        for tool in value:
            if type(tool) is not _spec:
                break
        else:
            return value
    if isinstance(value, str | bytes | Mapping):
        raise TypeError(f"tools must be a sequence of ToolSpec, not a {type(value).__name__}")
    return tuple(ToolSpec.coerce(t) for t in value)


def _tool_choice(value: ToolChoice | str | Mapping[str, Any] | None) -> ToolChoice | None:
    if value is None or type(value) is ToolChoice:
        return value
    return ToolChoice.coerce(value)


def _check_response_format(_: Any, __: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(
            "response_format must be a mapping such as {'type': 'json_object'} or "
            f"{{'type': 'json_schema', 'json_schema': {{…}}}}, not {type(value).__name__} {value!r}"
        )


def coerce_messages(value: Iterable[Message]) -> tuple[Message, ...]:
    """The messages of a plain sequence (a ``ChatRequest``'s, or one given where a request may be).

    >>> from agentflow import UserMessage
    >>> coerce_messages([UserMessage("hi")])
    (UserMessage(content='hi', name=None),)
    """
    kind = type(value)
    if kind is tuple:
        return value  # type: ignore[return-value]
    if kind is list:  # the usual case: neither a string nor a non-iterable
        return tuple(value)
    if isinstance(value, str | bytes):
        # ``tuple("hello")`` would be five one-letter "messages".
        raise TypeError("expected a list of messages, not a string: [UserMessage(text)]")
    if not isinstance(value, Iterable):
        raise TypeError(
            f"expected a ChatRequest or a sequence of messages, not a {type(value).__name__} "
            "(wrap a single message in a list: [message])"
        )
    return tuple(value)


@attrs.frozen
class ChatParameters:
    """Generation parameters. ``custom`` holds provider-specific top-level fields, written first and
    overridden by any standard field of the same name.

    ``tools`` takes ``ToolSpec``\\ s or function tool mappings (read by ``ToolSpec.coerce``);
    ``tool_choice`` a ``ToolChoice``, ``"auto"`` / ``"none"`` / ``"required"`` or a function choice
    mapping (``ToolChoice.coerce``); ``response_format`` a mapping. Other values raise ``TypeError`` /
    ``ValueError`` here, at construction.

    >>> ChatParameters(model="gpt-4o-mini", temperature=0.2).merged(ChatParameters(temperature=0.7))
    ... # doctest: +ELLIPSIS
    ChatParameters(model='gpt-4o-mini', temperature=0.7, ...)
    """

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=_stop)
    tools: tuple[ToolSpec, ...] | None = attrs.field(default=None, converter=_tools)
    tool_choice: ToolChoice | None = attrs.field(default=None, converter=_tool_choice)
    parallel_tool_calls: bool | None = None
    response_format: Mapping[str, Any] | None = attrs.field(default=None, validator=_check_response_format)
    reasoning_effort: str | None = None
    seed: int | None = None
    user: str | None = None
    custom: Mapping[str, Any] = attrs.field(factory=dict)

    def merged(self, override: ChatParameters) -> ChatParameters:
        """These parameters with every field that ``override`` sets taking its value.

        ``custom`` maps are merged key by key, the override's keys winning. When ``override`` sets nothing,
        the result is ``self`` itself.
        """
        # Runs for every model call (defaults < request < overrides), so it builds the result directly:
        # ``attrs.evolve`` plus a loop over ``attrs.fields`` cost about twice as much.
        values: list[Any] = []
        changed = False
        for name in _STANDARD_FIELDS:
            value = getattr(override, name)
            if value is None:
                value = getattr(self, name)
            else:
                changed = True
            values.append(value)
        extra = override.custom
        if not changed and not extra:
            return self
        values.append({**self.custom, **extra} if extra else self.custom)
        return ChatParameters(*values)


_STANDARD_FIELDS = tuple(field.name for field in attrs.fields(ChatParameters))[:-1]
if attrs.fields(ChatParameters)[-1].name != "custom":  # ``merged`` passes every field positionally
    raise TypeError("ChatParameters.custom must stay the last field")


@attrs.frozen
class ChatRequest:
    """Messages and parameters for one model call.

    >>> from agentflow import UserMessage
    >>> ChatRequest([UserMessage("What is CAS?")]).messages[0].text
    'What is CAS?'
    """

    messages: tuple[Message, ...] = attrs.field(converter=coerce_messages)
    parameters: ChatParameters = attrs.field(factory=ChatParameters)

    @classmethod
    def coerce(cls, value: ChatRequest | Sequence[Message]) -> ChatRequest:
        """Accept either a request or a plain sequence of messages."""
        if isinstance(value, ChatRequest):
            return value
        return cls(value)


_OVERRIDABLE = frozenset(field.name for field in attrs.fields(ChatParameters)) - {"custom"}
_EXTRA_BODY = "extra_body"

# Names an openai SDK user (or a reader of ChatParameters) tries, and where each thing goes instead. Per call:
_CALL_HINTS: dict[str, str] = {
    "custom_parameters": "provider-specific body fields for one call go in extra_body={...} (or "
    "ChatParameters(custom={...}) in a ChatRequest); custom_parameters= on the model sets them for every "
    "call",
    "extra_headers": "headers for one call go in extra_headers={...} (a keyword of the OpenAI models' "
    "calls), for every call in custom_headers={...} on the model",
    "extra_query": "query parameters go in the model's base_url ('https://host/v1?api-version=...'), sent "
    "with every call",
    "timeout": "time limits are set on the model: read_timeout=..., or timeout=Timeout(...)",
    "stream": "call model.stream(...) for a streamed answer",
}
_CALL_HINTS["custom"] = _CALL_HINTS["custom_parameters"]
_CALL_HINTS["custom_headers"] = _CALL_HINTS["default_headers"] = _CALL_HINTS["extra_headers"]
# On a model, as keywords of its constructor (the HTTP options are checked before these):
_MODEL_HINTS: dict[str, str] = {
    "custom": "provider-specific body fields go in custom_parameters={...} (or extra_body={...})",
}


def parameters_from(values: Mapping[str, Any], where: str, *, per_call: bool = True) -> ChatParameters:
    """``ChatParameters`` from keyword values: a call's overrides (``per_call``) or a model's defaults
    (``per_call=False``), named ``where`` in the error.

    ``extra_body`` (the openai SDK's name) is accepted as ``custom``: provider-specific top-level body
    fields. Any other name that is no field raises ``TypeError`` saying where that option goes instead
    (``custom_parameters`` and ``extra_headers`` on a call, a misspelt field…); a bad value raises its own
    error.

    >>> parameters_from({"temperature": 0, "extra_body": {"top_k": 5}}, "override")
    ... # doctest: +ELLIPSIS
    ChatParameters(model=None, temperature=0, ..., custom={'top_k': 5})
    >>> parameters_from({"temprature": 0}, "parameter override(s)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: unknown parameter override(s) ['temprature'] (did you mean 'temperature'?); ...
    """
    unknown = set(values) - _OVERRIDABLE - {_EXTRA_BODY}
    if unknown:
        raise TypeError(_unknown_message(unknown, where, per_call))
    if _EXTRA_BODY not in values:
        return ChatParameters(**values)
    fields = dict(values)
    extra = fields.pop(_EXTRA_BODY)
    if extra is None:
        return ChatParameters(**fields)
    if not isinstance(extra, Mapping):
        raise TypeError(
            f"extra_body must be a mapping of provider-specific body fields, such as {{'top_k': 20}}, not "
            f"{type(extra).__name__}"
        )
    return ChatParameters(**fields, custom=dict(extra))


def _unknown_message(unknown: set[str], where: str, per_call: bool) -> str:
    from difflib import get_close_matches  # the error path only: difflib costs ~5 ms to import

    names = sorted(unknown)
    hints = _CALL_HINTS if per_call else _MODEL_HINTS
    notes = [hints[name] for name in names if name in hints]
    guesses = {
        name: close[0]
        for name in names
        if name not in hints and (close := get_close_matches(name, _OVERRIDABLE, 1))
    }
    guess = "".join(f" (did you mean {guessed!r}?)" for guessed in guesses.values())
    if not notes:
        home = "extra_body={...} on the call" if per_call else "custom_parameters={...}"
        notes.append(f"provider-specific body fields go in {home}")
    return (
        f"unknown {where} {names}{guess}; expected ChatParameters fields: {sorted(_OVERRIDABLE)}; "
        + "; ".join(notes)
    )

"""``ChatModelClient``: an ``AgentPrompt`` sent as a Chat Completions request through any ``ChatModel``.

How a prompt lands on the Chat protocol (seed 000 §2, kept deliberately):
- ``system_prompt`` → the first system message; ``instructions`` → a second system message; then the items,
  converted one by one (``agentflow.agent.items.to_chat_messages``).
- Sent: ``model``, ``temperature``, ``top_p``, ``max_output_tokens`` as ``max_completion_tokens`` (or the
  model's ``max_tokens_field``), ``user``,
  ``response_format``, ``tools``, ``tool_choice``, ``parallel_tool_calls`` (only with tools: the API rejects
  it without), and ``extra_body`` as custom top-level parameters (standard fields win on a clash).
- Better than the seed: ``tool_choice`` may be structured (a ``ToolChoice`` or a ``{"type": "function", …}``
  map; other maps, e.g. ``allowed_tools``, go through verbatim), and ``reasoning={"effort": X}`` becomes
  ``reasoning_effort`` (the other ``reasoning`` keys, such as ``summary``, have no Chat form).
- Not sent: ``store`` (a Responses notion here; put it in ``extra_body`` to send it anyway).
- The result's memory item is one converted assistant item: text, tool calls, and the reasoning under the
  wire field the server sent it in (``reasoning_content`` from DeepSeek, ``reasoning`` from OpenRouter or
  Groq), so the next request sends it back under that name (DeepSeek's thinking mode answers 400 without it).
  So are the provider fields of the message and its calls (OpenRouter's ``reasoning_details``, Gemini's
  ``extra_content`` thought signatures, which Gemini 3 wants back on a tool loop), under their wire names.
  A server that sent none (OpenAI) is sent none. ``ChatModelClient(model, echo_reasoning=False)`` sends none
  at all, e.g. when a conversation held on DeepSeek goes on with a server that rejects the field. A server
  that answers 400 naming the field as unsupported (Groq: "property 'reasoning' is unsupported") gets the
  request again without it, once, and this client sends no reasoning from then on (logged at WARNING).
  Text, reasoning and tool-call events stream as they arrive.

The mapping functions are pure; only the client awaits. Between calls the client keeps the last prompt's
parameters (reused while the next prompt carries the very same settings objects, as every prompt of an agent
does) and, in the run's ``AgentPrompt.cache``, the Chat message of each reply's memory item, so the next step
need not convert it back.
"""

from __future__ import annotations

import logging
import operator
import re
from collections.abc import AsyncGenerator, Awaitable, Mapping
from typing import Any

import attrs

from ..model.errors import BadRequestError
from ..model.events import ModelEvent, ModelRetry
from ..model.messages import AiMessage, Message, SystemMessage
from ..model.protocol import ChatModel
from ..model.request import ChatParameters, ChatRequest
from ..model.response import ChatResponse
from ..model.stream import ModelStream
from ..model.tools import ToolChoice
from .client_base import ProtocolClient, call_options
from .items import ChatMessageCache, assistant_item, to_chat_messages, with_call_ids
from .prompt import AgentModelResult, AgentPrompt, ToolChoiceLike, reasoning_effort, relay_stream

__all__ = ["ChatModelClient", "chat_result", "to_chat_request"]

_MODES = frozenset(("auto", "none", "required"))
_log = logging.getLogger("agentflow")
# How strict servers word a refused field: Groq's "property 'reasoning' is unsupported" and "reasoning is not
# supported with this model", pydantic-style "extra inputs are not permitted", "unknown field"…
_REFUSED = re.compile(
    r"unsupported|not supported|unknown|unexpected|unrecognized|not permitted|not allowed|extra|additional"
)


def _chat_tool_choice(value: ToolChoiceLike | None) -> tuple[ToolChoice | None, Mapping[str, Any] | None]:
    """The tool choice as a ``ToolChoice``, or (for map forms with no ``ToolChoice`` equivalent) a raw map."""
    if value is None or isinstance(value, ToolChoice):
        return value, None
    if isinstance(value, Mapping):
        choice = ToolChoice.from_mapping(value)
        return (None, value) if choice is None else (choice, None)
    return ToolChoice.coerce(value), None


def _converted(prompt: AgentPrompt) -> ChatMessageCache | None:
    """The run's Chat messages already converted from memory items (``None``: a prompt built by hand)."""
    cache = prompt.cache
    return None if cache is None else cache.setdefault("chat_messages", {})


def to_chat_request(prompt: AgentPrompt) -> ChatRequest:
    """The Chat Completions request for ``prompt`` (see the module docstring for the mapping).

    >>> from agentflow.agent.items import user_item
    >>> request = to_chat_request(AgentPrompt(system_prompt="Be brief.", instructions="Use tools.",
    ...                                       items=[user_item("hi")], max_output_tokens=50))
    >>> [type(m).__name__ for m in request.messages], request.parameters.max_completion_tokens
    (['SystemMessage', 'SystemMessage', 'UserMessage'], 50)
    """
    if not isinstance(prompt, AgentPrompt):
        raise TypeError(f"expected an AgentPrompt, got {type(prompt).__name__}")
    return ChatRequest(_chat_messages(prompt), _chat_parameters(prompt))


def _chat_messages(prompt: AgentPrompt) -> list[Message]:
    # Checked here, the one step both ``to_chat_request`` and ``ChatModelClient`` run for every prompt.
    if prompt.hosted_tools:
        kinds = ", ".join(repr(tool.get("type")) for tool in prompt.hosted_tools)
        raise TypeError(
            f"hosted tools ({kinds}) have no Chat Completions form; use an OpenAIResponsesModel for them"
        )
    messages: list[Message] = []
    if prompt.system_prompt and prompt.system_prompt.strip():
        messages.append(SystemMessage(prompt.system_prompt))
    if prompt.instructions and prompt.instructions.strip():
        messages.append(SystemMessage(prompt.instructions))
    messages.extend(to_chat_messages(prompt.items, cache=_converted(prompt)))
    return messages


def _chat_parameters(prompt: AgentPrompt) -> ChatParameters:
    tool_choice, raw_tool_choice = _chat_tool_choice(prompt.tool_choice)
    custom = dict(prompt.extra_body)
    if raw_tool_choice is not None:
        custom["tool_choice"] = raw_tool_choice
    tools = prompt.tools or None
    return ChatParameters(
        model=prompt.model,
        temperature=prompt.temperature,
        top_p=prompt.top_p,
        max_completion_tokens=prompt.max_output_tokens,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=prompt.parallel_tool_calls if tools else None,
        reasoning_effort=reasoning_effort(prompt.reasoning),
        user=prompt.user,
        response_format=prompt.response_format,
        custom=custom,
    )


def _settings_key(prompt: AgentPrompt) -> tuple[Any, ...] | None:
    """Everything ``_chat_parameters`` reads from ``prompt``, when all of it is immutable: two prompts whose
    keys hold the very same objects map to equal parameters. ``None`` when the prompt has ``extra_body`` or
    a map ``tool_choice`` (mutable maps the parameters take a copy or a reference of, so they are read anew).
    """
    choice = prompt.tool_choice
    known_choice = (
        choice is None or isinstance(choice, ToolChoice) or (isinstance(choice, str) and choice in _MODES)
    )
    if prompt.extra_body or not known_choice:
        return None
    return (
        prompt.model,
        prompt.temperature,
        prompt.top_p,
        prompt.max_output_tokens,
        prompt.tools,
        choice,
        prompt.parallel_tool_calls,
        reasoning_effort(prompt.reasoning),  # read anew: ``reasoning`` is a mutable map
        prompt.user,
        prompt.response_format,
    )


def chat_result(response: ChatResponse) -> AgentModelResult:
    """The agent's view of a Chat response: text, reasoning, tool calls (blank ids filled in) and one
    assistant memory item (none when the model said nothing at all), which keeps the reasoning when the
    message names the field it came in (``AiMessage.reasoning_field``), and the provider fields of the message
    and of its calls (OpenRouter's ``reasoning_details``, Gemini's ``extra_content``), so the next step and a
    stored session send them back.

    >>> from agentflow.model.messages import AiMessage
    >>> chat_result(ChatResponse(AiMessage("Paris."))).memory_items
    ({'type': 'message', 'role': 'assistant', 'content': [{'type': 'output_text', 'text': 'Paris.'}]},)
    """
    message = response.message
    calls = with_call_ids(message.tool_calls)
    text = message.text or ""
    memory = (
        (
            assistant_item(
                text,
                calls,
                refusal=message.refusal,
                reasoning=message.reasoning,
                reasoning_field=message.reasoning_field,
                provider_fields=message.provider_fields,
            ),
        )
        if text or calls or message.refusal
        else ()
    )
    return AgentModelResult(
        output_text=text,
        reasoning_text=message.reasoning,
        tool_calls=calls,
        memory_items=memory,
        usage=response.usage,
        finish_reason=response.finish_reason,
        raw=response,
        refusal=message.refusal,
    )


def _remember_reply(prompt: AgentPrompt, result: AgentModelResult) -> AgentModelResult:
    """``result``, its memory item's Chat message noted in the run's cache.

    The next step's prompt carries that item back, and converting it would rebuild exactly this message
    (``chat_result`` made the item from the same text, tool calls, refusal and — with its field — reasoning).
    """
    converted = _converted(prompt)
    if converted is not None and len(result.memory_items) == 1:
        item = result.memory_items[0]
        raw = result.raw
        field, extra = (
            (raw.message.reasoning_field, raw.message.provider_fields)
            if isinstance(raw, ChatResponse)
            else (None, None)
        )
        message = AiMessage(
            result.output_text or None,
            result.tool_calls,
            (result.reasoning_text or None) if field is not None else None,
            result.refusal or None,
            field,
            extra or None,
        )
        converted[id(item)] = (item, message)
    return result


def _without_reasoning(messages: list[Message]) -> list[Message]:
    """``messages`` with no reasoning to send back (``echo_reasoning=False``): no reasoning field, and none of
    the opaque reasoning data of provider fields (OpenRouter's ``reasoning_details``, Gemini's
    ``extra_content``)."""
    return [_plain(m) if isinstance(m, AiMessage) else m for m in messages]


def _plain(message: AiMessage) -> AiMessage:
    """``message`` without its reasoning field and provider fields (itself when it has none)."""
    calls = message.tool_calls
    if any(call.provider_fields is not None for call in calls):
        calls = tuple(attrs.evolve(call, provider_fields=None) for call in calls)
    elif not message.reasoning_field and message.provider_fields is None:
        return message
    return attrs.evolve(message, tool_calls=calls, reasoning_field=None, provider_fields=None)


def _echoed_fields(request: ChatRequest) -> set[str]:
    """The fields under which ``request`` sends reasoning back: reasoning fields and provider fields of the
    messages and their calls (empty for most requests)."""
    fields: set[str] = set()
    for m in request.messages:
        if isinstance(m, AiMessage):
            if m.reasoning_field:
                fields.add(m.reasoning_field)
            if m.provider_fields:
                fields.update(m.provider_fields)
            for call in m.tool_calls:
                if call.provider_fields:
                    fields.update(call.provider_fields)
    return fields


def _refuses(error: BadRequestError, fields: set[str]) -> bool:
    """Whether ``error`` is the server refusing one of ``fields`` — named as a field (``'reasoning'``,
    ``messages.2.reasoning``; not ``reasoning_effort``, ``reasoning.effort`` or a model's ``x-reasoning``) in
    a message that says it is not supported."""
    message = error.message.lower()
    if not _REFUSED.search(message):
        return False
    named = (rf"(?<![\w-])['\"`]?{re.escape(field)}['\"`]?(?![\w.-])" for field in fields)
    return any(re.search(pattern, message) for pattern in named)


class ChatModelClient(ProtocolClient[ChatModel, ChatRequest, ChatResponse]):
    """Runs agent prompts over the Chat Completions protocol through a ``ChatModel``.

    ``echo_reasoning`` (default ``True``): send an assistant turn's reasoning back under the field the server
    sent it in, and its provider fields as they came. ``False`` sends neither (memory still keeps them), for
    a conversation that goes on with a server that rejects the fields. ``aclose()`` (or leaving
    ``async with``) closes the wrapped model.
    """

    __slots__ = ("_echo_reasoning", "_last_parameters")

    def __init__(self, chat_model: ChatModel, *, echo_reasoning: bool = True) -> None:
        if not isinstance(chat_model, ChatModel):
            raise TypeError(f"ChatModelClient needs a ChatModel, got {type(chat_model).__name__}")
        super().__init__(chat_model)
        self._echo_reasoning = echo_reasoning
        # The parameters of the last prompt, by its settings key: an agent's prompts all carry the same
        # settings objects, so every call reuses one ``ChatParameters`` (and a model can reuse its merge).
        self._last_parameters: tuple[tuple[Any, ...], ChatParameters] | None = None

    @property
    def chat_model(self) -> ChatModel:
        """The wrapped model."""
        return self._model

    async def create(self, prompt: AgentPrompt) -> AgentModelResult:
        """One blocking model call."""
        request = self._request(prompt)
        return _remember_reply(prompt, self._project(await self._send(request, call_options(prompt))))

    def create_stream(self, prompt: AgentPrompt) -> ModelStream[AgentModelResult]:
        """One streaming call: model events as they arrive, then ``ModelCompleted(AgentModelResult)``.

        The prompt is checked now; nothing is sent until the stream is entered or iterated.
        """
        request = self._request(prompt)
        options = call_options(prompt)
        return relay_stream(
            lambda: self._open(request, options),
            lambda response: _remember_reply(prompt, self._project(response)),
        )

    def _request(self, prompt: AgentPrompt) -> ChatRequest:
        if not isinstance(prompt, AgentPrompt):
            raise TypeError(f"expected an AgentPrompt, got {type(prompt).__name__}")
        messages = _chat_messages(prompt)
        if not self._echo_reasoning:
            messages = _without_reasoning(messages)
        return ChatRequest(messages, self._parameters(prompt))

    def _parameters(self, prompt: AgentPrompt) -> ChatParameters:
        key = _settings_key(prompt)
        last = self._last_parameters
        if key is not None and last is not None and all(map(operator.is_, key, last[0])):
            return last[1]
        parameters = _chat_parameters(prompt)
        if key is not None:
            self._last_parameters = (key, parameters)
        return parameters

    def _project(self, response: ChatResponse) -> AgentModelResult:
        return chat_result(response)

    def _send(self, request: ChatRequest, options: Mapping[str, Any]) -> Awaitable[ChatResponse]:
        fields = _echoed_fields(request)
        if fields:
            return self._send_echoing(request, fields, options)
        return self._model.chat(request, **options)

    def _open(self, request: ChatRequest, options: Mapping[str, Any]) -> ModelStream[ChatResponse]:
        fields = _echoed_fields(request)
        if fields:
            return self._open_echoing(request, fields, options)
        return self._model.stream(request, **options)

    # Only requests that send reasoning back take these: the others keep the direct call.

    async def _send_echoing(
        self, request: ChatRequest, fields: set[str], options: Mapping[str, Any]
    ) -> ChatResponse:
        try:
            return await self._model.chat(request, **options)
        except BadRequestError as exc:
            if not _refuses(exc, fields):
                raise
            return await self._model.chat(self._stop_echoing(request, exc), **options)

    def _open_echoing(
        self, request: ChatRequest, fields: set[str], options: Mapping[str, Any]
    ) -> ModelStream[ChatResponse]:
        async def events() -> AsyncGenerator[ModelEvent, None]:
            started = False
            try:
                async with self._model.stream(request, **options) as inner:
                    async for event in inner:
                        # The server took the request: a later error is not a refusal. (A retry of the
                        # model layer, before any answer, does not count.)
                        started = started or not isinstance(event, ModelRetry)
                        yield event
                return
            except BadRequestError as exc:
                if started or not _refuses(exc, fields):
                    raise
                retry = self._stop_echoing(request, exc)
            async with self._model.stream(retry, **options) as inner:
                async for event in inner:
                    yield event

        return ModelStream(events)

    def _stop_echoing(self, request: ChatRequest, error: BadRequestError) -> ChatRequest:
        """``request`` without reasoning, after the server refused it; this client sends none from now on."""
        if self._echo_reasoning:
            self._echo_reasoning = False
            _log.warning(
                "the server refused the reasoning sent back (%s): sending the request again without it, and "
                "no reasoning from now on (ChatModelClient(model, echo_reasoning=False) says so up front)",
                error.message,
            )
        return ChatRequest(_without_reasoning(list(request.messages)), request.parameters)

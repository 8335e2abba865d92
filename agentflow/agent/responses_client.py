"""``ResponsesModelClient``: an ``AgentPrompt`` sent as an OpenAI Responses request.

How a prompt lands on the Responses protocol (seed 000 §3, kept deliberately):
- ``system_prompt`` → the request's top-level ``instructions``; ``instructions`` → a system message item
  inserted at index 0 of ``input``, before the conversation items;
- passed through: ``model``, ``tools`` (sent flat: ``{type, name, description, parameters, strict}``),
  ``tool_choice`` in any form, ``parallel_tool_calls``, ``temperature``, ``top_p``, ``max_output_tokens``,
  ``reasoning``, ``store``, ``user`` and ``extra_body``; ``response_format`` (Chat's shape) as ``text.format``
  (``json_schema`` flattened);
- ``store`` sent as ``false`` (stateless: the server keeps nothing), whether by the prompt, its ``extra_body``
  or the model's defaults, also asks for ``include: ["reasoning.encrypted_content"]`` (for a reasoning
  model), added to any ``include`` of ``extra_body`` or the model's defaults: replayed reasoning items must
  carry their content, as a bare ``rs_…`` id cannot be looked up;
- ``hosted_tools`` (``{"type": "web_search"}``…) go out verbatim after the function tools, then the tools
  of ``extra_body`` and the model's default ``tools``, each once (the prompt's ``tools`` would replace them);
- items: dicts verbatim (see ``agentflow.agent.items.to_responses_input`` for the Chat shapes it fixes),
  ``Message`` values converted;
- memory items are the response's raw output items, verbatim (a reasoning item with ``encrypted_content``
  survives the round trip), less what the API would refuse as input: a ``function_call`` the model did not
  finish (an incomplete response) and a reasoning item with nothing after it; better than the seed,
  reasoning text, tool calls and their argument deltas stream mid-call, and ``reasoning_text`` is filled;
- a ``custom_tool_call`` (GPT-5 custom tools) is a tool call as on Chat (``ToolCall.kind == "custom"``): the
  runtime answers it (an unknown tool's ``TOOL_ERROR`` unless one of that name is registered), and the result
  goes back as a ``custom_tool_call_output``; another call the client must answer (``computer_call``…)
  raises ``ProtocolError``: agents run function tools only.

The mapping functions are pure; only the client awaits.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..model.errors import ProtocolError
from ..model.messages import ToolCall
from ..model.stream import ModelStream
from ..providers.openai.responses_codec import CALL_ITEMS, UNFINISHED_STATUSES, text_format
from ..providers.openai.responses_types import ResponsesRequest, ResponsesResponse
from .client_base import ProtocolClient
from .items import system_item, to_responses_input, with_call_ids
from .prompt import AgentModelResult, AgentPrompt

__all__ = [
    "CLIENT_RUN_ITEMS",
    "ENCRYPTED_REASONING",
    "ResponsesModel",
    "ResponsesModelClient",
    "outgoing_field",
    "replayable_items",
    "responses_result",
    "to_responses_request",
    "wants_encrypted_reasoning",
]


@runtime_checkable
class ResponsesModel(Protocol):
    """What ``ResponsesModelClient`` needs: ``OpenAIResponsesModel``'s native API (or a test fake)."""

    async def create(self, request: ResponsesRequest, /, **options: Any) -> ResponsesResponse:
        """Send the request and return the whole response (``options``: ``extra_headers`` when a run's
        settings have some)."""
        ...

    def create_stream(self, request: ResponsesRequest, /, **options: Any) -> ModelStream[ResponsesResponse]:
        """Stream model events ending with ``ModelCompleted(ResponsesResponse)``."""
        ...

    async def aclose(self) -> None:
        """Release the model's connections."""
        ...


def _non_blank(text: str | None) -> str | None:
    return text if text and text.strip() else None


ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""The ``include`` entry that returns reasoning items with their ``encrypted_content`` (stateless replay)."""


_REASONING_MODEL = re.compile(r"(?:^|/)(?:ft:)?(?:o\d|gpt-5|codex-mini)(?![\w.-]*-chat)", re.IGNORECASE)
"""OpenAI's reasoning model names (``o3``, ``o4-mini``, ``gpt-5.1``, ``codex-mini-latest``), also behind a
router prefix (``openai/o3``) and fine-tuned (``ft:o4-mini-2025-04-16:acme::abc123``; only the base model
counts, not the suffix), less the ``-chat`` variants of gpt-5, which do not reason."""


def outgoing_field(
    prompt: AgentPrompt, name: str, value: Any = None, defaults: Mapping[str, Any] | None = None
) -> Any:
    """The value of the top-level field ``name`` a request for ``prompt`` carries (``None``: not sent).

    ``value`` is the prompt's own field (``prompt.store``…); ``defaults`` the model's
    (``OpenAIResponsesModel.defaults``). The order is the wire's: the prompt's field, then the model's
    default field (``ResponsesRequest.merged`` fills unset fields), then the prompt's ``extra_body``, then the
    model's default ``extra_body`` (``encode_request`` writes ``extra_body`` first, standard fields over it).

    >>> prompt = AgentPrompt(extra_body={"store": False})
    >>> outgoing_field(prompt, "store", prompt.store), outgoing_field(prompt, "store", True)
    (False, True)
    >>> outgoing_field(AgentPrompt(), "store", defaults={"extra_body": {"store": False}})
    False
    """
    if value is not None:
        return value
    if defaults:
        value = defaults.get(name)
        if value is not None:
            return value
    value = prompt.extra_body.get(name) if prompt.extra_body else None
    if value is not None or not defaults:
        return value
    extra = defaults.get("extra_body")
    return extra.get(name) if isinstance(extra, Mapping) else None


def wants_encrypted_reasoning(
    prompt: AgentPrompt,
    *,
    model: str | None = None,
    setting: bool | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> bool:
    """Whether a request for ``prompt`` asks for ``"reasoning.encrypted_content"``.

    Only a stateless request (``store`` sent as ``false``) needs it. ``setting`` decides when given; otherwise
    a request that sets ``reasoning``, or whose model is a reasoning model, asks for it: OpenAI's other models
    refuse it ("Encrypted content is not supported with this model"). ``store``, ``reasoning`` and the model
    name are read as the request sends them (``outgoing_field``): from the prompt, its ``extra_body``, or the
    model's ``defaults``; ``model`` names the model when neither the prompt nor ``defaults`` does.

    >>> stateless = AgentPrompt(store=False)
    >>> [wants_encrypted_reasoning(stateless, model=m) for m in ("o4-mini", "gpt-5-chat-latest", "gpt-4o")]
    [True, False, False]
    >>> wants_encrypted_reasoning(AgentPrompt(), defaults={"model": "o3", "store": False})
    True
    """
    if outgoing_field(prompt, "store", prompt.store, defaults) is not False:
        return False
    if setting is not None:
        return setting
    if outgoing_field(prompt, "reasoning", prompt.reasoning, defaults) is not None:
        return True
    name = outgoing_field(prompt, "model", prompt.model, defaults) or model
    return isinstance(name, str) and _REASONING_MODEL.search(name) is not None


def _tool_list(value: Any, where: str) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(
            f"{where} must be a list of tools such as [{{'type': 'web_search'}}], not {value!r:.80}"
        )
    return tuple(value)


def _with_tools(tools: tuple[Any, ...], more: Any, where: str) -> tuple[Any, ...]:
    """``tools``, then those of ``more`` it does not hold already."""
    return (*tools, *(tool for tool in _tool_list(more, where) if tool not in tools))


def to_responses_request(
    prompt: AgentPrompt, *, encrypted_reasoning: bool = False, default_tools: Iterable[Any] = ()
) -> ResponsesRequest:
    """The Responses request for ``prompt`` (see the module docstring for the mapping).

    ``encrypted_reasoning`` adds ``"reasoning.encrypted_content"`` to ``include`` (``ResponsesModelClient``
    decides it with ``wants_encrypted_reasoning``).

    Tools add up: the prompt's function tools, its hosted tools, then the tools of its ``extra_body`` and
    ``default_tools`` (the model's default ``tools``), each once. Sent alone, those would be replaced by the
    prompt's ``tools`` field (standard fields win over ``extra_body``, and a request's fields over the model's
    defaults), silently dropping a hosted tool given there.

    >>> from agentflow.agent.items import user_item
    >>> request = to_responses_request(AgentPrompt(system_prompt="Be brief.", instructions="Use tools.",
    ...                                            items=[user_item("hi")], store=False),
    ...                                encrypted_reasoning=True)
    >>> request.instructions, [item["role"] for item in request.input], request.store, request.include
    ('Be brief.', ['system', 'user'], False, ('reasoning.encrypted_content',))
    """
    if not isinstance(prompt, AgentPrompt):
        raise TypeError(f"expected an AgentPrompt, got {type(prompt).__name__}")
    items = to_responses_input(prompt.items)
    instructions = _non_blank(prompt.instructions)
    if instructions is not None:
        items.insert(0, system_item(instructions))
    # Stateless runs replay their reasoning items as input; without their encrypted content the server looks
    # the ``rs_…`` ids up and fails ("Items are not persisted when `store` is set to false"). An ``include``
    # given elsewhere is kept beside this entry: ``encode_request`` merges ``extra_body``'s, and
    # ``ResponsesRequest.merged`` the model's defaults.
    include = (ENCRYPTED_REASONING,) if encrypted_reasoning else None
    tools: tuple[Any, ...] = prompt.tools
    if prompt.hosted_tools:
        tools = (*tools, *prompt.hosted_tools)
    extra_body = dict(prompt.extra_body)
    # Merged whenever there is any: the request's ``tools`` field, set or filled from the model's defaults,
    # would otherwise replace ``extra_body``'s on the wire.
    if "tools" in extra_body:
        tools = _with_tools(tools, extra_body.pop("tools"), "extra_body['tools']")
    if default_tools and tools:
        tools = _with_tools(tools, default_tools, "the model's default tools")
    return ResponsesRequest(
        items,
        model=prompt.model,
        instructions=_non_blank(prompt.system_prompt),
        tools=tools or None,
        tool_choice=prompt.tool_choice,
        parallel_tool_calls=prompt.parallel_tool_calls,
        temperature=prompt.temperature,
        top_p=prompt.top_p,
        max_output_tokens=prompt.max_output_tokens,
        reasoning=prompt.reasoning,
        store=prompt.store,
        user=prompt.user,
        include=include,
        text=None if prompt.response_format is None else {"format": text_format(prompt.response_format)},
        extra_body=extra_body,
    )


def replayable_items(output: Iterable[Any]) -> tuple[Any, ...]:
    """The output items of one response that can be sent back as input, in order.

    Left out: a call (``function_call``, ``custom_tool_call``) the model did not finish (status
    ``in_progress`` / ``incomplete``: its arguments may be truncated, and it is not a ``ToolCall`` either),
    then any reasoning item that no other item follows (the token limit hit while reasoning): the API rejects
    a reasoning item "provided without its required following item".

    >>> rs = {"type": "reasoning", "id": "rs_1", "summary": []}
    >>> cut = {"type": "function_call", "status": "incomplete", "call_id": "c", "name": "f", "arguments": "{"}
    >>> replayable_items([rs, cut])
    ()
    """
    kept = [
        item
        for item in output
        if not (
            isinstance(item, Mapping)
            and item.get("type") in CALL_ITEMS
            and item.get("status") in UNFINISHED_STATUSES
        )
    ]
    # Walk back from the end: a reasoning item stays only when something other than reasoning comes after it.
    followed = False
    replayable: list[Any] = []
    for item in reversed(kept):
        if isinstance(item, Mapping) and item.get("type") == "reasoning":
            if not followed:
                continue
        else:
            followed = True
        replayable.append(item)
    replayable.reverse()
    return tuple(replayable)


def _with_filled_ids(output: tuple[Any, ...], calls: tuple[ToolCall, ...]) -> tuple[Any, ...]:
    """The output items with each blank call id (of a ``function_call`` or ``custom_tool_call``) replaced by
    the id its ``ToolCall`` was given.

    Calls are matched to items in order, by name and arguments (a custom call's ``input``); the items are
    replayable ones: every call among them is a finished call.
    """
    pending = list(calls)
    patched: list[Any] = []
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind in CALL_ITEMS and pending:
            head = pending[0]
            text = item.get("input" if kind == "custom_tool_call" else "arguments") or ""
            if item.get("name") == head.name and text == head.arguments:
                pending.pop(0)
                if not str(item.get("call_id") or "").strip():
                    item = {**item, "call_id": head.id}
        patched.append(item)
    return tuple(patched)


CLIENT_RUN_ITEMS = frozenset(
    {
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_approval_request",
    }
)
"""Output item types the client must answer (with a ``…_output`` or ``mcp_approval_response`` item) that are
not tool calls (``function_call``, ``custom_tool_call``): an agent runs function tools only, so it can answer
none of them. A ``custom_tool_call`` is not among them: like the custom calls of Chat, it reaches the runtime,
which answers it with a ``TOOL_ERROR`` (no function tool takes free-form input), and the run goes on."""


def _refuse_client_run_items(response: ResponsesResponse) -> None:
    """``ProtocolError`` (not retryable) naming the first item the agent would have to answer but cannot.

    Read as a final answer, such a turn would end the run with empty text, and replaying the call without its
    output makes the next request fail (400 "No tool output found for … call").
    """
    for item in response.output:
        kind = item.get("type")
        if kind in CLIENT_RUN_ITEMS:
            what = f"a {kind} item"
            name = item.get("name") or item.get("server_label")
            if name:
                what += f" ({name!r})"
            hint = (
                "set require_approval='never' on the mcp tool"
                if kind == "mcp_approval_request"
                else "give the tool as a @tool function"
            )
            raise ProtocolError(
                f"the model answered with {what}, which the client must run and answer, but agents run "
                f"function tools only; {hint}",
                partial=response,
            )


def responses_result(response: ResponsesResponse) -> AgentModelResult:
    """The agent's view of a Responses result: text, reasoning, tool calls, and as memory items the raw output
    items that can be replayed (``replayable_items``).

    ``finish_reason`` is the response's: ``LENGTH`` for a response cut at ``max_output_tokens`` (returned with
    ``on_incomplete="return"``), even when nothing of it was kept. Custom calls (``custom_tool_call``) are
    tool calls (``ToolCall.kind == "custom"``), as on Chat. Another call the client must answer
    (``computer_call``, ``mcp_approval_request``…: ``CLIENT_RUN_ITEMS``) raises ``ProtocolError`` carrying
    the response as ``partial``: an agent cannot answer it.

    >>> r = ResponsesResponse("resp_1", "m", "completed",
    ...     ({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},),
    ...     output_text="Hi")
    >>> result = responses_result(r)
    >>> result.output_text, result.memory_items == r.output, result.finish_reason.value
    ('Hi', True, 'stop')
    """
    _refuse_client_run_items(response)
    calls = with_call_ids(response.tool_calls)
    output = replayable_items(response.output)
    if calls != tuple(response.tool_calls):
        output = _with_filled_ids(output, calls)
    return AgentModelResult(
        output_text=response.output_text,
        reasoning_text=response.reasoning,
        tool_calls=calls,
        memory_items=output,
        usage=response.usage,
        finish_reason=response.finish_reason,
        raw=response,
        refusal=response.refusal,
    )


_NO_PROMPT = AgentPrompt()


class ResponsesModelClient(ProtocolClient[ResponsesModel, ResponsesRequest, ResponsesResponse]):
    """Runs agent prompts over the OpenAI Responses protocol through ``OpenAIResponsesModel``.

    A stateless request (``store`` sent as ``false``, by the prompt, its ``extra_body`` or the model's
    defaults) asks for ``"reasoning.encrypted_content"`` when it sets ``reasoning`` or its model is a
    reasoning model (``wants_encrypted_reasoning``); ``encrypted_reasoning`` overrides that guess either way,
    e.g. ``ResponsesModelClient(model, encrypted_reasoning=True)`` for a reasoning model under another name.
    Tools the model sends by default join a prompt's own (see ``to_responses_request``).
    ``aclose()`` (or leaving ``async with``) closes the wrapped model.
    """

    __slots__ = ("_default_tools", "_defaults", "_encrypted_reasoning")

    def __init__(self, responses_model: ResponsesModel, *, encrypted_reasoning: bool | None = None) -> None:
        if not isinstance(responses_model, ResponsesModel):
            raise TypeError(
                "ResponsesModelClient needs a Responses model with create/create_stream/aclose "
                f"(e.g. OpenAIResponsesModel), got {type(responses_model).__name__}"
            )
        super().__init__(responses_model)
        self._encrypted_reasoning = encrypted_reasoning
        # ``OpenAIResponsesModel.defaults`` (a read-only view, fixed once the model is built): what a request
        # sends for the fields a prompt leaves unset. A model without it (a test fake) has none.
        defaults = getattr(responses_model, "defaults", None)
        self._defaults: Mapping[str, Any] = defaults if isinstance(defaults, Mapping) else {}
        # The tools the model sends by default: joined to a prompt's own, which would otherwise replace them.
        tools = outgoing_field(_NO_PROMPT, "tools", None, self._defaults)
        self._default_tools = () if tools is None else _tool_list(tools, "the model's default tools")

    @property
    def responses_model(self) -> ResponsesModel:
        """The wrapped model."""
        return self._model

    def _request(self, prompt: AgentPrompt) -> ResponsesRequest:
        wanted = wants_encrypted_reasoning(
            prompt, model=self.model_name, setting=self._encrypted_reasoning, defaults=self._defaults
        )
        return to_responses_request(prompt, encrypted_reasoning=wanted, default_tools=self._default_tools)

    def _project(self, response: ResponsesResponse) -> AgentModelResult:
        return responses_result(response)

    def _send(self, request: ResponsesRequest, options: Mapping[str, Any]) -> Awaitable[ResponsesResponse]:
        return self._model.create(request, **options)

    def _open(self, request: ResponsesRequest, options: Mapping[str, Any]) -> ModelStream[ResponsesResponse]:
        return self._model.create_stream(request, **options)

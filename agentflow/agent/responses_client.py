"""``ResponsesModelClient``: an ``AgentPrompt`` sent as an OpenAI Responses request.

How a prompt lands on the Responses protocol (seed 000 §3, kept deliberately):
- ``system_prompt`` → the request's top-level ``instructions``; ``instructions`` → a system message item
  inserted at index 0 of ``input``, before the conversation items;
- passed through: ``model``, ``tools`` (sent flat: ``{type, name, description, parameters, strict}``),
  ``tool_choice`` in any form, ``parallel_tool_calls``, ``temperature``, ``top_p``, ``max_output_tokens``,
  ``reasoning``, ``store``, ``user`` and ``extra_body``;
- items: dicts verbatim (see ``agentflow.agent.items.to_responses_input`` for the two Chat shapes it fixes),
  ``Message`` values converted;
- memory items are the response's raw output items, verbatim (a reasoning item with ``encrypted_content``
  survives the round trip); better than the seed, reasoning text, tool calls and their argument deltas
  stream mid-call, and ``reasoning_text`` is filled.

The mapping functions are pure; only the client awaits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..model.messages import ToolCall
from ..model.stream import ModelStream
from ..providers.openai.responses_types import ResponsesRequest, ResponsesResponse
from .client_base import ProtocolClient
from .items import system_item, to_responses_input, with_call_ids
from .prompt import AgentModelResult, AgentPrompt

__all__ = ["ResponsesModel", "ResponsesModelClient", "responses_result", "to_responses_request"]


@runtime_checkable
class ResponsesModel(Protocol):
    """What ``ResponsesModelClient`` needs: ``OpenAIResponsesModel``'s native API (or a test fake)."""

    async def create(self, request: ResponsesRequest, /) -> ResponsesResponse:
        """Send the request and return the whole response."""
        ...

    def create_stream(self, request: ResponsesRequest, /) -> ModelStream[ResponsesResponse]:
        """Stream model events ending with ``ModelCompleted(ResponsesResponse)``."""
        ...

    async def aclose(self) -> None:
        """Release the model's connections."""
        ...


def _non_blank(text: str | None) -> str | None:
    return text if text and text.strip() else None


def to_responses_request(prompt: AgentPrompt) -> ResponsesRequest:
    """The Responses request for ``prompt`` (see the module docstring for the mapping).

    >>> from agentflow.agent.items import user_item
    >>> request = to_responses_request(AgentPrompt(system_prompt="Be brief.", instructions="Use tools.",
    ...                                            items=[user_item("hi")], store=False))
    >>> request.instructions, [item["role"] for item in request.input], request.store
    ('Be brief.', ['system', 'user'], False)
    """
    if not isinstance(prompt, AgentPrompt):
        raise TypeError(f"expected an AgentPrompt, got {type(prompt).__name__}")
    items = to_responses_input(prompt.items)
    instructions = _non_blank(prompt.instructions)
    if instructions is not None:
        items.insert(0, system_item(instructions))
    return ResponsesRequest(
        items,
        model=prompt.model,
        instructions=_non_blank(prompt.system_prompt),
        tools=prompt.tools or None,
        tool_choice=prompt.tool_choice,
        parallel_tool_calls=prompt.parallel_tool_calls,
        temperature=prompt.temperature,
        top_p=prompt.top_p,
        max_output_tokens=prompt.max_output_tokens,
        reasoning=prompt.reasoning,
        store=prompt.store,
        user=prompt.user,
        extra_body=dict(prompt.extra_body),
    )


def _with_filled_ids(output: tuple[Any, ...], calls: tuple[ToolCall, ...]) -> tuple[Any, ...]:
    """The output items with each blank ``function_call`` id replaced by the id its ``ToolCall`` was given.

    Calls are matched to items in order (only finished calls are ``ToolCall`` values, so a truncated item
    is skipped by matching name and arguments).
    """
    pending = list(calls)
    patched: list[Any] = []
    for item in output:
        if isinstance(item, Mapping) and item.get("type") == "function_call" and pending:
            head = pending[0]
            if item.get("name") == head.name and (item.get("arguments") or "") == head.arguments:
                pending.pop(0)
                if not str(item.get("call_id") or "").strip():
                    item = {**item, "call_id": head.id}
        patched.append(item)
    return tuple(patched)


def responses_result(response: ResponsesResponse) -> AgentModelResult:
    """The agent's view of a Responses result: text, reasoning, tool calls and the raw output items.

    >>> r = ResponsesResponse("resp_1", "m", "completed",
    ...     ({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},),
    ...     output_text="Hi")
    >>> result = responses_result(r)
    >>> result.output_text, result.memory_items == r.output, result.finish_reason.value
    ('Hi', True, 'stop')
    """
    calls = with_call_ids(response.tool_calls)
    output = tuple(response.output)
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


class ResponsesModelClient(ProtocolClient[ResponsesModel, ResponsesRequest, ResponsesResponse]):
    """Runs agent prompts over the OpenAI Responses protocol through ``OpenAIResponsesModel``.

    ``aclose()`` (or leaving ``async with``) closes the wrapped model.
    """

    __slots__ = ()

    def __init__(self, responses_model: ResponsesModel) -> None:
        if not isinstance(responses_model, ResponsesModel):
            raise TypeError(
                "ResponsesModelClient needs a Responses model with create/create_stream/aclose "
                f"(e.g. OpenAIResponsesModel), got {type(responses_model).__name__}"
            )
        super().__init__(responses_model)

    @property
    def responses_model(self) -> ResponsesModel:
        """The wrapped model."""
        return self._model

    def _request(self, prompt: AgentPrompt) -> ResponsesRequest:
        return to_responses_request(prompt)

    def _project(self, response: ResponsesResponse) -> AgentModelResult:
        return responses_result(response)

    def _send(self, request: ResponsesRequest) -> Awaitable[ResponsesResponse]:
        return self._model.create(request)

    def _open(self, request: ResponsesRequest) -> ModelStream[ResponsesResponse]:
        return self._model.create_stream(request)

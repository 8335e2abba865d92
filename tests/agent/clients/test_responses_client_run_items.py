"""Calls the client must answer that are not tool calls (``computer_call``, ``local_shell_call``,
``shell_call``, ``apply_patch_call``, ``mcp_approval_request``): an agent runs function tools only, so such a
turn is a clear ``ProtocolError`` naming the item. Read as a final answer it ended the run with empty text,
and the next run replayed the call without an output (OpenAI: 400). A ``custom_tool_call`` is a tool call,
as on Chat (``test_custom_tool_calls_in_agents``)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_client_fakes import FakeResponsesModel, completed

from agentflow.agent.agent import Agent
from agentflow.agent.responses_client import CLIENT_RUN_ITEMS, ResponsesModelClient, responses_result
from agentflow.model.errors import ProtocolError
from agentflow.model.events import UsageReported
from agentflow.providers.openai.responses_codec import decode_response

ITEMS: dict[str, dict[str, Any]] = {
    "computer_call": {"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}},
    "local_shell_call": {"type": "local_shell_call", "call_id": "c1", "action": {"type": "exec"}},
    "shell_call": {"type": "shell_call", "call_id": "c1", "action": {"commands": ["ls"]}},
    "apply_patch_call": {"type": "apply_patch_call", "call_id": "c1", "operation": {"type": "update_file"}},
    "mcp_approval_request": {"type": "mcp_approval_request", "id": "a1", "server_label": "deepwiki"},
}


def _response(*output: dict[str, Any]) -> Any:
    return decode_response(
        {
            "id": "resp_1",
            "status": "completed",
            "model": "gpt-5",
            "output": list(output),
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def test_every_client_run_item_type_is_covered() -> None:
    assert set(ITEMS) == CLIENT_RUN_ITEMS


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_a_call_the_agent_cannot_answer_is_a_protocol_error_naming_it(kind: str) -> None:
    message = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "One moment."}],
    }
    response = _response(message, ITEMS[kind])
    with pytest.raises(ProtocolError, match=rf"answered with a {kind} item") as caught:
        responses_result(response)
    assert caught.value.retryable is False
    assert caught.value.partial is response  # its usage still counts


def test_the_error_says_what_to_do() -> None:
    with pytest.raises(
        ProtocolError,
        match=r"a computer_call item, .*agents run function tools only; give the tool as a @tool",
    ):
        responses_result(_response(ITEMS["computer_call"]))
    with pytest.raises(ProtocolError, match=r"\('deepwiki'\).*require_approval='never'"):
        responses_result(_response(ITEMS["mcp_approval_request"]))


def test_hosted_tool_calls_function_calls_and_custom_calls_stay_answers() -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}}
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"}
    custom = {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"}
    calls = responses_result(_response(search, call, custom)).tool_calls
    assert [(c.name, c.kind) for c in calls] == [("f", "function"), ("sql", "custom")]


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_agent_run_fails_on_it_and_memory_keeps_no_unanswered_call(streamed: bool) -> None:
    response = _response(ITEMS["computer_call"])
    assert response.usage is not None
    model = FakeResponsesModel(response, [UsageReported(response.usage), completed(response)])
    agent = Agent(ResponsesModelClient(model))
    session = agent.session()
    if streamed:
        async with session.stream("take a screenshot") as run:
            async for _ in run:
                pass
        assert isinstance(run.error, ProtocolError)
    else:
        with pytest.raises(ProtocolError, match=r"computer_call"):
            await session.run("take a screenshot")
    assert [item.get("type") for item in session.memory.items] == ["message"]

"""A run that pauses for a person's approval, is stored as JSON, and goes on in another request (any worker,
any process, days later): ``AgentOptions(tool_approval="defer")`` and ``approvals=``."""

from __future__ import annotations

from typing import Any

from agentflow import (
    Agent,
    AgentOptions,
    OpenAIChatModel,
    StopReason,
    dump_items,
    load_items,
    tool,
)
from agentflow.events import RunCancelled, RunFailed
from agentflow.runtimes.calls import open_tool_calls
from agentflow.testing import Reply, ScriptedServer


@tool(needs_approval=lambda arguments: arguments["amount"] > 100)  # small refunds need no one
async def refund(order: str, amount: int) -> str:
    """Refund part of an order, in euros."""
    return f"refunded {amount} EUR on order {order}"


# --8<-- [start:service]
STORE: dict[str, bytes] = {}  # your database: chat id → the conversation as JSON


def answer(chat_id: str, result: Any) -> dict[str, Any]:
    """Store the conversation, and tell the page what it shows: the answer, or the calls to decide."""
    STORE[chat_id] = dump_items(result.all_items)  # a paused run's items end with its open calls
    if result.stop_reason is StopReason.APPROVAL_REQUIRED:
        waiting = [
            {"call_id": r.call_id, "tool": r.tool, "arguments": dict(r.arguments)}
            for r in result.pending_approvals
        ]
        return {"waiting": waiting}
    return {"answer": result.output_text}


async def ask(agent: Agent, chat_id: str, question: str) -> dict[str, Any]:
    """``POST /chats/{chat_id}``: a run; it pauses when a call needs a person's approval."""
    history = load_items(STORE[chat_id]) if chat_id in STORE else None
    result = await agent.run(question, history=history, options=AgentOptions(tool_approval="defer"))
    return answer(chat_id, result)


async def decide(agent: Agent, chat_id: str, decisions: dict[str, bool | str]) -> dict[str, Any]:
    """``POST /chats/{chat_id}/approvals``: the person's decisions (``True``, ``False`` or what the model is
    told); the approved calls run, then the model goes on. A decision that matches no open call, or an open
    call left undecided, is ``ApprovalDecisionError`` (a ``ValueError``: the service's 409)."""
    history = load_items(STORE[chat_id])
    ended: list[RunFailed | RunCancelled] = []  # how the run ended, if not with an answer
    try:
        result = await agent.run(
            history=history,
            approvals=decisions,
            options=AgentOptions(tool_approval="defer"),
            on=[((RunFailed, RunCancelled), ended.append)],
        )
    except BaseException:
        # The decided calls ran (or were denied) before the run failed or the request was cancelled (the
        # client went away): store that, or the stored calls stay open and the next approval runs them
        # again. A cancellation carries no partial result: the run's RunCancelled event has it. (A save
        # that awaits needs `with anyio.CancelScope(shield=True):` here, the request being cancelled.)
        partial = ended[0].partial if ended else None
        if partial is not None:
            STORE[chat_id] = dump_items(partial.all_items)
        raise
    return answer(chat_id, result)


def waiting(chat_id: str) -> list[str]:
    """``GET /chats/{chat_id}/approvals``: what a reloaded page shows again, read from the stored items."""
    return [call.id for call in open_tool_calls(load_items(STORE[chat_id]))]


# --8<-- [end:service]


async def main() -> None:
    turns = [
        Reply(tool_calls=[("refund", {"order": "A-17", "amount": 250}, "call_1")]),
        Reply(text="Refunded 250 EUR on A-17."),
    ]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        # One agent per request, as a stateless service builds them; only the stored JSON is shared.
        async with Agent(model, tools=[refund]) as agent:
            first = await ask(agent, "chat-7", "Refund 250 EUR on A-17.")
        print(first)
        assert first == {
            "waiting": [
                {"call_id": "call_1", "tool": "refund", "arguments": {"order": "A-17", "amount": 250}}
            ]
        }
        assert waiting("chat-7") == ["call_1"]
        async with Agent(model, tools=[refund]) as agent:
            second = await decide(agent, "chat-7", {"call_1": True})
        print(second)
        assert second == {"answer": "Refunded 250 EUR on A-17."}
        assert waiting("chat-7") == []

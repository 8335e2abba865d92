"""The stateless approval service of ``docs/examples/approval_resume.py`` (docs/web.md): a request resuming a
run that is cancelled (the client went away) after an approved call started still stores that the call ran,
so a retried approval cannot run it twice."""

from __future__ import annotations

import anyio
import pytest
from web_support import load_example

from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool
from agentflow.tools.approval import ApprovalDecisionError


async def test_a_cancelled_decision_request_stores_the_calls_it_started() -> None:
    service = load_example("approval_resume")
    refunds: list[str] = []
    started = anyio.Event()

    @tool(needs_approval=True)
    async def refund(order: str, amount: int) -> str:
        """Refund part of an order."""
        refunds.append(order)  # the side effect happened; the bank's answer never comes
        started.set()
        await anyio.sleep_forever()
        return "refunded"

    turn = reply(tool_calls=[("call_1", "refund", {"order": "A-17", "amount": 250})])
    first = await service.ask(Agent(FakeModelClient([turn]), tools=[refund]), "chat-cancel", "Refund A-17.")
    assert [w["call_id"] for w in first["waiting"]] == ["call_1"]

    async with anyio.create_task_group() as requests:
        agent = Agent(FakeModelClient([reply("never asked")]), tools=[refund])
        requests.start_soon(service.decide, agent, "chat-cancel", {"call_1": True})
        await started.wait()
        requests.cancel_scope.cancel()  # the client disconnects while the refund runs

    assert refunds == ["A-17"]
    assert service.waiting("chat-cancel") == []  # the call is answered (cancelled) in the stored JSON
    retry = Agent(FakeModelClient([reply("never asked")]), tools=[refund])
    with pytest.raises(ApprovalDecisionError):  # the service's 409, not a second refund
        await service.decide(retry, "chat-cancel", {"call_1": True})
    assert refunds == ["A-17"]

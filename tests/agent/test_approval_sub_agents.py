"""Approval of a sub-agent's tool calls (an agent used as a tool, without a ``tool_approval`` of its own):
the calling run's approval function decides them, or its handle (``run.approve`` / ``run.deny``), under the
id ``<calling call id>/<sub-call id>``; the sub-agent's own function still wins; deferral stays refused;
cancelling the caller ends the sub-call's wait."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.events import RunCancelled, ToolApprovalRequested
from agentflow.model.events import Event
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool, tool_error_text
from agentflow.tools.approval import ApprovalNotDeferrableError, ToolApprovalRequest


class Refunds:
    """A ``refund`` tool that always needs approval, recording what it refunded."""

    def __init__(self) -> None:
        self.done: list[str] = []

        @tool(needs_approval=True)
        async def refund(order: str) -> str:
            """Refund an order."""
            self.done.append(order)
            return f"refunded {order}"

        self.tool = refund


def outputs(items: Sequence[Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def worker(refunds: Refunds, answer: str = "worker done", **kwargs: Any) -> Agent[Any]:
    """A sub-agent that calls ``refund`` as ``call_1`` (an id the caller's model uses too), then answers."""
    model = FakeModelClient([reply(tool_calls=[("call_1", "refund", {"order": "A1"})]), reply(answer)])
    return Agent(model, name="Worker", tools=[refunds.tool], **kwargs)


def caller_model(*texts: str) -> FakeModelClient:
    return FakeModelClient([reply(tool_calls=[("w1", "worker", {"input": "refund A1"})]), *map(reply, texts)])


# -- the caller's approval function decides ------------------------------------------------------------------


@pytest.mark.parametrize("verdict", [True, "not today"])
async def test_the_caller_s_approval_function_decides_a_sub_agent_s_call(verdict: bool | str) -> None:
    refunds = Refunds()
    sub = worker(refunds)
    asked: list[ToolApprovalRequest] = []

    async def decide(request: ToolApprovalRequest) -> bool | str:
        asked.append(request)
        return verdict

    model = caller_model("Done.")
    parent = Agent(
        model, tools=[sub.as_tool(description="Refunds.")], options=AgentOptions(tool_approval=decide)
    )
    with anyio.fail_after(5):
        result = await parent.run("delegate", deps="the user")

    # The function got the sub-run's own request: its call, its run, the deps it runs with.
    assert [(r.call_id, r.tool, r.arguments["order"], r.deps) for r in asked] == [
        ("call_1", "refund", "A1", "the user")
    ]
    assert asked[0].run_id != result.run_id
    sub_prompts = sub.model_client.prompts  # type: ignore[attr-defined]
    if verdict is True:
        assert refunds.done == ["A1"]
        assert outputs(sub_prompts[1].items) == {"call_1": "refunded A1"}
    else:
        assert refunds.done == []
        denied = tool_error_text("denied", "not today", "refund", "call_1")
        assert outputs(sub_prompts[1].items) == {"call_1": denied}
    assert outputs(model.prompts[1].items) == {"w1": "worker done"}
    assert result.output_text == "Done."


async def test_the_sub_agent_s_own_approval_function_still_wins() -> None:
    refunds = Refunds()
    sub = worker(refunds, options=AgentOptions(tool_approval=lambda request: "the worker's own no"))
    caller_asked: list[ToolApprovalRequest] = []

    def decide(request: ToolApprovalRequest) -> bool:
        caller_asked.append(request)
        return True

    parent = Agent(
        caller_model("Done."),
        tools=[sub.as_tool(description="Refunds.")],
        options=AgentOptions(tool_approval=decide),
    )
    await parent.run("delegate")
    assert caller_asked == []
    assert refunds.done == []


async def test_a_deferring_caller_cannot_defer_a_sub_agent_s_call() -> None:
    refunds = Refunds()
    model = caller_model("never")
    parent = Agent(
        model,
        tools=[worker(refunds).as_tool(description="Refunds.")],
        options=AgentOptions(tool_approval="defer"),
    )
    with anyio.fail_after(5), pytest.raises(ApprovalNotDeferrableError, match="needs_approval=True"):
        await parent.run("delegate")
    assert refunds.done == []
    assert len(model.prompts) == 1


# -- a streamed caller: run.approve / run.deny on the caller's handle ----------------------------------------


@pytest.mark.parametrize("approve", [True, False])
async def test_a_streamed_caller_s_handle_decides_a_sub_agent_s_call(approve: bool) -> None:
    refunds = Refunds()
    sub = worker(refunds)
    model = caller_model("Done.")
    parent = Agent(model, tools=[sub.as_tool(description="Refunds.")])
    requested: list[ToolApprovalRequested] = []

    with anyio.fail_after(5):  # a deadlock guard only
        async with parent.stream("delegate") as run:
            async for event in run:
                if isinstance(event, ToolApprovalRequested):
                    requested.append(event)
                    assert [r.call_id for r in run.pending_approvals] == ["w1/call_1"]
                    if approve:
                        run.approve(event.call.id)
                    else:
                        run.deny(event.call.id, "ask a manager")

    assert [(e.call.id, e.tool, e.run_id) for e in requested] == [("w1/call_1", "refund", run.run_id)]
    assert run.pending_approvals == ()
    sub_prompts = sub.model_client.prompts  # type: ignore[attr-defined]
    if approve:
        assert refunds.done == ["A1"]
        assert outputs(sub_prompts[1].items) == {"call_1": "refunded A1"}
    else:
        assert refunds.done == []
        denied = tool_error_text("denied", "ask a manager", "refund", "call_1")
        assert outputs(sub_prompts[1].items) == {"call_1": denied}
    # The sub-agent's answer reached the caller's model either way.
    assert outputs(model.prompts[1].items) == {"w1": "worker done"}
    assert run.result.output_text == "Done."


async def test_call_ids_repeated_by_the_caller_and_its_sub_agents_stay_apart() -> None:
    # The caller's own ``refund`` call and two sub-agents' calls are all ``call_1`` to their models.
    refunds = Refunds()
    first, second = worker(refunds, "first done"), worker(refunds, "second done")
    model = FakeModelClient(
        [
            reply(
                tool_calls=[
                    ("call_1", "refund", {"order": "P1"}),
                    ("w1", "first", {"input": "refund A1"}),
                    ("w2", "second", {"input": "refund A1"}),
                ]
            ),
            reply("Done."),
        ]
    )
    tools = [
        refunds.tool,
        first.as_tool("first", description="Refunds."),
        second.as_tool("second", description="Refunds."),
    ]
    parent = Agent(model, tools=tools)
    seen: list[str] = []

    with anyio.fail_after(5):
        async with parent.stream("delegate") as run:
            async for event in run:
                if isinstance(event, ToolApprovalRequested):
                    seen.append(event.call.id)
                    if len(seen) == 3:  # all three wait at once, each under an id of its own
                        assert sorted(r.call_id for r in run.pending_approvals) == sorted(seen)
                        run.deny("w2/call_1", "not the second")
                        run.approve("call_1")
                        run.approve("w1/call_1")

    assert sorted(seen) == ["call_1", "w1/call_1", "w2/call_1"]
    assert sorted(refunds.done) == ["A1", "P1"]
    second_prompts = second.model_client.prompts  # type: ignore[attr-defined]
    assert outputs(second_prompts[1].items) == {
        "call_1": tool_error_text("denied", "not the second", "refund", "call_1")
    }
    assert outputs(model.prompts[1].items) == {
        "call_1": "refunded P1",
        "w1": "first done",
        "w2": "second done",
    }
    assert run.pending_approvals == ()


async def test_cancelling_the_caller_ends_a_sub_agent_s_wait() -> None:
    refunds = Refunds()
    sub = worker(refunds)
    parent = Agent(caller_model("never"), tools=[sub.as_tool(description="Refunds.")])
    events: list[Event] = []

    with anyio.fail_after(5):
        async with parent.stream("delegate") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ToolApprovalRequested):
                    assert [r.call_id for r in run.pending_approvals] == ["w1/call_1"]
                    await run.cancel()

    assert [type(e) for e in events].count(RunCancelled) == 1
    assert isinstance(events[-1], RunCancelled)
    assert run.result.stop_reason is StopReason.CANCELLED
    assert run.pending_approvals == ()
    assert refunds.done == []

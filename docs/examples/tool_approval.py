"""Human approval of tool calls: a function decides per user, or a person does, from outside the run (as a
web service does on a second request)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import aclosing

import anyio
import attrs
import orjson

from agentflow import Agent, AgentOptions, OpenAIChatModel, OpenRuns, ToolApprovalRequest, sse_stream, tool
from agentflow.testing import Reply, ScriptedServer


# --8<-- [start:tool]
@tool(needs_approval=lambda arguments: arguments["amount"] > 100)  # small refunds need no one
async def refund(order: str, amount: int) -> str:
    """Refund part of an order, in euros."""
    return f"refunded {amount} EUR on order {order}"


# --8<-- [end:tool]


# --8<-- [start:function]
@attrs.frozen
class User:
    name: str
    refund_limit: int  # what this user may refund without a manager


def within_limit(request: ToolApprovalRequest) -> bool | str:
    """Approve (True), or deny with what the model is told (a str)."""
    user: User = request.deps  # the run's deps: agent.run(..., deps=user)
    if request.arguments["amount"] <= user.refund_limit:
        return True
    return f"{user.name} may refund at most {user.refund_limit} EUR; a manager must do this one"


# --8<-- [end:function]


# --8<-- [start:service]
RUNS = OpenRuns()  # the streamed runs: where a decision finds its run (and shutdown cancels them)


async def stream_run(agent: Agent, question: str, send: Callable[[bytes], Awaitable[None]]) -> None:
    """Request 1 (``GET /runs?q=…``): the run's events as SSE; it waits there while a call is undecided."""
    async with (
        agent.stream(question, policy="coalesce_deltas") as run,  # a browser's policy (docs/web.md)
        RUNS.track(run),
        # The stream is quiet while a person decides: a heartbeat keeps proxies from closing it. With one,
        # the stream owns a task group: close it in this task (aclosing).
        aclosing(sse_stream(run, heartbeat=15.0)) as frames,
    ):
        async for frame in frames:
            await send(frame)


def decide(run_id: str, call_id: str, approved: bool) -> None:
    """Request 2 (``POST /runs/{run_id}/calls/{call_id}``): the person's decision. An unknown run is the
    service's 404, and ``ApprovalNotPendingError`` (a ``KeyError``: a call already decided) its 409."""
    run = RUNS.get(run_id)
    if run is None:
        raise KeyError(f"no run {run_id!r} is streaming")
    if approved:
        run.approve(call_id)
    else:
        run.deny(call_id, "the customer service agent declined this refund")


# --8<-- [end:service]


async def main() -> None:
    def refund_turn(order: str, amount: int) -> Reply:
        return Reply(tool_calls=[("refund", {"order": order, "amount": amount})])

    turns = [
        refund_turn("A-17", 250),
        Reply(text="I cannot refund that; a manager will."),
        refund_turn("A-17", 250),
        Reply(text="Refunded 250 EUR."),
        refund_turn("B-42", 400),
        Reply(text="Refunded 400 EUR."),
    ]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        async with Agent(model, tools=[refund]) as agent:
            # --8<-- [start:per-run]
            options = AgentOptions(tool_approval=within_limit)  # per run: it decides for this user
            clerk = await agent.run("Refund 250 EUR on A-17.", options=options, deps=User("Sam", 100))
            manager = await agent.run("Refund 250 EUR on A-17.", options=options, deps=User("Kim", 1000))
            # --8<-- [end:per-run]
            print(clerk.tool_results[0].output)
            assert clerk.tool_results[0].error_type == "denied"
            assert "Sam may refund at most 100 EUR" in clerk.tool_results[0].output
            assert manager.tool_results[0].output == "refunded 250 EUR on order A-17"

            # The browser: it shows each approval request and, when the person clicks, sends the decision.
            frames, page = anyio.create_memory_object_stream[bytes](16)
            shown: list[str] = []

            async def browser() -> None:
                async with page:
                    async for frame in page:
                        kind, _, rest = frame.partition(b"\n")
                        if kind == b"event: tool_approval_requested":
                            data = orjson.loads(rest.split(b"data: ", 1)[1])
                            shown.append(f"{data['tool']} {data['call']['arguments']}")
                            decide(data["run_id"], data["call"]["id"], approved=True)

            with anyio.fail_after(10):
                async with anyio.create_task_group() as group, frames:
                    group.start_soon(browser)
                    await stream_run(agent, "Refund 400 EUR on B-42.", frames.send)
    print(shown)
    assert shown == ['refund {"order":"B-42","amount":400}']
    assert len(RUNS) == 0

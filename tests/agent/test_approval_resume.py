"""A run that pauses for human approval (``AgentOptions(tool_approval="defer")``) and a later run that resumes
it from stored JSON (``approvals=``): the paused result, the JSON round trip into a fresh agent, approving and
denying, a step mixing calls that need approval with others, decisions that do not match, sessions (stored
ones too), streamed runs, both protocols over HTTP with ReAct and DeepResearch, and the runs that cannot
pause (an agent used as a tool, CodeAct). Approval decided inside a run is in ``test_tool_approval_runs.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import orjson
import pytest

from agentflow import GuardrailContext, OutputGuardrailTripped, Tripwire
from agentflow.agent.agent import Agent
from agentflow.agent.items import dump_items, load_items, tool_call_ids, tool_output_call_id
from agentflow.agent.options import AgentOptions
from agentflow.agent.sqlite_store import SQLiteStore
from agentflow.agent.stores import InMemoryStore
from agentflow.events import (
    ModelRequest,
    PlanCreated,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    ToolApprovalRequested,
    ToolCallRequested,
    ToolFailed,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelCompleted
from agentflow.model.messages import ToolCall
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes.calls import open_tool_calls
from agentflow.runtimes.codeact import CodeActRuntime
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool, tool_error_text
from agentflow.tools.approval import (
    DEFAULT_DENIAL,
    ApprovalDecisionError,
    ApprovalNotDeferrableError,
    ApprovalNotPendingError,
)

TERMINAL = (RunFinished, RunFailed, RunCancelled)
DEFER = AgentOptions(tool_approval="defer")


class Refunds:
    """A ``refund`` tool (approval for amounts over 100) recording what it refunded and how often its
    ``needs_approval`` predicate was asked."""

    def __init__(self, *, eager: bool = False) -> None:
        self.done: list[str] = []
        self.asked: list[str] = []

        def over_100(arguments: dict[str, Any]) -> bool:
            self.asked.append(arguments["order"])
            return bool(arguments["amount"] > 100)

        @tool(needs_approval=over_100, eager=eager)
        async def refund(order: str, amount: int) -> str:
            """Refund part of an order."""
            self.done.append(order)
            return f"refunded {amount} on {order}"

        self.tool = refund


def refund_turn(*calls: tuple[str, str, int]) -> Any:
    """A model turn calling ``refund`` once per ``(call id, order, amount)``."""
    return reply(tool_calls=[(cid, "refund", {"order": o, "amount": a}) for cid, o, a in calls])


def open_ids(items: Sequence[Any]) -> list[str]:
    """The ids of the calls ``items`` hold without an output."""
    waiting: list[str] = []
    for item in items:
        waiting.extend(tool_call_ids(item))
        answered = tool_output_call_id(item)
        if answered is not None:
            waiting.remove(answered)
    return waiting


def outputs(items: Sequence[Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


async def paused(refunds: Refunds, *calls: tuple[str, str, int]) -> Any:
    """A run of an agent that defers its approvals, paused on ``calls``; its result and events."""
    model = FakeModelClient([refund_turn(*calls)])
    agent = Agent(model, tools=[refunds.tool], options=DEFER)
    events: list[Event] = []
    agent.on(None, events.append)
    result = await agent.run("refund them", deps={"user": "sam"})
    return result, events, model


# -- pausing -------------------------------------------------------------------------------------------------


async def test_a_deferred_call_pauses_the_run_after_the_step_s_other_calls() -> None:
    refunds = Refunds()
    result, events, model = await paused(refunds, ("c1", "A1", 500), ("c2", "B2", 50))

    assert result.stop_reason is StopReason.APPROVAL_REQUIRED
    assert result.output is None
    assert len(model.prompts) == 1  # no model call after the step
    assert refunds.done == ["B2"]  # the call that needs no approval ran
    [pending] = result.pending_approvals
    assert (pending.call_id, pending.tool, dict(pending.arguments)) == (
        "c1",
        "refund",
        {"order": "A1", "amount": 500},
    )
    assert pending.deps is None  # the run's deps stay out of its result
    # The conversation ends with the turn: c1 open, c2 answered.
    assert open_ids(result.all_items) == ["c1"]
    assert outputs(result.new_items) == {"c2": "refunded 50 on B2"}
    assert open_tool_calls(result.all_items) == (ToolCall("c1", "refund", '{"order":"A1","amount":500}'),)
    assert [r.call_id for r in result.tool_results] == ["c2"]
    # Announced, then left: no ToolStarted nor result event for c1; one terminal event.
    assert [e.call.id for e in events if isinstance(e, ToolApprovalRequested)] == ["c1"]
    assert [e.call.id for e in events if isinstance(e, ToolStarted | ToolSucceeded | ToolFailed)] == [
        "c2",
        "c2",
    ]
    terminals = [e for e in events if isinstance(e, TERMINAL)]
    assert [type(e) for e in terminals] == [RunFinished]
    assert terminals[0].result.stop_reason is StopReason.APPROVAL_REQUIRED
    data = result.to_dict()
    assert data["stop_reason"] == "approval_required"
    assert data["pending_approvals"][0]["call"]["id"] == "c1"
    assert "deps" not in data["pending_approvals"][0]


async def test_calls_of_a_step_are_all_deferred_and_listed_in_call_order() -> None:
    refunds = Refunds()
    result, _, _ = await paused(refunds, ("c1", "A1", 500), ("c2", "B2", 50), ("c3", "C3", 900))

    assert [r.call_id for r in result.pending_approvals] == ["c1", "c3"]
    assert open_ids(result.all_items) == ["c1", "c3"]
    assert refunds.done == ["B2"]


# -- resuming ------------------------------------------------------------------------------------------------


async def test_resume_from_json_in_a_fresh_agent_runs_the_approved_call_before_the_model() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500), ("c2", "B2", 50))
    stored = dump_items(first.all_items)  # what a web service keeps between requests

    refunds = Refunds()  # another process: the same tools, a new agent
    model = FakeModelClient([reply("Refunded both.")])
    agent = Agent(model, tools=[refunds.tool], options=DEFER)
    events: list[Event] = []
    agent.on(None, events.append)
    result = await agent.run(history=load_items(stored), approvals={"c1": True})

    assert refunds.done == ["A1"]
    assert refunds.asked == []  # approved already: not asked about again
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "Refunded both."
    assert outputs(model.prompts[0].items) == {"c2": "refunded 50 on B2", "c1": "refunded 500 on A1"}
    assert open_ids(result.all_items) == []
    assert outputs(result.new_items) == {"c1": "refunded 500 on A1"}
    assert [r.call_id for r in result.tool_results] == ["c1"]
    kinds = [(type(e).__name__, getattr(getattr(e, "call", None), "id", None)) for e in events]
    start = kinds.index(("ToolCallRequested", "c1"))
    assert kinds[start : start + 3] == [
        ("ToolCallRequested", "c1"),
        ("ToolStarted", "c1"),
        ("ToolSucceeded", "c1"),
    ]
    assert start < next(i for i, e in enumerate(events) if isinstance(e, ModelRequest))


@pytest.mark.parametrize(
    ("decision", "told"),
    [("a manager must sign this off", "a manager must sign this off"), (False, DEFAULT_DENIAL)],
)
async def test_a_denied_call_does_not_run_and_the_model_is_told_why(decision: str | bool, told: str) -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500))
    refunds = Refunds()
    model = FakeModelClient([reply("Not refunded.")])
    events: list[Event] = []
    agent = Agent(model, tools=[refunds.tool])
    agent.on(None, events.append)
    result = await agent.run(history=load_items(dump_items(first.all_items)), approvals={"c1": decision})

    assert refunds.done == []
    denial = tool_error_text("denied", told, "refund", "c1")
    assert outputs(model.prompts[0].items) == {"c1": denial}
    assert result.tool_results[0].error_type == "denied"
    assert [type(e).__name__ for e in events if getattr(e, "call", None) is not None] == [
        "ToolCallRequested",
        "ToolStarted",
        "ToolFailed",
    ]


async def test_resume_with_new_input_answers_the_calls_before_it() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500))
    model = FakeModelClient([reply("Done, and yes.")])
    agent = Agent(model, tools=[Refunds().tool])
    await agent.run("Also, is B2 shipped?", history=first.all_items, approvals={"c1": True})

    items = model.prompts[0].items
    assert (items[-2]["type"], items[-2]["call_id"]) == ("function_call_output", "c1")
    assert items[-1]["role"] == "user"


async def test_a_call_without_a_decision_fails_the_run_before_anything_runs() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500), ("c3", "C3", 900))
    refunds = Refunds()
    model = FakeModelClient([reply("never")])
    with pytest.raises(ApprovalDecisionError) as caught:
        await Agent(model, tools=[refunds.tool]).run(history=first.all_items, approvals={"c1": True})

    assert caught.value.undecided == ("c3",)
    assert caught.value.unknown == ()
    assert refunds.done == []
    assert model.prompts == []


async def test_a_decision_for_no_open_call_fails_the_run_before_anything_runs() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500))
    refunds = Refunds()
    model = FakeModelClient([reply("never")])
    events: list[Event] = []
    agent = Agent(model, tools=[refunds.tool])
    agent.on(None, events.append)
    with pytest.raises(ApprovalDecisionError, match="no open call 'c9'") as caught:
        await agent.run(history=first.all_items, approvals={"c1": True, "c9": False})

    assert caught.value.unknown == ("c9",)
    assert refunds.done == []
    assert model.prompts == []
    assert [type(e).__name__ for e in events if isinstance(e, TERMINAL)] == ["RunFailed"]


async def test_open_calls_before_the_last_turn_cannot_be_resumed() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500))
    edited = [*first.all_items, {"type": "message", "role": "user", "content": "hello?"}]
    model = FakeModelClient([reply("never")])
    with pytest.raises(ApprovalDecisionError, match="before its last turn"):
        await Agent(model, tools=[Refunds().tool]).run(history=edited, approvals={"c1": True})
    assert model.prompts == []


async def test_bad_approvals_and_a_run_without_input_are_refused_at_the_call() -> None:
    agent = Agent(FakeModelClient([]), tools=[Refunds().tool])
    with pytest.raises(TypeError, match="approvals= takes a mapping"):
        await agent.run("x", approvals=["c1"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"approvals\['c1'\] must be True"):
        await agent.run("x", approvals={"c1": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="a run needs input"):
        await agent.run()
    with pytest.raises(TypeError, match="'defer'"):
        AgentOptions(tool_approval="later")  # type: ignore[arg-type]


async def test_without_approvals_a_paused_conversation_s_open_calls_are_cancelled_as_before() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500))
    model = FakeModelClient([reply("ok")])
    await Agent(model, tools=[Refunds().tool]).run("never mind", history=first.all_items)

    assert outputs(model.prompts[0].items)["c1"].startswith('TOOL_ERROR: {"errorType":"cancelled"')


# -- sessions, streamed runs ---------------------------------------------------------------------------------


async def test_a_session_pauses_and_resumes_without_new_input() -> None:
    refunds = Refunds()
    model = FakeModelClient([refund_turn(("c1", "A1", 500)), reply("Refunded.")])
    chat = Agent(model, tools=[refunds.tool], options=DEFER).session()

    first = await chat.run("refund A1")
    assert first.stop_reason is StopReason.APPROVAL_REQUIRED
    assert open_ids(chat.items) == ["c1"]  # memory keeps the open call
    second = await chat.run(approvals={"c1": True})

    assert refunds.done == ["A1"]
    assert second.output_text == "Refunded."
    assert open_ids(chat.items) == []
    assert outputs(chat.items) == {"c1": "refunded 500 on A1"}


async def test_a_stored_session_resumes_in_another_session_over_a_fresh_memory(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "chats.db")
    refunds = Refunds()
    model = FakeModelClient([refund_turn(("c1", "A1", 500)), reply("Refunded.")])
    agent = Agent(model, tools=[refunds.tool], options=DEFER)
    try:
        first = await agent.session(session_id="user-42", store=store).run("refund A1")
        assert first.stop_reason is StopReason.APPROVAL_REQUIRED
        # Another request: a new session over the same stored conversation.
        second = await agent.session(session_id="user-42", store=store).run(approvals={"c1": "no"})
    finally:
        await store.aclose()

    assert refunds.done == []
    assert second.output_text == "Refunded."
    assert outputs(model.prompts[1].items) == {"c1": tool_error_text("denied", "no", "refund", "c1")}


async def test_a_streamed_run_pauses_too_and_ends_with_one_run_finished() -> None:
    refunds = Refunds()
    model = FakeModelClient([refund_turn(("c1", "A1", 500), ("c2", "B2", 50))])
    agent = Agent(model, tools=[refunds.tool], options=DEFER)
    events: list[Event] = []
    async with agent.stream("refund") as run:
        async for event in run:
            events.append(event)
            if isinstance(event, ToolApprovalRequested):
                with pytest.raises(ApprovalNotPendingError, match="deferred"):
                    run.approve(event.call.id)  # nothing waits in the run: a later one decides

    assert [type(e) for e in events if isinstance(e, TERMINAL)] == [RunFinished]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.stop_reason is StopReason.APPROVAL_REQUIRED
    assert [r.call_id for r in run.result.pending_approvals] == ["c1"]
    assert refunds.done == ["B2"]


# -- a failure after the decided calls ran ------------------------------------------------------------------


def no_internal_ids(ctx: GuardrailContext[None], answer: str) -> Tripwire | None:
    return Tripwire("mentions an internal id") if "INTERNAL" in answer else None


async def test_an_output_trip_after_a_resume_keeps_the_calls_that_ran_answered() -> None:
    refunds = Refunds()
    store = InMemoryStore()
    model = FakeModelClient([refund_turn(("c1", "A1", 500)), reply("Refunded, see INTERNAL-42.")])
    agent = Agent(model, tools=[refunds.tool], options=DEFER, output_guardrails=[no_internal_ids])
    chat = agent.session(session_id="s", store=store)
    await chat.run("refund A1")
    with pytest.raises(OutputGuardrailTripped) as caught:
        await chat.run(approvals={"c1": True})

    assert refunds.done == ["A1"]
    # Memory is put back as it was once the refund had its result: not open, to be approved (and run) again.
    assert open_ids(chat.items) == []
    assert outputs(chat.items) == {"c1": "refunded 500 on A1"}
    assert outputs(await store.load("s")) == {"c1": "refunded 500 on A1"}
    assert chat.items[-1]["type"] == "function_call_output"  # the stopped answer is gone
    partial = caught.value.partial
    assert outputs(partial.new_items) == {"c1": "refunded 500 on A1"}
    assert open_ids(partial.all_items) == []  # what a stateless service stores
    with pytest.raises(ApprovalDecisionError, match="no open call 'c1'"):
        await chat.run(approvals={"c1": True})
    assert refunds.done == ["A1"]


async def test_a_rolled_back_failure_after_a_resume_keeps_the_calls_that_ran_answered() -> None:
    refunds = Refunds()
    store = InMemoryStore()
    model = FakeModelClient([refund_turn(("c1", "A1", 500)), RuntimeError("the model is down")])
    agent = Agent(model, tools=[refunds.tool], options=DEFER)
    chat = agent.session(session_id="s", store=store, rollback_on_failure=True)
    first = await chat.run("refund A1")
    with pytest.raises(RuntimeError, match="the model is down"):
        await chat.run("and B2?", approvals={"c1": True})

    assert refunds.done == ["A1"]
    assert chat.items == (*first.all_items, *chat.items[len(first.all_items) :])
    assert outputs(chat.items[len(first.all_items) :]) == {"c1": "refunded 500 on A1"}
    assert len(chat.items) == len(first.all_items) + 1  # the input rolled back, the refund's result not
    assert tuple(await store.load("s")) == chat.items
    with pytest.raises(ApprovalDecisionError):
        await chat.run(approvals={"c1": True})
    assert refunds.done == ["A1"]


async def test_a_resume_cut_short_by_its_call_leaves_no_call_open() -> None:
    ran: list[str] = []

    @tool(needs_approval=True, on_error="raise")
    async def charge(order: str) -> str:
        """Charge an order."""
        ran.append(order)
        raise ConnectionError("the bank hung up")

    model = FakeModelClient([reply(tool_calls=[("c1", "charge", {"order": "A1"})])])
    chat = Agent(model, tools=[charge], options=DEFER).session(rollback_on_failure=True)
    await chat.run("charge A1")
    with pytest.raises(ConnectionError):
        await chat.run(approvals={"c1": True})

    assert ran == ["A1"]
    assert open_ids(chat.items) == []  # it ran: its result stays, however the run ended
    assert "the bank hung up" in outputs(chat.items)["c1"]


async def test_bad_decisions_fail_the_run_before_its_input_guardrails_run() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500))
    checked: list[str] = []

    def screen(ctx: GuardrailContext[None], text: str) -> None:
        checked.append(text)

    agent = Agent(FakeModelClient([reply("never")]), tools=[Refunds().tool], input_guardrails=[screen])
    with pytest.raises(ApprovalDecisionError):
        await agent.run("and?", history=first.all_items, approvals={"c9": True})
    assert checked == []


# -- what resuming reads of the conversation -----------------------------------------------------------------


async def test_a_resumed_deep_research_run_plans_for_the_user_s_request_not_its_old_plan() -> None:
    runtime = DeepResearchRuntime(plan_role="user")
    first = await Agent(
        FakeModelClient([refund_turn(("c1", "A1", 500))]),
        tools=[Refunds().tool],
        runtime=runtime,
        options=DEFER,
    ).run("Refund order A1 please")
    events: list[Event] = []
    agent = Agent(FakeModelClient([reply("done")]), tools=[Refunds().tool], runtime=runtime)
    await agent.run(history=first.all_items, approvals={"c1": True}, on=[(None, events.append)])

    assert [e.input for e in events if isinstance(e, RunStarted)] == ["Refund order A1 please"]
    [plan] = [e.plan for e in events if isinstance(e, PlanCreated)]
    assert plan.to_text() == "Plan:\n1. Refund order A1 please\n"


async def test_a_responses_turn_with_its_text_after_the_call_can_be_resumed() -> None:
    refunds = Refunds()
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "refund A1"}]},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "c1",
            "name": "refund",
            "arguments": '{"order":"A1","amount":500}',
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it."}]},
    ]
    result = await Agent(FakeModelClient([reply("done")]), tools=[refunds.tool]).run(
        history=history, approvals={"c1": True}
    )
    assert refunds.done == ["A1"]
    assert result.output_text == "done"


async def test_decided_calls_count_against_max_tool_calls() -> None:
    first, _, _ = await paused(Refunds(), ("c1", "A1", 500), ("c2", "B2", 900))
    refunds = Refunds()
    model = FakeModelClient([reply("Refunded A1 only.")])
    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(max_tool_calls=1))
    result = await agent.run(history=first.all_items, approvals={"c1": True, "c2": True})

    assert refunds.done == ["A1"]
    sent = outputs(model.prompts[0].items)
    assert sent["c1"] == "refunded 500 on A1"
    limit = "not run: the run reached its limit of 1 tool calls"
    assert sent["c2"] == tool_error_text("cancelled", limit, "refund", "c2")
    assert result.output_text == "Refunded A1 only."


# -- eager tools ---------------------------------------------------------------------------------------------


async def test_an_eager_tool_s_needs_approval_is_asked_once_per_call() -> None:
    refunds = Refunds(eager=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 50), ("c2", "B2", 500)), reply("done")])
    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(tool_approval=lambda request: True))
    events: list[Event] = []
    async with agent.stream("refund") as run:
        async for event in run:
            events.append(event)

    assert sorted(refunds.asked) == ["A1", "B2"]  # once each: twice each before
    completed = next(i for i, e in enumerate(events) if isinstance(e, ModelCompleted))
    requested = {e.call.id: i for i, e in enumerate(events) if isinstance(e, ToolCallRequested)}
    assert requested["c1"] < completed < requested["c2"]
    assert sorted(refunds.done) == ["A1", "B2"]


async def test_an_eager_tool_s_call_is_deferred_with_its_turn() -> None:
    refunds = Refunds(eager=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 50), ("c2", "B2", 500))])
    agent = Agent(model, tools=[refunds.tool], options=DEFER)
    async with agent.stream("refund") as run:
        await run.wait()

    assert run.result.stop_reason is StopReason.APPROVAL_REQUIRED
    assert [r.call_id for r in run.result.pending_approvals] == ["c2"]
    assert refunds.done == ["A1"]
    assert sorted(refunds.asked) == ["A1", "B2"]
    assert open_ids(run.result.all_items) == ["c2"]


# -- runs that cannot pause ----------------------------------------------------------------------------------


async def test_an_agent_used_as_a_tool_cannot_pause_and_fails_its_caller_with_a_typed_error() -> None:
    refunds = Refunds()
    worker = Agent(
        FakeModelClient([refund_turn(("c1", "A1", 500))]), name="Worker", tools=[refunds.tool], options=DEFER
    )
    parent_model = FakeModelClient([reply(tool_calls=[("w1", "worker", {"input": "refund A1"})]), reply("x")])
    parent = Agent(parent_model, tools=[worker.as_tool(description="Refunds orders.")], options=DEFER)
    with pytest.raises(ApprovalNotDeferrableError, match="as another agent's tool"):
        await parent.run("delegate")
    assert refunds.done == []
    assert len(parent_model.prompts) == 1  # the caller's model was not told: its run failed


async def test_the_calling_run_defers_a_whole_call_of_an_agent_used_as_a_tool() -> None:
    worker_model = FakeModelClient([reply("worked")])
    worker = Agent(worker_model, name="Worker")
    parent_model = FakeModelClient([reply(tool_calls=[("w1", "worker", {"input": "do it"})]), reply("Done.")])
    tools = [worker.as_tool(description="Does work.", needs_approval=True)]
    first = await Agent(parent_model, tools=tools, options=DEFER).run("delegate")
    assert [r.call_id for r in first.pending_approvals] == ["w1"]
    assert worker_model.prompts == []  # the nested run waits with its call

    second = await Agent(parent_model, tools=tools).run(history=first.all_items, approvals={"w1": True})
    assert len(worker_model.prompts) == 1
    assert second.output_text == "Done."
    assert outputs(second.new_items) == {"w1": "worked"}


async def test_codeact_code_cannot_pause_for_a_deferred_call() -> None:
    refunds = Refunds()
    source = "refund(order='A1', amount=500)"
    message = orjson.dumps({"type": "code", "language": "python", "code": source}).decode()
    async with ScriptedServer([Reply(text=message, usage=(10, 5))]) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        agent = Agent(model, runtime=CodeActRuntime(), tools=[refunds.tool], options=DEFER)
        try:
            with anyio.fail_after(30), pytest.raises(ApprovalNotDeferrableError, match="CodeAct"):
                await agent.run("refund A1")
        finally:
            await agent.aclose()
    assert refunds.done == []


# -- the real model classes, end to end ----------------------------------------------------------------------


@pytest.mark.parametrize("runtime", ["react", "deep_research"])
@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_over_http_a_run_pauses_and_another_agent_resumes_it_from_json(
    protocol: Literal["chat", "responses"], runtime: str
) -> None:
    turns = [
        Reply(
            tool_calls=[
                ("refund", {"order": "A1", "amount": 500}, "c1"),
                ("refund", {"order": "B2", "amount": 50}, "c2"),
            ],
            usage=(20, 10),
        ),
        Reply(text="Refunded A1 and B2.", usage=(30, 5)),
    ]
    model_class = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel

    def build(base_url: str, refunds: Refunds) -> Agent[str]:
        model = model_class(base_url=base_url, api_key="sk-test", model="gpt-test")
        chosen = DeepResearchRuntime() if runtime == "deep_research" else "react"
        return Agent(model, runtime=chosen, tools=[refunds.tool], options=DEFER)

    async with ScriptedServer(turns) as server:
        first_refunds, second_refunds = Refunds(), Refunds()
        async with build(server.base_url, first_refunds) as agent:
            first = await agent.run("refund both")
        stored = dump_items(first.all_items)
        assert first.stop_reason is StopReason.APPROVAL_REQUIRED
        assert first_refunds.done == ["B2"]
        async with build(server.base_url, second_refunds) as agent:
            second = await agent.run(history=load_items(stored), approvals={"c1": True})

    assert second_refunds.done == ["A1"]
    assert second.output_text == "Refunded A1 and B2."
    assert len(server.requests) == 2
    body = server.requests[1].body
    if protocol == "chat":
        sent = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    else:
        sent = {i["call_id"]: i["output"] for i in body["input"] if i.get("type") == "function_call_output"}
    assert sent == {"c1": "refunded 500 on A1", "c2": "refunded 50 on B2"}

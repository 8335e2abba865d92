"""Human approval of tool calls in runs: a ``tool_approval`` function deciding (per agent, per run), a
streamed run waiting for ``run.approve`` / ``run.deny``, ``agent.run()`` failing when nobody can decide,
cancellation and the run's deadline while a call waits, eager tools, sessions, CodeAct, an agent used as a
tool, and the real model classes against ``ScriptedServer`` end to end. The executor-level behaviour is in
``tests/tools/test_tool_approval.py``."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import attrs
import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.as_tool import agent_tool
from agentflow.agent.items import tool_call_ids, tool_output_call_id
from agentflow.agent.options import AgentOptions
from agentflow.demo.render import Renderer
from agentflow.events import (
    CodeExecuted,
    CodeStarted,
    RunCancelled,
    RunFailed,
    RunFinished,
    ToolApprovalRequested,
    ToolCallRequested,
    ToolFailed,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelCompleted
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActRuntime
from agentflow.sse import sse_stream
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool, tool_error_text
from agentflow.tools.approval import (
    DEFAULT_DENIAL,
    ApprovalNotPendingError,
    ApprovalRequiredError,
    ToolApprovalRequest,
)

TERMINAL = (RunFinished, RunFailed, RunCancelled)


class Refunds:
    """A ``refund`` tool (approval for amounts over 100, unless ``always``) recording what it refunded."""

    def __init__(self, *, always: bool = False, eager: bool = False) -> None:
        self.done: list[str] = []
        self.started = anyio.Event()

        def over_100(arguments: dict[str, Any]) -> bool:
            return always or bool(arguments["amount"] > 100)

        @tool(needs_approval=over_100, eager=eager)
        async def refund(order: str, amount: int) -> str:
            """Refund part of an order."""
            self.done.append(order)
            self.started.set()
            return f"refunded {amount} on {order}"

        self.tool = refund


def refund_turn(*calls: tuple[str, str, int]) -> Any:
    """A model turn calling ``refund`` once per ``(call id, order, amount)``."""
    return reply(tool_calls=[(cid, "refund", {"order": o, "amount": a}) for cid, o, a in calls])


def assert_memory_valid(items: Sequence[Any]) -> None:
    """Every tool call in memory has exactly one output after it."""
    open_calls: list[str] = []
    for item in items:
        open_calls.extend(tool_call_ids(item))
        answered = tool_output_call_id(item)
        if answered is not None:
            open_calls.remove(answered)
    assert not open_calls, f"tool calls without a result: {open_calls}"


def outputs(items: Sequence[Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def names(events: Sequence[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


# -- a function decides --------------------------------------------------------------------------------------


async def test_a_function_decides_and_the_model_is_told_the_denial() -> None:
    refunds = Refunds()
    model = FakeModelClient(
        [refund_turn(("c1", "A1", 50), ("c2", "B2", 500), ("c3", "C3", 900)), reply("ok")]
    )
    seen: list[ToolApprovalRequest] = []

    async def manager(request: ToolApprovalRequest) -> bool | str:
        seen.append(request)
        await anyio.lowlevel.checkpoint()
        return True if request.arguments["amount"] < 600 else "refunds over 600 need a manager's sign-off"

    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(tool_approval=manager))
    events: list[Event] = []
    agent.on(None, events.append)
    result = await agent.run("refund them")

    assert [r.call_id for r in seen] == ["c2", "c3"]  # c1 needs none (the predicate said so)
    assert refunds.done == ["A1", "B2"]
    assert [e.call.id for e in events if isinstance(e, ToolApprovalRequested)] == ["c2", "c3"]
    denial = tool_error_text("denied", "refunds over 600 need a manager's sign-off", "refund", "c3")
    assert outputs(model.prompts[1].items)["c3"] == denial  # what the model is told
    assert [r.error_type for r in result.tool_results] == [None, None, "denied"]
    assert_memory_valid(result.new_items)


async def test_a_run_s_own_options_decide_for_the_user_it_serves() -> None:
    refunds = Refunds(always=True)
    model = FakeModelClient(
        [refund_turn(("c1", "A1", 50)), reply("ok"), refund_turn(("c2", "B2", 50)), reply("ok")]
    )
    agent = Agent(model, tools=[refunds.tool])

    def may_refund(request: ToolApprovalRequest) -> bool:
        return bool(request.deps["role"] == "manager")

    per_user = AgentOptions(tool_approval=may_refund)
    clerk = await agent.run("refund", options=per_user, deps={"role": "clerk"})
    manager = await agent.run("refund", options=per_user, deps={"role": "manager"})

    assert clerk.tool_results[0].output == tool_error_text("denied", DEFAULT_DENIAL, "refund", "c1")
    assert manager.tool_results[0].output == "refunded 50 on B2"
    assert refunds.done == ["B2"]


async def test_agent_run_without_an_approver_fails_with_a_typed_error_saying_what_to_set() -> None:
    refunds = Refunds(always=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 50)), reply("never asked")])
    agent = Agent(model, tools=[refunds.tool])
    events: list[Event] = []
    agent.on(None, events.append)

    with anyio.fail_after(5):  # never a hang
        with pytest.raises(ApprovalRequiredError, match=r"tool_approval=fn.*agent\.stream") as raised:
            await agent.run("refund")

    assert refunds.done == []
    assert len(model.prompts) == 1  # the run ended: the model was not told a made-up denial
    [failed] = [e for e in events if isinstance(e, RunFailed)]
    assert failed.error_type == "ApprovalRequiredError"
    assert names(events)[-3:] == ["ToolStarted", "ToolFailed", "RunFailed"]
    partial = raised.value.run_result  # type: ignore[attr-defined]
    assert_memory_valid(partial.new_items)
    assert partial.tool_results[0].error_type == "denied"


# -- decided from outside ------------------------------------------------------------------------------------


async def test_a_streamed_run_whose_stream_leaves_out_the_requests_fails_instead_of_waiting() -> None:
    refunds = Refunds(always=True)
    agent = Agent(FakeModelClient([refund_turn(("c1", "A1", 500)), reply("never")]), tools=[refunds.tool])

    async def consume() -> object:
        async with agent.stream("refund", types=[RunFinished]) as run:
            async for _event in run:
                pass
        return run.result  # a failed run's result raises its error

    with anyio.fail_after(5), pytest.raises(ApprovalRequiredError, match="nobody receives"):  # never waits
        await consume()
    assert refunds.done == []


async def test_a_streamed_run_waits_and_both_calls_ask_before_either_is_decided() -> None:
    refunds = Refunds(always=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 500), ("c2", "B2", 700)), reply("done")])
    agent = Agent(model, tools=[refunds.tool])
    events: list[Event] = []

    with anyio.fail_after(5):  # a deadlock guard only
        async with agent.stream("refund both") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ToolApprovalRequested) and event.call.id == "c2":
                    # Both announced, neither decided nor started: they were asked for concurrently.
                    assert [r.call_id for r in run.pending_approvals] == ["c1", "c2"]
                    assert not any(isinstance(e, ToolStarted) for e in events)
                    run.deny("c2", "amount too high")
                    run.approve("c1")

    result = run.result
    assert refunds.done == ["A1"]
    assert outputs(model.prompts[1].items) == {
        "c1": "refunded 500 on A1",
        "c2": tool_error_text("denied", "amount too high", "refund", "c2"),
    }
    approvals = [i for i, e in enumerate(events) if isinstance(e, ToolApprovalRequested)]
    requested = [i for i, e in enumerate(events) if isinstance(e, ToolCallRequested)]
    assert max(requested) < min(approvals)  # announced first, then asked
    assert run.pending_approvals == ()
    with pytest.raises(ApprovalNotPendingError, match="already denied"):
        run.approve("c2")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert_memory_valid(result.new_items)


async def test_approve_for_a_call_that_does_not_wait_is_a_clear_error() -> None:
    agent = Agent(FakeModelClient([reply("hi")]))
    async with agent.stream("hi") as run:
        with pytest.raises(ApprovalNotPendingError, match="no tool call 'nope' waits for approval"):
            run.approve("nope")
        with pytest.raises(KeyError):
            run.deny("nope")
        await run.wait()
    assert run.pending_approvals == ()


async def test_an_approved_call_runs_while_another_waits_with_one_concurrency_slot() -> None:
    refunds = Refunds(always=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 500), ("c2", "B2", 700)), reply("done")])
    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(max_tool_concurrency=1))
    trail: list[tuple[str, str]] = []

    with anyio.fail_after(5):  # a deadlock guard only: a slot held by c1 would never let c2 run
        async with agent.stream("refund both") as run:
            async for event in run:
                if isinstance(event, ToolApprovalRequested | ToolStarted | ToolSucceeded):
                    trail.append((type(event).__name__, event.call.id))
                if isinstance(event, ToolApprovalRequested) and event.call.id == "c2":
                    run.approve("c2")
                if isinstance(event, ToolSucceeded) and event.call.id == "c2":
                    assert [r.call_id for r in run.pending_approvals] == ["c1"]
                    run.approve("c1")

    assert refunds.done == ["B2", "A1"]
    assert trail == [
        ("ToolApprovalRequested", "c1"),
        ("ToolApprovalRequested", "c2"),
        ("ToolStarted", "c2"),
        ("ToolSucceeded", "c2"),
        ("ToolStarted", "c1"),
        ("ToolSucceeded", "c1"),
    ]


@pytest.mark.parametrize("how", ["cancel", "deadline"])
async def test_a_run_cut_while_a_call_waits_answers_it_and_leaves_nothing_waiting(
    how: Literal["cancel", "deadline"],
) -> None:
    refunds = Refunds(always=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 500), ("c2", "B2", 50)), reply("never")])
    options = AgentOptions(timeout=0.3) if how == "deadline" else AgentOptions()
    agent = Agent(model, tools=[refunds.tool], options=options)
    events: list[Event] = []

    with anyio.fail_after(5):
        async with agent.stream("refund") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ToolApprovalRequested) and event.call.id == "c2":
                    run.approve("c2")
                if isinstance(event, ToolSucceeded) and how == "cancel":
                    await run.cancel()  # c1 still waits for its decision

    [terminal] = [e for e in events if isinstance(e, TERMINAL)]
    assert isinstance(terminal, RunCancelled)
    assert terminal.partial.stop_reason is (
        StopReason.DEADLINE if how == "deadline" else StopReason.CANCELLED
    )
    assert refunds.done == ["B2"]
    assert run.pending_approvals == ()
    with pytest.raises(ApprovalNotPendingError):
        run.approve("c1")
    [cut] = [e for e in events if isinstance(e, ToolFailed)]
    assert (cut.call.id, cut.result.error_type) == ("c1", "cancelled")
    assert_memory_valid(terminal.partial.new_items)
    assert outputs(terminal.partial.new_items)["c2"] == "refunded 50 on B2"
    assert len(model.prompts) == 1


# -- eager tools, sessions -----------------------------------------------------------------------------------


async def test_an_eager_call_that_needs_approval_does_not_start_early() -> None:
    refunds = Refunds(eager=True)  # approval over 100 only
    model = FakeModelClient([refund_turn(("c1", "A1", 50), ("c2", "B2", 500)), reply("done")])
    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(tool_approval=lambda request: True))
    events: list[Event] = []

    async with agent.stream("refund") as run:
        async for event in run:
            events.append(event)

    completed = next(i for i, e in enumerate(events) if isinstance(e, ModelCompleted))
    requested = {e.call.id: i for i, e in enumerate(events) if isinstance(e, ToolCallRequested)}
    assert requested["c1"] < completed  # needs no approval: started early
    assert requested["c2"] > completed  # needs one: decided with the turn, as without eager start
    assert sorted(refunds.done) == ["A1", "B2"]
    assert_memory_valid(run.result.new_items)


async def test_session_runs_ask_as_any_run_and_keep_the_conversation_valid() -> None:
    refunds = Refunds(always=True)
    model = FakeModelClient(
        [refund_turn(("c1", "A1", 500)), reply("refunded"), refund_turn(("c2", "B2", 5)), reply("no")]
    )
    chat = Agent(model, tools=[refunds.tool]).session()

    async with chat.stream("refund A1") as run:
        async for event in run:
            if isinstance(event, ToolApprovalRequested):
                run.approve(event.call.id)
    second = await chat.run("refund B2", options=AgentOptions(tool_approval=lambda request: "not today"))

    assert refunds.done == ["A1"]
    assert second.tool_results[0].output == tool_error_text("denied", "not today", "refund", "c2")
    assert_memory_valid(chat.items)
    assert outputs(model.prompts[3].items) == {
        "c1": "refunded 500 on A1",
        "c2": tool_error_text("denied", "not today", "refund", "c2"),
    }


# -- an agent used as a tool ---------------------------------------------------------------------------------


async def test_an_agent_used_as_a_tool_can_need_approval_for_each_call() -> None:
    ran: list[str] = []

    @tool
    async def lookup(key: str) -> str:
        """Look up."""
        ran.append(key)
        return key

    worker = Agent(FakeModelClient([reply("worked")]), name="Worker")
    evolved = attrs.evolve(worker.as_tool(description="Does work."), needs_approval=True)
    built = agent_tool(
        worker, "worker2", "Does work.", timeout=None, forward_events=False, session=None, needs_approval=True
    )
    asked = worker.as_tool("worker3", description="Does work.", needs_approval=True, max_retries=1)
    assert evolved.needs_approval is True
    assert built.needs_approval is True
    assert asked.needs_approval is True
    assert asked.max_retries == 1
    parent_model = FakeModelClient(
        [reply(tool_calls=[("w1", "worker", {"input": "do it"})]), reply("the worker was not allowed")]
    )
    parent = Agent(parent_model, tools=[evolved, lookup], options=AgentOptions(tool_approval=lambda r: False))
    result = await parent.run("delegate")

    assert result.tool_results[0].error_type == "denied"
    assert worker.model_client.prompts == []  # type: ignore[attr-defined]  # the nested run never started


# -- CodeAct ------------------------------------------------------------------------------------------------


def code(source: str) -> str:
    return orjson.dumps({"type": "code", "language": "python", "code": source}).decode()


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_codeact_code_waits_for_the_decision_on_a_tool_it_calls(decision: str) -> None:
    refunds = Refunds(always=True)
    source = (
        "try:\n"
        "    out = refund(order='A1', amount=500)\n"
        "except ToolError as error:\n"
        "    out = 'refused: ' + str(error)\n"
        "out"
    )
    events: list[Event] = []
    async with ScriptedServer([Reply(text=code(source), usage=(10, 5))]) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        agent = Agent(model, runtime=CodeActRuntime(), tools=[refunds.tool])
        try:
            with anyio.fail_after(30):  # a deadlock guard only
                async with agent.stream("refund A1") as run:
                    async for event in run:
                        events.append(event)
                        if isinstance(event, ToolApprovalRequested):
                            # The code is running and waits in its call: it has not finished.
                            assert any(isinstance(e, CodeStarted) for e in events)
                            assert not any(isinstance(e, CodeExecuted) for e in events)
                            if decision == "approve":
                                run.approve(event.call.id)
                            else:
                                run.deny(event.call.id, "the customer already got a voucher")
        finally:
            await agent.aclose()

    [executed] = [e for e in events if isinstance(e, CodeExecuted)]
    if decision == "approve":
        assert refunds.done == ["A1"]
        assert executed.result == "refunded 500 on A1"
    else:
        assert refunds.done == []
        assert executed.result.startswith("refused: TOOL_ERROR: ")
        assert '"errorType":"denied","error":"the customer already got a voucher"' in executed.result
    assert run.result.output_text == executed.result


# -- the real model classes, end to end ----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_over_http_a_streamed_run_approves_one_call_and_denies_another(
    protocol: Literal["chat", "responses"],
) -> None:
    refunds = Refunds(always=True)
    turns = [
        Reply(
            tool_calls=[
                ("refund", {"order": "A1", "amount": 500}, "c1"),
                ("refund", {"order": "B2", "amount": 9}, "c2"),
            ],
            usage=(20, 10),
        ),
        Reply(text="Refunded A1; B2 was not approved.", usage=(30, 5)),
    ]
    async with ScriptedServer(turns) as server:
        model_class = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        model = model_class(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        agent = Agent(model, tools=[refunds.tool])
        frames: list[bytes] = []
        try:
            with anyio.fail_after(10):  # a deadlock guard only
                async with agent.stream("refund both") as run:

                    async def answered() -> Any:
                        # As a web service's second request would, once the page showed the requests.
                        async for event in run:
                            if isinstance(event, ToolApprovalRequested):
                                if event.call.id == "c1":
                                    run.approve("c1")
                                else:
                                    run.deny("c2", "B2 is outside the refund window")
                            yield event

                    async for frame in sse_stream(answered()):
                        frames.append(frame)
        finally:
            await agent.aclose()

    assert refunds.done == ["A1"]
    assert run.result.output_text == "Refunded A1; B2 was not approved."
    second = server.requests[1].body
    if protocol == "chat":
        sent = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    else:
        sent = {i["call_id"]: i["output"] for i in second["input"] if i.get("type") == "function_call_output"}
    assert sent == {
        "c1": "refunded 500 on A1",
        "c2": tool_error_text("denied", "B2 is outside the refund window", "refund", "c2"),
    }
    approval_frames = [f for f in frames if f.startswith(b"event: tool_approval_requested\n")]
    assert len(approval_frames) == 2
    data = orjson.loads(approval_frames[0].split(b"data: ", 1)[1])
    assert (data["tool"], data["call"]["id"], data["call"]["name"]) == ("refund", "c1", "refund")
    assert orjson.loads(data["call"]["arguments"]) == {"order": "A1", "amount": 500}
    denied_frame = next(f for f in frames if f.startswith(b"event: tool_failed\n"))
    # A browser gets a public sentence for the denial, not the reason written for the model.
    assert b"The tool call was not approved." in denied_frame
    assert b"refund window" not in denied_frame


# -- the CLI renderer and tracing ----------------------------------------------------------------------------


async def test_the_renderer_shows_a_line_for_a_request_and_tracing_records_the_denied_call() -> None:
    trace_sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentflow.tracing import instrument

    exporter = InMemorySpanExporter()
    provider = trace_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    refunds = Refunds(always=True)
    agent = Agent(
        FakeModelClient([refund_turn(("c1", "A1", 500)), reply("no")]),
        name="Clerk",
        tools=[refunds.tool],
        options=AgentOptions(tool_approval=lambda request: "no"),
    )
    out = io.StringIO()
    render = Renderer(out, color=False)
    remove = instrument(agent, tracer_provider=provider)
    try:
        await agent.run("refund", on=[(None, render)])
    finally:
        remove()
        provider.shutdown()

    assert "?  refund waits for approval (call c1)" in out.getvalue()
    assert 'x  refund: TOOL_ERROR: {"errorType":"denied"' in out.getvalue()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert "execute_tool refund" in spans
    assert not spans["execute_tool refund"].status.is_ok

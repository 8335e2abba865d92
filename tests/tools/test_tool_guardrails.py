"""Tool guardrails (``@tool(input_guardrails=..., output_guardrails=...)``): a call's arguments checked before
it runs, its result before the model sees it; ``None`` lets it go on, ``Rejection`` tells the model and the
run goes on, ``Tripwire`` stops the run with ``ToolGuardrailTripped``, a guardrail that raises fails it with
``ToolGuardrailError``. In the executor and in whole runs of every runtime, eager and resumed calls too."""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import orjson
import pytest

from agentflow import (
    Rejection,
    ToolGuardrailContext,
    ToolGuardrailError,
    ToolGuardrailTripped,
    Tripwire,
)
from agentflow.agent.agent import Agent
from agentflow.agent.items import dump_items, load_items, tool_call_ids, tool_output_call_id
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import (
    RunCancelled,
    RunFailed,
    RunFinished,
    ToolApprovalRequested,
    ToolCallRequested,
    ToolFailed,
    ToolProgress,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import Event
from agentflow.model.messages import ToolCall
from agentflow.model.tools import ToolSpec
from agentflow.result import StopReason, ToolApprovalRequest
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.runtimes.errors import AgentRunError
from agentflow.runtimes.guardrails import GuardrailError, TripwireError
from agentflow.sandbox import CodeResult, ExecutionLimits
from agentflow.sandbox.executor import ToolInvoker
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import RejectCall, Tool, ToolContext, ToolExecutor, tool, tool_error_text

TERMINAL = (RunFinished, RunFailed, RunCancelled)


class Refunds:
    """A ``refund`` tool recording what it refunded, with the guardrails given."""

    def __init__(self, **options: Any) -> None:
        self.done: list[str] = []

        @tool(**options)
        async def refund(order: str, amount: int) -> str:
            """Refund part of an order."""
            self.done.append(order)
            return f"refunded {amount} on {order}"

        self.tool = refund


def at_most_500(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Rejection | None:
    if arguments["amount"] > 500:
        return Rejection("refunds over 500 need a manager; offer to escalate")
    return None


def refund_turn(*calls: tuple[str, str, int]) -> Any:
    return reply(tool_calls=[(cid, "refund", {"order": o, "amount": a}) for cid, o, a in calls])


def record(agent: Agent[Any]) -> list[Event]:
    events: list[Event] = []
    agent.on(None, events.append)
    return events


def check_failed_once(events: Sequence[Event]) -> RunFailed:
    """Every announced call ends exactly once, and the run has one terminal event, ``RunFailed``, last."""
    announced = [e.call.id for e in events if isinstance(e, ToolCallRequested)]
    ends = Counter(e.call.id for e in events if isinstance(e, ToolSucceeded | ToolFailed))
    assert ends == Counter(announced), (announced, ends)
    assert len([e for e in events if isinstance(e, TERMINAL)]) == 1
    assert isinstance(events[-1], RunFailed)
    return events[-1]


def check_paired(items: Sequence[Any]) -> None:
    calls = [c for item in items for c in tool_call_ids(item)]
    outputs = [o for item in items if (o := tool_output_call_id(item)) is not None]
    assert Counter(calls) == Counter(outputs), (calls, outputs)


def outputs(items: Sequence[Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def call_events(events: Sequence[Event], call_id: str) -> list[str]:
    return [
        type(e).__name__
        for e in events
        if isinstance(e, ToolStarted | ToolSucceeded | ToolFailed) and e.call.id == call_id
    ]


# -- allow ---------------------------------------------------------------------------------------------------


async def test_guardrails_that_return_none_let_the_call_run_and_see_the_call() -> None:
    seen: list[tuple[Any, ...]] = []

    def check_input(ctx: ToolGuardrailContext[dict[str, str]], arguments: dict[str, Any]) -> None:
        seen.append(("input", ctx.kind, ctx.run_id, ctx.step, ctx.call_id, ctx.tool_name, ctx.deps))
        seen.append(("arguments", arguments, dict(ctx.arguments), ctx.output_text))

    def check_output(ctx: ToolGuardrailContext[dict[str, str]], value: Any) -> None:
        seen.append(("output", ctx.kind, ctx.call_id, dict(ctx.arguments), value, ctx.output_text))

    refunds = Refunds(input_guardrails=[check_input], output_guardrails=[check_output])
    model = FakeModelClient([refund_turn(("c1", "A1", 50)), reply("Done.")])
    agent = Agent(model, tools=[refunds.tool])

    result = await agent.run("refund A1", deps={"user": "sam"})

    assert result.output_text == "Done."
    assert refunds.done == ["A1"]
    arguments = {"order": "A1", "amount": 50}
    assert seen == [
        ("input", "input", result.run_id, 0, "c1", "refund", {"user": "sam"}),
        ("arguments", arguments, arguments, None),
        ("output", "output", "c1", arguments, "refunded 50 on A1", "refunded 50 on A1"),
    ]
    assert outputs(model.prompts[1].items) == {"c1": "refunded 50 on A1"}


async def test_the_output_guardrail_gets_the_value_the_tool_returned_and_the_text_in_ctx() -> None:
    seen: list[Any] = []

    @tool(output_guardrails=[lambda ctx, value: seen.append((value, ctx.output_text))])
    def totals() -> dict[str, int]:
        """Totals."""
        return {"a": 1}

    ex = ToolExecutor([totals], emit=_ignore)
    [result] = await ex.run_calls([ToolCall("c1", "totals", "")], run_id="r", step=0)
    assert result.ok
    assert seen == [({"a": 1}, '{"a":1}')]


async def _ignore(event: Event) -> None:
    return None


# -- Rejection -----------------------------------------------------------------------------------------------


async def test_an_input_rejection_does_not_run_the_tool_tells_the_model_and_the_run_goes_on() -> None:
    refunds = Refunds(input_guardrails=[at_most_500])
    model = FakeModelClient(
        [refund_turn(("c1", "A1", 900), ("c2", "B2", 50)), reply("A manager must approve A1.")]
    )
    memory = InMemoryMemory()
    agent = Agent(model, tools=[refunds.tool], memory=memory)
    events = record(agent)

    result = await agent.run("refund both")

    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert refunds.done == ["B2"]
    told = tool_error_text("rejected", "refunds over 500 need a manager; offer to escalate", "refund", "c1")
    assert outputs(model.prompts[1].items) == {"c1": told, "c2": "refunded 50 on B2"}
    rejected = result.tool_results[0]
    assert (rejected.ok, rejected.error_type, rejected.error) == (
        False,
        "rejected",
        "refunds over 500 need a manager; offer to escalate",
    )
    assert call_events(events, "c1") == ["ToolStarted", "ToolFailed"]
    [failed] = [e for e in events if isinstance(e, ToolFailed)]
    assert failed.result.error_type == "rejected"
    check_paired(memory.items)


async def test_an_output_rejection_replaces_the_result_the_model_sees() -> None:
    def no_account_numbers(ctx: ToolGuardrailContext[Any], value: str) -> Rejection | None:
        return (
            Rejection("the result held an account number; ask the user for it") if "IBAN" in value else None
        )

    @tool(output_guardrails=[no_account_numbers])
    async def lookup(name: str) -> str:
        """Look a customer up."""
        return f"{name}: IBAN DE44 5001 0517 5407 3249 31"

    model = FakeModelClient([reply(tool_calls=[("c1", "lookup", {"name": "Ada"})]), reply("I cannot say.")])
    agent = Agent(model, tools=[lookup])
    events = record(agent)

    result = await agent.run("who is Ada?")

    assert result.output_text == "I cannot say."
    told = tool_error_text(
        "rejected",
        "the call ran, but its result is withheld: the result held an account number; ask the user for it",
        "lookup",
        "c1",
    )
    assert outputs(model.prompts[1].items) == {"c1": told}
    [rejected] = result.tool_results
    assert rejected.value is None  # the result the model was not shown is not kept on it either
    assert rejected.duration > 0  # the call ran
    assert call_events(events, "c1") == ["ToolStarted", "ToolFailed"]


async def test_a_rejection_is_not_a_failed_attempt_of_the_model() -> None:
    refunds = Refunds(input_guardrails=[at_most_500], max_retries=0)
    turns = [refund_turn((f"c{i}", "A1", 900)) for i in range(3)]
    agent = Agent(FakeModelClient([*turns, reply("Escalated.")]), tools=[refunds.tool])
    result = await agent.run("refund A1")
    assert result.output_text == "Escalated."
    assert [r.error_type for r in result.tool_results] == ["rejected"] * 3


def test_a_rejection_takes_the_message_for_the_model() -> None:
    with pytest.raises(TypeError):
        Rejection(42)  # type: ignore[arg-type]
    assert Rejection("no") == Rejection("no")


# -- Tripwire ------------------------------------------------------------------------------------------------


def over_the_limit(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Tripwire | None:
    return (
        Tripwire("over the daily limit", info={"amount": arguments["amount"]})
        if arguments["amount"] > 5000
        else None
    )


async def test_an_input_trip_ends_the_run_with_one_terminal_event_and_a_partial_result() -> None:
    cancelled: list[str] = []

    @tool
    async def slow(key: str) -> str:
        """A slow lookup, in flight when the run stops."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(key)
        return key

    refunds = Refunds(input_guardrails=[over_the_limit])
    turn = reply(
        tool_calls=[
            ("c0", "slow", {"key": "a"}),
            ("c1", "refund", {"order": "A1", "amount": 9000}),
        ],
        usage=(10, 2),
    )
    memory = InMemoryMemory()
    model = FakeModelClient([turn, reply("never")])
    agent = Agent(model, tools=[slow, refunds.tool], memory=memory)
    events = record(agent)

    with anyio.fail_after(5), pytest.raises(ToolGuardrailTripped) as raised:
        await agent.run("refund A1")

    error = raised.value
    assert isinstance(error, TripwireError)
    assert isinstance(error, AgentRunError)
    assert (error.kind, error.guardrail, error.reason, error.info) == (
        "input",
        "over_the_limit",
        "over the daily limit",
        {"amount": 9000},
    )
    assert (error.tool, error.call_id) == ("refund", "c1")
    assert (
        str(error)
        == "input guardrail over_the_limit of tool 'refund' tripped on call c1: over the daily limit"
    )
    assert refunds.done == []
    assert cancelled == ["a"]
    assert len(model.prompts) == 1
    failed = check_failed_once(events)
    assert failed.error_type == "ToolGuardrailTripped"
    # The partial result is the run's as it ended: the step's calls answered, its usage.
    partial = error.partial
    assert partial is failed.partial
    assert partial.stop_reason is StopReason.ERROR
    assert partial.usage.total_tokens == 12
    by_call = {r.call_id: r for r in partial.tool_results}
    assert by_call["c1"].error_type == "rejected"
    assert by_call["c1"].error == "not run: its input guardrail over_the_limit stopped the run"
    assert by_call["c0"].error_type == "cancelled"
    assert partial.new_items == tuple(memory.items)
    check_paired(memory.items)


async def test_an_output_trip_ends_the_run_and_the_model_never_sees_the_result() -> None:
    def no_secrets(ctx: ToolGuardrailContext[Any], value: str) -> Tripwire | None:
        return Tripwire("a secret in a tool result", info=ctx.output_text) if "secret" in value else None

    @tool(output_guardrails=[no_secrets])
    async def read(path: str) -> str:
        """Read a file."""
        return "the secret is 42"

    memory = InMemoryMemory()
    model = FakeModelClient([reply(tool_calls=[("c1", "read", {"path": "x"})]), reply("never")])
    agent = Agent(model, tools=[read], memory=memory)
    events = record(agent)

    with pytest.raises(ToolGuardrailTripped) as raised:
        await agent.run("read x")

    error = raised.value
    assert (error.kind, error.guardrail, error.info) == ("output", "no_secrets", "the secret is 42")
    assert len(model.prompts) == 1
    check_failed_once(events)
    assert call_events(events, "c1") == ["ToolStarted", "ToolFailed"]
    [result] = error.partial.tool_results
    assert result.error == "result withheld: its output guardrail no_secrets stopped the run"
    assert "42" not in dump_items(memory.items).decode()
    check_paired(memory.items)


# -- async guardrails, order -------------------------------------------------------------------------------


async def test_async_guardrails_of_both_kinds_are_awaited() -> None:
    async def slow_cap(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Rejection | None:
        await anyio.lowlevel.checkpoint()
        await ctx.emit_progress("checking the limit")
        return at_most_500(ctx, arguments)

    async def slow_check(ctx: ToolGuardrailContext[Any], value: str) -> Rejection | None:
        await anyio.lowlevel.checkpoint()
        return Rejection("withheld") if "B2" in value else None

    refunds = Refunds(input_guardrails=[slow_cap], output_guardrails=[slow_check])
    model = FakeModelClient([refund_turn(("c1", "A1", 900), ("c2", "B2", 5), ("c3", "C3", 5)), reply("ok")])
    agent = Agent(model, tools=[refunds.tool])
    events = record(agent)

    result = await agent.run("refund")

    assert sorted(refunds.done) == ["B2", "C3"]
    assert [(r.call_id, r.ok, r.error) for r in result.tool_results] == [
        ("c1", False, "refunds over 500 need a manager; offer to escalate"),
        ("c2", False, "the call ran, but its result is withheld: withheld"),
        ("c3", True, None),
    ]
    assert [e.call_id for e in events if isinstance(e, ToolProgress)] == ["c1", "c2", "c3"]


async def test_guardrails_run_in_order_and_the_first_verdict_decides() -> None:
    ran: list[str] = []

    def first(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        ran.append("first")

    async def second(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Rejection:
        ran.append("second")
        return Rejection("no")

    def third(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Tripwire:
        ran.append("third")
        return Tripwire("never reached")

    refunds = Refunds(input_guardrails=[first, second, third], output_guardrails=[third])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    [result] = await ex.run_calls([ToolCall("c1", "refund", '{"order":"A","amount":1}')], run_id="r", step=0)

    assert ran == ["first", "second"]
    assert (result.error_type, result.error) == ("rejected", "no")
    assert refunds.done == []


async def test_an_async_guardrail_that_waits_lets_the_step_s_other_calls_run_beside_it() -> None:
    # Each call's guardrail waits until both calls' guardrails have started: only calls checked side by side
    # get past it.
    arrived: list[str] = []
    both = anyio.Event()

    async def meet(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        arrived.append(ctx.call_id)
        if len(arrived) == 2:
            both.set()
        await both.wait()

    refunds = Refunds(input_guardrails=[meet])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    calls = [ToolCall(f"c{i}", "refund", f'{{"order":"O{i}","amount":1}}') for i in (1, 2)]
    with anyio.fail_after(5):
        results = await ex.run_calls(calls, run_id="r", step=0)
    assert [r.ok for r in results] == [True, True]
    assert sorted(arrived) == ["c1", "c2"]


async def test_a_tool_that_takes_its_context_still_gets_it_and_the_guardrail_sees_the_arguments_alone() -> (
    None
):
    seen: list[dict[str, Any]] = []

    @tool(input_guardrails=[lambda ctx, arguments: seen.append(dict(arguments))])
    async def where(city: str, ctx: ToolContext) -> str:
        """Where the call runs."""
        return f"{city} in call {ctx.call_id}"

    ex = ToolExecutor([where], emit=_ignore)
    [result] = await ex.run_calls([ToolCall("c1", "where", '{"city":"Oslo"}')], run_id="r", step=0)
    assert result.output == "Oslo in call c1"
    assert seen == [{"city": "Oslo"}]


async def test_invalid_arguments_never_reach_the_guardrails() -> None:
    seen: list[Any] = []
    refunds = Refunds(input_guardrails=[lambda ctx, arguments: seen.append(arguments)])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    [result] = await ex.run_calls(
        [ToolCall("c1", "refund", '{"order":"A","amount":"lots"}')], run_id="r", step=0
    )
    assert result.error_type == "invalid_arguments"
    assert seen == []


async def test_the_guardrail_gets_a_copy_of_the_arguments_and_cannot_change_the_call() -> None:
    def meddle(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        arguments["amount"] = 0
        with pytest.raises(TypeError):
            ctx.arguments["order"] = "B"  # type: ignore[index]

    refunds = Refunds(input_guardrails=[meddle])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    [result] = await ex.run_calls([ToolCall("c1", "refund", '{"order":"A","amount":7}')], run_id="r", step=0)
    assert result.output == "refunded 7 on A"


async def test_nested_changes_reach_neither_the_call_nor_the_next_guardrail() -> None:
    seen: list[Any] = []

    def meddle(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        arguments["tags"].clear()
        arguments["note"] = "changed"

    def look(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        seen.append((arguments["tags"], arguments.get("note"), ctx.arguments["tags"]))

    got: list[list[str]] = []

    @tool(input_guardrails=[meddle, look])
    def tag(tags: list[str]) -> str:
        """Tag an order."""
        got.append(tags)
        return "ok"

    ex = ToolExecutor([tag], emit=_ignore)
    await ex.run_calls([ToolCall("c1", "tag", '{"tags":["a","b"]}')], run_id="r", step=0)
    assert seen == [(["a", "b"], None, ["a", "b"])]
    assert got == [["a", "b"]]


async def test_a_context_variable_a_sync_guardrail_sets_stays_its_own() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    def mark(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        marker.set("guardrail")

    refunds = Refunds(input_guardrails=[mark])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    await ex.run_calls([ToolCall("c1", "refund", '{"order":"A","amount":7}')], run_id="r", step=0)
    assert marker.get() == "unset"


# -- a guardrail that fails ----------------------------------------------------------------------------------


async def test_a_guardrail_that_raises_fails_the_run_and_the_call_does_not_run() -> None:
    class ClassifierDown(Exception):
        pass

    def classify(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        raise ClassifierDown("503 from the classifier")

    refunds = Refunds(input_guardrails=[classify])
    memory = InMemoryMemory()
    agent = Agent(
        FakeModelClient([refund_turn(("c1", "A1", 5)), reply("never")]), tools=[refunds.tool], memory=memory
    )
    events = record(agent)

    with pytest.raises(ToolGuardrailError) as raised:
        await agent.run("refund A1")

    error = raised.value
    assert isinstance(error, GuardrailError)  # ``except GuardrailError`` catches a tool's as a run's
    assert isinstance(error.__cause__, ClassifierDown)
    assert (error.kind, error.guardrail, error.tool, error.call_id) == ("input", "classify", "refund", "c1")
    assert error.error == "ClassifierDown: 503 from the classifier"
    assert "return Rejection('why') from it to reject the call" in str(error)
    assert refunds.done == []
    failed = check_failed_once(events)
    assert failed.error_type == "ToolGuardrailError"
    assert error.partial is failed.partial
    assert error.partial.tool_results[0].error == "not run: its input guardrail classify failed"
    check_paired(memory.items)


@pytest.mark.parametrize(
    ("verdict", "said"),
    [
        (True, "returned a bool, which gives no verdict"),
        (RejectCall("no"), "returned a RejectCall, which gives no verdict (RejectCall is what a tool raises"),
    ],
)
async def test_a_guardrail_that_returns_no_verdict_fails_the_run(verdict: object, said: str) -> None:
    refunds = Refunds(output_guardrails=[lambda ctx, value: verdict])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    with pytest.raises(ToolGuardrailError, match=said.replace("(", r"\(")):
        await ex.run_calls([ToolCall("c1", "refund", '{"order":"A","amount":1}')], run_id="r", step=0)
    assert refunds.done == ["A"]  # an output guardrail: the tool ran


async def test_a_cancelled_error_a_guardrail_raised_is_its_failure_not_a_cancel() -> None:
    import asyncio

    async def awaits_a_cancelled_task(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future

    refunds = Refunds(input_guardrails=[awaits_a_cancelled_task])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    with pytest.raises(ToolGuardrailError, match="CancelledError while nothing cancelled the run"):
        await ex.run_calls([ToolCall("c1", "refund", '{"order":"A","amount":1}')], run_id="r", step=0)


async def test_cancelling_the_run_cancels_a_guardrail_and_the_call() -> None:
    started = anyio.Event()

    async def hangs(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> None:
        started.set()
        await anyio.sleep_forever()

    refunds = Refunds(input_guardrails=[hangs])
    ex = ToolExecutor([refunds.tool], emit=_ignore)
    calls = [ToolCall("c1", "refund", '{"order":"A","amount":1}')]

    async def run() -> None:
        await ex.run_calls(calls, run_id="r", step=0)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await started.wait()
        group.cancel_scope.cancel()
    assert refunds.done == []


# -- time limits ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("listened", [True, False])
async def test_a_guardrail_s_time_is_no_part_of_the_tool_s_time_limit(listened: bool) -> None:
    # The guardrails take longer than the tools' limit; the tools are quick. Unlistened, a batch of calls with
    # one limit would share one deadline on the task group: not when a call has guardrails.
    async def slow(ctx: ToolGuardrailContext[Any], value: Any) -> None:
        await anyio.sleep(0.2)

    @tool(timeout=0.05, input_guardrails=[slow], output_guardrails=[slow])
    async def quick(n: int) -> int:
        """Quick."""
        return n

    ex = ToolExecutor([quick], emit=_ignore, emit_may_wait=lambda: listened, listening=lambda: listened)
    assert ex._shared_limit([quick, quick]) is None
    calls = [ToolCall("c1", "quick", '{"n":1}'), ToolCall("c2", "quick", '{"n":2}')]
    results = await ex.run_calls(calls, run_id="r", step=0)
    assert [(r.ok, r.output) for r in results] == [(True, "1"), (True, "2")]


# -- every runtime, eager and resumed calls ----------------------------------------------------------------


def code(source: str) -> str:
    return orjson.dumps({"type": "code", "language": "python", "code": source}).decode()


class CallingExecutor:
    """A ``CodeExecutor`` whose code calls ``refund`` and hands back what the call returned."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        result = await tools("refund", {"order": "A1", "amount": 900})
        self.results.append(result)
        return CodeResult(ok=True, value=result.output)

    async def aclose(self) -> None:
        return None


async def test_a_codeact_code_call_is_rejected_and_the_code_gets_the_rejection() -> None:
    sandbox = CallingExecutor()
    refunds = Refunds(input_guardrails=[at_most_500])
    runtime = CodeActRuntime(CodeActOptions(executor=sandbox, react=True))
    model = FakeModelClient(
        [reply(code("refund(order='A1', amount=900)")), reply('{"type":"final","output":"escalated"}')]
    )
    agent = Agent(model, runtime=runtime, tools=[refunds.tool])

    result = await agent.run("refund A1")

    assert refunds.done == []
    [rejected] = sandbox.results
    assert (rejected.ok, rejected.error_type) == (False, "rejected")
    assert result.output == "escalated"


async def test_a_codeact_code_call_that_trips_ends_the_run() -> None:
    sandbox = CallingExecutor()
    refunds = Refunds(input_guardrails=[lambda ctx, arguments: Tripwire("stop")])
    runtime = CodeActRuntime(CodeActOptions(executor=sandbox, react=True))
    model = FakeModelClient([reply(code("refund(order='A1', amount=900)")), reply("never")])
    agent = Agent(model, runtime=runtime, tools=[refunds.tool])
    events = record(agent)

    with anyio.fail_after(5), pytest.raises(ToolGuardrailTripped, match="stop"):
        await agent.run("refund A1")
    assert refunds.done == []
    check_failed_once(events)


async def test_deep_research_calls_are_checked_too() -> None:
    refunds = Refunds(input_guardrails=[at_most_500])
    model = FakeModelClient([refund_turn(("c1", "A1", 900)), reply("escalated")])
    agent = Agent(model, runtime=DeepResearchRuntime(), tools=[refunds.tool])
    result = await agent.run("refund A1")
    assert refunds.done == []
    assert [r.error_type for r in result.tool_results] == ["rejected"]


async def test_an_eager_call_is_checked_before_it_starts() -> None:
    refunds = Refunds(input_guardrails=[at_most_500], eager=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 900), ("c2", "B2", 5)), reply("ok")])
    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(stream=True))
    events = record(agent)
    result = await agent.run("refund")
    assert refunds.done == ["B2"]
    assert [r.error_type for r in result.tool_results] == ["rejected", None]
    assert call_events(events, "c1") == ["ToolStarted", "ToolFailed"]


async def test_an_agent_used_as_a_tool_takes_guardrails_by_evolve() -> None:
    helper_model = FakeModelClient([reply("done")])
    helper = Agent(helper_model, name="helper")
    delegate = attrs.evolve(
        helper.as_tool(description="Does things."),
        input_guardrails=[
            lambda ctx, arguments: Rejection("not this task") if "delete" in arguments["input"] else None
        ],
    )
    model = FakeModelClient(
        [reply(tool_calls=[("c1", delegate.name, {"input": "delete everything"})]), reply("ok")]
    )
    agent = Agent(model, tools=[delegate])
    result = await agent.run("go")
    assert [(r.error_type, r.error) for r in result.tool_results] == [("rejected", "not this task")]
    assert helper_model.prompts == []


async def test_a_call_the_policy_rejects_is_never_asked_to_be_approved() -> None:
    asked: list[str] = []

    def approve(request: ToolApprovalRequest) -> bool:
        asked.append(request.call_id)
        return True

    refunds = Refunds(input_guardrails=[at_most_500], needs_approval=True)
    model = FakeModelClient([refund_turn(("c1", "A1", 900), ("c2", "B2", 50)), reply("ok")])
    agent = Agent(model, tools=[refunds.tool], options=AgentOptions(tool_approval=approve))
    events = record(agent)

    result = await agent.run("refund both")

    assert asked == ["c2"]
    assert refunds.done == ["B2"]
    assert [e.call.id for e in events if isinstance(e, ToolApprovalRequested)] == ["c2"]
    assert [r.error_type for r in result.tool_results] == ["rejected", None]


async def test_a_resumed_approved_call_is_checked_when_it_runs() -> None:
    policy = {"limit": 1000}

    def within_limit(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Rejection | None:
        if arguments["amount"] > policy["limit"]:
            return Rejection(f"over the limit of {policy['limit']}")
        return None

    refunds = Refunds(input_guardrails=[within_limit], needs_approval=True)
    defer = AgentOptions(tool_approval="defer")
    first = await Agent(
        FakeModelClient([refund_turn(("c1", "A1", 900))]), tools=[refunds.tool], options=defer
    ).run("refund A1")
    assert first.stop_reason is StopReason.APPROVAL_REQUIRED  # the policy let it through then

    policy["limit"] = 500  # the policy changed while a person decided
    model = FakeModelClient([reply("Could not refund.")])
    agent = Agent(model, tools=[refunds.tool], options=defer)
    events = record(agent)
    result = await agent.run(history=load_items(dump_items(first.all_items)), approvals={"c1": True})

    assert refunds.done == []
    assert result.output_text == "Could not refund."
    assert outputs(model.prompts[0].items) == {
        "c1": tool_error_text("rejected", "over the limit of 500", "refund", "c1")
    }
    assert call_events(events, "c1") == ["ToolStarted", "ToolFailed"]


# -- the options ---------------------------------------------------------------------------------------------


def test_the_keywords_are_set_by_tool_from_spec_and_evolve() -> None:
    refunds = Refunds(input_guardrails=[at_most_500])
    assert refunds.tool.input_guardrails == (at_most_500,)
    assert refunds.tool.output_guardrails == ()
    assert Refunds().tool.input_guardrails == ()

    spec = ToolSpec("echo", "Echo.", {"type": "object", "properties": {"x": {"type": "string"}}})
    made = Tool.from_spec(spec, lambda x: x, output_guardrails=[at_most_500])
    assert made.output_guardrails == (at_most_500,)

    evolved = attrs.evolve(Refunds().tool, input_guardrails=[at_most_500])
    assert evolved.input_guardrails == (at_most_500,)
    assert evolved._guarded
    assert not Refunds().tool._guarded
    assert not attrs.evolve(evolved, input_guardrails=[])._guarded


@pytest.mark.parametrize("keyword", ["input_guardrails", "output_guardrails"])
@pytest.mark.parametrize(
    ("value", "said"),
    [
        ([42], "takes guardrail functions"),
        (["no_pii"], "takes guardrail functions"),
        (at_most_500, "must be a list of guardrail functions"),
        ("at_most_500", "must be a list of guardrail functions"),
        ([lambda arguments: None], "must take two positional arguments"),
        ([Rejection], "takes guardrail functions"),
    ],
)
def test_bad_values_are_refused_where_they_are_written(keyword: str, value: object, said: str) -> None:
    options: dict[str, Any] = {keyword: value}
    with pytest.raises(TypeError, match=f"^{keyword}.*{said}"):
        tool(**options)

    async def refund(order: str) -> str:
        """Refund."""
        return order

    with pytest.raises(TypeError, match=f"^{keyword}.*{said}"):
        tool(refund, **options)
    spec = ToolSpec("echo", "Echo.", {"type": "object"})
    with pytest.raises(TypeError, match=f"^{keyword}.*{said}"):
        Tool.from_spec(spec, refund, **options)
    with pytest.raises(TypeError, match=f"^{keyword}.*{said}"):
        attrs.evolve(Refunds().tool, **options)


def test_the_agents_sdk_s_keywords_say_their_name_here() -> None:
    with pytest.raises(TypeError, match=r"'tool_input_guardrails' \(did you mean input_guardrails=\?\)"):
        tool(tool_input_guardrails=[at_most_500])  # type: ignore[call-overload]


async def test_a_sub_agent_s_tool_trip_tells_the_caller_which_tool_stopped_it() -> None:
    def no_refunds(ctx: ToolGuardrailContext[Any], arguments: dict[str, Any]) -> Tripwire:
        return Tripwire("refunds are frozen")

    refunds = Refunds(input_guardrails=[no_refunds])
    billing = Agent(FakeModelClient([refund_turn(("r1", "A1", 10))]), name="billing", tools=[refunds.tool])
    boss = Agent(
        FakeModelClient(
            [reply(tool_calls=[("billing", {"input": "refund A1"})]), reply("Could not refund.")]
        ),
        tools=[billing.as_tool(description="Billing.")],
    )
    result = await boss.run("refund A1")
    [failed] = result.tool_results
    assert "the input guardrail no_refunds of its tool 'refund'" in failed.output
    assert result.output_text == "Could not refund."
    assert refunds.done == []

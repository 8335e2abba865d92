"""Human approval of tool calls in ``ToolExecutor``: ``needs_approval`` on tools, ``ToolApprovals`` deciding
(a function, or ``approve`` / ``deny`` from outside), what a denied call gets, and that waiting holds no
concurrency slot and no time limit (the run-level behaviour is in
``tests/agent/test_tool_approval_runs.py``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import anyio
import attrs
import pytest

import agentflow
from agentflow.events import ToolApprovalRequested, ToolFailed, ToolStarted, ToolSucceeded
from agentflow.model.events import Event
from agentflow.model.messages import ToolCall
from agentflow.model.tools import ToolSpec
from agentflow.tools import Tool, ToolExecutor, ToolRegistry, tool, tool_error_text
from agentflow.tools.approval import (
    DEFAULT_DENIAL,
    ApprovalNotPendingError,
    ApprovalRequiredError,
    ToolApprovalRequest,
    ToolApprovals,
)


class Recorder:
    """An ``emit`` that keeps every event and runs ``react(event)`` on each (to answer from "outside")."""

    def __init__(self, react: Callable[[Event], object] | None = None) -> None:
        self.events: list[Event] = []
        self.react = react

    async def __call__(self, event: Event) -> None:
        self.events.append(event)
        if self.react is not None:
            self.react(event)

    def trail(self) -> list[tuple[str, str]]:
        """``(event name, call id)`` of every event, in order."""
        return [(type(e).__name__, e.call.id) for e in self.events if hasattr(e, "call")]


def refunds() -> tuple[Tool[..., Any], list[str]]:
    """A ``refund`` tool that always needs approval, and the orders it refunded."""
    done: list[str] = []

    @tool(needs_approval=True)
    async def refund(order: str, amount: int) -> str:
        """Refund an order."""
        done.append(order)
        return f"refunded {amount} on {order}"

    return refund, done


def call(call_id: str, order: str = "A1", amount: int = 250, name: str = "refund") -> ToolCall:
    return ToolCall(call_id, name, f'{{"order":"{order}","amount":{amount}}}')


def executor(
    *tools: Any,
    approver: Any = None,
    waits: bool = False,
    react: Callable[[Event], object] | None = None,
    **options: Any,
) -> tuple[ToolExecutor, ToolApprovals, Recorder]:
    recorder = Recorder(react)
    approvals = ToolApprovals(approver, recorder, waits=waits)
    return ToolExecutor(list(tools), emit=recorder, approvals=approvals, **options), approvals, recorder


# -- declaring it -------------------------------------------------------------------------------------------


def test_needs_approval_is_off_by_default_and_set_by_tool_from_spec_and_evolve() -> None:
    @tool
    def plain() -> str:
        """Nothing to approve."""
        return ""

    def predicate(arguments: dict[str, Any]) -> bool:
        return bool(arguments["amount"] > 100)

    @tool(needs_approval=predicate)
    def refund(amount: int) -> str:
        """Refund."""
        return ""

    spec = ToolSpec("wipe", "Wipe a disk.", {"type": "object", "properties": {}})
    wipe = Tool.from_spec(spec, lambda: "wiped", needs_approval=True)

    assert plain.needs_approval is False
    assert refund.needs_approval is predicate
    assert wipe.needs_approval is True
    assert attrs.evolve(plain, needs_approval=True).needs_approval is True
    assert ToolRegistry([plain]).has_approval is False
    assert ToolRegistry([plain, refund]).has_approval is True
    # Never sent to the model.
    assert refund.spec == tool(refund.fn).spec


def test_needs_approval_refuses_what_cannot_decide() -> None:
    async def decide(arguments: dict[str, Any]) -> bool:
        return True

    with pytest.raises(TypeError, match="True, False or a function"):
        tool(needs_approval="yes")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="not an async one"):
        tool(needs_approval=decide)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="True, False or a function"):

        @tool(needs_approval=1)  # type: ignore[call-overload]
        def f() -> None:
            """F."""


def test_agent_options_take_a_function_or_none() -> None:
    assert agentflow.AgentOptions(tool_approval=lambda request: True).tool_approval is not None
    with pytest.raises(TypeError, match="tool_approval must be a function"):
        agentflow.AgentOptions(tool_approval="yes")  # type: ignore[arg-type]


# -- a function decides ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "ran", "output"),
    [
        (True, True, "refunded 250 on A1"),
        (False, False, tool_error_text("denied", DEFAULT_DENIAL, "refund", "c1")),
        (
            "refunds need a manager",
            False,
            tool_error_text("denied", "refunds need a manager", "refund", "c1"),
        ),
        ("  ", False, tool_error_text("denied", DEFAULT_DENIAL, "refund", "c1")),
    ],
)
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_the_approval_function_decides_sync_or_async(
    verdict: bool | str, ran: bool, output: str, asynchronous: bool
) -> None:
    refund, done = refunds()
    requests: list[ToolApprovalRequest] = []

    def decide(request: ToolApprovalRequest) -> bool | str:
        requests.append(request)
        return verdict

    async def decide_async(request: ToolApprovalRequest) -> bool | str:
        await anyio.lowlevel.checkpoint()
        return decide(request)

    ex, _, recorder = executor(refund, approver=decide_async if asynchronous else decide, deps="the user")
    [result] = await ex.run_calls([call("c1")], run_id="r", step=3)

    assert result.output == output
    assert done == (["A1"] if ran else [])
    [request] = requests
    assert (request.run_id, request.step, request.call_id, request.tool) == ("r", 3, "c1", "refund")
    assert dict(request.arguments) == {"order": "A1", "amount": 250}
    assert request.deps == "the user"
    end = "ToolSucceeded" if ran else "ToolFailed"
    # The request is published first (a UI shows it), then the call starts, or is denied.
    assert recorder.trail() == [("ToolApprovalRequested", "c1"), ("ToolStarted", "c1"), (end, "c1")]
    if not ran:
        assert (result.ok, result.error_type) == (False, "denied")


async def test_a_predicate_asks_only_for_the_calls_it_says_need_approval() -> None:
    done: list[int] = []
    asked: list[dict[str, Any]] = []

    def over_100(arguments: dict[str, Any]) -> bool:
        asked.append(dict(arguments))
        needs = bool(arguments["amount"] > 100)
        arguments["amount"] = 0  # its own copy: the call is not changed
        return needs

    @tool(needs_approval=over_100)
    async def refund(order: str, amount: int) -> str:
        """Refund."""
        done.append(amount)
        return "ok"

    ex, _, recorder = executor(refund, approver=lambda request: False)
    results = await ex.run_calls([call("c1", amount=50), call("c2", amount=500)], run_id="r", step=0)

    assert done == [50]  # the second call needed approval and was denied
    assert asked == [{"order": "A1", "amount": 50}, {"order": "A1", "amount": 500}]
    assert [r.error_type for r in results] == [None, "denied"]
    assert [e.call.id for e in recorder.events if isinstance(e, ToolApprovalRequested)] == ["c2"]


async def test_without_approvals_a_call_needing_one_ends_the_run_with_its_result_first() -> None:
    refund, done = refunds()
    recorder = Recorder()
    ex = ToolExecutor([refund], emit=recorder)  # no approvals: nobody can decide
    arrived: list[Any] = []

    with pytest.raises(ApprovalRequiredError, match=r"AgentOptions\(tool_approval=fn\)") as raised:
        await ex.run_calls([call("c1")], run_id="r", step=0, on_result=lambda i, r: arrived.append(r))

    assert (raised.value.call.id, raised.value.tool) == ("c1", "refund")
    assert done == []
    [result] = arrived
    assert (result.error_type, result.error) == (
        "denied",
        "not run: it needs approval, and the run had no way to ask for it",
    )
    assert recorder.trail() == [("ToolStarted", "c1"), ("ToolFailed", "c1")]


async def test_approvals_that_cannot_wait_and_have_no_function_end_the_run() -> None:
    refund, _ = refunds()
    ex, _, recorder = executor(refund, waits=False)

    with pytest.raises(ApprovalRequiredError):
        await ex.run_calls([call("c1")], run_id="r", step=0)

    # Nothing asked anyone: no request event for a decision nobody could make.
    assert not any(isinstance(e, ToolApprovalRequested) for e in recorder.events)


@pytest.mark.parametrize(
    ("approver", "needs", "error"),
    [
        (lambda request: None, True, "tool_approval function returned NoneType"),
        (lambda request: 1 / 0, True, "division by zero"),
        (
            lambda request: True,
            lambda arguments: "yes",
            "needs_approval function of tool 'refund' returned str",
        ),
        (lambda request: True, lambda arguments: arguments["missing"], "missing"),
    ],
)
async def test_a_decision_that_cannot_be_made_ends_the_run_and_the_call_does_not_run(
    approver: Any, needs: Any, error: str
) -> None:
    done: list[str] = []

    @tool(needs_approval=needs)
    async def refund(order: str, amount: int) -> str:
        """Refund."""
        done.append(order)
        return "ok"

    fatal: list[Exception] = []
    ex, _, recorder = executor(refund, approver=approver, on_fatal=fatal.append)

    with pytest.raises((TypeError, ZeroDivisionError, KeyError), match=error):
        await ex.run_calls([call("c1")], run_id="r", step=0)

    assert done == []
    assert len(fatal) == 1  # CodeAct's sandbox learns the run must end, as for any call ending it
    [failed] = [e for e in recorder.events if isinstance(e, ToolFailed)]
    assert failed.result.error_type == "denied"
    assert failed.result.error is not None
    assert failed.result.error.startswith("not run: deciding whether it may run failed")


# -- decided from outside ---------------------------------------------------------------------------------


async def test_calls_wait_for_approve_and_deny_and_both_ask_before_either_is_decided() -> None:
    refund, done = refunds()
    approvals: ToolApprovals | None = None
    pending_at_second: list[str] = []

    def react(event: Event) -> None:
        assert approvals is not None
        if isinstance(event, ToolApprovalRequested) and event.call.id == "c2":
            pending_at_second.extend(r.call_id for r in approvals.pending)
            approvals.deny("c1", "not this one")
            approvals.approve("c2")

    ex, approvals, _ = executor(refund, waits=True, react=react)
    with anyio.fail_after(5):  # a deadlock guard only
        results = await ex.run_calls([call("c1", "A1"), call("c2", "B2")], run_id="r", step=0)

    assert pending_at_second == ["c1", "c2"]  # both asked before either was decided
    assert done == ["B2"]
    assert results[0].output == tool_error_text("denied", "not this one", "refund", "c1")
    assert results[1].output == "refunded 250 on B2"
    assert approvals.pending == ()
    with pytest.raises(ApprovalNotPendingError, match="'c1' was already denied"):
        approvals.approve("c1")
    with pytest.raises(KeyError, match="'c2' was already approved"):
        approvals.deny("c2")
    with pytest.raises(ApprovalNotPendingError, match="no tool call 'c9' waits for approval") as unknown:
        approvals.approve("c9")
    assert str(unknown.value).startswith("no tool call 'c9'")  # not KeyError's quoted repr
    with pytest.raises(TypeError, match="reason"):
        approvals.deny("c9", reason=3)  # type: ignore[arg-type]


async def test_a_call_waiting_for_approval_holds_no_concurrency_slot() -> None:
    refund, done = refunds()
    approvals: ToolApprovals | None = None

    def react(event: Event) -> None:
        # c2 is approved first and must run while c1 still waits, with one slot for the whole executor.
        assert approvals is not None
        if isinstance(event, ToolApprovalRequested) and event.call.id == "c2":
            approvals.approve("c2")
        if isinstance(event, ToolSucceeded) and event.call.id == "c2":
            approvals.approve("c1")

    ex, approvals, recorder = executor(refund, waits=True, react=react, max_concurrency=1)
    with anyio.fail_after(5):  # a deadlock guard only: a held slot would never let c2 run
        await ex.run_calls([call("c1", "A1"), call("c2", "B2")], run_id="r", step=0)

    assert done == ["B2", "A1"]
    assert recorder.trail() == [
        ("ToolApprovalRequested", "c1"),
        ("ToolApprovalRequested", "c2"),
        ("ToolStarted", "c2"),
        ("ToolSucceeded", "c2"),
        ("ToolStarted", "c1"),
        ("ToolSucceeded", "c1"),
    ]


async def test_cancelled_while_waiting_it_leaves_nothing_waiting() -> None:
    refund, done = refunds()
    asked = anyio.Event()
    ex, approvals, _ = executor(refund, waits=True, react=lambda e: asked.set())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(functools.partial(ex.run_calls, [call("c1")], run_id="r", step=0))
            await asked.wait()
            assert [r.call_id for r in approvals.pending] == ["c1"]
            group.cancel_scope.cancel()

    assert approvals.pending == ()
    assert done == []
    with pytest.raises(ApprovalNotPendingError):
        approvals.approve("c1")


# -- waiting is no part of a time limit ------------------------------------------------------------------


@pytest.mark.parametrize("listened", [True, False])
async def test_waiting_for_approval_does_not_count_against_the_tool_s_time_limit(listened: bool) -> None:
    # The approval takes longer than the tools' limit; the tools themselves are quick. Unlistened, a batch of
    # calls with one limit would share one deadline on the task group: not when a call may wait for approval.
    @tool(timeout=0.05, needs_approval=True)
    async def quick(n: int) -> int:
        """Quick."""
        return n

    async def slow_yes(request: ToolApprovalRequest) -> bool:
        await anyio.sleep(0.2)
        return True

    recorder = Recorder()
    approvals = ToolApprovals(slow_yes, recorder, waits=False)
    ex = ToolExecutor(
        [quick],
        emit=recorder,
        approvals=approvals,
        emit_may_wait=lambda: listened,
        listening=lambda: listened,
    )
    calls = [ToolCall("c1", "quick", '{"n":1}'), ToolCall("c2", "quick", '{"n":2}')]
    results = await ex.run_calls(calls, run_id="r", step=0)

    assert [(r.ok, r.output) for r in results] == [(True, "1"), (True, "2")]


async def test_a_batch_without_approval_tools_keeps_its_shared_deadline() -> None:
    # The cheaper path is untouched for calls that need no approval (a registry with an approval tool too).
    refund, _ = refunds()

    @tool(timeout=0.05)
    async def hang() -> None:
        """Hangs."""
        await anyio.sleep(math.inf)

    ex = ToolExecutor([refund, hang], emit=Recorder(), emit_may_wait=lambda: False, listening=lambda: False)
    assert ex._shared_limit([hang, hang]) == 0.05
    assert ex._shared_limit([hang, refund]) is None
    results = await ex.run_calls([ToolCall("h1", "hang"), ToolCall("h2", "hang")], run_id="r", step=0)
    assert [r.error_type for r in results] == ["timeout", "timeout"]


# -- the events ---------------------------------------------------------------------------------------------


def test_the_request_event_is_json_ready_and_public_as_it_is() -> None:
    event = ToolApprovalRequested(call=call("c1"), tool="refund", run_id="run_1", step=2, seq=9)
    assert event.to_dict() == {
        "type": "tool_approval_requested",
        "run_id": "run_1",
        "step": 2,
        "seq": 9,
        "call": {
            "id": "c1",
            "name": "refund",
            "arguments": '{"order":"A1","amount":250}',
            "kind": "function",
        },
        "tool": "refund",
    }
    assert agentflow.public_event(event) is event
    frame = agentflow.encode_sse(event).decode()
    assert frame.startswith("event: tool_approval_requested\nid: 9\ndata: {")


def test_a_denied_result_is_public_as_a_sentence_for_its_type() -> None:
    from agentflow.tools.approval import denied_result

    result = denied_result(call("c1"), "refund", "the manager said no: internal note 42")
    public = agentflow.public_event(ToolFailed(call=call("c1"), result=result))
    assert (public.result.error_type, public.result.output) == ("denied", "The tool call was not approved.")
    assert ToolStarted(call=call("c1")).type == "tool_started"

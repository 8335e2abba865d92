"""How many times in a row the model may get a tool wrong, in ``ToolExecutor`` (``agentflow.tools.retries``):
what counts as a failed attempt, how steps are counted and reset, and the error a call that fails once too
often ends the run with. Whole runs are in ``test_tool_retries_runs.py``."""

from __future__ import annotations

import math
import pickle
from typing import Any

import anyio
import pytest

from agentflow.events import ToolFailed, ToolSucceeded
from agentflow.model.events import Event
from agentflow.model.messages import ToolCall
from agentflow.model.tools import ToolSpec
from agentflow.result import AgentResult, StopReason, ToolResult
from agentflow.runtimes.errors import ToolRetriesExceeded, attach_run_result, own_result
from agentflow.tools import RejectCall, Tool, ToolExecutor, tool
from agentflow.tools.approval import ToolApprovals
from agentflow.tools.retries import ToolRetries


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def ends(self) -> list[tuple[str, str]]:
        return [
            (e.call.id, type(e).__name__) for e in self.events if isinstance(e, ToolSucceeded | ToolFailed)
        ]


def exceeded(name: str, limit: int, result: ToolResult, unknown: bool) -> Exception:
    return ToolRetriesExceeded(name, limit, result.error or "", result.error_type or "", unknown=unknown)


def executor(*tools: Any, max_retries: int | None = 3, **options: Any) -> tuple[ToolExecutor, Recorder]:
    recorder = Recorder()
    ex = ToolExecutor(
        list(tools), emit=recorder, max_retries=max_retries, retries_exceeded=exceeded, **options
    )
    return ex, recorder


@tool
async def find(name: str) -> str:
    """Find a city: only Paris is known."""
    if name != "Paris":
        raise RejectCall(f"no city is named {name!r}")
    return "48.86 N, 2.35 E"


def call(call_id: str, name: str = "find", arguments: str = '{"name":"Pariss"}') -> ToolCall:
    return ToolCall(call_id, name, arguments)


GOOD = '{"name":"Paris"}'


async def step(ex: ToolExecutor, step: int, *calls: ToolCall) -> list[ToolResult]:
    return await ex.run_calls(list(calls), run_id="r", step=step)


# -- the limit ------------------------------------------------------------------------------------------


async def test_a_tool_failing_in_more_steps_in_a_row_than_its_limit_ends_with_tool_retries_exceeded() -> None:
    ex, recorder = executor(find, max_retries=2)
    for index in range(2):
        [result] = await step(ex, index, call(f"c{index}"))
        assert (result.ok, result.error) == (False, "no city is named 'Pariss'")

    arrived: list[ToolResult] = []
    with pytest.raises(ToolRetriesExceeded) as raised:
        await ex.run_calls([call("c2")], run_id="r", step=2, on_result=lambda _i, r: arrived.append(r))

    error = raised.value
    assert str(error) == (
        "the model's calls of tool 'find' failed in 3 steps in a row, more than its max_retries=2 allows; "
        "the last error: no city is named 'Pariss'"
    )
    assert (error.tool, error.max_retries, error.error, error.error_type, error.unknown) == (
        "find",
        2,
        "no city is named 'Pariss'",
        "exception",
        False,
    )
    # The call that failed once too often still gets its result and its event, before the run ends.
    assert [r.call_id for r in arrived] == ["c2"]
    assert recorder.ends() == [("c0", "ToolFailed"), ("c1", "ToolFailed"), ("c2", "ToolFailed")]


async def test_a_tool_s_own_limit_wins_over_the_executor_s_default() -> None:
    strict = Tool.from_spec(find.spec, find.fn, max_retries=0)
    ex, _ = executor(strict, max_retries=5)
    with pytest.raises(ToolRetriesExceeded, match="failed in 1 step,"):
        await step(ex, 0, call("c0"))


async def test_a_tool_with_an_infinite_limit_or_an_executor_without_one_never_ends_the_run() -> None:
    patient = Tool.from_spec(find.spec, find.fn, max_retries=math.inf)
    ex, _ = executor(patient, max_retries=0)
    unlimited, _ = executor(find, max_retries=None)
    for index in range(30):
        [result] = await step(ex, index, call(f"a{index}"))
        [other] = await step(unlimited, index, call(f"b{index}"))
        assert not result.ok
        assert not other.ok


async def test_an_executor_without_retries_exceeded_counts_nothing() -> None:
    ex = ToolExecutor([Tool.from_spec(find.spec, find.fn, max_retries=0)], emit=Recorder())
    for index in range(5):
        [result] = await step(ex, index, call(f"c{index}"))
        assert not result.ok


# -- what is counted: steps ------------------------------------------------------------------------------


async def test_failing_calls_of_a_tool_in_one_step_count_once() -> None:
    ex, _ = executor(find, max_retries=1)
    results = await step(ex, 0, call("c1"), call("c2"), call("c3"))  # three failures: one failed step
    assert [r.ok for r in results] == [False, False, False]
    with pytest.raises(ToolRetriesExceeded, match="failed in 2 steps in a row"):
        await step(ex, 1, call("c4"), call("c5"))


async def test_a_step_in_which_the_tool_succeeded_sets_its_count_back_to_zero() -> None:
    ex, _ = executor(find, max_retries=1)
    await step(ex, 0, call("c1"))
    await step(ex, 1, call("c2", arguments=GOOD))
    await step(ex, 2, call("c3"))  # a first failure again
    with pytest.raises(ToolRetriesExceeded):
        await step(ex, 3, call("c4"))


@pytest.mark.parametrize("order", ["success first", "failure first"])
async def test_a_step_in_which_a_call_failed_counts_whatever_else_succeeded_in_it(order: str) -> None:
    ex, _ = executor(find, max_retries=2)
    await step(ex, 0, call("c1"))
    pair = [call("c2", arguments=GOOD), call("c3")]
    if order == "failure first":
        pair.reverse()
    await ex.run_calls(pair, run_id="r", step=1, parallel=False)  # a failed step: the count is 2
    with pytest.raises(ToolRetriesExceeded, match="failed in 3 steps in a row"):
        await step(ex, 2, call("c4"))


async def test_a_step_that_does_not_call_the_tool_leaves_its_count_as_it_is() -> None:
    @tool
    async def other() -> str:
        """Works."""
        return "ok"

    ex, _ = executor(find, other, max_retries=1)
    await step(ex, 0, call("c1"))
    await step(ex, 1, call("c2", "other", ""))  # another tool succeeds: find's count stays at 1
    with pytest.raises(ToolRetriesExceeded, match="'find'"):
        await step(ex, 2, call("c3"))


async def test_each_tool_has_its_own_count() -> None:
    @tool
    async def broken() -> str:
        """Always fails."""
        raise ValueError("down")

    ex, _ = executor(find, broken, max_retries=1)
    await step(ex, 0, call("c1"), call("c2", "broken", ""))
    with pytest.raises(ToolRetriesExceeded, match="'broken'"):
        await step(ex, 1, call("c3", arguments=GOOD), call("c4", "broken", ""))


# -- what counts as a failed attempt ------------------------------------------------------------------------


async def test_invalid_arguments_count() -> None:
    ex, _ = executor(find, max_retries=1)
    await step(ex, 0, call("c1", arguments='{"city":"Paris"}'))
    with pytest.raises(ToolRetriesExceeded) as raised:
        await step(ex, 1, call("c2", arguments="not json"))
    assert raised.value.error_type == "invalid_arguments"


async def test_an_exception_fed_back_counts_and_so_does_a_formatter_s_text() -> None:
    @tool(on_error=lambda exc, call: "The service is down; try later.")
    async def status() -> str:
        """The service's status."""
        raise ConnectionError("refused")

    ex, _ = executor(status, max_retries=1)
    [result] = await step(ex, 0, call("c1", "status", ""))
    assert result.output == "The service is down; try later."
    with pytest.raises(ToolRetriesExceeded) as raised:
        await step(ex, 1, call("c2", "status", ""))
    assert (raised.value.error_type, raised.value.error) == ("exception", "ConnectionError: refused")


@tool(timeout=0.01)
async def hangs() -> str:
    """Never returns."""
    await anyio.sleep_forever()
    return "never"


async def test_a_timeout_counts() -> None:
    ex, _ = executor(hangs, max_retries=1)
    await step(ex, 0, call("c1", "hangs", ""))
    with pytest.raises(ToolRetriesExceeded) as raised:
        await step(ex, 1, call("c2", "hangs", ""))
    assert raised.value.error_type == "timeout"


async def test_calls_cut_by_a_batch_s_shared_deadline_count_once_per_step() -> None:
    # Nobody listens and every call has the same limit: the batch shares one deadline (``_time_out``).
    ex, _ = executor(hangs, max_retries=1, emit_may_wait=lambda: False)
    results = await step(ex, 0, call("c1", "hangs", ""), call("c2", "hangs", ""))
    assert [r.error_type for r in results] == ["timeout", "timeout"]
    with pytest.raises(ToolRetriesExceeded) as raised:
        await step(ex, 1, call("c3", "hangs", ""), call("c4", "hangs", ""))
    assert raised.value.error_type == "timeout"


async def test_a_denied_call_does_not_count() -> None:
    @tool(needs_approval=True)
    async def refund(amount: int) -> str:
        """Refund."""
        return "refunded"

    recorder = Recorder()
    approvals = ToolApprovals(lambda request: "not today", recorder, waits=False)
    ex = ToolExecutor([refund], emit=recorder, approvals=approvals, max_retries=0, retries_exceeded=exceeded)
    for index in range(3):
        [result] = await step(ex, index, call(f"c{index}", "refund", '{"amount":1}'))
        assert result.error_type == "denied"


async def test_a_failure_that_ends_the_run_anyway_raises_as_itself() -> None:
    class Declined(Exception):
        pass

    @tool(on_error="raise")
    async def charge() -> str:
        """Charge."""
        raise Declined("card declined")

    ex, _ = executor(charge, max_retries=0)
    with pytest.raises(Declined):
        await step(ex, 0, call("c1", "charge", ""))


async def test_unknown_tools_share_one_count_set_back_by_any_successful_call() -> None:
    ex, _ = executor(find, max_retries=1)
    [result] = await step(ex, 0, call("c1", "search"))
    assert result.error_type == "unknown_tool"
    await step(ex, 1, call("c2", arguments=GOOD))  # a success: the count of made-up names starts again
    await step(ex, 2, call("c3", "lookup"))
    with pytest.raises(ToolRetriesExceeded) as raised:
        await step(ex, 3, call("c4", "web_search"))  # another made-up name: the same count
    error = raised.value
    assert (error.tool, error.unknown, error.max_retries, error.error_type) == (
        "web_search",
        True,
        1,
        "unknown_tool",
    )
    assert str(error).startswith(
        "the model called tools that do not exist in 2 steps in a row, more than max_tool_retries=1 allows; "
        "the last one: unknown tool 'web_search'; available tools: find"
    )


async def test_a_validated_call_counts_as_any_call() -> None:
    ex, _ = executor(find, max_retries=0)
    with pytest.raises(ToolRetriesExceeded):
        await ex.run_validated(call("c1"), find, {"name": "Pariss"}, run_id="r", step=0)


async def test_counting_starts_only_with_a_failure() -> None:
    ex, _ = executor(find)
    await step(ex, 0, call("c1", arguments=GOOD))
    assert ex._retries is None  # a run whose calls succeed never builds its counts


# -- the values ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (1.5, ValueError), ("3", TypeError), (True, TypeError)]
)
def test_max_retries_is_checked_where_it_is_written(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_retries must be an int >= 0"):
        tool(max_retries=value)  # type: ignore[call-overload]
    with pytest.raises(error, match="max_retries must be an int >= 0"):
        Tool(ToolSpec("f", "", {"type": "object"}), lambda: None, max_retries=value)


def test_a_tool_takes_zero_an_int_infinity_or_none() -> None:
    assert [tool(max_retries=v)(find.fn).max_retries for v in (0, 7, math.inf, None)] == [
        0,
        7,
        math.inf,
        None,
    ]
    assert find.max_retries is None


def test_the_counts_are_plain_bookkeeping() -> None:
    counts = ToolRetries(exceeded)
    failed = ToolResult("c1", "find", "x", ok=False, error_type="exception", error="boom")
    denied = ToolResult("c2", "find", "x", ok=False, error_type="denied", error="no")
    assert counts.failed(denied, 0, 0, unknown=False) is None
    assert counts.failed(failed, None, 0, unknown=False) is None
    assert isinstance(counts.failed(failed, 0, 0, unknown=False), ToolRetriesExceeded)


def test_tool_retries_exceeded_gets_its_run_s_result_when_the_run_ends_and_pickles() -> None:
    error = ToolRetriesExceeded("web_search", 3, "unknown tool 'web_search'", "unknown_tool", unknown=True)
    assert own_result(error) is None  # raised mid-step: the run's ending makes its partial result
    partial = AgentResult("run_1", "", StopReason.ERROR, steps=4)
    attach_run_result(error, partial)
    assert error.partial is partial
    assert error.run_result is partial
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.tool, copy.unknown, copy.partial) == (str(error), "web_search", True, partial)

"""``on_error``: what a tool's failure becomes, in ``ToolExecutor`` (the run-level behaviour is in
``tests/agent/runtime/test_tool_failure_runs.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import attrs
import pytest

from agentflow.events import ToolFailed, ToolStarted, ToolSucceeded
from agentflow.model.events import Event
from agentflow.model.messages import ToolCall
from agentflow.model.tools import ToolSpec
from agentflow.result import ToolResult
from agentflow.tools import (
    RejectCall,
    Tool,
    ToolExecutor,
    ToolFatalError,
    tool,
    tool_error_text,
)


class Recorder:
    """An ``emit`` that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def ends(self) -> list[tuple[str, str]]:
        """``(call id, event name)`` of every completion event, in order."""
        return [
            (e.call.id, type(e).__name__) for e in self.events if isinstance(e, ToolSucceeded | ToolFailed)
        ]


def executor(*tools: Any, **options: Any) -> tuple[ToolExecutor, Recorder]:
    recorder = Recorder()
    return ToolExecutor(list(tools), emit=recorder, **options), recorder


class Declined(Exception):
    """A tool's own failure."""


@tool(on_error="raise")
async def charge(amount: int) -> str:
    """Charge the card."""
    raise Declined(f"card declined for {amount}")


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


# -- the default is unchanged ----------------------------------------------------------------------------


async def test_without_on_error_an_exception_is_fed_back_as_tool_error_text() -> None:
    @tool
    async def broken() -> str:
        """Fails."""
        raise Declined("boom")

    ex, recorder = executor(broken)
    [result] = await ex.run_calls([ToolCall("c1", "broken", "")], run_id="r", step=0)

    assert result.output == tool_error_text("exception", "Declined: boom", "broken", "c1")
    assert (result.ok, result.error_type, result.error) == (False, "exception", "Declined: boom")
    assert broken.on_error is None
    assert recorder.ends() == [("c1", "ToolFailed")]


# -- "raise" -----------------------------------------------------------------------------------------------


async def test_raise_gives_the_call_its_result_and_event_then_raises_the_tool_s_exception() -> None:
    arrived: list[tuple[int, ToolResult]] = []
    ex, recorder = executor(charge)

    with pytest.raises(Declined, match="card declined for 3"):  # as itself, not in an exception group
        await ex.run_calls(
            [ToolCall("c1", "charge", '{"amount":3}')],
            run_id="r",
            step=0,
            on_result=lambda i, r: arrived.append((i, r)),
        )

    [(index, result)] = arrived
    assert index == 0
    assert result.output == tool_error_text("exception", "Declined: card declined for 3", "charge", "c1")
    [failed] = [e for e in recorder.events if isinstance(e, ToolFailed)]
    assert failed.result == result


async def test_raise_cancels_the_other_calls_of_a_concurrent_batch_which_get_no_result() -> None:
    cancelled: list[str] = []

    @tool
    async def slow(key: str) -> str:
        """Waits until cancelled."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(key)
        return key

    @tool(on_error="raise")
    async def failing() -> str:
        """Fails once the other call waits."""
        await anyio.lowlevel.checkpoint()
        raise Declined("late")

    arrived: list[str] = []
    ex, recorder = executor(slow, failing, lookup)
    calls = [
        ToolCall("c1", "slow", '{"key":"a"}'),
        ToolCall("c2", "failing", ""),
        ToolCall("c3", "lookup", '{"key":"b"}'),
    ]
    with anyio.fail_after(5), pytest.raises(Declined):
        await ex.run_calls(calls, run_id="r", step=0, on_result=lambda i, r: arrived.append(r.call_id))

    assert cancelled == ["a"]
    # The quick call finished before the failure; the slow one ends with neither a result nor an event.
    assert sorted(arrived) == ["c2", "c3"]
    assert sorted(recorder.ends()) == [("c2", "ToolFailed"), ("c3", "ToolSucceeded")]


async def test_raise_in_a_sequential_batch_leaves_the_later_calls_unrun() -> None:
    ran: list[str] = []

    @tool
    async def note(text: str) -> str:
        """Note something."""
        ran.append(text)
        return "ok"

    ex, recorder = executor(charge, note)
    calls = [ToolCall("c1", "note", '{"text":"x"}'), ToolCall("c2", "charge", '{"amount":1}')]
    calls.append(ToolCall("c3", "note", '{"text":"y"}'))
    with pytest.raises(Declined):
        await ex.run_calls(calls, run_id="r", step=0, parallel=False)

    assert ran == ["x"]
    assert recorder.ends() == [("c1", "ToolSucceeded"), ("c2", "ToolFailed")]


async def test_the_executor_default_applies_to_tools_without_their_own_on_error() -> None:
    @tool
    async def broken() -> str:
        """Fails."""
        raise Declined("boom")

    @tool(on_error="feed")
    async def tolerant() -> str:
        """Fails, and says so to the model."""
        raise Declined("fine")

    ex, _ = executor(broken, tolerant, default_on_error="raise")
    [result] = await ex.run_calls([ToolCall("c1", "tolerant", "")], run_id="r", step=0)
    assert result.error == "Declined: fine"
    with pytest.raises(Declined, match="boom"):
        await ex.run_calls([ToolCall("c2", "broken", "")], run_id="r", step=0)


async def test_on_fatal_hears_the_exception_before_it_is_raised() -> None:
    heard: list[Exception] = []
    ex, _ = executor(charge, on_fatal=heard.append)

    with pytest.raises(Declined) as raised:
        await ex.run_call(ToolCall("c1", "charge", '{"amount":1}'), run_id="r", step=0)

    assert heard == [raised.value]


async def test_no_call_starts_after_one_that_ended_the_run_whose_scope_is_cancelled() -> None:
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        """Note something (never waits)."""
        ran.append(text)
        return "ok"

    with anyio.CancelScope() as scope:
        # What a run wires in: the call that ends the run cancels the run's scope.
        ex, recorder = executor(charge, note, on_fatal=lambda _exc: scope.cancel())
        with pytest.raises(Declined):
            await ex.run_calls([ToolCall("c1", "charge", '{"amount":1}')], run_id="r", step=0)
        # A caller that caught it and goes on (CodeAct's sandbox): the next batch does not start.
        await ex.run_calls([ToolCall("c2", "note", '{"text":"x"}')], run_id="r", step=0)
        raise AssertionError("the cancelled scope should have stopped the batch")
    assert scope.cancelled_caught
    assert ran == []
    assert [e.call.id for e in recorder.events if isinstance(e, ToolStarted)] == ["c1"]


async def test_a_validated_call_that_ends_the_run_gets_its_result_and_event_first() -> None:
    arrived: list[ToolResult] = []
    ex, recorder = executor(charge)
    call = ToolCall("c1", "charge", '{"amount":2}')

    with pytest.raises(Declined):
        await ex.run_validated(
            call,
            charge,
            charge.parse_arguments(call.arguments),
            run_id="r",
            step=0,
            on_result=lambda _i, r: arrived.append(r),
        )

    assert [r.error_type for r in arrived] == ["exception"]
    assert [type(e) for e in recorder.events] == [ToolStarted, ToolFailed]


# -- what is always fed back -------------------------------------------------------------------------------


async def test_invalid_arguments_and_unknown_tools_are_fed_back_whatever_the_policy() -> None:
    told: list[Exception] = []

    def formatter(exc: Exception, _call: ToolCall) -> str:
        told.append(exc)
        return "hidden"

    @tool(on_error=formatter)
    async def formatted(n: int) -> int:
        """Double a number."""
        return 2 * n

    ex, _ = executor(charge, formatted, default_on_error="raise")
    results = await ex.run_calls(
        [
            ToolCall("c1", "charge", '{"amount":"lots"}'),
            ToolCall("c2", "formatted", '{"n":"x"}'),
            ToolCall("c3", "teleport", "{}"),
        ],
        run_id="r",
        step=0,
    )

    assert [r.error_type for r in results] == ["invalid_arguments", "invalid_arguments", "unknown_tool"]
    assert all(r.output.startswith("TOOL_ERROR: ") for r in results)
    assert told == []


async def test_reject_call_sends_its_message_to_the_model_whatever_the_policy() -> None:
    told: list[Exception] = []

    @tool(on_error="raise")
    async def find_city(name: str) -> str:
        """Find a city."""
        raise RejectCall(f"no city is named {name!r}; check the spelling")

    @tool(on_error=lambda exc, call: told.append(exc) or "hidden")
    async def find_street(name: str) -> str:
        """Find a street."""
        raise RejectCall("streets are not indexed yet; ask for a city")

    ex, _ = executor(find_city, find_street)
    city, street = await ex.run_calls(
        [ToolCall("c1", "find_city", '{"name":"Prais"}'), ToolCall("c2", "find_street", '{"name":"x"}')],
        run_id="r",
        step=0,
    )

    message = "no city is named 'Prais'; check the spelling"
    assert city.output == tool_error_text("exception", message, "find_city", "c1")
    assert street.error == "streets are not indexed yet; ask for a city"
    assert street.output.startswith("TOOL_ERROR: ")
    assert told == []


def test_reject_call_takes_a_str() -> None:
    with pytest.raises(TypeError, match="the message for the model"):
        RejectCall(42)  # type: ignore[arg-type]


async def test_tool_fatal_error_ends_the_run_whatever_the_policy() -> None:
    @tool(on_error=lambda exc, call: "hidden")
    async def stop() -> str:
        """Stops everything."""
        raise ToolFatalError("the API key was revoked; rotate it before running again")

    ex, recorder = executor(stop)
    with pytest.raises(ToolFatalError, match="rotate it"):
        await ex.run_calls([ToolCall("c1", "stop", "")], run_id="r", step=0)
    [failed] = [e for e in recorder.events if isinstance(e, ToolFailed)]
    assert "ToolFatalError: the API key was revoked" in failed.result.output


async def test_a_stray_cancelled_error_is_fed_back_even_under_raise() -> None:
    @tool(on_error="raise")
    async def awaits_a_cancelled_future() -> str:
        """Awaits a future something else cancelled."""
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future
        return "never"

    ex, _ = executor(awaits_a_cancelled_future)
    [result] = await ex.run_calls([ToolCall("c1", "awaits_a_cancelled_future", "")], run_id="r", step=0)
    assert (result.error_type, result.error.split(":")[0]) == ("exception", "CancelledError")  # type: ignore[union-attr]


# -- a formatter -------------------------------------------------------------------------------------------


async def test_a_formatter_s_text_is_the_output_and_the_real_error_is_kept_for_the_developer() -> None:
    seen: list[tuple[Exception, ToolCall]] = []

    def hide(exc: Exception, call: ToolCall) -> str:
        seen.append((exc, call))
        return "The payment service is unavailable; tell the user to try again later."

    @tool(on_error=hide)
    async def pay(amount: int) -> str:
        """Pay."""
        raise Declined("db password rejected at 10.0.0.7")

    ex, recorder = executor(pay)
    call = ToolCall("c1", "pay", '{"amount":5}')
    [result] = await ex.run_calls([call], run_id="r", step=0)

    assert result.output == "The payment service is unavailable; tell the user to try again later."
    assert (result.ok, result.error_type) == (False, "exception")
    assert result.error == "Declined: db password rejected at 10.0.0.7"
    [(exc, given)] = seen
    assert isinstance(exc, Declined)
    assert given == call
    assert recorder.ends() == [("c1", "ToolFailed")]


async def test_a_formatter_returning_none_keeps_the_standard_text() -> None:
    @tool(on_error=lambda exc, call: None if isinstance(exc, Declined) else "other")
    async def pay() -> str:
        """Pay."""
        raise Declined("no")

    ex, _ = executor(pay)
    [result] = await ex.run_calls([ToolCall("c1", "pay", "")], run_id="r", step=0)
    assert result.output == tool_error_text("exception", "Declined: no", "pay", "c1")


async def test_a_formatter_that_raises_ends_the_run_with_its_exception() -> None:
    def broken(exc: Exception, call: ToolCall) -> str:
        raise KeyError("formatter bug")

    @tool(on_error=broken)
    async def pay() -> str:
        """Pay."""
        raise Declined("secret")

    ex, recorder = executor(pay)
    arrived: list[ToolResult] = []
    with pytest.raises(KeyError, match="formatter bug") as raised:
        await ex.run_calls(
            [ToolCall("c1", "pay", "")], run_id="r", step=0, on_result=lambda _i, r: arrived.append(r)
        )
    assert isinstance(raised.value.__context__, Declined)
    assert recorder.ends() == [("c1", "ToolFailed")]
    # The call's answer in memory (a session's next run shows it to the model) withholds the message the
    # formatter was there to hide; the developer still has it.
    [result] = arrived
    assert result.output == tool_error_text("exception", "Declined", "pay", "c1")
    assert result.error == "Declined: secret"


async def test_a_formatter_returning_something_else_than_text_ends_the_run() -> None:
    @tool(on_error=lambda exc, call: 42)  # type: ignore[arg-type,return-value]
    async def pay() -> str:
        """Pay."""
        raise Declined("secret")

    ex, recorder = executor(pay)
    with pytest.raises(TypeError, match="returned int; it must return the text for the model") as raised:
        await ex.run_calls([ToolCall("c1", "pay", "")], run_id="r", step=0)
    assert isinstance(raised.value.__cause__, Declined)
    [failed] = [e for e in recorder.events if isinstance(e, ToolFailed)]
    assert "secret" not in failed.result.output


# -- timeouts follow the policy ----------------------------------------------------------------------------


@tool(timeout=0.01, on_error="raise")
async def hangs() -> str:
    """Never returns."""
    await anyio.sleep_forever()
    return "never"


async def test_a_timeout_of_a_raise_tool_ends_the_run_with_timeout_error() -> None:
    ex, recorder = executor(hangs)
    with anyio.fail_after(5), pytest.raises(TimeoutError, match=r"tool 'hangs' timed out after 0\.01 s"):
        await ex.run_calls([ToolCall("c1", "hangs", "")], run_id="r", step=0)
    [failed] = [e for e in recorder.events if isinstance(e, ToolFailed)]
    assert failed.result.error_type == "timeout"


async def test_a_formatter_is_given_a_timeout_error() -> None:
    seen: list[Exception] = []

    def explain(exc: Exception, call: ToolCall) -> str:
        seen.append(exc)
        return "The search is slow today; answer without it."

    ex, _ = executor(attrs.evolve(hangs, on_error=explain))
    with anyio.fail_after(5):
        [result] = await ex.run_calls([ToolCall("c1", "hangs", "")], run_id="r", step=0)
    assert (result.output, result.error_type) == ("The search is slow today; answer without it.", "timeout")
    assert [type(e) for e in seen] == [TimeoutError]


async def test_a_batch_cut_by_its_shared_deadline_ends_every_call_then_raises() -> None:
    @tool(timeout=0.01)
    async def waits() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "never"

    @tool(timeout=0.01, on_error="raise")
    async def waits_too() -> str:
        """Never returns either."""
        await anyio.sleep_forever()
        return "never"

    arrived: list[str] = []
    # Nobody listens and every call has the same limit: one deadline on the batch (``_time_out``).
    ex = ToolExecutor([waits, waits_too], emit=Recorder(), emit_may_wait=lambda: False)
    with anyio.fail_after(5), pytest.raises(TimeoutError, match="waits_too"):
        await ex.run_calls(
            [ToolCall("c1", "waits", ""), ToolCall("c2", "waits_too", "")],
            run_id="r",
            step=0,
            on_result=lambda _i, r: arrived.append(r.call_id),
        )
    assert sorted(arrived) == ["c1", "c2"]


# -- checked where it is written ---------------------------------------------------------------------------


def test_on_error_is_checked_when_the_tool_is_made() -> None:
    with pytest.raises(ValueError, match='on_error must be "feed", "raise" or a function'):
        tool(on_error="ignore")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="got 42"):

        @tool(on_error=42)  # type: ignore[call-overload]
        def f() -> None:
            """F."""

    async def formats(exc: Exception, call: ToolCall) -> str:
        return "text"

    class AsyncFormatter:
        async def __call__(self, exc: Exception, call: ToolCall) -> str:
            return "text"

    for formatter in (formats, AsyncFormatter()):
        with pytest.raises(TypeError, match="not an async one"):
            tool(on_error=formatter)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="default_on_error must be"):
        ToolExecutor([], emit=Recorder(), default_on_error="never")  # type: ignore[arg-type]


def test_tools_made_from_a_spec_or_copied_take_on_error_too() -> None:
    spec = ToolSpec("pay", "Pay.", {"type": "object", "properties": {}})
    made = Tool.from_spec(spec, lambda: "ok", on_error="raise")
    assert made.on_error == "raise"
    assert attrs.evolve(lookup, on_error="raise").on_error == "raise"
    with pytest.raises(ValueError, match="on_error"):
        attrs.evolve(lookup, on_error="sometimes")

"""A code step seen while it runs: ``CodeStarted``, then what it prints as ``CodeOutput`` events, bounded,
published only while someone listens, and never making the sandbox wait for a slow subscriber."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from codeact_support import Recorder, code, codeact_agent, says

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.events import (
    AgentEvent,
    CodeExecuted,
    CodeOutput,
    CodeStarted,
    RunCancelled,
    ToolCallRequested,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.runtimes.codeact_live import MAX_EVENTS, LiveOutput
from agentflow.sandbox import CodeResult, ExecutionLimits, ProcessSandbox, ToolInvoker
from agentflow.sandbox.executor import OutputListener, streams_output
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

Body = Callable[[OutputListener], Any]


class Streaming:
    """A ``CodeExecutor`` that streams: ``body(on_output)`` plays the step (an async function), then the step
    succeeds; ``listeners`` records what each step was given."""

    def __init__(self, body: Body) -> None:
        self.body = body
        self.listeners: list[OutputListener | None] = []

    async def execute(
        self,
        code: str,
        tools: ToolInvoker,
        tool_names: Sequence[str],
        limits: ExecutionLimits,
        *,
        on_output: OutputListener | None = None,
    ) -> CodeResult:
        self.listeners.append(on_output)
        await self.body(on_output or (lambda stream, text: None))
        return CodeResult(ok=True, value="done")

    async def aclose(self) -> None:
        pass


class NotStreaming:
    """A ``CodeExecutor`` written for the original protocol: no ``on_output`` parameter."""

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        return CodeResult(ok=True, value="done", stdout="printed\n")

    async def aclose(self) -> None:
        pass


def agent_on(executor: Any, limits: ExecutionLimits | None = None) -> Agent[str]:
    options = CodeActOptions(executor=executor, limits=limits or ExecutionLimits())
    return Agents.codeact(FakeModelClient([reply(code("..."))]), codeact=options)


def outputs(events: Sequence[Any]) -> list[tuple[str, str]]:
    return [(e.stream, e.text) for e in events if isinstance(e, CodeOutput)]


def joined(events: Sequence[Any], stream: str) -> str:
    return "".join(text for s, text in outputs(events) if s == stream)


@tool
async def get_price(item: str) -> float:
    """The unit price of an item, in euros."""
    return {"apple": 0.5}[item]


STEP = """\
import sys
print("looking up the price")
print("a warning", file=sys.stderr)
price = get_price("apple")
print("got", price)
price"""


async def test_a_step_publishes_code_started_its_output_in_order_with_its_calls_then_code_executed() -> None:
    async with codeact_agent([says(code(STEP))], tools=[get_price]) as (agent, _):
        recorder = Recorder(agent)
        result = await agent.run("Apple price?")
    assert result.output_text == "0.5"
    step = [
        e
        for e in recorder.events
        if isinstance(e, CodeStarted | CodeOutput | ToolCallRequested | CodeExecuted)
    ]
    assert isinstance(step[0], CodeStarted)
    assert (step[0].code, step[0].language) == (STEP, "python")
    kinds = [type(e).__name__ if not isinstance(e, CodeOutput) else e.text for e in step]
    # What the code printed before its tool call comes before the call.
    assert kinds.index("looking up the price\n") < kinds.index("ToolCallRequested") < kinds.index("got 0.5\n")
    assert isinstance(step[-1], CodeExecuted)
    executed = step[-1]
    assert joined(recorder.events, "stdout") == executed.stdout == "looking up the price\ngot 0.5\n"
    assert joined(recorder.events, "stderr") == executed.stderr == "a warning\n"
    seqs = [e.seq for e in step]
    assert seqs == sorted(seqs)


async def test_a_partial_line_printed_before_a_tool_call_comes_before_the_call() -> None:
    # The first line goes out at once and starts the capture's batching window, so without a flush before
    # the call the partial line would wait in the buffer until after the call was sent.
    step = 'print("starting")\nprint("fetching...", end="")\nget_price("apple")'
    async with codeact_agent([says(code(step))], tools=[get_price]) as (agent, _):
        recorder = Recorder(agent)
        await agent.run("Apple price?")
    call = min(i for i, e in enumerate(recorder.events) if isinstance(e, ToolCallRequested | ToolStarted))
    assert joined(recorder.events[:call], "stdout") == "starting\nfetching..."


async def test_output_reaches_a_listener_while_the_code_still_runs() -> None:
    # The code prints, then runs until its wall time: only output published during the step can let the
    # listener cancel the run first (a step cut that way is "cancelled", not "timeout").
    endless = 'print("working", flush=True)\nimport time\nwhile True:\n    time.sleep(0.01)'
    codeact = CodeActOptions(limits=ExecutionLimits(wall_time=30))
    async with codeact_agent([says(code(endless))], codeact=codeact) as (agent, _):
        recorder = Recorder(agent)
        with anyio.fail_after(20):  # a deadlock guard only
            async with agent.stream("Work.") as run:
                async for event in run:
                    if isinstance(event, CodeOutput):
                        await run.cancel()
    assert outputs(recorder.events)[0] == ("stdout", "working\n")
    [executed] = recorder.of(CodeExecuted)
    assert executed.error_type == "cancelled"
    assert len(recorder.of(RunCancelled)) == 1


async def test_an_unobserved_run_asks_for_no_output_and_builds_no_code_events() -> None:
    executor = Streaming(lambda on_output: anyio.lowlevel.checkpoint())
    result = await agent_on(executor).run("go")
    assert result.output_text == "done"
    assert executor.listeners == [None]


async def test_an_executor_without_on_output_still_works_and_shows_its_output_at_the_end() -> None:
    agent = agent_on(NotStreaming())
    recorder = Recorder(agent)
    assert (await agent.run("go")).output_text == "done"
    assert [type(e) for e in recorder.events if isinstance(e, CodeStarted | CodeOutput | CodeExecuted)] == [
        CodeStarted,
        CodeExecuted,
    ]
    assert recorder.of(CodeExecuted)[0].stdout == "printed\n"


def test_only_an_executor_that_declares_on_output_is_given_a_listener() -> None:
    class Forwarding:
        async def execute(self, *args: Any, **kwargs: Any) -> CodeResult:
            return CodeResult(ok=True)

        async def aclose(self) -> None:
            pass

    assert streams_output(ProcessSandbox())
    assert streams_output(Streaming(lambda on_output: anyio.lowlevel.checkpoint()))
    assert not streams_output(NotStreaming())
    assert not streams_output(Forwarding())  # it might forward to an executor that takes no on_output


async def test_small_writes_travel_together_each_stream_in_the_order_written() -> None:
    async def body(on_output: OutputListener) -> None:
        for _ in range(500):
            on_output("stdout", "a")
        on_output("stderr", "oops\n")
        on_output("stdout", "b\n")

    agent = agent_on(Streaming(body))
    recorder = Recorder(agent)
    await agent.run("go")
    assert outputs(recorder.events) == [("stdout", "a" * 500), ("stderr", "oops\n"), ("stdout", "b\n")]


async def test_each_stream_is_capped_at_the_sandbox_s_capture() -> None:
    async def body(on_output: OutputListener) -> None:
        for _ in range(100):
            on_output("stdout", "x" * 10)
            await anyio.lowlevel.checkpoint()
        on_output("stderr", "e" * 500)

    agent = agent_on(Streaming(body), ExecutionLimits(max_output_bytes=256))
    recorder = Recorder(agent)
    await agent.run("go")
    assert joined(recorder.events, "stdout") == "x" * 256
    assert joined(recorder.events, "stderr") == "e" * 256


async def test_a_step_publishes_at_most_max_events_output_events() -> None:
    published: list[CodeOutput] = []

    async def publish(event: CodeOutput) -> None:
        published.append(event)

    live = LiveOutput(publish, 10 * MAX_EVENTS)
    for n in range(3 * MAX_EVENTS):  # a stream switch at every write: a run (an event) each
        live.take("stdout" if n % 2 else "stderr", "x")
    live.take("stdout", "y")  # also dropped, though its stream's last run is still pending
    await live.flush()
    assert len(published) == MAX_EVENTS
    assert {e.text for e in published} == {"x"}


@pytest.mark.parametrize(
    ("source", "error_type"),
    [
        ('print("hello")\n42', None),  # ends while the subscriber is stuck: the step never waited for it
        ('while True:\n    print("x" * 63)', "timeout"),  # the wall time fires although nobody reads
    ],
    ids=["a short step", "a flood"],
)
async def test_a_stuck_subscriber_does_not_hold_up_the_sandbox(source: str, error_type: str | None) -> None:
    step_ended = anyio.Event()

    class Box(ProcessSandbox):
        async def execute(
            self,
            code: str,
            tools: ToolInvoker,
            tool_names: Sequence[str] = (),
            limits: ExecutionLimits = ExecutionLimits(),  # noqa: B008
            *,
            on_output: OutputListener | None = None,
        ) -> CodeResult:
            try:
                return await super().execute(code, tools, tool_names, limits, on_output=on_output)
            finally:
                step_ended.set()

    async def stuck(event: AgentEvent) -> None:
        await step_ended.wait()  # a subscriber that takes nothing more until the step is over

    codeact = CodeActOptions(executor=Box, limits=ExecutionLimits(wall_time=1.0, max_output_bytes=4096))
    async with codeact_agent([says(code(source)), says(code("1"))], codeact=codeact) as (agent, _):
        agent.on(CodeOutput, stuck)
        recorder = Recorder(agent)
        with anyio.fail_after(30):  # a deadlock guard only
            await agent.run("Print.")
    executed = recorder.of(CodeExecuted)[0]
    assert executed.error_type == error_type
    stdout = joined(recorder.events[: recorder.events.index(executed)], "stdout")
    assert 0 < len(stdout) <= 4096
    assert stdout == executed.stdout[: len(stdout)]
    # Held while the subscriber was stuck: a few events, not one per line.
    assert len(outputs(recorder.events)) < 10


async def test_a_cancelled_step_publishes_what_it_printed_before_its_code_executed() -> None:
    printed = anyio.Event()

    async def body(on_output: OutputListener) -> None:
        on_output("stdout", "partial ")
        on_output("stdout", "line\n")
        printed.set()
        await anyio.sleep_forever()

    agent = agent_on(Streaming(body))
    recorder = Recorder(agent)
    with anyio.fail_after(10):  # a deadlock guard only
        async with agent.stream("go") as run:
            await printed.wait()
            await run.cancel()
    ends = [e for e in recorder.events if isinstance(e, CodeOutput | CodeExecuted | RunCancelled)]
    assert [type(e) for e in ends] == [CodeOutput, CodeExecuted, RunCancelled]
    assert outputs(ends) == [("stdout", "partial line\n")]
    assert recorder.of(CodeExecuted)[0].error_type == "cancelled"


async def test_a_listener_that_raises_does_not_end_the_sandbox_s_step() -> None:
    def broken(stream: str, text: str) -> None:
        raise RuntimeError("the UI went away")

    async def no_tools(name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError("no tool calls expected")

    async with ProcessSandbox() as box:
        result = await box.execute('print("one")\nprint("two")\n3', no_tools, on_output=broken)
    assert (result.ok, result.value, result.stdout) == (True, 3, "one\ntwo\n")


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (CodeStarted(code="1 + 1"), {"type": "code_started", "code": "1 + 1", "language": "python"}),
        (
            CodeOutput(stream="stderr", text="oops\n"),
            {"type": "code_output", "stream": "stderr", "text": "oops\n"},
        ),
    ],
)
def test_the_code_events_serialise_for_a_browser(event: Any, expected: dict[str, Any]) -> None:
    assert event.to_dict() == {**expected, "run_id": "", "step": 0, "seq": 0}


async def test_tool_events_still_pair_up_with_a_listener_on_every_event() -> None:
    async with codeact_agent([says(code('get_price("apple")'))], tools=[get_price]) as (agent, _):
        recorder = Recorder(agent)
        await agent.run("go")
    assert len(recorder.of(ToolCallRequested)) == len(recorder.of(ToolSucceeded)) == 1

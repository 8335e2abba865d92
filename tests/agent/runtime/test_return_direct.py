"""``return_direct`` tools: a successful call ends the run after its step, its result the run's answer.

With in-process fakes for the loop's rules (which call answers, what ``output`` becomes, what does not end the
run, the tool-call limit, the events), then over the real clients against ``ScriptedServer``: eager start and
a session's next run, whose conversation goes on right after the tool outputs, on both protocols.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import anyio
import attrs
import pytest
from runtime_support import Recorder, assert_memory_valid, outputs

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.events import (
    OutputRejected,
    RunFinished,
    StepFinished,
    ToolCallRequested,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelCompleted, TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes.base import AgentRuntime
from agentflow.runtimes.output import OutputType
from agentflow.runtimes.output_validators import RejectOutput
from agentflow.testing import Reply, ScriptedServer, chat_wire, responses_wire
from agentflow.testing.context import ReplyContext
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.testing.script import Hold
from agentflow.tools import tool

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]


@attrs.frozen
class Verdict:
    """A specialist's verdict on a claim."""

    claim: str
    true: bool


VERDICT_JSON = '{"claim": "the sky is green", "true": false}'


@tool(return_direct=True)
async def refund_status(order: str) -> str:
    """The status of an order's refund, told to the user as is."""
    if order == "broken":
        raise RuntimeError("the refunds service is down")
    return f"Refund for {order}: sent on 2 May."


class Notes:
    """A plain tool that records its calls."""

    def __init__(self) -> None:
        self.written: list[str] = []

        @tool
        async def note(text: str) -> str:
            """Write a note."""
            self.written.append(text)
            return "noted"

        self.tool = note


def event_names(events: Sequence[Event]) -> list[str]:
    """The type of every run event, model deltas left out (their number depends on chunking)."""
    return [type(e).__name__ for e in events if not isinstance(e, TextDelta)]


# -- the answer ----------------------------------------------------------------------------------------------


async def test_a_router_ends_with_a_typed_specialists_value_after_one_model_call() -> None:
    specialist = Agent(FakeModelClient([reply(VERDICT_JSON)]), name="Checker", output_type=Verdict)
    router_model = FakeModelClient(
        [reply("Asking the checker.", tool_calls=[("checker", {"input": "Is the sky green?"})])]
    )
    router = Agent(
        router_model,
        tools=[specialist.as_tool(description="Checks a claim.", return_direct=True)],
        output_type=Verdict,
    )
    recorder = Recorder(router)

    result = await router.run("Is the sky green?")

    assert len(router_model.prompts) == 1  # no second call to paraphrase the specialist's answer
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output == Verdict("the sky is green", False)
    assert result.output_text == result.tool_results[0].output
    assert result.steps == 1
    assert_memory_valid(result.new_items)
    finished = recorder.of(RunFinished)
    assert [e.result.output for e in finished] == [Verdict("the sky is green", False)]
    await specialist.aclose()


async def test_a_router_without_an_output_type_answers_with_the_specialists_text() -> None:
    specialist = Agent(FakeModelClient([reply(VERDICT_JSON)]), name="Checker", output_type=Verdict)
    router = Agent(
        FakeModelClient([reply(tool_calls=[("checker", {"input": "Is the sky green?"})])]),
        tools=[specialist.as_tool(description="Checks a claim.", return_direct=True)],
    )

    result = await router.run("Is the sky green?")

    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output == result.output_text  # the value's JSON text, as the tool result shows it
    assert result.output_text == '{"claim":"the sky is green","true":false}'
    assert result.tool_results[0].value == Verdict("the sky is green", False)  # the value itself


async def test_a_plain_tools_text_is_the_answer_and_the_steps_text_is_kept_in_memory_only() -> None:
    model = FakeModelClient([reply("Let me check.", tool_calls=[("refund_status", {"order": "A1"})])])
    agent = Agent(model, tools=[refund_status])

    events: list[Event] = []
    async with agent.stream("Where is my refund?") as run:
        async for event in run:
            events.append(event)
    result = run.result

    assert result.output_text == result.output == "Refund for A1: sent on 2 May."
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert len(model.prompts) == 1
    # The answer never streams as model text: a UI shows it from ToolSucceeded or the result.
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me check."
    step_ends = [e for e in events if isinstance(e, StepFinished)]
    assert [e.tool_calls for e in step_ends] == [1]  # a tool's answer: its last step made calls
    assert outputs(result.new_items)[-1][1] == result.output_text  # memory ends with the tool output
    assert_memory_valid(result.new_items)


async def test_of_two_answering_calls_the_first_in_call_order_wins_not_the_first_to_finish() -> None:
    second_done = anyio.Event()

    @tool(return_direct=True)
    async def slow(x: str) -> str:
        """Answers once ``fast`` has."""
        await second_done.wait()
        return f"slow {x}"

    @tool(return_direct=True)
    async def fast(x: str) -> str:
        """Answers at once."""
        second_done.set()
        return f"fast {x}"

    model = FakeModelClient([reply(tool_calls=[("slow", {"x": "1"}), ("fast", {"x": "2"})])])
    with anyio.fail_after(10):
        result = await Agent(model, tools=[slow, fast]).run("go")

    assert result.output_text == "slow 1"
    assert [r.output for r in result.tool_results] == ["slow 1", "fast 2"]  # both ran, both answered
    assert_memory_valid(result.new_items)


async def test_a_failed_answering_call_does_not_end_the_run() -> None:
    model = FakeModelClient(
        [reply(tool_calls=[("refund_status", {"order": "broken"})]), reply("The refunds service is down.")]
    )
    result = await Agent(model, tools=[refund_status]).run("Where is my refund?")

    assert len(model.prompts) == 2  # the model read the TOOL_ERROR and answered itself
    assert result.output_text == "The refunds service is down."
    assert result.tool_results[0].error_type == "exception"


async def test_a_failed_answering_call_leaves_the_answer_to_the_next_one_that_succeeded() -> None:
    calls = [("refund_status", {"order": "broken"}), ("refund_status", {"order": "B2"})]
    model = FakeModelClient([reply(tool_calls=calls)])
    result = await Agent(model, tools=[refund_status]).run("Where are my refunds?")

    assert len(model.prompts) == 1
    assert result.output_text == "Refund for B2: sent on 2 May."


async def test_a_mixed_step_runs_every_call_then_ends() -> None:
    notes = Notes()
    calls = [("note", {"text": "asked about A1"}), ("refund_status", {"order": "A1"})]
    model = FakeModelClient([reply(tool_calls=calls)])
    result = await Agent(model, tools=[notes.tool, refund_status]).run("Where is my refund?")

    assert notes.written == ["asked about A1"]
    assert [r.output for r in result.tool_results] == ["noted", "Refund for A1: sent on 2 May."]
    assert result.output_text == "Refund for A1: sent on 2 May."
    assert len(model.prompts) == 1
    assert_memory_valid(result.new_items)


async def test_without_a_parallel_batch_every_call_still_runs_in_order() -> None:
    notes = Notes()
    calls = [("refund_status", {"order": "A1"}), ("note", {"text": "after"})]
    model = FakeModelClient([reply(tool_calls=calls)])
    agent = Agent(model, tools=[notes.tool, refund_status])

    result = await agent.run("Where is my refund?", settings=ModelSettings(parallel_tool_calls=False))

    assert notes.written == ["after"]
    assert result.output_text == "Refund for A1: sent on 2 May."


# -- an output type the result does not match ---------------------------------------------------------------


@tool(return_direct=True)
async def checker(claim: str) -> str:
    """Check a claim; answers in prose for some claims."""
    return VERDICT_JSON if claim == "green" else "I could not decide."


async def test_a_result_the_output_type_cannot_read_goes_to_the_model_and_the_run_goes_on() -> None:
    model = FakeModelClient(
        [reply(tool_calls=[("checker", {"claim": "blue"})]), reply('{"claim": "blue", "true": true}')]
    )
    agent = Agent(model, tools=[checker], output_type=Verdict)
    recorder = Recorder(agent)

    result = await agent.run("Is the sky blue?")

    assert len(model.prompts) == 2
    assert outputs(model.prompts[1].items)[-1][1] == "I could not decide."  # the result, as any tool's
    assert result.output == Verdict("blue", True)
    assert result.output_text == '{"claim": "blue", "true": true}'
    assert not recorder.of(OutputRejected)  # no model wrote it: nothing was sent back, no retry spent


async def test_a_result_a_validator_rejects_goes_to_the_model_and_the_run_goes_on() -> None:
    def only_true(verdict: Verdict) -> None:
        if not verdict.true:
            raise RejectOutput("only true claims")

    model = FakeModelClient(
        [reply(tool_calls=[("checker", {"claim": "green"})]), reply('{"claim": "x", "true": true}')]
    )
    agent = Agent(model, tools=[checker], output_type=OutputType(Verdict, validators=[only_true]))

    result = await agent.run("Is the sky green?")

    assert len(model.prompts) == 2
    assert result.output == Verdict("x", True)


async def test_a_result_the_output_type_reads_ends_the_run_through_the_validators() -> None:
    seen: list[Verdict] = []

    def keep(verdict: Verdict) -> Verdict:
        seen.append(verdict)
        return attrs.evolve(verdict, claim=verdict.claim.upper())

    model = FakeModelClient([reply(tool_calls=[("checker", {"claim": "green"})])])
    agent = Agent(model, tools=[checker], output_type=OutputType(Verdict, validators=[keep]))

    result = await agent.run("Is the sky green?")

    assert seen == [Verdict("the sky is green", False)]
    assert result.output == Verdict("THE SKY IS GREEN", False)


# -- the tool-call limit -------------------------------------------------------------------------------------


async def test_a_call_refused_by_the_tool_call_limit_does_not_answer() -> None:
    notes = Notes()
    calls = [("note", {"text": "a"}), ("refund_status", {"order": "A1"})]
    model = FakeModelClient([reply(tool_calls=calls)])
    agent = Agent(model, tools=[notes.tool, refund_status], options=AgentOptions(max_tool_calls=1))

    result = await agent.run("Where is my refund?")

    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    assert result.output is None
    assert result.tool_results[1].error_type == "cancelled"


async def test_an_answer_within_the_tool_call_limit_ends_the_run_as_a_final_answer() -> None:
    notes = Notes()
    calls = [("refund_status", {"order": "A1"}), ("note", {"text": "a"})]
    model = FakeModelClient([reply(tool_calls=calls)])
    agent = Agent(model, tools=[notes.tool, refund_status], options=AgentOptions(max_tool_calls=1))

    result = await agent.run("Where is my refund?")

    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "Refund for A1: sent on 2 May."
    assert notes.written == []
    assert_memory_valid(result.new_items)


# -- what it costs a run without such a tool -----------------------------------------------------------------


async def test_a_run_without_return_direct_tools_never_reads_results_for_an_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def never(*_args: Any) -> bool:
        raise AssertionError("read_tool_answer was called for a run without return_direct tools")

    monkeypatch.setattr(AgentRuntime, "read_tool_answer", never)
    notes = Notes()
    model = FakeModelClient([reply(tool_calls=[("note", {"text": "a"})]), reply("Done.")])
    agent = Agent(model, tools=[notes.tool])
    assert not agent.tools.has_return_direct

    events: list[Event] = []
    async with agent.stream("Take a note.") as run:
        async for event in run:
            events.append(event)

    assert len(model.prompts) == 2
    assert run.result.output_text == "Done."
    assert event_names(events) == [
        "RunStarted",
        "StepStarted",
        "ModelRequest",
        "ToolCallStarted",
        "ToolCallArgumentsDelta",
        "ToolCallReady",
        "ModelCompleted",
        "ToolCallRequested",
        "ToolStarted",
        "ToolSucceeded",
        "StepFinished",
        "StepStarted",
        "ModelRequest",
        "ModelCompleted",
        "StepFinished",
        "RunFinished",
    ]


async def test_an_answering_run_has_the_usual_events_and_no_more() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("refund_status", {"order": "A1"})])]), tools=[refund_status]
    )
    events: list[Event] = []
    async with agent.stream("Where is my refund?") as run:
        async for event in run:
            events.append(event)

    assert event_names(events)[-5:] == [
        "ToolCallRequested",
        "ToolStarted",
        "ToolSucceeded",
        "StepFinished",
        "RunFinished",
    ]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.output_text == "Refund for A1: sent on 2 May."


# -- over the wire: eager start and sessions -----------------------------------------------------------------


def model_on(protocol: Protocol, server: ScriptedServer) -> OpenAIChatModel | OpenAIResponsesModel:
    model_class = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return model_class(base_url=server.base_url, api_key="sk-test", model="gpt-test")


def ready_point(protocol: Protocol, turn: Reply) -> int:
    """How many SSE events of ``turn``'s stream make its first call whole (its ``ToolCallReady``): the
    second call's start on Chat Completions, the first call's ``arguments.done`` on Responses."""
    request = {"stream": True, "stream_options": {"include_usage": True}}
    ctx = ReplyContext.for_request(turn, request, serial=1, created=0, request_size=1)
    if protocol == "chat":
        frames = chat_wire.encode_stream(turn, ctx)
        return next(i for i, f in enumerate(frames) if b'"tool_calls":[{"index":1,"id"' in f) + 1
    frames = responses_wire.encode_stream(turn, ctx)
    done = b"event: response.function_call_arguments.done"
    return next(i for i, f in enumerate(frames) if f.startswith(done)) + 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_eager_answering_call_ends_the_run_as_one_started_late_would(protocol: Protocol) -> None:
    started = anyio.Event()
    notes = Notes()

    @tool(eager=True, return_direct=True)
    async def balance(account: str) -> str:
        """An account's balance (a read: it may start early)."""
        started.set()
        return f"{account}: 120 EUR"

    turn = Reply(tool_calls=[("balance", {"account": "main"}), ("note", {"text": "balance asked"})])
    # The stream stops once the eager call is whole until that call has started: a run that passes started
    # it while the model was still writing its turn.
    held = Hold(turn, started, after_chunks=ready_point(protocol, turn))
    async with ScriptedServer([held]) as server:
        async with Agent(model_on(protocol, server), tools=[balance, notes.tool]) as agent:
            events: list[Event] = []
            with anyio.fail_after(10):
                async with agent.stream("What is my balance?") as run:
                    async for event in run:
                        events.append(event)
        assert len(server.requests) == 1

    result = run.result
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == result.output == "main: 120 EUR"
    assert notes.written == ["balance asked"]
    names = [
        (type(e).__name__, getattr(getattr(e, "call", None), "name", None))
        for e in events
        if isinstance(e, ToolCallRequested | ModelCompleted | ToolSucceeded)
    ]
    assert names.index(("ToolCallRequested", "balance")) < names.index(("ModelCompleted", None))
    assert_memory_valid(result.new_items)


def request_tail(protocol: Protocol, body: dict[str, Any]) -> list[str]:
    """The last three entries of a request's conversation, by role or item type."""
    if protocol == "chat":
        return [m["role"] for m in body["messages"][-3:]]
    return [item.get("type") or item.get("role") for item in body["input"][-3:]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_sessions_next_run_starts_right_after_the_tool_outputs(protocol: Protocol) -> None:
    turns = [
        Reply(tool_calls=[("refund_status", {"order": "A1"})]),
        Reply(text="It was sent on 2 May, so it should arrive this week."),
    ]
    async with ScriptedServer(turns) as server:
        async with Agent(model_on(protocol, server), tools=[refund_status]) as agent:
            chat = agent.session()
            first = await chat.run("Where is my refund?")
            second = await chat.run("When will it arrive?")
        bodies = [r.body for r in server.requests]

    assert first.output_text == "Refund for A1: sent on 2 May."
    assert second.output_text == "It was sent on 2 May, so it should arrive this week."
    assert len(bodies) == 2
    if protocol == "chat":
        assert request_tail(protocol, bodies[1]) == ["assistant", "tool", "user"]
        assert bodies[1]["messages"][-2]["content"] == "Refund for A1: sent on 2 May."
    else:
        user = bodies[1]["input"][-1]
        assert [item.get("type") for item in bodies[1]["input"][-3:-1]] == [
            "function_call",
            "function_call_output",
        ]
        assert user.get("role") == "user"
        assert bodies[1]["input"][-2]["output"] == "Refund for A1: sent on 2 May."
    assert_memory_valid(chat.items)

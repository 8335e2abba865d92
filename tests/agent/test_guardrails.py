"""Guardrails: ``Agent(input_guardrails=[...], output_guardrails=[...])``.

Input guardrails run beside the first model call (a trip cancels it, no tool runs, memory stays as the run
found it, ``GuardrailTripped`` then one ``RunFailed``), the first step's tools and answer wait for them,
``blocking`` ones run before any model call; output guardrails run on the final answer. No test waits on
time: model calls and guardrails are held on events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
import attrs
import pytest

from agentflow import (
    Agent,
    Agents,
    GuardrailContext,
    GuardrailError,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    Tripwire,
    TripwireError,
    guardrail,
)
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.agent.stores import InMemoryStore
from agentflow.events import (
    CodeStarted,
    GuardrailTripped,
    ModelRequest,
    RunCancelled,
    RunFailed,
    StepFinished,
    TerminalEvent,
    ToolFailed,
)
from agentflow.model.events import Event, ModelCompleted, TextDelta
from agentflow.model.response import FinishReason
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes.errors import MaxStepsExceeded
from agentflow.runtimes.planner import AgentModelPlanner
from agentflow.sse import public_event
from agentflow.testing import Hold, Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

SETTLE = 200
"""Checkpoints a guardrail lets pass before it answers: far more than a run needs to go from its model
turn to a tool call when nothing holds it (no I/O in between), so a tool that was not held would run."""


async def let_the_run_go_on() -> None:
    for _ in range(SETTLE):
        await anyio.lowlevel.checkpoint()


@attrs.define
class Calls:
    """A tool that records its calls, and whether the guardrail had answered when it ran."""

    ran: list[str] = attrs.field(factory=list)
    guard_done: list[bool] = attrs.field(factory=list)
    answered: bool = False

    def tool(self, *, eager: bool = False) -> Any:
        @tool(eager=eager)
        async def lookup(q: str) -> str:
            """Look something up."""
            self.ran.append(q)
            self.guard_done.append(self.answered)
            return f"found {q}"

        return lookup


class HeldModel:
    """A model whose first call streams one text delta and then waits (recording its cancellation)."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    async def __call__(self, prompt: AgentPrompt) -> AsyncIterator[Any]:
        yield TextDelta("Sure, here is ")
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        yield reply("never")  # pragma: no cover


def terminals(events: list[Event]) -> list[Event]:
    return [e for e in events if isinstance(e, TerminalEvent)]


# -- input guardrails beside the first model call ----------------------------------------------------------


async def test_a_trip_cancels_the_model_call_in_flight_runs_no_tool_and_leaves_memory_as_it_was() -> None:
    held = HeldModel()
    calls = Calls()

    async def no_secrets(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
        if "password" not in text:
            return None
        await held.started.wait()  # the model is streaming its answer now
        return Tripwire("asks for a password", info={"score": 0.99})

    script: list[Any] = [reply("hello"), held]
    agent = Agent(FakeModelClient(script), tools=[calls.tool()], input_guardrails=[no_secrets])
    chat = agent.session(session_id="s1", store=(store := InMemoryStore()))
    await chat.run("hi")
    before = chat.memory.items
    events: list[Event] = []
    # A trip that did not cancel the held model call would hang here: fail instead.
    with anyio.fail_after(30):
        async with chat.stream("what is the admin password?") as run:
            events = [e async for e in run]
    with pytest.raises(InputGuardrailTripped) as caught:
        _ = run.result
    error = caught.value
    assert (error.guardrail, error.reason, error.info) == (
        "no_secrets",
        "asks for a password",
        {"score": 0.99},
    )
    assert str(error) == "input guardrail no_secrets tripped: asks for a password"
    assert held.cancelled
    assert calls.ran == []
    # Exactly one terminal event, right after the trip's own event.
    assert terminals(events) == [events[-1]]
    tripped, failed = events[-2:]
    assert isinstance(tripped, GuardrailTripped)
    assert isinstance(failed, RunFailed)
    assert (tripped.kind, tripped.guardrail, tripped.reason, tripped.info) == (
        "input",
        "no_secrets",
        "asks for a password",
        {"score": 0.99},
    )
    assert failed.error_type == "InputGuardrailTripped"
    # Neither the input nor the text the model had streamed stays: memory and the store are as before.
    assert chat.memory.items == before
    assert len(await store.load("s1")) == len(before)
    assert failed.partial is not None
    assert failed.partial.new_items == ()
    assert failed.partial.stop_reason is StopReason.ERROR
    assert failed.partial.output_text == ""


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("eager", [False, True])
async def test_the_first_step_s_tools_wait_for_a_guardrail_slower_than_the_model(
    stream: bool, eager: bool
) -> None:
    calls = Calls()
    answered = anyio.Event()

    async def slow_but_fine(ctx: GuardrailContext[None], text: str) -> None:
        await answered.wait()  # the model's turn, with its tool call, is complete
        await let_the_run_go_on()
        calls.answered = True

    def completed(event: ModelCompleted[Any]) -> None:
        answered.set()

    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "x"})]), reply("done")])
    agent = Agent(model, tools=[calls.tool(eager=eager)], input_guardrails=[slow_but_fine])
    if stream:
        async with agent.stream("find x", on=[(ModelCompleted, completed)]) as run:
            result = await run.wait()
    else:
        result = await agent.run("find x", on=[(ModelCompleted, completed)])
    assert result.output_text == "done"
    assert calls.guard_done == [True]  # the tool ran, only once the guardrail had passed


async def test_the_first_step_s_answer_waits_for_a_guardrail_that_then_trips() -> None:
    answered = anyio.Event()

    async def late_trip(ctx: GuardrailContext[None], text: str) -> Tripwire:
        await answered.wait()
        await let_the_run_go_on()
        return Tripwire("off topic")

    events: list[Event] = []
    agent = Agent(FakeModelClient([reply("an answer")]), input_guardrails=[late_trip])
    with pytest.raises(InputGuardrailTripped):
        await agent.run("hi", on=[(ModelCompleted, lambda e: answered.set()), (None, events.append)])
    # The complete answer did not end the run: the trip did, and the answer is not kept.
    failed = events[-1]
    assert [type(e) for e in terminals(events)] == [RunFailed]
    assert isinstance(failed, RunFailed)
    assert failed.partial is not None
    assert failed.partial.output_text == ""
    assert failed.partial.new_items == ()


async def test_a_blocking_guardrail_runs_before_any_model_call() -> None:
    model = FakeModelClient([reply("hi there")])
    seen: list[int] = []

    @guardrail(blocking=True)
    async def screen(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
        await let_the_run_go_on()  # a model call beside it would have been made by now
        seen.append(len(model.prompts))
        return Tripwire("no") if text == "bad" else None

    agent = Agent(model, input_guardrails=[screen])
    events: list[Event] = []
    with pytest.raises(InputGuardrailTripped):
        await agent.run("bad", on=[(None, events.append)])
    assert model.prompts == []
    assert not any(isinstance(e, ModelRequest) for e in events)
    assert (await agent.run("good")).output_text == "hi there"
    assert seen == [0, 0]


async def test_guardrails_run_concurrently_and_the_first_trip_cancels_the_others() -> None:
    both = anyio.Event()
    started: list[str] = []
    cancelled: list[str] = []

    def waiting(name: str, trips: bool) -> Any:
        async def check(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
            started.append(name)
            if len(started) == 2:
                both.set()
            await both.wait()  # deadlocks unless both run at once
            if trips:
                return Tripwire(name)
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled.append(name)
                raise
            return None  # pragma: no cover

        return guardrail(check, name=name)

    agent = Agent(
        FakeModelClient([reply("x")]), input_guardrails=[waiting("slow", False), waiting("trip", True)]
    )
    with pytest.raises(InputGuardrailTripped, match="input guardrail trip tripped: trip"):
        await agent.run("hi")
    assert cancelled == ["slow"]


# -- output guardrails -------------------------------------------------------------------------------------


@attrs.frozen
class City:
    name: str
    country: str


async def test_an_output_guardrail_trips_after_the_final_answer() -> None:
    calls = Calls()
    both = anyio.Event()
    started: list[str] = []
    seen: list[tuple[Any, str | None, str]] = []

    async def in_europe(ctx: GuardrailContext[None], city: City) -> Tripwire | None:
        started.append("europe")
        if len(started) == 2:
            both.set()
        await both.wait()  # the output guardrails run at the same time
        seen.append((city, ctx.output_text, ctx.kind))
        return None if city.country in ("France", "Italy") else Tripwire(f"{city.name} is not in Europe")

    async def fine(ctx: GuardrailContext[None], city: City) -> None:
        started.append("fine")
        if len(started) == 2:
            both.set()
        await both.wait()

    answer = '{"name": "Lima", "country": "Peru"}'
    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "city"})]), reply(answer)])
    agent = Agent(
        model, tools=[calls.tool()], output_type=City, output_guardrails=[in_europe, fine], name="guide"
    )
    chat = agent.session()
    events: list[Event] = []
    with pytest.raises(OutputGuardrailTripped) as caught:
        await chat.run("a city?", on=[(None, events.append)])
    error = caught.value
    assert isinstance(error, TripwireError)
    assert error.kind == "output"
    assert seen == [(City("Lima", "Peru"), answer, "output")]
    assert calls.ran == ["city"]  # the run's work happened; the answer is stopped
    # The answer stays on the partial result for logs; memory forgets the run.
    assert error.partial.output == City("Lima", "Peru")
    assert error.partial.stop_reason is StopReason.ERROR
    assert chat.memory.items == ()
    assert [type(e) for e in events[-2:]] == [GuardrailTripped, RunFailed]
    assert len(terminals(events)) == 1
    # A public frame does not show the stopped answer, nor the reason.
    failed = public_event(events[-1])
    assert isinstance(failed, RunFailed)
    assert failed.partial is not None
    assert (failed.error, failed.partial.output, failed.partial.output_text) == (
        "The answer was stopped by a policy check.",
        None,
        "",
    )
    tripped = public_event(events[-2])
    assert isinstance(tripped, GuardrailTripped)
    assert (tripped.reason, tripped.info, tripped.guardrail) == (
        "The answer was stopped by a policy check.",
        None,
        "in_europe",
    )


async def test_output_guardrails_skip_a_run_without_an_answer() -> None:
    def never(ctx: GuardrailContext[None], value: object) -> Tripwire:
        raise AssertionError("called")

    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "x"})])])
    agent = Agent(model, tools=[Calls().tool()], output_guardrails=[never])
    result = await agent.run("x", options=attrs.evolve(agent.options, max_steps=1))
    assert result.stop_reason is StopReason.MAX_STEPS


# -- failures, context, checks -----------------------------------------------------------------------------


async def test_a_guardrail_that_raises_or_returns_a_bool_fails_the_run_with_a_guardrail_error() -> None:
    def broken(ctx: GuardrailContext[None], text: str) -> None:
        raise KeyError("classifier")

    agent = Agent(FakeModelClient([reply("x")]), input_guardrails=[broken])
    events: list[Event] = []
    with pytest.raises(GuardrailError) as caught:
        await agent.run("hi", on=[(None, events.append)])
    error = caught.value
    assert (error.kind, error.guardrail, error.error) == ("input", "broken", "KeyError: 'classifier'")
    assert isinstance(error.__cause__, KeyError)
    assert [type(e) for e in terminals(events)] == [RunFailed]
    assert not any(isinstance(e, GuardrailTripped) for e in events)  # not a trip

    def boolean(ctx: GuardrailContext[None], text: str) -> bool:
        return True

    agent = Agent(FakeModelClient([reply("x")]), output_guardrails=[boolean])  # type: ignore[list-item]
    with pytest.raises(GuardrailError, match=r"guardrail \w+ returned a bool, which gives no verdict"):
        await agent.run("hi")


async def test_the_guardrail_sees_the_run_and_its_deps() -> None:
    seen: list[GuardrailContext[dict[str, str]]] = []
    values: list[Any] = []

    def record(ctx: GuardrailContext[dict[str, str]], value: Any) -> None:
        seen.append(ctx)
        values.append(value)

    agent = Agent(
        FakeModelClient([reply("the answer")]),
        name="helper",
        input_guardrails=[record],
        output_guardrails=[record],
    )
    chat = agent.session(session_id="chat-7")
    result = await chat.run("the question", deps={"user": "ada"})
    inp, out = seen
    assert values == ["the question", "the answer"]
    assert (inp.deps, inp.run_id, inp.agent_name, inp.session_id, inp.kind) == (
        {"user": "ada"},
        result.run_id,
        "helper",
        "chat-7",
        "input",
    )
    assert inp.input_text == "the question"
    assert len(inp.input_items) == 1
    assert inp.output_text is None
    assert (out.kind, out.output_text, out.deps) == ("output", "the answer", {"user": "ada"})


def test_guardrails_are_checked_where_they_are_given() -> None:
    model = FakeModelClient([])
    with pytest.raises(TypeError, match="must take two positional arguments"):
        Agent(model, input_guardrails=[lambda ctx: None])  # type: ignore[list-item,misc]
    with pytest.raises(ValueError, match="blocking=True means nothing"):
        Agent(model, output_guardrails=[guardrail(lambda c, v: None, blocking=True)])
    with pytest.raises(TypeError, match="input_guardrails must be a list"):
        Agent(model, input_guardrails="strict")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"input_guardrails=.* output_guardrails="):
        Agent(model, guardrails=[])  # type: ignore[call-overload]
    agent = Agent(model, input_guardrails=[guardrail(name="screen")(lambda c, v: None)])
    assert [g.name for g in agent.input_guardrails] == ["screen"]
    assert agent.output_guardrails == ()


def test_tripwire_errors_survive_pickling() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(OutputGuardrailTripped("pii", "an email address", {"at": 3})))
    assert (type(error), error.guardrail, error.reason, error.info) == (
        OutputGuardrailTripped,
        "pii",
        "an email address",
        {"at": 3},
    )
    assert str(error) == "output guardrail pii tripped: an email address"


# -- cancellation ------------------------------------------------------------------------------------------


async def test_cancelling_the_run_cancels_a_guardrail_and_the_agent_it_runs() -> None:
    classifier_model = HeldModel()
    classifier = Agent(FakeModelClient([classifier_model]))

    async def classify(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
        verdict = await classifier.run(text)
        return None if verdict.output_text == "ok" else Tripwire("no")

    agent = Agent(FakeModelClient([HeldModel()]), input_guardrails=[classify])
    with anyio.fail_after(30):
        async with agent.stream("hi") as run:
            async for event in run:
                if isinstance(event, ModelRequest):
                    await classifier_model.started.wait()
                    await run.cancel()
    assert classifier_model.cancelled
    assert run.result.stop_reason is StopReason.CANCELLED


# -- protocols over HTTP -----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_over_http_a_whole_guarded_run_and_a_trip_that_drops_the_held_stream(protocol: str) -> None:
    reached, release = anyio.Event(), anyio.Event()
    turns: list[Any] = [
        Reply(tool_calls=[("lookup", {"q": "x"})]),
        Reply(text="found it"),
        Hold(Reply(text="the secret is 42"), release, after_chunks=1, reached=reached),
    ]
    calls = Calls()

    async def screen(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
        if text == "secret?":
            await reached.wait()  # the answer is streaming, held by the server
            return Tripwire("secrets")
        return None

    def sane(ctx: GuardrailContext[None], answer: str) -> None:
        assert answer == "found it"

    async with ScriptedServer(turns) as server:
        cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        model = cls(base_url=server.base_url, api_key="sk-test", model="m")
        agent = Agent(model, tools=[calls.tool()], input_guardrails=[screen], output_guardrails=[sane])
        async with agent:
            result = await agent.run("find x")
            assert (result.output_text, calls.ran) == ("found it", ["x"])
            events: list[Event] = []
            with anyio.fail_after(30):
                async with agent.stream("secret?") as run:
                    events = [e async for e in run]
    assert not release.is_set()  # the held stream never went on: the run left it
    assert [type(e) for e in events[-2:]] == [GuardrailTripped, RunFailed]
    assert len(server.requests) == 3


# -- other runtimes and agents as tools --------------------------------------------------------------------


async def test_codeact_runs_no_code_of_a_rejected_input() -> None:
    answered = anyio.Event()

    async def late_trip(ctx: GuardrailContext[None], text: str) -> Tripwire:
        await answered.wait()
        await let_the_run_go_on()
        return Tripwire("no code for you")

    code = '{"type": "code", "code": "print(1)"}'
    agent = Agents.codeact(FakeModelClient([reply(code)]), input_guardrails=[late_trip])
    events: list[Event] = []
    with anyio.fail_after(60), pytest.raises(InputGuardrailTripped):
        await agent.run("run it", on=[(ModelCompleted, lambda e: answered.set()), (None, events.append)])
    assert not any(isinstance(e, CodeStarted) for e in events)


async def test_deep_research_s_plan_is_cancelled_by_a_trip_beside_it() -> None:
    planner_model = HeldModel()

    async def trip(ctx: GuardrailContext[None], text: str) -> Tripwire:
        await planner_model.started.wait()  # the planner's model call is in flight
        return Tripwire("no research")

    agent = Agents.deep_research(
        FakeModelClient([planner_model]), planner=AgentModelPlanner(), input_guardrails=[trip]
    )
    chat = agent.session()
    with anyio.fail_after(30), pytest.raises(InputGuardrailTripped):
        await chat.run("research it")
    assert planner_model.cancelled
    assert chat.memory.items == ()


async def test_a_sub_agent_s_trip_is_the_calling_model_s_tool_error() -> None:
    def no_pii(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
        return Tripwire("holds an email address") if "@" in text else None

    helper = Agent(FakeModelClient([reply("unused")]), name="helper", input_guardrails=[no_pii])
    caller_model = FakeModelClient(
        [reply(tool_calls=[("helper", {"input": "mail ada@x.org"})]), reply("sorry")]
    )
    caller = Agent(caller_model, tools=[helper.as_tool(description="Helps.")])
    events: list[Event] = []
    result = await caller.run("go", on=[(ToolFailed, events.append)])
    assert result.output_text == "sorry"
    assert result.stop_reason is StopReason.FINAL_ANSWER
    (failed,) = events
    assert isinstance(failed, ToolFailed)
    assert (
        "agent 'helper' was stopped by its input guardrail no_pii: holds an email address"
        in failed.result.output
    )


async def test_a_run_without_guardrails_has_no_guard_state() -> None:
    agent = Agent(FakeModelClient([reply("x")]))
    run = agent.stream("hi")
    assert run.ctx.guardrails is None
    assert run.ctx.input_guard is None
    async with run:
        assert (await run.wait()).output_text == "x"


async def test_a_model_failure_beside_the_guardrails_fails_the_run_as_itself_and_cancels_them() -> None:
    cancelled: list[str] = []

    async def slow(ctx: GuardrailContext[None], text: str) -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append("slow")
            raise

    agent = Agent(FakeModelClient([RuntimeError("the model is down")]), input_guardrails=[slow])
    events: list[Event] = []
    with anyio.fail_after(30), pytest.raises(RuntimeError, match="the model is down"):
        await agent.run("hi", on=[(None, events.append)])
    assert cancelled == ["slow"]
    assert [type(e) for e in terminals(events)] == [RunFailed]
    assert not any(isinstance(e, GuardrailTripped) for e in events)


# -- failing closed: a run that ends before the verdict keeps nothing ----------------------------------------


@pytest.mark.parametrize("how", ["cancel", "deadline"])
@pytest.mark.parametrize("kind", ["input", "output"])
async def test_a_run_cancelled_or_timed_out_before_its_guardrails_answered_keeps_nothing(
    kind: str, how: str
) -> None:
    answered, started = anyio.Event(), anyio.Event()

    async def never_answers(ctx: GuardrailContext[None], value: str) -> None:
        if kind == "input":
            await answered.wait()  # the model's turn is complete, and waits for this guardrail
        started.set()
        await anyio.sleep_forever()

    store = InMemoryStore()
    await Agent(FakeModelClient([reply("hello")])).session(session_id="s", store=store).run("hi")
    before = tuple(await store.load("s"))  # a turn of the conversation before this run
    model = FakeModelClient([reply("the secret is 42")])
    options = AgentOptions(timeout=1.0) if how == "deadline" else AgentOptions()
    guards: dict[str, Any] = {f"{kind}_guardrails": [never_answers]}
    chat = Agent(model, options=options, **guards).session(session_id="s", store=store)
    events: list[Event] = []
    with anyio.fail_after(30):
        async with chat.stream("tell me the secret") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ModelCompleted):
                    answered.set()
                    if how == "cancel":
                        await started.wait()
                        await run.cancel()
    result = run.result
    assert started.is_set()  # the run ended while the guardrail was checking
    assert result.stop_reason is (StopReason.CANCELLED if how == "cancel" else StopReason.DEADLINE)
    # Neither the unchecked answer nor the input: not in the result, memory or the store.
    assert (result.output, result.output_text, result.new_items) == (None, "", ())
    assert chat.memory.items == before
    assert tuple(await store.load("s")) == before
    assert [type(e) for e in terminals(events)] == [RunCancelled]


@pytest.mark.parametrize("how", ["cancel", "deadline"])
async def test_a_run_cut_after_its_answer_but_before_the_output_guardrails_keeps_nothing(how: str) -> None:
    # The cut lands while the answering step's ``StepFinished`` is published (a slow listener), before the
    # output guardrails are even called: the answer is in memory already, and must not stay there.
    checked: list[str] = []
    reached = anyio.Event()

    def no_answers(ctx: GuardrailContext[None], answer: str) -> Tripwire:
        checked.append(answer)
        return Tripwire("never shown")

    async def slow_listener(event: StepFinished) -> None:
        reached.set()
        await anyio.sleep_forever()

    options = AgentOptions(timeout=0.5) if how == "deadline" else AgentOptions()
    agent = Agent(FakeModelClient([reply("SECRET ANSWER")]), output_guardrails=[no_answers], options=options)
    chat = agent.session()
    with anyio.fail_after(30):
        async with chat.stream("hi", on=[(StepFinished, slow_listener)]) as run:
            async for event in run:
                if how == "cancel" and isinstance(event, ModelCompleted):
                    await reached.wait()
                    await run.cancel()
    result = run.result
    assert result.stop_reason is (StopReason.CANCELLED if how == "cancel" else StopReason.DEADLINE)
    assert checked == []
    assert (result.output, result.output_text, result.new_items) == (None, "", ())
    assert chat.memory.items == ()


async def test_a_run_failing_at_its_step_limit_without_text_keeps_its_work() -> None:
    # Its last step made calls only: nothing for the output guardrails to check, so no verdict is pending,
    # and the failure keeps the run's items as any failed run's.
    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "x"})])])
    options = AgentOptions(max_steps=1, on_max_steps="raise")
    chat = Agent(
        model, tools=[Calls().tool()], output_guardrails=[lambda ctx, a: None], options=options
    ).session()
    with pytest.raises(MaxStepsExceeded):
        await chat.run("go")
    assert len(chat.memory.items) == 3


async def test_a_model_failure_before_the_input_guardrails_answered_keeps_nothing_either() -> None:
    async def slow(ctx: GuardrailContext[None], text: str) -> None:
        await anyio.sleep_forever()

    chat = Agent(FakeModelClient([RuntimeError("the model is down")]), input_guardrails=[slow]).session()
    with anyio.fail_after(30), pytest.raises(RuntimeError, match="the model is down"):
        await chat.run("an unchecked request")
    assert chat.memory.items == ()


# -- output guardrails check every answer ------------------------------------------------------------------


async def test_output_guardrails_check_the_answer_forced_after_max_steps() -> None:
    seen: list[tuple[Any, StopReason | None]] = []

    def no_secret(ctx: GuardrailContext[None], answer: str) -> Tripwire | None:
        seen.append((answer, ctx.stop_reason))
        return Tripwire("secret") if "SECRET" in answer else None

    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "x"})]), reply("the SECRET is 42")])
    options = AgentOptions(max_steps=1, on_max_steps="final_answer")
    chat = Agent(model, tools=[Calls().tool()], output_guardrails=[no_secret], options=options).session()
    with pytest.raises(OutputGuardrailTripped) as caught:
        await chat.run("go")
    assert seen == [("the SECRET is 42", StopReason.MAX_STEPS)]
    assert caught.value.partial.output_text == "the SECRET is 42"  # for your logs
    assert chat.memory.items == ()


async def test_output_guardrails_check_an_answer_cut_at_the_token_limit() -> None:
    seen: list[tuple[Any, StopReason | None]] = []

    def record(ctx: GuardrailContext[None], answer: object) -> None:
        seen.append((answer, ctx.stop_reason))

    cut = reply("The answer is forty", finish_reason=FinishReason.LENGTH)
    agent = Agent(FakeModelClient([cut]), output_type=City, output_guardrails=[record])
    result = await agent.run("a city?")
    assert result.stop_reason is StopReason.TRUNCATED
    assert seen == [("The answer is forty", StopReason.TRUNCATED)]  # no City: its text


# -- a guardrail that ends without a verdict ---------------------------------------------------------------


@pytest.mark.parametrize("blocking", [False, True])
@pytest.mark.parametrize("several", [False, True])
async def test_a_guardrail_raising_cancelled_error_of_its_own_fails_the_run(
    blocking: bool, several: bool
) -> None:
    async def shared_classifier(ctx: GuardrailContext[None], text: str) -> None:
        await anyio.lowlevel.checkpoint()
        # What awaiting a shared task that another request cancelled raises: no cancellation of this run.
        raise asyncio.CancelledError

    guards = [guardrail(shared_classifier, blocking=blocking)]
    if several:
        guards.append(guardrail(lambda ctx, text: None, name="fine", blocking=blocking))
    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "x"})]), reply("done")])
    calls = Calls()
    chat = Agent(model, tools=[calls.tool()], input_guardrails=guards).session()
    events: list[Event] = []
    with anyio.fail_after(30), pytest.raises(GuardrailError) as caught:
        await chat.run("hi", on=[(None, events.append)])
    error = caught.value
    assert (error.kind, error.guardrail) == ("input", "shared_classifier")
    assert "CancelledError while nothing cancelled the run" in error.error
    assert isinstance(error.__cause__, asyncio.CancelledError)
    assert calls.ran == []
    assert chat.memory.items == ()
    assert [type(e) for e in terminals(events)] == [RunFailed]


class Interrupted(BaseException):
    """A ``BaseException`` that is no ``Exception`` (as ``KeyboardInterrupt`` or ``SystemExit`` are)."""


@pytest.mark.parametrize("blocking", [False, True])
@pytest.mark.parametrize("several", [False, True])
async def test_a_base_exception_in_a_guardrail_propagates_as_itself(blocking: bool, several: bool) -> None:
    async def interrupted(ctx: GuardrailContext[None], text: str) -> None:
        await anyio.lowlevel.checkpoint()
        raise Interrupted("stop")

    guards = [guardrail(interrupted, blocking=blocking)]
    if several:
        guards.append(guardrail(lambda ctx, text: None, name="fine", blocking=blocking))
    chat = Agent(FakeModelClient([reply("an answer")]), input_guardrails=guards).session()
    events: list[Event] = []
    with anyio.fail_after(30), pytest.raises(Interrupted):  # not in an exception group
        await chat.run("hi", on=[(None, events.append)])
    assert chat.memory.items == ()
    assert [type(e) for e in terminals(events)] == [RunFailed]

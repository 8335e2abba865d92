"""Guardrails per run and in ``agent.override``: ``agent.run(x, input_guardrails=[...])`` runs a request's own
checks after the agent's; ``agent.override(input_guardrails=[])`` replaces the agent's (a test switching them
off, or swapping in a fake). A run that gets none still has ``ctx.guardrails is None``."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from agentflow import (
    Agent,
    GuardrailContext,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    Tripwire,
    guardrail,
)
from agentflow.agent.agent import run_sync
from agentflow.events import GuardrailTripped, RunFailed
from agentflow.runtimes import ReActRuntime, RunContext
from agentflow.runtimes.guardrails import Guardrails
from agentflow.testing.fake import FakeModelClient, reply


class Log:
    """Guardrails that record their calls (``name:kind:value``), and pass or trip as told."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def passes(self, name: str) -> Any:
        def check(ctx: GuardrailContext[Any], value: Any) -> None:
            self.calls.append(f"{name}:{ctx.kind}:{value}")

        return guardrail(check, name=name)

    def trips(self, name: str) -> Any:
        def check(ctx: GuardrailContext[Any], value: Any) -> Tripwire:
            self.calls.append(f"{name}:{ctx.kind}:{value}")
            return Tripwire(f"{name} says no")

        return guardrail(check, name=name)


class Watching(ReActRuntime):
    """ReAct, keeping the ``RunContext.guardrails`` each run got."""

    name: ClassVar[str] = "watching"

    def __init__(self) -> None:
        self.seen: list[Guardrails | None] = []

    async def start(self, ctx: RunContext) -> None:
        self.seen.append(ctx.guardrails)
        await super().start(ctx)


def model(*answers: str) -> FakeModelClient:
    return FakeModelClient([reply(answer) for answer in answers])


# -- per run: after the agent's ----------------------------------------------------------------------------


async def test_a_run_s_guardrails_run_after_the_agent_s_and_both_run() -> None:
    log = Log()
    agent = Agent(
        model("the answer"),
        name="app",
        input_guardrails=[log.passes("app_in")],
        output_guardrails=[log.passes("app_out")],
    )
    result = await agent.run(
        "q", input_guardrails=[log.passes("req_in")], output_guardrails=[log.passes("req_out")]
    )
    assert result.output_text == "the answer"
    assert log.calls == [
        "app_in:input:q",
        "req_in:input:q",
        "app_out:output:the answer",
        "req_out:output:the answer",
    ]
    assert (agent.input_guardrails[0].name, len(agent.input_guardrails)) == ("app_in", 1)  # left as it was


async def test_a_run_s_guardrail_trips_on_an_agent_without_any_and_names_the_agent() -> None:
    seen: list[str] = []

    def no_refunds(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
        seen.append(ctx.agent_name)
        return Tripwire("refunds go to a person") if "refund" in text else None

    fake = model("sure", "unused")
    agent = Agent(fake, name="support")
    blocking = guardrail(no_refunds, blocking=True)
    with pytest.raises(InputGuardrailTripped) as caught:
        await agent.run("a refund please", input_guardrails=[blocking])
    assert (caught.value.guardrail, caught.value.reason) == ("no_refunds", "refunds go to a person")
    assert seen == ["support"]
    assert fake.prompts == []  # blocking: the model was never asked
    assert (await agent.run("hello")).output_text == "sure"  # the next run has none: not kept


async def test_a_run_s_output_guardrail_stops_the_answer() -> None:
    log = Log()
    agent = Agent(model("the SECRET"), input_guardrails=[log.passes("app_in")])
    with pytest.raises(OutputGuardrailTripped) as caught:
        await agent.run("q", output_guardrails=[log.trips("no_secret")])
    assert caught.value.partial.output_text == "the SECRET"
    assert log.calls == ["app_in:input:q", "no_secret:output:the SECRET"]


def test_a_run_s_guardrails_are_checked_at_the_call() -> None:
    agent = Agent(model())
    with pytest.raises(TypeError, match="input_guardrails must be a list"):
        agent.run_sync("q", input_guardrails="strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="blocking=True means nothing"):
        agent.stream("q", output_guardrails=[guardrail(lambda c, v: None, blocking=True)])
    with pytest.raises(TypeError, match="must take two positional arguments"):
        agent.override(input_guardrails=[lambda ctx: None]).__enter__()  # type: ignore[list-item,misc]
    with pytest.raises(TypeError, match="did you mean input_guardrails="):
        agent.run_sync("q", input_guardrail=[])  # type: ignore[call-overload]


# -- agent.override: in place of the agent's ---------------------------------------------------------------


async def test_override_replaces_the_agent_s_guardrails_and_an_empty_list_switches_them_off() -> None:
    log = Log()
    agent = Agent(
        model("one", "two", "three"),
        input_guardrails=[log.trips("app_in")],
        output_guardrails=[log.passes("app_out")],
    )
    with agent.override(input_guardrails=[]):
        assert (await agent.run("q")).output_text == "one"
    assert log.calls == ["app_out:output:one"]  # the agent's output guardrails were left in place
    log.calls.clear()
    with agent.override(input_guardrails=[log.passes("fake_in")], output_guardrails=[]):
        assert (await agent.run("q")).output_text == "two"
    assert log.calls == ["fake_in:input:q"]
    with pytest.raises(InputGuardrailTripped):  # outside the block: the agent's own again
        await agent.run("q")


async def test_nested_overrides_compose_field_by_field() -> None:
    log = Log()
    watching = Watching()
    agent = Agent(
        model("a", "b"),
        runtime=watching,
        input_guardrails=[log.trips("app_in")],
        output_guardrails=[log.trips("app_out")],
    )
    with agent.override(input_guardrails=[]):
        with agent.override(output_guardrails=[]):
            assert (await agent.run("q")).output_text == "a"
        with pytest.raises(OutputGuardrailTripped):  # the inner block's output_guardrails=[] has ended
            await agent.run("q")
    assert watching.seen[0] is None  # both kinds off: nothing to check, as for an agent without any
    assert log.calls == ["app_out:output:b"]


async def test_a_run_s_guardrails_come_on_top_of_an_override_s() -> None:
    log = Log()
    agent = Agent(model("ok"), input_guardrails=[log.trips("app_in")])
    with agent.override(input_guardrails=[log.passes("fake_in")]):
        result = await agent.run("q", input_guardrails=[log.passes("req_in")])
    assert result.output_text == "ok"
    assert log.calls == ["fake_in:input:q", "req_in:input:q"]


async def test_override_reaches_the_agent_s_runs_as_a_tool() -> None:
    log = Log()
    helper = Agent(model("helped"), name="helper", input_guardrails=[log.trips("no_pii")])
    caller = Agent(
        FakeModelClient([reply(tool_calls=[("helper", {"input": "x"})]), reply("done")]),
        tools=[helper.as_tool(description="Helps.")],
    )
    with helper.override(input_guardrails=[]):
        result = await caller.run("go")
    assert [r.output for r in result.tool_results] == ["helped"]
    assert log.calls == []


# -- sessions, streams, run_sync ---------------------------------------------------------------------------


async def test_a_session_run_s_guardrail_trips_and_leaves_the_conversation_as_it_was() -> None:
    log = Log()
    chat = Agent(model("first", "stopped", "second"), input_guardrails=[log.passes("app_in")]).session()
    assert (await chat.run("hi")).output_text == "first"
    before = chat.memory.items
    with pytest.raises(InputGuardrailTripped):
        await chat.run("a jailbreak", input_guardrails=[log.trips("screen")])
    assert chat.memory.items == before
    assert (await chat.run("hello again")).output_text == "second"
    assert log.calls == [
        "app_in:input:hi",
        "app_in:input:a jailbreak",
        "screen:input:a jailbreak",
        "app_in:input:hello again",
    ]


async def test_a_streamed_run_s_guardrail_trips_with_its_events() -> None:
    log = Log()
    agent = Agent(model("the SECRET"))
    async with agent.stream("q", output_guardrails=[log.trips("no_secret")]) as run:
        events = [e async for e in run]
    tripped = [e for e in events if isinstance(e, GuardrailTripped)]
    assert [(e.kind, e.guardrail) for e in tripped] == [("output", "no_secret")]
    assert isinstance(events[-1], RunFailed)
    with pytest.raises(OutputGuardrailTripped):
        _ = run.result


def test_run_sync_takes_them_on_the_agent_a_session_and_the_module_function() -> None:
    log = Log()
    agent = Agent(model("unused", "unused", "unused"))
    with pytest.raises(InputGuardrailTripped):
        agent.run_sync("a", input_guardrails=[log.trips("one")])
    with pytest.raises(InputGuardrailTripped):
        agent.session().run_sync("b", input_guardrails=[log.trips("two")])
    with pytest.raises(OutputGuardrailTripped):
        run_sync(agent, "c", output_guardrails=[log.trips("three")])
    assert log.calls == ["one:input:a", "two:input:b", "three:output:unused"]


# -- zero cost when unused ---------------------------------------------------------------------------------


async def test_a_run_without_guardrails_still_gets_none_and_the_agent_s_its_prebuilt_value() -> None:
    watching = Watching()
    plain = Agent(model("a", "b", "c", "d"), runtime=watching)
    await plain.run("q")
    await plain.run("q", input_guardrails=[], output_guardrails=[])  # empty: none to add
    with plain.override(input_guardrails=[]):
        await plain.run("q")
    await plain.session().run("q")
    assert watching.seen == [None, None, None, None]

    guarded_runtime = Watching()
    guarded = Agent(model("e", "f"), runtime=guarded_runtime, input_guardrails=[Log().passes("app_in")])
    await guarded.run("q")
    await guarded.run("q", input_guardrails=[])
    own = guarded._guardrails
    assert own is not None
    assert [g is own for g in guarded_runtime.seen] == [True, True]  # built once, at Agent(...)

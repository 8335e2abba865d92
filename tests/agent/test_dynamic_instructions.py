"""Prompt functions: ``Agent(instructions=fn)`` / ``Agent(system_prompt=fn)``, called with a
``PromptContext`` once per step, before the step's model call; their text lands where a static one does on
either protocol and in every runtime; one that raises, or returns something else than text, fails the run."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    Agents,
    PromptContext,
    PromptFunctionError,
    ToolContext,
    run_result,
)
from agentflow.events import RunFailed
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes.planner import AgentModelPlanner
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def two_steps() -> list[Any]:
    return [reply(tool_calls=[("add", {"a": 1, "b": 2})], usage=(10, 5)), reply("3", usage=(20, 5))]


class Counter:
    """A prompt function that records what it was called with."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.calls: list[PromptContext[Any]] = []

    def __call__(self, run: PromptContext[Any]) -> str:
        self.calls.append(run)
        return f"{self.label} for {run.deps} at step {run.step}"


async def test_each_step_calls_the_functions_once_and_its_prompt_carries_their_text() -> None:
    system, instructions = Counter("system"), Counter("rules")
    model = FakeModelClient(two_steps())
    agent = Agent(model, tools=[add], system_prompt=system, instructions=instructions, name="calc")
    result = await agent.run("1+2?", deps="ada", options=AgentOptions(max_tokens=1000))
    assert result.output_text == "3"
    assert [c.step for c in system.calls] == [0, 1]
    assert [c.step for c in instructions.calls] == [0, 1]
    first, second = instructions.calls
    assert (first.deps, first.run_id, first.input_text, first.agent_name) == (
        "ada",
        result.run_id,
        "1+2?",
        "calc",
    )
    assert first.session_id is None
    # The view of the run as it is before each call: the second sees the first call's usage.
    assert (first.usage.total_tokens, first.tokens_left) == (0, 1000)
    assert (second.usage.total_tokens, second.tokens_left) == (15, 985)
    # Where a static system prompt goes (with the runtime's instructions after it), and the instructions.
    assert [p.system_prompt.split("\n\n")[0] for p in model.prompts if p.system_prompt] == [
        "system for ada at step 0",
        "system for ada at step 1",
    ]
    assert [p.instructions for p in model.prompts] == ["rules for ada at step 0", "rules for ada at step 1"]


async def test_an_async_function_and_a_static_text_side_by_side() -> None:
    async def instructions(run: PromptContext[dict[str, str]]) -> str:
        await anyio.lowlevel.checkpoint()
        return f"The user is {run.deps['user']}."

    model = FakeModelClient(two_steps())
    agent = Agent(model, tools=[add], system_prompt="You add numbers.", instructions=instructions)
    await agent.run("1+2?", deps={"user": "Ada"})
    assert [p.instructions for p in model.prompts] == ["The user is Ada."] * 2
    assert all((p.system_prompt or "").startswith("You add numbers.\n\n") for p in model.prompts)


async def test_a_session_s_runs_see_its_id_and_an_override_keeps_the_functions() -> None:
    counter = Counter("rules")
    agent = Agent(FakeModelClient([]), instructions=counter)
    fake = FakeModelClient([reply("one"), reply("two")])
    chat = agent.session(session_id="chat-1")
    with agent.override(model=fake):
        await chat.run("hi")
        await chat.run("again", deps=7)
    assert [(c.session_id, c.deps) for c in counter.calls] == [("chat-1", None), ("chat-1", 7)]
    assert [p.instructions for p in fake.prompts] == ["rules for None at step 0", "rules for 7 at step 0"]


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_the_text_lands_in_the_same_wire_fields_as_a_static_one(protocol: str) -> None:
    turns = [Reply(tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3")]
    bodies: list[list[Any]] = []
    for dynamic in (False, True):
        async with ScriptedServer(turns) as server:
            cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
            model = cls(base_url=server.base_url, api_key="sk-test", model="m")
            if dynamic:
                agent = Agent(
                    model,
                    tools=[add],
                    system_prompt=lambda run: f"You are {run.deps}.",
                    instructions=lambda run: "Be brief.",
                )
            else:
                agent = Agent(model, tools=[add], system_prompt="You are Calc.", instructions="Be brief.")
            async with agent:
                await agent.run("1+2?", deps="Calc")
        bodies.append([r.body for r in server.requests])
    static, dynamic_bodies = bodies
    assert dynamic_bodies == static
    first = static[0]
    if protocol == "chat":
        system = [m["content"] for m in first["messages"] if m["role"] == "system"]
        assert system[0].startswith("You are Calc.\n\n")  # the system prompt, then ReAct's instructions
        assert system[1] == "Be brief."
    else:
        assert first["instructions"].startswith("You are Calc.\n\n")  # the request's own instructions
        assert first["input"][0]["role"] == "system"
        assert first["input"][0]["content"] in ("Be brief.", [{"type": "input_text", "text": "Be brief."}])


async def test_codeact_puts_the_text_before_its_own_instructions_each_step() -> None:
    counter = Counter("You work for")
    code = '{"type": "code", "code": "print(add(a=1, b=2))"}'
    model = FakeModelClient([reply(code)])
    agent = Agents.codeact(model, tools=[add], system_prompt=counter)
    with anyio.fail_after(60):
        result = await agent.run("1+2?", deps="Ada")
    assert result.output == "3"
    assert [c.step for c in counter.calls] == [0]
    system = model.prompts[0].system_prompt or ""
    assert system.startswith("You work for for Ada at step 0\n\n")
    assert "add(" in system  # then CodeAct's instructions and the tools as text


async def test_deep_research_s_planner_is_told_the_text_of_the_step_the_plan_comes_before() -> None:
    counter = Counter("Cite sources")
    model = FakeModelClient([reply('["Look it up"]'), reply("done")])
    agent = Agents.deep_research(model, planner=AgentModelPlanner(), instructions=counter)
    await agent.run("goal", deps="the wiki")
    # Once for step 0: the plan and the step's call share it.
    assert [c.step for c in counter.calls] == [0]
    plan_prompt, step_prompt = model.prompts
    planning_input = plan_prompt.items[0].text
    assert "Cite sources for the wiki at step 0" in planning_input
    assert step_prompt.instructions == "Cite sources for the wiki at step 0"


async def test_a_function_that_raises_fails_the_run_with_a_prompt_function_error() -> None:
    def instructions(run: PromptContext[dict[str, str]]) -> str:
        return f"The user is {run.deps['user']}."

    model = FakeModelClient(two_steps())
    agent = Agent(model, tools=[add], instructions=instructions, name="support")
    events: list[RunFailed] = []
    with pytest.raises(PromptFunctionError) as caught:
        await agent.run("hi", deps={}, on=[(RunFailed, events.append)])
    error = caught.value
    assert str(error) == (
        "the instructions function test_a_function_that_raises_fails_the_run_with_a_prompt_function_error."
        "<locals>.instructions of agent 'support' raised KeyError: 'user'"
    )
    assert isinstance(error.__cause__, KeyError)
    assert (error.agent, error.prompt) == ("support", "instructions")
    assert model.prompts == []  # no model call without its instructions
    [failed] = events
    assert failed.error_type == "PromptFunctionError"
    assert "raised KeyError: 'user'" in failed.error
    partial = run_result(error)
    assert partial is not None
    assert partial.stop_reason is StopReason.ERROR


async def test_a_function_that_returns_no_text_is_a_type_error_naming_the_agent() -> None:
    def no_text(run: PromptContext[Any]) -> str:
        return None  # type: ignore[return-value]

    agent = Agent(FakeModelClient(two_steps()), tools=[add], system_prompt=no_text, name="calc")
    with pytest.raises(
        TypeError,
        match=r"the system_prompt function .*no_text of agent 'calc' returned a NoneType, not a str",
    ):
        await agent.run("hi")


def test_a_prompt_that_is_neither_text_nor_a_function_of_one_argument_is_refused_at_once() -> None:
    with pytest.raises(
        TypeError, match=r"instructions must be a str, None, or a function taking one argument"
    ):
        Agent(FakeModelClient([]), instructions=lambda: "no argument")  # type: ignore[arg-type,misc]
    with pytest.raises(TypeError, match=r"system_prompt must be a str, None, .* got int"):
        Agent(FakeModelClient([]), system_prompt=3)  # type: ignore[call-overload]


async def test_static_prompts_need_no_evaluation() -> None:
    agent = Agent(FakeModelClient([reply("hi")]), system_prompt="Static.", instructions="Also static.")
    run = agent.stream("hi")
    assert run.ctx.prompt_functions is None
    assert (run.ctx.system_prompt, run.ctx.instructions) == ("Static.", "Also static.")
    async with run:
        async for _ in run:
            pass


@tool
async def whoami(ctx: ToolContext[str]) -> str:
    """Who the run is for."""
    return ctx.deps


async def test_a_sub_agent_s_function_gets_the_caller_s_deps() -> None:
    counter = Counter("Helper")
    sub = Agent(FakeModelClient([reply("ok")]), instructions=counter, name="Helper")
    parent = Agent(
        FakeModelClient([reply(tool_calls=[("helper", {"input": "x"})]), reply("done")]),
        tools=[sub.as_tool(description="Helps.")],
    )
    await parent.run("go", deps="Ada")
    assert [c.deps for c in counter.calls] == ["Ada"]

"""A keyword given in the wrong place says where it belongs (``settings=ModelSettings(temperature=0)``), and
a model name given as the model says how to build one — while the signatures stay exactly as typed."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from agentflow.agent.agent import Agent, run_sync
from agentflow.agent.agents import Agents
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.run_starter import RunStarter
from agentflow.testing.fake import FakeModelClient, reply


def agent() -> Agent[str]:
    return Agent(FakeModelClient([reply("hi")]))


def model() -> FakeModelClient:
    return FakeModelClient([])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: Agent(model(), temperature=0),
            "Agent() got an unexpected keyword argument 'temperature': it is a model setting: "
            "settings=ModelSettings(temperature=0)",
        ),
        (
            lambda: Agent(model(), max_steps=3),
            "Agent() got an unexpected keyword argument 'max_steps': it is a run limit or loop option: "
            "options=AgentOptions(max_steps=3)",
        ),
        (
            lambda: Agents.react(model(), top_p=0.5),
            "Agent() got an unexpected keyword argument 'top_p': it is a model setting: "
            "settings=ModelSettings(top_p=0.5)",
        ),
        (
            lambda: agent().stream("hi", max_turns=3),
            "Agent.stream() got an unexpected keyword argument 'max_turns': it is a run limit or loop "
            "option: options=AgentOptions(max_steps=3)",
        ),
        (
            lambda: agent().run_sync("hi", max_tool_calls=2),
            "Agent.run_sync() got an unexpected keyword argument 'max_tool_calls': it is a run limit or loop "
            "option: options=AgentOptions(max_tool_calls=2)",
        ),
        (
            lambda: agent().session().run_sync("hi", temperature=1),
            "Session.run_sync() got an unexpected keyword argument 'temperature': it is a model setting: "
            "settings=ModelSettings(temperature=1)",
        ),
        (
            lambda: run_sync(agent(), "hi", reasoning_effort="low"),
            "run_sync() got an unexpected keyword argument 'reasoning_effort': it is a model setting: "
            "settings=ModelSettings(reasoning={'effort': 'low'})",
        ),
        (
            lambda: agent().stream("hi", seed=7),
            "Agent.stream() got an unexpected keyword argument 'seed': send it as "
            "settings=ModelSettings(extra_body={'seed': 7})",
        ),
        (
            lambda: agent().stream("hi", message_history=[]),
            "Agent.stream() got an unexpected keyword argument 'message_history': the conversation so far is "
            "history=[...]",
        ),
        (
            lambda: agent().stream("hi", tools=[]),
            "Agent.stream() got an unexpected keyword argument 'tools': tools= belongs to the agent: "
            "Agent(model, tools=...)",
        ),
        (
            lambda: agent().stream("hi", outputtype=None),
            "Agent.stream() got an unexpected keyword argument 'outputtype': did you mean output_type=?",
        ),
        (
            lambda: agent().stream("hi", model_settings=ModelSettings()),
            "Agent.stream() got an unexpected keyword argument 'model_settings': pass "
            "settings=ModelSettings(...)",
        ),
        (
            lambda: agent().stream("hi", temperature=0, max_steps=2),
            "Agent.stream() got unexpected keyword arguments: 'temperature': it is a model setting: "
            "settings=ModelSettings(temperature=0); 'max_steps': it is a run limit or loop option: "
            "options=AgentOptions(max_steps=2)",
        ),
        (
            lambda: Agent(model(), output_retries=3),
            "Agent() got an unexpected keyword argument 'output_retries': a final answer's retries are part "
            "of its type: output_type=OutputType(T, retries=...)",
        ),
        (
            lambda: Agent(model(), instrument=True),
            "Agent() got an unexpected keyword argument 'instrument': tracing is switched on from outside: "
            "agentflow.tracing.instrument(agent)",
        ),
        (
            lambda: Agent(model(), deps_type=int),
            "Agent() got an unexpected keyword argument 'deps_type': deps are per run, typed where they are "
            "used: agent.run(x, deps=...), ToolContext[Deps]",
        ),
        (
            lambda: Agent(model(), deps=1),
            "Agent() got an unexpected keyword argument 'deps': deps are per run: agent.run(x, deps=...), "
            "not the agent's",
        ),
        (
            lambda: agent().stream("hi", context={}),
            "Agent.stream() got an unexpected keyword argument 'context': a run's dependencies are deps=...",
        ),
        (
            lambda: Agent(model(), tool_use_behavior="stop_on_first_tool"),
            "Agent() got an unexpected keyword argument 'tool_use_behavior': a tool whose result is the "
            "answer says so: @tool(return_direct=True)",
        ),
        (
            lambda: ModelSettings(temprature=0),
            "ModelSettings() got an unexpected keyword argument 'temprature': did you mean temperature=?",
        ),
        (
            lambda: ModelSettings(max_completion_tokens=5),
            "ModelSettings() got an unexpected keyword argument 'max_completion_tokens': did you mean "
            "ModelSettings(max_output_tokens=5)?",
        ),
        (
            lambda: ModelSettings(seed=1),
            "ModelSettings() got an unexpected keyword argument 'seed': send it as extra_body={'seed': 1}",
        ),
        (
            lambda: ModelSettings(timeout=30),
            "ModelSettings() got an unexpected keyword argument 'timeout': it is a run limit or loop option, "
            "not a model setting: AgentOptions(timeout=30), passed as options= to Agent(...) or to a run",
        ),
        (
            lambda: AgentOptions(max_step=3),
            "AgentOptions() got an unexpected keyword argument 'max_step': did you mean max_steps=?",
        ),
        (
            lambda: AgentOptions(temperature=0),
            "AgentOptions() got an unexpected keyword argument 'temperature': it is a model setting, not a "
            "run option: ModelSettings(temperature=0), passed as settings= to Agent(...) or to a run",
        ),
    ],
)
def test_a_misplaced_keyword_says_where_it_belongs(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message


async def test_an_awaited_run_says_it_too() -> None:
    with pytest.raises(TypeError, match=r"Agent.run\(\) .* settings=ModelSettings\(temperature=0\)"):
        await agent().run("hi", temperature=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: Agent(model(), max_tokens=100),
        lambda: agent().stream("hi", max_tokens=100),
        lambda: ModelSettings(max_tokens=100),
    ],
)
def test_max_tokens_is_told_apart_from_the_run_s_token_budget(call: Callable[[], Any]) -> None:
    # OpenAI's max_tokens caps an answer; AgentOptions.max_tokens is the whole run's budget, input included.
    with pytest.raises(TypeError, match=r"'max_tokens'") as raised:
        call()
    message = str(raised.value)
    assert "ModelSettings(max_output_tokens=100)" in message
    assert "token budget" in message
    assert "input tokens included" in message


def test_other_type_errors_are_left_as_they_are() -> None:
    with pytest.raises(TypeError, match=r"on= takes \(event types, callback\) pairs"):
        agent().stream("hi", on=5)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="a run needs input"):
        agent().stream()
    with pytest.raises(TypeError, match=r"ModelSettings\.temperature must be of type int or float"):
        ModelSettings(temperature="hot")  # type: ignore[arg-type]


def test_the_signatures_stay_as_typed() -> None:
    # No **kwargs was added: introspection, IDEs and type checkers see the real keywords.
    for function in (Agent.__init__, RunStarter.run, RunStarter.stream, RunStarter.run_sync, run_sync):
        kinds = {p.kind for p in inspect.signature(function).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, function
    assert "settings" in inspect.signature(Agent.run).parameters
    assert "max_output_tokens" in inspect.signature(ModelSettings).parameters
    assert inspect.iscoroutinefunction(Agent.run)
    assert inspect.iscoroutinefunction(agent().session().run)


@pytest.mark.parametrize("name", ["gpt-4o", "openai:gpt-4o"])
def test_a_model_name_as_the_model_shows_the_model_to_build(name: str) -> None:
    with pytest.raises(TypeError) as raised:
        Agent(model=name)  # type: ignore[call-overload]
    message = str(raised.value)
    assert "not a model name" in message
    assert "Agent(OpenAIChatModel(model='gpt-4o', api_key=...))" in message

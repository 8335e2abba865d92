"""CodeAct with an ``output_type``: the answer (``final_answer(x)``, a final message, a step's value, prose)
is read into the type as a value and through its validators; an answer that does not match, or that a
validator rejects, goes back to the model as CodeAct feedback, counted against ``OutputType.retries``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import anyio
import attrs
import pytest
from codeact_support import (
    Recorder,
    assert_codeact_memory_valid,
    code,
    codeact_agent,
    final,
    item_text,
    says,
    system_texts,
)

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import CodeExecuted, OutputRejected, RunCancelled, RunFailed
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.runtimes.codeact_prompt import OUTPUT_ERROR_PREFIX
from agentflow.runtimes.output import OUTPUT_INSTRUCTIONS, OutputType, OutputValidationError
from agentflow.runtimes.output_validators import RejectOutput, ValidatorError
from agentflow.sandbox import CodeResult, ExecutionLimits, ToolInvoker
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@attrs.frozen
class City:
    name: str
    population: int


@attrs.frozen
class Node:
    name: str
    children: list[Node] = attrs.field(factory=list)


PARIS = {"name": "Paris", "population": 2_102_650}
MISSING_POPULATION = "output is missing the required property 'population'"
CITY_TYPE = "dict {name: str, population: int}"


class Steps:
    """A ``CodeExecutor`` that runs nothing: each step returns the next ``CodeResult``."""

    def __init__(self, *results: CodeResult) -> None:
        self.results = list(results)

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        return self.results.pop(0)

    async def aclose(self) -> None:
        pass


def agent_with(
    script: list[Any], *results: CodeResult, memory: InMemoryMemory | None = None, **kwargs: Any
) -> tuple[Agent[Any], FakeModelClient]:
    model = FakeModelClient(script)
    react = kwargs.pop("react", False)
    role = kwargs.pop("observation_role", "system")
    options = CodeActOptions(executor=Steps(*results), react=react, observation_role=role)
    kwargs.setdefault("output_type", City)
    return Agents.codeact(model, codeact=options, memory=memory, **kwargs), model


def done(value: Any, *, final: bool = True, stdout: str = "") -> CodeResult:
    return CodeResult(ok=True, value=value, is_final=final, stdout=stdout)


async def test_final_answer_in_code_is_read_into_the_type_with_its_integers_exact() -> None:
    answer = 'print("looking it up")\nfinal_answer({"name": "Paris", "population": 10**20 + 1})'
    async with codeact_agent([says(code(answer))], output_type=City) as (agent, server):
        result = await agent.run("The biggest city?")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output == City("Paris", 10**20 + 1)
    assert result.output_text == '{"name":"Paris","population":100000000000000000001}'
    # No response_format: the model writes protocol objects and code, not the answer's JSON.
    assert "response_format" not in server.requests[0].body
    assert_codeact_memory_valid(result.new_items)


async def test_a_final_message_s_output_is_read_as_a_value_or_as_json_written_into_a_string() -> None:
    agent, _ = agent_with([reply(final(PARIS)), reply(final('Here: {"name": "Oslo", "population": 709037}'))])
    first = await agent.run("one")
    second = await agent.run("two")
    assert (first.output, first.output_text) == (
        City("Paris", 2_102_650),
        '{"name":"Paris","population":2102650}',
    )
    assert second.output == City("Oslo", 709_037)


async def test_without_react_a_step_s_value_or_what_it_printed_is_the_typed_answer() -> None:
    printed = '{"name": "Rome", "population": 2872800}\n'
    agent, _ = agent_with(
        [reply(code("city")), reply(code("print(city)"))],
        done(PARIS, final=False),
        done(None, final=False, stdout=printed),
    )
    assert (await agent.run("one")).output == City("Paris", 2_102_650)
    assert (await agent.run("two")).output == City("Rome", 2_872_800)


async def test_prose_is_read_into_the_type_as_a_react_answer_is() -> None:
    agent, _ = agent_with([reply('The answer: ```json\n{"name": "Lima", "population": 9751717}\n```')])
    assert (await agent.run("go")).output == City("Lima", 9_751_717)


@pytest.mark.parametrize("role", ["system", "user"])
async def test_a_value_that_does_not_match_goes_back_in_the_step_s_code_error_with_the_type(
    role: Literal["system", "user"],
) -> None:
    turns = [says(code('final_answer({"name": "Paris"})')), says(code(f"final_answer({PARIS!r})"))]
    codeact = CodeActOptions(observation_role=role)
    async with codeact_agent(turns, codeact=codeact, output_type=City) as (agent, server):
        recorder = Recorder(agent)
        result = await agent.run("The biggest city?")
    assert result.output == City("Paris", 2_102_650)
    feedback = [m for m in server.requests[1].body["messages"] if m["role"] == role][-1]["content"]
    assert feedback == (
        'CODE_ERROR: {"error":"your final answer does not match the required type: output is missing the '
        "required property 'population'. Give a value of this type:\\n" + CITY_TYPE + '"}'
    )
    assert [(e.error, e.retrying) for e in recorder.of(OutputRejected)] == [(MISSING_POPULATION, True)]
    assert [e.ok for e in recorder.of(CodeExecuted)] == [True, True]  # the code ran fine; its answer did not
    assert result.steps == 2
    if role == "system":  # (the checker reads system observations)
        assert_codeact_memory_valid(result.new_items)


async def test_a_rejected_final_message_goes_back_as_an_output_error_answered_in_memory() -> None:
    memory = InMemoryMemory()
    agent, model = agent_with([reply(final({"name": "Paris"})), reply(final(PARIS))], memory=memory)
    result = await agent.run("go")
    assert result.output == City("Paris", 2_102_650)
    sent = model.prompts[1].items[-1]
    assert sent["role"] == "system"
    assert item_text(sent).startswith(
        f"{OUTPUT_ERROR_PREFIX}your final answer does not match the required type: {MISSING_POPULATION}."
    )
    assert CITY_TYPE in item_text(sent)
    # In memory only together with the answer to it: right before the model's second answer.
    texts = [item_text(i) for i in memory.items]
    assert texts.index(item_text(sent)) == len(texts) - 2


async def test_a_cut_run_leaves_no_unanswered_output_error_in_memory() -> None:
    memory = InMemoryMemory()
    agent, _ = agent_with([reply(final({"name": "Paris"}))], memory=memory, options=AgentOptions(max_steps=1))
    with pytest.raises(OutputValidationError):
        await agent.run("go")  # no step left: no retry, and nothing waits in memory
    assert not any(item_text(i).startswith(OUTPUT_ERROR_PREFIX) for i in memory.items)


async def test_a_validator_s_rejection_goes_back_with_its_message_alone() -> None:
    def big(city: City) -> None:
        if city.population < 1_000_000:
            raise RejectOutput(f"{city.name} is too small; name a city of a million people or more")

    small = {"name": "Bruges", "population": 118_000}
    agent, model = agent_with(
        [reply(code("...")), reply(final(small)), reply(final(PARIS))],
        done(small),
        output_type=OutputType(City, validators=[big]),
    )
    recorder = Recorder(agent)
    result = await agent.run("go")
    assert result.output == City("Paris", 2_102_650)
    reason = "Bruges is too small; name a city of a million people or more"
    assert system_texts(result.new_items)[0] == (
        'CODE_ERROR: {"error":"your final answer was rejected: '
        + reason
        + '\\nCorrect it and give the final answer again."}'
    )
    assert item_text(model.prompts[2].items[-1]) == (
        f"{OUTPUT_ERROR_PREFIX}your final answer was rejected: {reason}\n"
        "Correct it and give the final answer again."
    )
    assert [(e.error, e.retrying) for e in recorder.of(OutputRejected)] == [(reason, True)] * 2


async def test_after_its_retries_the_run_fails_with_output_validation_error_and_memory_valid() -> None:
    memory = InMemoryMemory()
    bad = {"name": "Paris"}
    agent, _ = agent_with(
        [reply(code("a")), reply(code("b"))],
        done(bad),
        done(bad),
        memory=memory,
        output_type=OutputType(City, retries=1),
    )
    recorder = Recorder(agent)
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("go")
    assert (caught.value.reason, caught.value.text) == (MISSING_POPULATION, '{"name":"Paris"}')
    assert [e.retrying for e in recorder.of(OutputRejected)] == [True, False]
    [failed] = recorder.of(RunFailed)
    assert failed.error_type == "OutputValidationError"
    assert [t.startswith("CODE_ERROR") for t in system_texts(memory.items)] == [True, True]
    assert_codeact_memory_valid(memory.items)


@pytest.mark.parametrize(
    ("options", "answer"),
    [
        (AgentOptions(max_steps=1), code("x")),
        (AgentOptions(max_tokens=10), final({"name": "Paris"})),  # (no code runs once it is spent)
    ],
    ids=["no step left", "token budget spent"],
)
async def test_no_retry_when_nothing_is_left_to_answer_with(options: AgentOptions, answer: str) -> None:
    agent, _ = agent_with([reply(answer, usage=(8, 4))], done({"name": "Paris"}), options=options)
    recorder = Recorder(agent)
    with pytest.raises(OutputValidationError):
        await agent.run("go")
    assert [e.retrying for e in recorder.of(OutputRejected)] == [False]


async def test_a_step_that_used_up_the_tool_calls_gets_no_retry() -> None:
    @tool
    async def double(x: int) -> int:
        """Twice x."""
        return 2 * x

    class Calling(Steps):
        async def execute(
            self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
        ) -> CodeResult:
            await tools("double", {"x": 1})
            await tools("double", {"x": 2})  # over the limit: refused
            return done({"name": "Paris"})

    agent = Agents.codeact(
        FakeModelClient([reply(code("..."))]),
        tools=[double],
        codeact=CodeActOptions(executor=Calling()),
        options=AgentOptions(max_tool_calls=1),
        output_type=City,
    )
    with pytest.raises(OutputValidationError):
        await agent.run("go")


@pytest.mark.parametrize("mode", ["native", "prompted"])
async def test_the_prompt_names_the_type_and_no_response_format_is_sent_in_either_mode(
    mode: Literal["native", "prompted"],
) -> None:
    agent, model = agent_with(
        [reply(final({"name": "a", "children": []}))], output_type=OutputType(Node, mode=mode)
    )
    assert (await agent.run("go")).output == Node("a")
    prompt = model.prompts[0]
    assert prompt.response_format is None
    assert prompt.system_prompt is not None
    assert "Your final answer must be a value of this type:\nNode\n" in prompt.system_prompt
    assert "  where Node is dict {name: str, children: list of Node = []}" in prompt.system_prompt
    assert OUTPUT_INSTRUCTIONS.split("{")[0] not in prompt.system_prompt  # ReAct's "answer with only JSON"


async def test_a_wrapped_type_is_named_unwrapped_and_its_bare_value_is_the_answer() -> None:
    agent, model = agent_with([reply(code("..."))], done([3, 1, 2]), output_type=list[int])
    result = await agent.run("go")
    assert (result.output, result.output_text) == ([3, 1, 2], "[3,1,2]")
    assert "must be a value of this type:\nlist of int\n" in (model.prompts[0].system_prompt or "")


async def test_a_validator_that_raises_fails_the_run_and_the_step_s_outcome_is_kept() -> None:
    def broken(city: City) -> None:
        raise RuntimeError("the census service is down")

    memory = InMemoryMemory()
    agent, _ = agent_with(
        [reply(code("..."))], done(PARIS), memory=memory, output_type=OutputType(City, validators=[broken])
    )
    recorder = Recorder(agent)
    with pytest.raises(ValidatorError):
        await agent.run("go")
    assert system_texts(memory.items) == ['CODE_RESULT: {"result":{"name":"Paris","population":2102650}}']
    assert [(e.ok, e.result) for e in recorder.of(CodeExecuted)] == [(True, PARIS)]
    assert_codeact_memory_valid(memory.items)


async def test_a_cancel_while_a_validator_runs_keeps_the_step_s_outcome() -> None:
    entered = anyio.Event()

    async def slow(city: City) -> None:
        entered.set()
        await anyio.sleep_forever()

    memory = InMemoryMemory()
    agent, _ = agent_with(
        [reply(code("..."))], done(PARIS), memory=memory, output_type=OutputType(City, validators=[slow])
    )
    recorder = Recorder(agent)
    with anyio.fail_after(10):  # a deadlock guard only
        async with agent.stream("go") as run:
            await entered.wait()
            await run.cancel()
    assert system_texts(memory.items) == ['CODE_RESULT: {"result":{"name":"Paris","population":2102650}}']
    assert [e.ok for e in recorder.of(CodeExecuted)] == [True]
    assert len(recorder.of(RunCancelled)) == 1
    assert run.partial is not None
    assert run.partial.output is None
    assert_codeact_memory_valid(memory.items)


async def test_a_run_s_own_output_type_works_with_codeact() -> None:
    agent, _ = agent_with([reply(final([1, 2]))], output_type=None)
    result = await agent.run("go", output_type=list[int])
    assert result.output == [1, 2]

"""What the model is told matches what happens: how long the sandbox's state lasts, code that was not run
and why (also on ``CodeExecuted.error_type``), and a slow tool called from code."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
from codeact_support import (
    SMALL_LIMITS,
    Recorder,
    assert_codeact_memory_valid,
    code,
    codeact_agent,
    final,
    says,
    system_texts,
)

from agentflow.agent.agents import Agents
from agentflow.agent.options import AgentOptions
from agentflow.events import CodeExecuted, RunCancelled
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.runtimes.codeact_protocol import MAX_ANSWER_CHARS
from agentflow.sandbox import ExecutionLimits, ProcessSandbox
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

PER_REQUEST = "Variables, functions and imports persist between your code steps for the current request only"


async def test_in_a_session_the_model_is_told_its_variables_last_for_the_current_request_only() -> None:
    model = FakeModelClient(
        [
            reply(code("def conv(x):\n    return 2 * x")),
            reply(final("defined")),
            reply(code("conv(10)")),
            reply(code("def conv(x):\n    return 2 * x\nconv(10)")),
            reply(final("20")),
        ]
    )
    agent = Agents.codeact(model, codeact=CodeActOptions(react=True))
    chat = agent.session()
    await chat.run("Define a converter.")
    second = await chat.run("Now convert 10.")
    # The earlier run's sandbox is gone, as the prompt says: the model defines its function again.
    assert second.output_text == "20"
    for prompt in model.prompts:
        assert prompt.system_prompt is not None
        assert PER_REQUEST in prompt.system_prompt
        assert "anything defined by code earlier in the conversation is gone" in prompt.system_prompt
    assert "NameError: name 'conv' is not defined" in system_texts(second.new_items)[0]


async def test_a_shared_executor_keeps_its_state_across_requests_and_the_prompt_says_so() -> None:
    async with ProcessSandbox() as shared:
        model = FakeModelClient([reply(code("kept = 7")), reply(final("ok")), reply(code("kept"))])
        agent = Agents.codeact(model, codeact=CodeActOptions(react=False, executor=shared))
        chat = agent.session()
        await chat.run("Keep 7.")
        assert (await chat.run("What did you keep?")).output_text == "7"
    system = model.prompts[0].system_prompt
    assert system is not None
    assert "Variables, functions and imports persist between your code steps. " in system
    assert PER_REQUEST not in system


async def test_code_that_is_not_run_says_why_on_its_event() -> None:
    options = AgentOptions(max_steps=2, on_max_steps="final_answer")
    turns = [says(code("1", "javascript")), says(code("1")), says(code("2"))]
    async with codeact_agent(turns, codeact=CodeActOptions(react=True), options=options) as (agent, _):
        recorder = Recorder(agent)
        await agent.run("Count.")
    assert [(e.ok, e.error_type) for e in recorder.of(CodeExecuted)] == [
        (False, "unsupported_language"),
        (True, None),
        (False, "not_run"),
    ]


async def test_a_step_cut_short_by_a_cancel_says_so_on_its_event() -> None:
    turns = [says(code("get_price(item='apple')\nimport time\ntime.sleep(60)"))]
    async with codeact_agent(turns) as (agent, _):
        recorder = Recorder(agent)
        with anyio.fail_after(20):
            async with agent.stream("Wait.") as run:
                async for event in run:
                    if type(event).__name__ == "ToolSucceeded":  # the code runs on
                        await run.cancel()
    [executed] = recorder.of(CodeExecuted)
    assert (executed.ok, executed.error_type) == (False, "cancelled")
    assert executed.error == "the run was cancelled before this code step finished"
    assert executed.duration > 0
    assert len(recorder.of(RunCancelled)) == 1


async def test_code_sent_with_native_tool_calls_gets_a_code_error_saying_it_was_not_run() -> None:
    model = FakeModelClient(
        [
            reply(code("6 * 7"), tool_calls=[("c1", "double", {"x": 1})]),
            reply(code("6 * 7")),
        ]
    )

    @tool
    async def double(x: int) -> int:
        """Twice x."""
        return 2 * x

    agent = Agents.codeact(model, tools=[double])
    events: list[CodeExecuted] = []
    agent.on(CodeExecuted, events.append)
    result = await agent.run("go")
    assert result.output_text == "42"
    assert system_texts(result.new_items)[0] == (
        'CODE_ERROR: {"error":"not run: the same answer also made native tool calls, which CodeAct does not '
        'take; send the code alone, and call the tools from it"}'
    )
    assert [(e.ok, e.error_type) for e in events] == [(False, "not_run"), (True, None)]
    assert_codeact_memory_valid(result.new_items)


async def test_code_too_long_to_read_whole_is_not_the_final_answer() -> None:
    data = ",".join(str(n) for n in range(60_000))
    huge = code(f"DATA = [{data}]\nlen(DATA)")
    assert len(huge) > MAX_ANSWER_CHARS

    def shorter(body: Any) -> Any:
        error = orjson.loads(system_texts(body["messages"])[-1].removeprefix("CODE_ERROR: "))["error"]
        assert error.startswith(f"not run: the answer is {len(huge)} characters long and only its first")
        assert "write shorter code" in error
        return says(code("DATA = list(range(60_000))\nlen(DATA)"))

    async with codeact_agent([says(huge), shorter]) as (agent, server):
        recorder = Recorder(agent)
        result = await agent.run("Count the data.")
    assert not server.errors
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "60000")
    assert [(e.ok, e.error_type) for e in recorder.of(CodeExecuted)] == [(False, "not_run"), (True, None)]


@tool
async def slow_lookup(key: str) -> str:
    """A lookup that takes longer than a code step's wall time."""
    await anyio.sleep(3 * SMALL_LIMITS.wall_time)  # a slow API, not a wait for the test
    return key.upper()


async def test_a_tool_slower_than_the_wall_time_still_answers_the_code() -> None:
    limits = ExecutionLimits(wall_time=SMALL_LIMITS.wall_time)
    turns = [says(code("kept = 1")), says(code("slow_lookup(key='a'), kept"))]
    options = CodeActOptions(react=False, limits=limits)
    async with codeact_agent(
        turns, codeact=options, tools=[slow_lookup], options=AgentOptions(tool_timeout=30)
    ) as (
        agent,
        _,
    ):
        result = await agent.run("Look up a.")
    assert result.output_text == '["A",1]'

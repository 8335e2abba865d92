"""The runtime's wiring, with FakeModelClient and a pure-Python CodeExecutor: which executor a run uses and
when it is closed, what reaches the executor, the prompt, the options, and runs that fail."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest
from codeact_support import assert_codeact_memory_valid, code, final, system_texts

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import CodeExecuted, RunFailed, ToolFailed
from agentflow.result import ToolResult
from agentflow.runtimes import resolve_runtime
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_prompt import CODEACT_INSTRUCTIONS, REACT_OFF_NOTE, REACT_ON_NOTE
from agentflow.sandbox import (
    CodeErrorType,
    CodeExecutor,
    CodeResult,
    ExecutionLimits,
    ProcessSandbox,
    ToolInvoker,
)
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

Step = Callable[[ToolInvoker], Any]


class FakeExecutor:
    """A ``CodeExecutor`` that runs nothing: each step answers from ``steps`` (a CodeResult, an exception to
    raise, or an async function of the invoker returning a CodeResult) and records what it was given."""

    def __init__(self, *steps: CodeResult | BaseException | Step, persistent: bool = True) -> None:
        self.steps = list(steps)
        self.persistent = persistent
        self.seen: list[tuple[str, tuple[str, ...], ExecutionLimits]] = []
        self.closed = 0

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        self.seen.append((code, tuple(tool_names), limits))
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, CodeResult):
            return step
        result = await step(tools)
        assert isinstance(result, CodeResult)
        return result

    async def aclose(self) -> None:
        self.closed += 1


@tool
async def double(x: int) -> int:
    """Twice x."""
    return 2 * x


def agent_with(executor: Any, script: list[Any], **options: Any) -> tuple[Agent, FakeModelClient]:
    model = FakeModelClient(script)
    agent = Agents.codeact(model, tools=[double], codeact=CodeActOptions(executor=executor, **options))
    return agent, model


def test_the_fake_executor_is_a_code_executor() -> None:
    assert isinstance(FakeExecutor(), CodeExecutor)


async def test_a_factory_executor_is_made_per_run_given_the_tools_and_limits_and_closed_at_the_end() -> None:
    made: list[FakeExecutor] = []

    def factory() -> FakeExecutor:
        made.append(FakeExecutor(CodeResult(ok=True, value=1)))
        return made[-1]

    limits = ExecutionLimits(wall_time=3)
    agent, _ = agent_with(factory, [reply(code("1")), reply(code("1"))], limits=limits)
    first = await agent.run("one")
    second = await agent.run("two")
    assert (first.output_text, second.output_text) == ("1", "1")
    assert [m.closed for m in made] == [1, 1]
    assert made[0].seen == [("1", ("double",), limits)]


async def test_an_executor_instance_is_shared_by_runs_and_left_open_for_its_owner() -> None:
    shared = FakeExecutor(CodeResult(ok=True, value="a"), CodeResult(ok=True, value="b"))
    agent, _ = agent_with(shared, [reply(code("x")), reply(code("y"))])
    assert [(await agent.run("go")).output_text for _ in range(2)] == ["a", "b"]
    assert shared.closed == 0


async def test_a_run_without_code_makes_no_sandbox_process() -> None:
    made: list[ProcessSandbox] = []

    def factory() -> ProcessSandbox:
        made.append(ProcessSandbox())
        return made[-1]

    agent, _ = agent_with(factory, [reply(final("hi"))])
    assert (await agent.run("hi")).output_text == "hi"
    assert made[0].pids == ()
    assert made[0].isolation is None  # never started


async def test_tool_calls_from_the_executor_run_through_the_run_s_tool_executor() -> None:
    async def step(tools: ToolInvoker) -> CodeResult:
        ok = await tools("double", {"x": 21})
        bad = await tools("double", {"x": "many"})
        missing = await tools("triple", {})
        return CodeResult(ok=True, value=[ok.value, bad.error_type, missing.error_type])

    agent, _ = agent_with(FakeExecutor(step), [reply(code("..."))])
    failed: list[ToolFailed] = []
    agent.on(ToolFailed, failed.append)
    result = await agent.run("go")
    assert result.output_text == '[42,"invalid_arguments","unknown_tool"]'
    assert [c.id for c in result.tool_calls] == ["code_0_0", "code_0_1", "code_0_2"]
    assert [r.call_id for r in result.tool_results] == ["code_0_0", "code_0_1", "code_0_2"]
    assert len(failed) == 2


async def test_the_run_s_tool_timeout_and_concurrency_limit_hold_for_calls_from_code() -> None:
    active = most = 0

    @tool
    async def slow(n: int) -> int:
        """Yields a few times, counting the calls running at once."""
        nonlocal active, most
        active += 1
        most = max(most, active)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        active -= 1
        return n

    @tool(timeout=0.01)
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "never"

    async def step(tools: ToolInvoker) -> CodeResult:
        results: list[ToolResult] = []
        async with anyio.create_task_group() as group:  # as parallel() / map_tool() make the host do

            async def call(name: str, args: dict[str, Any]) -> None:
                results.append(await tools(name, args))

            for n in range(4):
                group.start_soon(call, "slow", {"n": n})
            group.start_soon(call, "hang", {})
        return CodeResult(ok=True, value=sorted((r.name, r.ok, r.error_type or "") for r in results))

    model = FakeModelClient([reply(code("..."))])
    agent = Agents.codeact(
        model,
        tools=[slow, hang],
        codeact=CodeActOptions(executor=FakeExecutor(step)),
        options=AgentOptions(max_tool_concurrency=2),
    )
    result = await agent.run("go")
    assert orjson.loads(result.output_text) == [["hang", False, "timeout"]] + [["slow", True, ""]] * 4
    assert most == 2
    [timed_out] = [r for r in result.tool_results if not r.ok]
    assert timed_out.output.startswith('TOOL_ERROR: {"errorType":"timeout"')


async def test_tool_results_are_recorded_in_call_order_whatever_order_they_finish_in() -> None:
    gate = anyio.Event()

    @tool
    async def slow() -> str:
        """Waits for the gate."""
        await gate.wait()
        return "slow"

    @tool
    async def fast() -> str:
        """Opens the gate."""
        gate.set()
        return "fast"

    async def step(tools: ToolInvoker) -> CodeResult:
        results: list[ToolResult] = []
        async with anyio.create_task_group() as group:

            async def call(name: str) -> None:
                results.append(await tools(name, {}))

            group.start_soon(call, "slow")
            await anyio.lowlevel.checkpoint()
            group.start_soon(call, "fast")
        return CodeResult(ok=True, value=[r.output for r in results])

    model = FakeModelClient([reply(code("..."))])
    agent = Agents.codeact(model, tools=[slow, fast], codeact=CodeActOptions(executor=FakeExecutor(step)))
    result = await agent.run("go")
    assert result.output_text == '["fast","slow"]'  # completion order inside the code …
    assert [(c.name, r.output) for c, r in zip(result.tool_calls, result.tool_results, strict=True)] == [
        ("slow", "slow"),
        ("fast", "fast"),
    ]  # … call order on the result


async def test_an_executor_that_raises_fails_the_run_with_memory_valid_and_the_executor_closed() -> None:
    executor = FakeExecutor(RuntimeError("the container is gone"))
    memory = InMemoryMemory()
    model = FakeModelClient([reply(code("1"))])
    agent = Agent(
        model,
        runtime=CodeActRuntime(CodeActOptions(executor=lambda: executor)),
        tools=[double],
        memory=memory,
    )
    failures: list[RunFailed] = []
    agent.on(RunFailed, failures.append)
    with pytest.raises(RuntimeError, match="the container is gone"):
        await agent.run("go")
    assert executor.closed == 1
    assert [f.error_type for f in failures] == ["RuntimeError"]
    assert system_texts(memory.items) == [
        'CODE_ERROR: {"error":"the run failed before this code step finished"}'
    ]
    assert_codeact_memory_valid(memory.items)


async def test_a_factory_returning_something_else_fails_the_run_clearly() -> None:
    agent, _ = agent_with(lambda: "not an executor", [reply(final("x"))])
    with pytest.raises(TypeError, match="factory returned str, not a CodeExecutor"):
        await agent.run("go")


async def test_native_tool_calls_are_answered_without_running_and_the_model_goes_on() -> None:
    executor = FakeExecutor()
    agent, model = agent_with(executor, [reply(tool_calls=[("c1", "double", {"x": 1})]), reply(final("ok"))])
    result = await agent.run("go")
    assert result.output_text == "ok"
    assert executor.seen == []
    [refused] = result.tool_results
    assert (refused.ok, refused.error_type) == (False, "cancelled")
    assert "call the tools from Python code" in refused.output
    assert model.prompts[1].items[-1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": refused.output,
    }


async def test_the_prompt_sends_no_tools_and_puts_the_guide_in_the_system_prompt() -> None:
    for react, note in ((False, REACT_OFF_NOTE), (True, REACT_ON_NOTE)):
        model = FakeModelClient([reply(final("x"))])
        executor = FakeExecutor(persistent=False)
        agent = Agents.codeact(
            model,
            tools=[double],
            system_prompt="Be brief.",
            codeact=CodeActOptions(react=react, executor=executor),
        )
        await agent.run("go")
        [prompt] = model.prompts
        assert (prompt.tools, prompt.tool_choice, prompt.parallel_tool_calls) == ((), None, None)
        assert prompt.system_prompt is not None
        assert prompt.system_prompt.startswith(f"Be brief.\n\n{CODEACT_INSTRUCTIONS}\n\nTools you can call")
        assert "- double(x)\n  Twice x.\n  x: int, required" in prompt.system_prompt
        assert (
            "Every code step starts in a fresh interpreter" in prompt.system_prompt
        )  # read from the executor
        assert prompt.system_prompt.endswith(note)


async def test_a_code_executed_event_carries_the_step() -> None:
    result = CodeResult(
        ok=False, stdout="so far", stderr="warn", error="boom", error_type=CodeErrorType.TIMEOUT, duration=0.5
    )
    agent, _ = agent_with(FakeExecutor(result), [reply(code("x")), reply(final("done"))])
    events: list[CodeExecuted] = []
    agent.on(CodeExecuted, events.append)
    await agent.run("go")
    [event] = events
    assert (event.code, event.ok, event.stdout, event.stderr, event.error, event.duration) == (
        "x",
        False,
        "so far",
        "warn",
        "boom",
        0.5,
    )
    assert event.error_type == "timeout"
    assert event.to_dict()["error_type"] == "timeout"


async def test_the_model_sees_a_long_value_cut_while_the_answer_and_the_event_keep_all_of_it() -> None:
    value = "x" * 50
    agent, _ = agent_with(
        FakeExecutor(CodeResult(ok=True, value=value)), [reply(code("v"))], max_result_chars=8
    )
    events: list[CodeExecuted] = []
    agent.on(CodeExecuted, events.append)
    result = await agent.run("go")
    assert result.output_text == value
    assert events[0].result == value
    assert system_texts(result.new_items) == [
        'CODE_RESULT: {"result":"xxxxxxxx [... result truncated: 42 more characters not shown; keep big '
        'values in variables and return only the part you need to see ...]"}'
    ]
    assert CodeActOptions().max_result_chars == 16_000


async def test_the_prompt_says_what_a_process_sandbox_allows() -> None:
    for sandbox, sentences in (
        (ProcessSandbox(), ("The code has no network access.", "Only the Python standard library")),
        (
            ProcessSandbox(network=True, site_packages=True, persistent=False),
            ("The code has network access.", "Installed packages can be imported.", "fresh interpreter"),
        ),
    ):
        model = FakeModelClient([reply(final("x"))])
        agent = Agents.codeact(model, tools=[double], codeact=CodeActOptions(executor=sandbox))
        await agent.run("go")
        system = model.prompts[0].system_prompt
        assert system is not None
        assert all(sentence in system for sentence in sentences), system
        assert sandbox.pids == ()  # describing it did not start it


async def test_the_prompt_names_the_sandbox_s_python_when_it_is_known_before_it_starts() -> None:
    here = f"The code runs on Python {sys.version_info.major}.{sys.version_info.minor}:"
    for sandbox, named in ((ProcessSandbox(), True), (ProcessSandbox(python=sys.executable), False)):
        model = FakeModelClient([reply(final("x"))])
        await Agents.codeact(model, codeact=CodeActOptions(executor=sandbox)).run("go")
        system = model.prompts[0].system_prompt or ""
        assert (here in system) is named
        assert ("The code runs on Python" in system) is named  # another interpreter: no version at all


def test_agents_codeact_and_the_runtime_name_build_the_runtime() -> None:
    model = FakeModelClient([])
    options = CodeActOptions(react=True, correct_format=True)
    agent = Agents.codeact(model, codeact=options)
    assert isinstance(agent.runtime, CodeActRuntime)
    assert agent.runtime.options is options
    assert agent.name == "codeact"
    assert isinstance(resolve_runtime("codeact"), CodeActRuntime)
    assert repr(Agent(model, runtime="codeact").runtime) == "CodeActRuntime()"
    with pytest.raises(TypeError, match="sets the runtime itself"):
        Agents.codeact(model, runtime="react")


def test_options_are_checked_when_built() -> None:
    with pytest.raises(TypeError, match=r"CodeActOptions\.executor must be a CodeExecutor"):
        CodeActOptions(executor=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        CodeActOptions(limits=30)  # type: ignore[arg-type]
    for bad in (0, True, 2.5):
        with pytest.raises(ValueError, match=r"max_result_chars must be an int >= 1 or None"):
            CodeActOptions(max_result_chars=bad)  # type: ignore[arg-type]
    assert CodeActOptions(max_result_chars=None).max_result_chars is None
    with pytest.raises(TypeError, match="options must be a CodeActOptions"):
        CodeActRuntime(True)  # type: ignore[arg-type]


async def test_a_tool_call_still_running_when_the_step_ends_gets_a_cancelled_result() -> None:
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Waits forever."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    async def step(tools: ToolInvoker) -> CodeResult:
        async with anyio.create_task_group() as group:  # as the sandbox does at its wall time
            group.start_soon(tools, "hang", {})
            await started.wait()
            group.cancel_scope.cancel()
        return CodeResult(ok=False, error="TimeoutError: too slow", error_type=CodeErrorType.TIMEOUT)

    model = FakeModelClient([reply(code("hang()")), reply(final("gave up"))])
    agent = Agents.codeact(model, tools=[hang], codeact=CodeActOptions(executor=FakeExecutor(step)))
    failed: list[ToolFailed] = []
    agent.on(ToolFailed, failed.append)
    result = await agent.run("go")
    assert result.output_text == "gave up"
    [cancelled] = result.tool_results
    assert (cancelled.ok, cancelled.error_type) == (False, "cancelled")
    assert cancelled.error == "the code step ended (timeout) before this tool call finished"
    assert [f.result for f in failed] == [cancelled]
    assert system_texts(result.new_items) == ['CODE_ERROR: {"error":"TimeoutError: too slow"}']


async def test_an_executor_class_is_a_factory() -> None:
    model = FakeModelClient([reply(code("6 * 7"))])
    agent = Agents.codeact(model, codeact=CodeActOptions(executor=ProcessSandbox))
    assert (await agent.run("go")).output_text == "42"

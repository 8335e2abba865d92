"""``@tool(enabled=...)`` in the runtimes with a loop of their own: CodeAct and the planners.

CodeAct's prompt lists, step by step, the tools that step offers (its text rebuilt only when they change),
and its code's calls to a tool left out are an unknown tool's ``TOOL_ERROR``; a planner (DeepResearch's,
CodeAct's) is told only the tools the step its plan comes before offers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import orjson
import pytest

from agentflow import Agent, PromptContext, ToolAvailabilityError, tool
from agentflow.plan import Plan
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_prompt import tools_guide
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.runtimes.planner import PlanContext, Planner
from agentflow.sandbox import CodeResult, ExecutionLimits, ToolInvoker
from agentflow.testing.fake import FakeModelClient, reply

Step = Callable[[ToolInvoker], Awaitable[CodeResult]]


@attrs.frozen
class User:
    name: str
    admin: bool = False


@tool(enabled=lambda run: run.deps.admin)
def delete_user(user_id: str) -> str:
    """Delete a user's account."""
    return f"deleted {user_id}"


@tool
def whoami() -> str:
    """The current user."""
    return "someone"


def _first_step_only(run: PromptContext[Any]) -> bool:
    return run.step == 0


def _after_the_first_step(run: PromptContext[Any]) -> bool:
    return run.step > 0


def code(source: str) -> str:
    """A CodeAct answer that runs ``source``."""
    return orjson.dumps({"type": "code", "language": "python", "code": source}).decode()


def final(output: str) -> str:
    """A CodeAct answer that ends the run with ``output``."""
    return orjson.dumps({"type": "final", "output": output}).decode()


class StepExecutor:
    """A ``CodeExecutor`` running no code: each step is ``steps``' next function of the invoker (a plain
    ``ok`` result once they run out); it records the tool names each step was given."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.names: list[tuple[str, ...]] = []

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        self.names.append(tuple(tool_names))
        if self.steps:
            return await self.steps.pop(0)(tools)
        return CodeResult(ok=True, value="ok")

    async def aclose(self) -> None:
        pass


def codeact_agent(model: FakeModelClient, executor: StepExecutor, tools: Sequence[Any], **kw: Any) -> Agent:
    options = CodeActOptions(executor=executor, react=True)
    return Agent(model, runtime=CodeActRuntime(options, **kw), tools=tools)


def listed(model: FakeModelClient) -> list[list[str]]:
    """The tools each CodeAct prompt lists (of ``whoami``, ``search`` and ``delete_user``)."""
    lists = []
    for prompt in model.prompts:
        system = str(prompt.system_prompt)
        lists.append([name for name in ("whoami", "search", "delete_user") if f"- {name}(" in system])
    return lists


# --- CodeAct ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enabled", "expected"),
    [
        (_first_step_only, [["whoami", "search"], ["whoami"], ["whoami"]]),
        (_after_the_first_step, [["whoami"], ["whoami", "search"], ["whoami", "search"]]),
    ],
)
async def test_codeact_s_prompt_lists_the_tools_of_each_step(
    enabled: Callable[[PromptContext[Any]], bool], expected: list[list[str]]
) -> None:
    @tool(enabled=enabled)
    def search(q: str) -> str:
        """Search."""
        return "found"

    model = FakeModelClient([reply(code("1")), reply(code("2")), reply(final("done"))])
    executor = StepExecutor()
    result = await codeact_agent(model, executor, [whoami, search]).run("hi")
    assert result.output_text == "done"
    assert listed(model) == expected
    assert [list(names) for names in executor.names] == expected[:2]


async def test_a_call_from_code_to_a_tool_left_out_is_an_unknown_tool_s_error() -> None:
    async def first(tools: ToolInvoker) -> CodeResult:
        found = await tools("search", {"q": "x"})
        return CodeResult(ok=True, value=found.output)

    async def second(tools: ToolInvoker) -> CodeResult:
        refused = await tools("search", {"q": "x"})
        return CodeResult(ok=True, value=refused.error_type)

    @tool(enabled=_first_step_only)
    def search(q: str) -> str:
        """Search."""
        return "found"

    model = FakeModelClient([reply(code("search('x')")), reply(code("search('x')")), reply(final("done"))])
    result = await codeact_agent(model, StepExecutor(first, second), [whoami, search]).run("hi")
    assert [r.error_type for r in result.tool_results] == [None, "unknown_tool"]
    assert result.tool_results[0].output == "found"


async def test_codeact_s_tools_text_is_built_once_per_set_of_tools_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[tuple[str, ...]] = []

    def counting(tools: Any, api_text: str, **kw: Any) -> str:
        built.append(tuple(t.name for t in tools))
        return tools_guide(tools, api_text, **kw)

    monkeypatch.setattr("agentflow.runtimes.codeact.tools_guide", counting)

    @tool(enabled=lambda run: run.step % 2 == 0)
    def search(q: str) -> str:
        """Search."""
        return "found"

    script = [reply(code(str(n))) for n in range(4)]
    model = FakeModelClient([*script, reply(final("done"))])
    await codeact_agent(model, StepExecutor(), [whoami, search]).run("hi")
    assert built == [("whoami", "search"), ("whoami",)]
    assert listed(model) == [["whoami", "search"], ["whoami"]] * 2 + [["whoami", "search"]]

    built.clear()
    always = FakeModelClient([reply(code("1")), reply(code("2")), reply(final("done"))])
    await codeact_agent(always, StepExecutor(), [whoami, delete_user]).run("hi", deps=User("ada", admin=True))
    assert built == [("whoami", "delete_user")]


# --- planners -----------------------------------------------------------------------------------------------


class RecordingPlanner(Planner):
    """A planner that plans the goal as its one step and records the tools each planning was told of."""

    def __init__(self) -> None:
        self.told: list[list[str]] = []

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        assert context is not None
        self.told.append([spec.name for spec in context.tools])
        return Plan(goal, (goal,)) if context.current is None else context.current


@pytest.mark.parametrize("admin", [False, True])
async def test_deep_research_s_planner_is_told_only_the_tools_offered(admin: bool) -> None:
    planner = RecordingPlanner()
    model = FakeModelClient([reply("ok")])
    agent = Agent(model, runtime=DeepResearchRuntime(planner), tools=[whoami, delete_user])
    await agent.run("hi", deps=User("ada", admin=admin))
    expected = ["whoami", "delete_user"] if admin else ["whoami"]
    assert planner.told == [expected]
    assert [[t.name for t in prompt.tools] for prompt in model.prompts] == [expected]


async def test_a_re_plan_is_told_the_tools_of_the_step_it_comes_before() -> None:
    asked: list[int] = []

    def first_step_only(run: PromptContext[Any]) -> bool:
        asked.append(run.step)
        return run.step == 0

    @tool(enabled=first_step_only)
    def search(q: str) -> str:
        """Search."""
        return "found"

    planner = RecordingPlanner()
    model = FakeModelClient([reply(tool_calls=[("search", {"q": "x"})]), reply("done")])
    agent = Agent(model, runtime=DeepResearchRuntime(planner, replan_every=1), tools=[whoami, search])
    result = await agent.run("hi")
    assert result.output_text == "done"
    assert planner.told == [["whoami", "search"], ["whoami"]]
    assert [[t.name for t in prompt.tools] for prompt in model.prompts] == planner.told
    # Asked once per step: for the plan, and the step keeps the answer.
    assert asked == [0, 1]


async def test_codeact_s_planner_is_told_only_the_tools_offered() -> None:
    planner = RecordingPlanner()
    model = FakeModelClient([reply(final("done"))])
    agent = codeact_agent(model, StepExecutor(), [whoami, delete_user], planner=planner)
    await agent.run("hi", deps=User("bob"))
    assert planner.told == [["whoami"]]
    assert listed(model) == [["whoami"]]


async def test_a_failing_enabled_function_fails_the_run_before_the_plan() -> None:
    planner = RecordingPlanner()
    guarded = tool(name="guarded", enabled=lambda run: run.deps["role"])(lambda: "x")
    agent = Agent(FakeModelClient([reply("never")]), runtime=DeepResearchRuntime(planner), tools=[guarded])
    with pytest.raises(ToolAvailabilityError, match="KeyError: 'role'") as caught:
        await agent.run("hi", deps={})
    assert caught.value.tool == "guarded"
    assert planner.told == []

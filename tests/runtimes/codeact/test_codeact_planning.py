"""Planning for CodeAct (smolagents' ``planning_interval``): with a planner the run plans after its input
(``PlanCreated`` before the first step, the plan in memory), re-plans every N steps told the code it ran and
what came of it (``PlanUpdated``), through the ``on_plan`` hook, with the planning calls counted; without one
nothing of it runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import pytest
from codeact_support import (
    Boxes,
    Recorder,
    assert_codeact_memory_valid,
    code,
    codeact_agent,
    final,
    get_price,
    item_text,
    says,
)

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.events import (
    CodeExecuted,
    ModelRequest,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunStarted,
    StepFinished,
    StepStarted,
)
from agentflow.model.events import Event, ModelCompleted, UsageReported
from agentflow.model.request import ChatRequest
from agentflow.model.response import ChatResponse, TokenUsage
from agentflow.plan import Plan, PlanStep, StepStatus
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.context import RunContext
from agentflow.runtimes.planner import (
    MAX_PLANNED_CODE_STEPS,
    AgentModelPlanner,
    CodeAction,
    ModelPlanner,
    PlanContext,
    Planner,
    SimplePlanner,
    planning_input,
)
from agentflow.runtimes.planning import Planning, planner_for
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply

REACT = CodeActOptions(react=True)
PRICES = 'p = get_price("apple")\nprint("apple costs", p)\np'
STOCK = 'print("stock", call_tool("stock-level", {"item": "apple"}))'


class ScriptedPlanner(Planner):
    """Answers each ``plan`` call with the next list of steps, and records what it was asked."""

    def __init__(self, plans: Iterable[Sequence[PlanStep | str]], usage: TokenUsage | None = None) -> None:
        self.plans = [list(p) for p in plans]
        self.usage = usage
        self.calls: list[PlanContext] = []

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        assert context is not None
        self.calls.append(context)
        return Plan(goal, tuple(self.plans.pop(0)), usage=self.usage)


def kinds(events: Sequence[Event]) -> list[type[Event]]:
    return [type(e) for e in events]


def roles_and_texts(items: Sequence[Any]) -> list[tuple[str, str]]:
    return [(i.get("role") or i.get("type"), item_text(i)) for i in items]


# --- no planner: nothing changes ----------------------------------------------------------------------------


async def test_without_a_planner_a_run_neither_plans_nor_says_so() -> None:
    runtime = CodeActRuntime(REACT)
    assert runtime.planning is None
    assert repr(runtime) == "CodeActRuntime(CodeActOptions(react=True, ...))"
    model = FakeModelClient([reply(final("done"))])
    agent = Agent(model, runtime=runtime)
    events: list[Event] = []
    agent.on(None, events.append)
    result = await agent.run("goal")
    assert result.output_text == "done"
    assert not [e for e in events if isinstance(e, PlanCreated | PlanUpdated)]
    assert [role for role, _ in roles_and_texts(model.prompts[0].items)] == ["user"]


def test_replan_every_alone_plans_with_the_agent_s_own_model() -> None:
    planning = CodeActRuntime(replan_every=3).planning
    assert planning is not None
    assert isinstance(planning.planner, AgentModelPlanner)
    assert planning.replan_every == 3


def test_planning_options_without_a_planner_are_refused() -> None:
    with pytest.raises(TypeError, match="on_plan and plan_role need a planner"):
        CodeActRuntime(on_plan=lambda plan: None, plan_role="user")
    with pytest.raises(ValueError, match="replan_every must be a positive integer"):
        CodeActRuntime(planner=Planner.simple(), replan_every=0)
    with pytest.raises(TypeError, match="planner must be a Planner"):
        CodeActRuntime(planner="model")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_plan must be callable"):
        CodeActRuntime(planner=Planner.simple(), on_plan="edit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="plan_role must be 'system', 'user' or 'developer'"):
        CodeActRuntime(planner=Planner.simple(), plan_role="assistant")  # type: ignore[arg-type]


def test_the_runtime_says_how_it_plans() -> None:
    runtime = CodeActRuntime(REACT, planner=Planner.simple(), replan_every=2)
    assert isinstance(runtime.planning, Planning)
    assert repr(runtime) == (
        "CodeActRuntime(CodeActOptions(react=True, ...), planner=SimplePlanner(), replan_every=2)"
    )
    user = CodeActRuntime(CodeActOptions(observation_role="user"), planner=Planner.simple())
    assert user.planning is not None
    assert user.planning.plan_role == "user"  # follows observation_role unless given
    assert "plan_role" not in repr(user)
    developer = CodeActRuntime(planner=Planner.simple(), plan_role="developer")
    assert (
        repr(developer) == "CodeActRuntime(planner=SimplePlanner(), replan_every=None, plan_role='developer')"
    )


# --- the first plan -----------------------------------------------------------------------------------------


async def test_a_model_planned_run_plans_before_its_first_step_and_counts_the_planning_call() -> None:
    turns = [
        Reply(text='{"steps": ["Find the apple price", "Answer"]}', usage=(40, 10)),  # the planner
        says(code(PRICES), usage=(60, 20)),
        says(final("An apple costs 0.5 euros."), usage=(90, 15)),
    ]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        runtime = CodeActRuntime(REACT, planner=ModelPlanner(model))
        agent = Agent(model, runtime=runtime, tools=[get_price])
        recorder = Recorder(agent)
        async with agent:
            with anyio.fail_after(20):
                result = await agent.run("How much is an apple?")
        planning_request, first_step, _ = (r.body for r in server.requests)

    names = kinds(recorder.events)
    assert names[: names.index(StepStarted) + 1] == [
        RunStarted,
        ModelRequest,
        UsageReported,
        ModelCompleted,
        PlanCreated,
        StepStarted,
    ]
    assert recorder.of(ModelRequest)[0].purpose == "plan"
    (created,) = recorder.of(PlanCreated)
    assert created.plan.texts == ("Find the apple price", "Answer")
    assert created.plan.usage == TokenUsage(40, 10, 50)
    assert result.usage.total_tokens == 50 + 80 + 105  # the planning call counted, once
    assert result.output_text == "An apple costs 0.5 euros."

    assert "tools" not in planning_request
    # The first step's prompt: the system prompt, the input, then the plan, as a system message.
    messages = first_step["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "system"]
    assert messages[2]["content"] == "Plan:\n1. Find the apple price\n2. Answer\n"
    assert roles_and_texts(result.new_items)[:2] == [
        ("user", "How much is an apple?"),
        ("system", "Plan:\n1. Find the apple price\n2. Answer\n"),
    ]
    assert_codeact_memory_valid(result.new_items)


@pytest.mark.parametrize(
    ("options", "plan_role", "expected"),
    [
        (CodeActOptions(), None, "system"),
        (CodeActOptions(observation_role="user"), None, "user"),
        (CodeActOptions(observation_role="user"), "developer", "developer"),
    ],
)
async def test_the_plan_message_takes_the_plan_role_or_else_the_observation_role(
    options: CodeActOptions, plan_role: Any, expected: str
) -> None:
    model = FakeModelClient([reply(final("ok"))])
    runtime = CodeActRuntime(options, planner=ScriptedPlanner([["a", "b"]]), plan_role=plan_role)
    await Agent(model, runtime=runtime).run("goal")
    assert roles_and_texts(model.prompts[0].items) == [("user", "goal"), (expected, "Plan:\n1. a\n2. b\n")]


async def test_the_on_plan_hook_edits_the_plan_the_model_sees() -> None:
    seen: list[int] = []

    async def cite(plan: Plan) -> Plan:
        seen.append(plan.revision)
        return Plan(plan.goal, (*plan.steps, PlanStep("Cite every price")))

    model = FakeModelClient([reply(final("ok"))])
    runtime = CodeActRuntime(planner=Planner.simple(), on_plan=cite)
    agent = Agent(model, runtime=runtime)
    events: list[Event] = []
    agent.on(PlanCreated, events.append)
    await agent.run("Price the fruit")
    assert seen == [0]
    (created,) = events
    assert isinstance(created, PlanCreated)
    assert created.plan.texts == ("Price the fruit", "Cite every price")
    assert item_text(model.prompts[0].items[1]) == "Plan:\n1. Price the fruit\n2. Cite every price\n"


async def test_a_plan_that_uses_up_the_token_budget_stops_the_run_before_any_code() -> None:
    boxes = Boxes()
    model = FakeModelClient([reply(code("print(1)"))])
    runtime = CodeActRuntime(
        CodeActOptions(executor=boxes), planner=ScriptedPlanner([["a"]], usage=TokenUsage(100, 10, 110))
    )
    agent = Agent(model, runtime=runtime, options=AgentOptions(max_tokens=100))
    result = await agent.run("goal")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert model.prompts == []
    assert boxes.made == []
    assert result.usage.total_tokens == 110


# --- re-planning --------------------------------------------------------------------------------------------


async def test_re_planning_every_n_steps_tells_the_planner_the_code_and_its_outcomes() -> None:
    planner = ScriptedPlanner(
        [
            ["Find the apple price", "Find the apple stock", "Answer"],
            [PlanStep("Find the apple price", "done"), PlanStep("Find the apple stock", "done"), "Answer"],
        ],
        usage=TokenUsage(30, 5, 35),
    )
    turns = [says(code(PRICES)), says(code(STOCK)), says(final("5 euros of apples."))]
    planning = {"planner": planner, "replan_every": 2}
    async with codeact_agent(turns, codeact=REACT, planning=planning) as (agent, server):
        recorder = Recorder(agent)
        with anyio.fail_after(30):
            result = await agent.run("What are our apples worth?")
        last_request = server.requests[-1].body

    assert result.output_text == "5 euros of apples."
    assert result.usage.total_tokens == 3 * 15 + 2 * 35  # the steps, and both plans
    (updated,) = recorder.of(PlanUpdated)  # after step 2; step 3 is the answer
    assert updated.plan.revision == 1
    assert [s.status for s in updated.plan.steps] == [StepStatus.DONE, StepStatus.DONE, StepStatus.PENDING]
    names = kinds(recorder.events)
    at = names.index(PlanUpdated)
    assert names[at - 1 : at + 2] == [StepFinished, PlanUpdated, StepStarted]
    assert updated.step == 1

    first, again = planner.calls
    assert first.code_actions == ()
    assert first.current is None
    assert again.current is not None
    assert again.steps_run == 2
    assert again.code_actions is not None
    assert [(a.step, a.code) for a in again.code_actions] == [(0, PRICES), (1, STOCK)]
    assert again.code_actions[0].outcome == 'CODE_RESULT: {"result":0.5,"stdout":"apple costs 0.5\\n"}'
    assert again.code_actions[1].outcome.startswith('CODE_RESULT: {"result":null,"stdout":"stock 10')
    assert again.code_actions_seen == 0
    assert [c.name for c in again.tool_calls] == ["get_price", "stock-level"]  # made from the code

    # The revised plan reaches the model after the second code step's outcome, in the plan's role.
    *_, outcome, revised = last_request["messages"]
    assert outcome["content"].startswith("CODE_RESULT: ")
    assert (revised["role"], revised["content"]) == (
        "system",
        "Updated plan:\n1. Find the apple price (done)\n2. Find the apple stock (done)\n3. Answer\n",
    )
    assert_codeact_memory_valid(result.new_items)


async def test_a_model_re_plan_is_shown_the_code_since_the_last_plan() -> None:
    planner_model = FakeChatModel(
        [
            chat_reply('["Price", "Stock", "Answer"]'),
            chat_reply('["Price (done)", "Stock", "Answer"]'),
            chat_reply('["Price (done)", "Stock (done)", "Answer"]'),
        ]
    )
    turns = [says(code(PRICES)), says(code(STOCK)), says(final("done"))]
    planning = {"planner": ModelPlanner(planner_model), "replan_every": 1}
    async with codeact_agent(turns, codeact=REACT, planning=planning) as (agent, _):
        with anyio.fail_after(30):
            await agent.run("What are our apples worth?")

    _, after_first, after_second = (str(request.messages[-1].text) for request in planner_model.requests)
    assert (
        "Progress so far (1 steps run):\nCode run since the current plan:\n- step 1:\n"
        '    p = get_price("apple")\n    print("apple costs", p)\n    p\n'
        '  CODE_RESULT: {"result":0.5,"stdout":"apple costs 0.5\\n"}\n'
        'Tool calls made from the code:\n- get_price({"item":"apple"}) -> 0.5'
    ) in after_first
    # The second re-plan is told of the second step only: the first was known to the plan it revises.
    assert "get_price" not in after_second.split("Progress so far")[1]
    assert (
        "Code run since the current plan:\n- (1 earlier code steps not shown)\n- step 2:\n"
        '    print("stock", call_tool("stock-level", {"item": "apple"}))\n'
    ) in after_second
    assert "Current plan:\n1. Price (done)\n2. Stock\n3. Answer" in after_second


async def test_a_step_whose_code_was_not_run_is_shown_with_why() -> None:
    planner = ScriptedPlanner([["a"], ["a"]])
    model = FakeModelClient([reply(code("print(1)", language="bash")), reply(final("ok"))])
    runtime = CodeActRuntime(planner=planner, replan_every=1)
    await Agent(model, runtime=runtime).run("goal")
    (action,) = planner.calls[1].code_actions or ()
    assert action.code == "print(1)"
    assert action.outcome.startswith("CODE_ERROR: ")
    assert "bash" in action.outcome


async def test_no_re_plan_once_the_run_ends() -> None:
    planner = ScriptedPlanner([["a"]])
    model = FakeModelClient([reply(code("1 + 1"))])
    runtime = CodeActRuntime(CodeActOptions(executor=Boxes()), planner=planner, replan_every=1)
    agent = Agent(model, runtime=runtime)
    events: list[Event] = []
    agent.on(None, events.append)
    with anyio.fail_after(20):
        result = await agent.run("goal")
    assert result.output_text == "2"  # react=False: the step's value ends the run
    assert len(planner.calls) == 1
    assert not [e for e in events if isinstance(e, PlanUpdated)]
    assert [e for e in events if isinstance(e, CodeExecuted)]


async def test_concurrent_runs_of_one_runtime_keep_their_plans_and_code_apart() -> None:
    class EchoPlanner(Planner):
        def __init__(self) -> None:
            self.seen: dict[str, list[str]] = {}

        async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
            assert context is not None
            self.seen.setdefault(goal, []).extend(a.code for a in context.code_actions or ())
            return Plan(goal, (f"{goal}, revision {0 if context.current is None else 1}",))

    class Watched(CodeActRuntime):
        """Reads each run's plan after every step (``plan_of``)."""

        def __init__(self) -> None:
            super().__init__(REACT, planner=planner, replan_every=1)
            self.plans: dict[str, list[tuple[str, ...]]] = {}

        async def run_step(self, ctx: RunContext, *, final: bool = False) -> StopReason | None:
            stop = await super().run_step(ctx, final=final)
            plan = self.plan_of(ctx)
            assert plan is not None
            self.plans.setdefault(ctx.input_text, []).append(plan.texts)
            return stop

    planner = EchoPlanner()
    runtime = Watched()

    async def one(goal: str) -> None:
        model = FakeModelClient([reply(code(f"print({goal!r})")), reply(final(goal))])
        await Agent(model, runtime=runtime).run(goal)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one, "A")
            tasks.start_soon(one, "B")
    assert planner.seen == {"A": ["print('A')"], "B": ["print('B')"]}
    assert runtime.plans == {
        "A": [("A, revision 1",), ("A, revision 1",)],
        "B": [("B, revision 1",), ("B, revision 1",)],
    }


# --- what a re-plan is shown, bounded -----------------------------------------------------------------------


def code_context(
    actions: int, seen: int, *, code_text: str = "x = 1", outcome: str = "CODE_RESULT: {}"
) -> str:
    steps = tuple(CodeAction(i, code_text, outcome) for i in range(actions))
    context = PlanContext(
        current=Plan.of("goal", ["a"]), steps_run=actions, code_actions=steps, code_actions_seen=seen
    )
    return planning_input("goal", context)


def test_a_re_plan_shows_at_most_the_latest_code_steps_and_counts_the_others() -> None:
    text = code_context(MAX_PLANNED_CODE_STEPS + 4, seen=1)
    assert "- (4 earlier code steps not shown)\n- step 5:" in text
    assert text.count("    x = 1") == MAX_PLANNED_CODE_STEPS
    assert "- no tool calls yet" in text


def test_a_re_plan_without_code_since_the_plan_says_so() -> None:
    assert "Code run since the current plan:\n- no code run yet\n" in code_context(0, seen=0)
    assert "- (2 earlier code steps not shown)\n- no code run since the current plan" in code_context(
        2, seen=2
    )


def test_long_code_and_outcomes_are_cut_keeping_the_error_at_the_end() -> None:
    long_code = "\n".join(f"line_{i} = {i}" for i in range(400))
    traceback = (
        'CODE_ERROR: {"error":"Traceback (most recent call last):' + " frame" * 500 + ' ZeroDivisionError"}'
    )
    text = code_context(1, seen=0, code_text=long_code, outcome=traceback)
    assert "    line_0 = 0" in text
    assert "line_399" not in text
    assert "more characters]" in text
    assert "characters cut]" in text
    assert text.rstrip().endswith("- no tool calls yet")
    assert 'ZeroDivisionError"}' in text  # the end of an outcome is where the error is
    assert len(text) < 3000


def test_code_holding_a_fence_cannot_break_the_request() -> None:
    text = code_context(1, seen=0, code_text='s = """\n```\nnot the end\n```\n"""')
    assert "    ```\n    not the end\n    ```" in text


# --- a session: each run plans, told what was said ----------------------------------------------------------


async def test_a_follow_up_is_planned_knowing_the_answers_not_the_code() -> None:
    planner_model = FakeChatModel([chat_reply('["Price apples"]'), chat_reply('["Price pears"]')])
    model = FakeModelClient(
        [reply(code("print(0.5)")), reply(final("Apples cost 0.5 euros.")), reply(final("Pears cost 0.75."))]
    )
    runtime = CodeActRuntime(REACT, planner=ModelPlanner(planner_model))
    session = Agent(model, runtime=runtime).session(InMemoryMemory())
    with anyio.fail_after(20):
        await session.run("How much are apples?")
        await session.run("And pears?")
    second = str(planner_model.requests[1].messages[-1].text)
    assert second.startswith(
        "Conversation so far:\n- user: How much are apples?\n- assistant: Apples cost 0.5 euros.\n\n"
        "Goal: And pears?"
    )


# --- cancellation -------------------------------------------------------------------------------------------


async def test_cancelling_during_the_planning_call_ends_the_run_with_one_run_cancelled() -> None:
    asked = anyio.Event()

    async def hang(request: ChatRequest) -> ChatResponse:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    boxes = Boxes()
    memory = InMemoryMemory()
    runtime = CodeActRuntime(CodeActOptions(executor=boxes), planner=ModelPlanner(FakeChatModel([hang])))
    agent = Agent(FakeModelClient([]), runtime=runtime, memory=memory)
    events: list[Event] = []
    with anyio.fail_after(10):
        async with agent.stream("goal") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ModelRequest):
                    await asked.wait()
                    await run.cancel()
    assert kinds(events) == [RunStarted, ModelRequest, RunCancelled]
    assert run.result.stop_reason is StopReason.CANCELLED
    assert run.result.usage == TokenUsage()
    assert [i.get("role") for i in memory.items] == ["user"]
    assert boxes.made == []  # no sandbox was started for a run that never reached a step


async def test_cancelling_during_a_re_plan_closes_the_sandbox_and_ends_once() -> None:
    replanning = anyio.Event()

    class StallingPlanner(Planner):
        async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
            if context is not None and context.current is not None:
                replanning.set()
                await anyio.sleep_forever()
            return Plan(goal, (goal,))

    boxes = Boxes()
    memory = InMemoryMemory()
    runtime = CodeActRuntime(
        CodeActOptions(react=True, executor=boxes), planner=StallingPlanner(), replan_every=1
    )
    agent = Agent(FakeModelClient([reply(code("print(1)"))]), runtime=runtime, memory=memory)
    events: list[Event] = []
    with anyio.fail_after(20):
        async with agent.stream("goal") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, StepFinished):
                    await replanning.wait()
                    await run.cancel()
    assert sum(isinstance(e, RunCancelled) for e in events) == 1
    assert isinstance(events[-1], RunCancelled)
    assert run.result.stop_reason is StopReason.CANCELLED
    (box,) = boxes.made
    assert box.pids == ()  # closed with the run
    assert_codeact_memory_valid(memory.items)


# --- the shortcuts' planner choice --------------------------------------------------------------------------


def test_planner_for_reads_a_shortcut_s_planner_choice() -> None:
    assert isinstance(planner_for("simple"), SimplePlanner)
    # "model": a planner holding no model, which plans with each run's own (see the agent-model tests)
    made = planner_for("model")
    assert isinstance(made, AgentModelPlanner)
    assert not hasattr(made, "model")
    mine = Planner.simple()
    assert planner_for(mine) is mine
    with pytest.raises(ValueError, match="planner must be 'simple', 'model' or a Planner"):
        planner_for("smart")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="planner must be a Planner"):
        planner_for(FakeChatModel([]))  # type: ignore[arg-type]


def test_agents_codeact_plans_with_the_agent_s_own_model_when_given_replan_every_alone() -> None:
    # Any model client: the planner finds the run's when it plans (a FakeModelClient in a test).
    for model in (FakeChatModel([]), FakeModelClient([])):
        agent = Agents.codeact(model, replan_every=3, settings=ModelSettings(model="gpt-4.1-mini"))
        runtime = agent.runtime
        assert isinstance(runtime, CodeActRuntime)
        assert runtime.planning is not None
        assert isinstance(runtime.planning.planner, AgentModelPlanner)
        assert runtime.planning.replan_every == 3


def test_agents_codeact_takes_the_planning_options_and_none_means_no_planning() -> None:
    hook = lambda plan: None  # noqa: E731
    agent = Agents.codeact(FakeModelClient([]), planner="simple", on_plan=hook, plan_role="user")
    runtime = agent.runtime
    assert isinstance(runtime, CodeActRuntime)
    assert runtime.planning is not None
    assert isinstance(runtime.planning.planner, SimplePlanner)
    assert (runtime.planning.on_plan, runtime.planning.plan_role) == (hook, "user")
    plain = Agents.codeact(FakeModelClient([])).runtime
    assert isinstance(plain, CodeActRuntime)
    assert plain.planning is None

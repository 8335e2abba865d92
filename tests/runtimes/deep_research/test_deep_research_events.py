"""The planner's model calls on the run's bus: each published as a step's call is (``ModelRequest`` …
``ModelCompleted``), outside the steps and before the plan it makes, counted once in the run's usage, and cut
by a cancel or a failure like any other model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import anyio
import pytest
from deep_research_support import collect, lookup, roles

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.prompt import AgentModelResult
from agentflow.agent.run import AgentRun
from agentflow.events import (
    ModelRequest,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import (
    Event,
    ModelCompleted,
    ModelRetry,
    ReasoningDelta,
    TextDelta,
    UsageReported,
)
from agentflow.model.request import ChatRequest
from agentflow.model.response import ChatResponse, TokenUsage
from agentflow.plan import Plan
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.runtimes.planner import ModelPlanner, PlanContext, Planner
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply

Protocol = Literal["chat", "responses"]

PLAN = '```json\n{"steps": ["Look up Paris", "Summarise"]}\n```'
REPLAN = (
    '{"steps": [{"step": "Look up Paris", "status": "done"}, {"step": "Summarise", "status": "in_progress"}]}'
)
SCRIPT = [
    Reply(text=PLAN, usage=(40, 12)),
    Reply(text="Looking it up.", tool_calls=[("lookup", {"topic": "Paris"})], usage=(60, 8)),
    Reply(text=REPLAN, usage=(70, 20)),
    Reply(text="## Summary\nParis is the capital of France.", usage=(90, 15)),
]
TOTAL = 52 + 68 + 90 + 105


def _kinds(events: Sequence[Event]) -> list[type[Event]]:
    """The event types, a run of deltas of one kind as one (a stream may split a part into many)."""
    kinds = [type(e) for e in events]
    return [k for i, k in enumerate(kinds) if i == 0 or k is not kinds[i - 1]]


def _between(events: Sequence[Event], first: type[Event], last: type[Event]) -> list[type[Event]]:
    """The types from the first ``first`` event to the first ``last`` event after it, both included."""
    kinds = _kinds(events)
    start = kinds.index(first)
    return kinds[start : kinds.index(last, start) + 1]


def _in_steps(events: Sequence[Event]) -> list[bool]:
    """For each event, whether it falls between a ``StepStarted`` and its ``StepFinished``."""
    inside, out = False, []
    for event in events:
        if isinstance(event, StepStarted):
            inside = True
        out.append(inside)
        if isinstance(event, StepFinished):
            inside = False
    return out


async def _stream_to_end(agent: Agent) -> tuple[list[Event], AgentRun]:
    """Stream a run of ``agent`` on "goal" to its end (whatever the end): its events and its handle."""
    async with agent.stream("goal") as run:
        events = [event async for event in run]
    return events, run


async def _run_over_http(protocol: Protocol, *, streamed: bool) -> tuple[list[Event], AgentResult]:
    """The SCRIPT run as a user forwarding every event would see it: ``agent.stream`` (streaming the agent's
    own calls) or ``agent.run`` with a callback (blocking calls)."""
    async with ScriptedServer(SCRIPT) as server:
        model_type = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        async with model_type(base_url=server.base_url, model="gpt-4o-mini") as model:
            agent = Agents.deep_research(model, planner=ModelPlanner(model), replan_every=1, tools=[lookup])
            if streamed:
                events, result = await collect(agent, "What is the capital of France?")
            else:
                events = []
                agent.on(None, events.append)
                result = await agent.run("What is the capital of France?")
    return events, result


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_each_planning_call_is_published_before_the_plan_it_makes(
    protocol: Protocol, streamed: bool
) -> None:
    events, _ = await _run_over_http(protocol, streamed=streamed)

    planning = [ModelRequest, UsageReported, ModelCompleted]
    assert _between(events, RunStarted, StepStarted) == [RunStarted, *planning, PlanCreated, StepStarted]
    assert _between(events, StepFinished, StepStarted) == [StepFinished, *planning, PlanUpdated, StepStarted]
    assert isinstance(events[-1], RunFinished)
    assert sum(isinstance(e, RunFinished | RunFailed | RunCancelled) for e in events) == 1

    requests = [e for e in events if isinstance(e, ModelRequest)]
    completions = [e for e in events if isinstance(e, ModelCompleted)]
    assert len(requests) == len(completions) == 4  # plan, step 0, re-plan, step 1
    plan_request, _, replan_request, _ = requests
    for request in (plan_request, replan_request):
        assert (request.model, request.items, request.tools) == ("gpt-4o-mini", 2, ())
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    (updated,) = [e for e in events if isinstance(e, PlanUpdated)]
    plan_done, _, replan_done, _ = completions
    # Each planning call carries the usage of the plan it made, and the step of the plan's own event.
    assert plan_done.response.usage == created.plan.usage == TokenUsage(40, 12, 52)
    assert replan_done.response.usage == updated.plan.usage == TokenUsage(70, 20, 90)
    assert plan_request.step == plan_done.step == created.step == 0
    assert replan_request.step == replan_done.step == updated.step == 0
    assert isinstance(plan_done.response, AgentModelResult)
    assert plan_done.response.output_text == PLAN
    assert plan_done.response.memory_items == ()  # the plan enters memory in its own form
    assert "raw" not in plan_done.to_dict()["response"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_the_published_usage_adds_up_to_the_run_usage_counted_once(
    protocol: Protocol, streamed: bool
) -> None:
    events, result = await _run_over_http(protocol, streamed=streamed)

    assert result.usage.total_tokens == TOTAL  # planning calls included, each once
    completed = [e.response.usage for e in events if isinstance(e, ModelCompleted)]
    reported = [e.usage for e in events if isinstance(e, UsageReported)]
    assert sum(u.total_tokens for u in completed) == TOTAL
    assert sum(u.total_tokens for u in reported) == TOTAL  # cost accounting from events sees every call


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_the_planner_s_text_is_not_published_as_the_agent_s_answer(streamed: bool) -> None:
    events, result = await _run_over_http("chat", streamed=streamed)

    deltas = [e for e in events if isinstance(e, TextDelta)]
    inside = [flag for e, flag in zip(events, _in_steps(events), strict=True) if isinstance(e, TextDelta)]
    assert deltas
    assert all(inside)
    text = "".join(d.text for d in deltas)  # what a UI printing the deltas shows: the agent's own words
    assert text == "Looking it up." + result.output_text


async def test_a_planning_call_s_reasoning_is_in_its_completion_not_in_deltas() -> None:
    chat = FakeChatModel([chat_reply('["a"]', reasoning="Two steps are too many.", usage=(3, 1))])
    agent = Agent(FakeModelClient([reply("ok")]), runtime=DeepResearchRuntime(ModelPlanner(chat)))
    events, _ = await collect(agent, "goal")
    assert _between(events, RunStarted, PlanCreated) == [
        RunStarted,
        ModelRequest,
        UsageReported,
        ModelCompleted,
        PlanCreated,
    ]
    completed = next(e for e in events if isinstance(e, ModelCompleted))
    assert completed.response.reasoning_text == "Two steps are too many."
    assert not any(isinstance(e, ReasoningDelta) for e in events)


async def test_an_unobserved_run_counts_each_planning_call_once() -> None:
    chat = FakeChatModel(
        [
            chat_reply('["Look up sky", "Summarise"]', usage=(50, 10)),
            chat_reply(tool_calls=[("lookup", {"topic": "sky"})], usage=(30, 4)),
            chat_reply('["Summarise"]', usage=(70, 6)),
            chat_reply("Rayleigh scattering.", usage=(80, 12)),
        ]
    )
    agent = Agents.deep_research(chat, planner="model", replan_every=1, tools=[lookup])
    result = await agent.run("Why is the sky blue?")
    assert result.usage == TokenUsage(50 + 30 + 70 + 80, 10 + 4 + 6 + 12, 60 + 34 + 76 + 92)


async def test_a_re_plan_s_call_carries_the_step_it_follows() -> None:
    chat = FakeChatModel(
        [
            chat_reply('["a", "b"]', usage=(5, 1)),
            chat_reply(tool_calls=[("lookup", {"topic": "a"})]),
            chat_reply(tool_calls=[("lookup", {"topic": "b"})]),
            chat_reply('["a (done)", "b (done)"]', usage=(7, 2)),
            chat_reply("done"),
        ]
    )
    agent = Agents.deep_research(chat, planner="model", replan_every=2, tools=[lookup])
    events, _ = await collect(agent, "goal")

    assert _between(events, PlanCreated, PlanUpdated)[-5:] == [
        StepFinished,
        ModelRequest,
        UsageReported,
        ModelCompleted,
        PlanUpdated,
    ]
    index = next(i for i, e in enumerate(events) if isinstance(e, PlanUpdated))
    finished, request, _, completed, updated = events[index - 4 : index + 1]
    assert finished.step == request.step == completed.step == updated.step == 1
    assert not any(_in_steps(events)[index - 3 : index + 1])


async def test_a_planning_call_retried_shows_model_retry_before_its_completion() -> None:
    turns = [Fault.status(429, headers={"retry-after-ms": "1"}), Reply(text='["a"]'), Reply(text="ok")]
    async with ScriptedServer(turns) as server, OpenAIChatModel(base_url=server.base_url, model="m") as model:
        events, result = await collect(Agents.deep_research(model, planner="model"), "goal")
    assert result.output_text == "ok"
    assert _between(events, RunStarted, PlanCreated) == [
        RunStarted,
        ModelRequest,
        ModelRetry,
        UsageReported,
        ModelCompleted,
        PlanCreated,
    ]
    (retry,) = [e for e in events if isinstance(e, ModelRetry)]
    assert (retry.run_id, retry.step) == (result.run_id, 0)


async def test_a_plan_that_cannot_be_read_is_published_and_counted_once() -> None:
    chat = FakeChatModel([chat_reply("I will not plan.", usage=(300, 50))])
    agent = Agents.deep_research(chat, planner=ModelPlanner(chat, on_invalid="raise"))
    events, _ = await _stream_to_end(agent)
    assert _kinds(events) == [RunStarted, ModelRequest, UsageReported, ModelCompleted, RunFailed]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "PlanParseError"
    assert failed.partial is not None
    assert failed.partial.usage.total_tokens == 350


async def test_a_planning_call_that_fails_ends_the_run_with_one_run_failed() -> None:
    async with ScriptedServer([Fault.status(429)]) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none())
        async with model:
            events, _ = await _stream_to_end(Agents.deep_research(model, planner="model"))
    # As a step's failed call: its ModelRequest is ended by the run's terminal event.
    assert _kinds(events) == [RunStarted, ModelRequest, RunFailed]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert (failed.error_type, failed.status, failed.retryable) == ("RateLimitError", 429, True)


async def test_cancelling_during_the_planning_call_ends_the_run_with_one_run_cancelled() -> None:
    asked = anyio.Event()

    async def hang(request: ChatRequest) -> ChatResponse:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    memory = InMemoryMemory()
    agent = Agent(
        FakeModelClient([]), runtime=DeepResearchRuntime(ModelPlanner(FakeChatModel([hang]))), memory=memory
    )
    events: list[Event] = []
    with anyio.fail_after(10):  # a planning call nobody sees could never be cancelled here
        async with agent.stream("goal") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ModelRequest):
                    await asked.wait()
                    await run.cancel()
    assert _kinds(events) == [RunStarted, ModelRequest, RunCancelled]
    assert run.result.stop_reason is StopReason.CANCELLED
    assert run.result.usage == TokenUsage()
    assert roles(memory.items) == ["user"]


async def test_a_cancel_after_the_planning_call_completed_keeps_its_usage() -> None:
    reviewing = anyio.Event()

    async def stall(plan: Plan) -> None:
        reviewing.set()
        await anyio.sleep_forever()

    chat = FakeChatModel([chat_reply('["a"]', usage=(40, 2))])
    agent = Agent(FakeModelClient([]), runtime=DeepResearchRuntime(ModelPlanner(chat), on_plan=stall))
    with anyio.fail_after(10):
        async with agent.stream("goal") as run:
            async for event in run:
                if isinstance(event, ModelCompleted):
                    await reviewing.wait()
                    await run.cancel()
    assert run.result.stop_reason is StopReason.CANCELLED
    assert run.result.usage == TokenUsage(40, 2, 42)


async def test_a_custom_planner_s_calls_through_model_call_are_published_and_counted_once() -> None:
    class TwoCallPlanner(Planner):
        def __init__(self, model: FakeChatModel) -> None:
            self.model = model

        async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
            assert context is not None
            assert context.model_call is not None
            draft = await context.model_call(self.model, ChatRequest.coerce([]))
            final = await context.model_call(self.model, ChatRequest.coerce([]), temperature=0)
            # It reports what the plan cost; the run counted both calls as they completed already.
            usage = (draft.usage or TokenUsage()) + (final.usage or TokenUsage())
            return Plan(goal, (draft.text, final.text), usage=usage)

    chat = FakeChatModel([chat_reply("draft", usage=(10, 1)), chat_reply("final", usage=(20, 2))])
    agent = Agent(
        FakeModelClient([reply("ok", usage=(5, 5))]), runtime=DeepResearchRuntime(TwoCallPlanner(chat))
    )
    events, result = await collect(agent, "goal")
    assert _between(events, RunStarted, PlanCreated) == [
        RunStarted,
        *[ModelRequest, UsageReported, ModelCompleted] * 2,
        PlanCreated,
    ]
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.usage == TokenUsage(30, 3, 33)
    assert result.usage.total_tokens == 11 + 22 + 10


async def test_a_model_call_kept_past_its_planning_no_longer_reaches_the_run() -> None:
    kept: list[PlanContext] = []

    class KeepingPlanner(Planner):
        async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
            assert context is not None
            kept.append(context)
            return Plan(goal, (goal,))

    agent = Agent(FakeModelClient([reply("ok")]), runtime=DeepResearchRuntime(KeepingPlanner()))
    result = await agent.run("goal")
    (context,) = kept
    assert context.model_call is not None
    # The run has ended (its bus is closed): a late call is a plain model call, published nowhere.
    response = await context.model_call(FakeChatModel([chat_reply("late")]), ChatRequest.coerce([]))
    assert response.text == "late"
    assert result.usage == TokenUsage()


async def test_a_simple_plan_makes_no_model_call_and_publishes_none() -> None:
    events, _ = await collect(Agents.deep_research(FakeModelClient([reply("ok")])), "goal")
    assert _kinds(events)[:3] == [RunStarted, PlanCreated, StepStarted]
    assert sum(isinstance(e, ModelRequest) for e in events) == 1


async def test_a_model_planner_outside_a_run_calls_its_model_directly() -> None:
    chat = FakeChatModel([chat_reply('["a"]', usage=(3, 1))])
    plan = await ModelPlanner(chat).plan("goal", PlanContext())
    assert plan.texts == ("a",)
    assert plan.usage == TokenUsage(3, 1, 4)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_a_run_whose_planner_has_its_own_model_is_freed_without_the_garbage_collector(
    streamed: bool,
) -> None:
    # The planner's model keeps its own pooled connection, whose tasks keep a copy of the context of the last
    # call made on it: the planning call's. Nothing the run puts in that context may lead back to the run.
    import gc

    from agentflow.bus import EventBus
    from agentflow.runtimes.context import RunContext

    async with (
        ScriptedServer([Reply(text='["a"]')]) as planner_server,
        ScriptedServer([Reply(text="ok")]) as agent_server,
        OpenAIChatModel(base_url=planner_server.base_url, model="planner") as planner_model,
        OpenAIChatModel(base_url=agent_server.base_url, model="agent") as agent_model,
    ):
        agent = Agent(agent_model, runtime=DeepResearchRuntime(ModelPlanner(planner_model)))
        gc.collect()
        gc.disable()
        try:
            with anyio.fail_after(10):
                if streamed:
                    async with agent.stream("goal") as run:
                        await run.wait()
                    del run
                else:
                    await agent.run("goal")
            alive = [o for o in gc.get_objects() if isinstance(o, RunContext | EventBus)]
        finally:
            gc.enable()
    assert alive == []


async def test_a_planning_call_says_so_and_a_quiet_run_still_plans() -> None:
    from agentflow import Agent, ModelRequest
    from agentflow.runtimes.deep_research import DeepResearchRuntime
    from agentflow.runtimes.planner import ModelPlanner
    from agentflow.testing.fake import FakeChatModel, chat_reply

    model = FakeChatModel([chat_reply('["look it up", "answer"]'), chat_reply("Paris.")])
    agent = Agent(model, runtime=DeepResearchRuntime(planner=ModelPlanner(model)))
    requests: list[ModelRequest] = []
    agent.on(ModelRequest, requests.append)
    await agent.run("Capital of France?")
    assert [r.purpose for r in requests] == ["plan", "step"]

    quiet_model = FakeChatModel([chat_reply('["look it up"]'), chat_reply("Paris.")])
    quiet = Agent(quiet_model, runtime=DeepResearchRuntime(planner=ModelPlanner(quiet_model)))
    result = await quiet.run("Capital of France?")
    assert result.output_text == "Paris."

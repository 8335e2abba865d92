"""Agents as tools, end to end: a parent agent delegating to sub-agents, each on its own ScriptedServer, over
the real OpenAIChatModel and OpenAIResponsesModel.

The sub-agent's answer (text, or a structured value as JSON) comes back as the call's result; its usage counts
toward the parent's, whose token budget it can exhaust and which caps the sub-run's; a sub-run that fails or
stops at a limit is a TOOL_ERROR; its events reach an observed parent as ToolProgress and are not even built
for an unobserved one; two sub-agents run at once; a cancel mid-sub-run closes its connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import attrs
import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.items import tool_call_ids, tool_output_call_id
from agentflow.agent.options import AgentOptions
from agentflow.agent.run import AgentRun
from agentflow.events import (
    RunCancelled,
    RunFinished,
    RunStarted,
    StepFinished,
    ToolFailed,
    ToolProgress,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.exact_json import dumps
from agentflow.model.events import Event, TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.testing.tracking import TrackingTransport
from agentflow.tools import tool

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]


def make_model(protocol: Protocol, server: ScriptedServer, transport: TrackingTransport | None = None) -> Any:
    kind = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return kind(base_url=server.base_url, api_key="sk-test", model="gpt-test", transport=transport)


@asynccontextmanager
async def servers(*scripts: list[Any]) -> AsyncIterator[list[ScriptedServer]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(ScriptedServer(script)) for script in scripts]


def last_tool_output(protocol: Protocol, body: dict[str, Any]) -> str:
    """The tool result the parent's model got in its second request."""
    if protocol == "chat":
        message = body["messages"][-1]
        assert message["role"] == "tool"
        return str(message["content"])
    [item] = [i for i in body["input"] if i.get("type") == "function_call_output"]
    return str(item["output"])


def user_texts(protocol: Protocol, body: dict[str, Any]) -> list[str]:
    """The user turns a request carries (what a sub-agent was told)."""
    if protocol == "chat":
        return [m["content"] for m in body["messages"] if m["role"] == "user"]
    texts = []
    for item in body["input"]:
        if item.get("role") == "user":
            content = item["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


def assert_memory_valid(items: tuple[Any, ...]) -> None:
    calls = [call_id for item in items for call_id in tool_call_ids(item)]
    answered = [tool_output_call_id(item) for item in items if tool_output_call_id(item) is not None]
    assert sorted(calls) == sorted(answered)  # type: ignore[type-var]


DELEGATE = Reply(tool_calls=[("researcher", {"input": "What is the capital of France?"})], usage=(40, 10))


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_parent_delegates_a_task_and_gets_the_sub_agents_answer(protocol: Protocol) -> None:
    parent_script = [DELEGATE, Reply(text="Paris, my researcher says.", usage=(60, 5))]
    sub_script = [Reply(text="The capital of France is Paris.", usage=(20, 7))]
    async with servers(parent_script, sub_script) as (parent_server, sub_server):
        researcher = Agent(make_model(protocol, sub_server), name="Researcher", system_prompt="Find facts.")
        parent = Agent(
            make_model(protocol, parent_server),
            tools=[researcher.as_tool(description="Finds facts and answers with them.")],
        )
        with anyio.fail_after(10):  # a deadlock guard only
            result = await parent.run("Where does the president of France live?")
        await parent.aclose()
        await researcher.aclose()

    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "Paris, my researcher says."
    [call_result] = result.tool_results
    assert call_result.ok
    assert call_result.output == "The capital of France is Paris."
    # The sub-run's usage is part of the parent's.
    assert result.usage.input_tokens == 40 + 60 + 20
    assert result.usage.total_tokens == 50 + 65 + 27
    first, second = (r.body for r in parent_server.requests)
    spec = first["tools"][0] if protocol == "responses" else first["tools"][0]["function"]
    assert spec["name"] == "researcher"
    assert spec["description"] == "Finds facts and answers with them."
    assert spec["parameters"]["required"] == ["input"]
    assert last_tool_output(protocol, second) == "The capital of France is Paris."
    # The sub-agent sees the task alone, not the parent's conversation.
    [sub_request] = sub_server.requests
    assert user_texts(protocol, sub_request.body) == ["What is the capital of France?"]
    assert not sub_request.stream  # nobody watches: plain model calls, as agent.run() makes


@attrs.frozen
class City:
    name: str
    country: str
    population: int


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_structured_sub_agent_returns_its_value_as_json(protocol: Protocol) -> None:
    answer = '{"name": "Paris", "country": "France", "population": 2100000}'
    parent_script = [
        Reply(tool_calls=[("geographer", {"input": "Describe Paris."})]),
        Reply(text="Paris has 2.1 million people."),
    ]
    async with servers(parent_script, [Reply(text=answer)]) as (parent_server, sub_server):
        geographer = Agent(make_model(protocol, sub_server), name="Geographer", output_type=City)
        parent = Agent(
            make_model(protocol, parent_server),
            tools=[geographer.as_tool(description="Describes a city: its country and population.")],
        )
        with anyio.fail_after(10):
            result = await parent.run("How many people live in Paris?")
        await parent.aclose()
        await geographer.aclose()

    [call_result] = result.tool_results
    assert call_result.value == City("Paris", "France", 2_100_000)  # the value itself, for code and events
    expected = orjson.dumps({"name": "Paris", "country": "France", "population": 2100000}).decode()
    assert call_result.output == expected
    assert last_tool_output(protocol, parent_server.requests[1].body) == expected
    sub_body = sub_server.requests[0].body
    format_ = sub_body["response_format"] if protocol == "chat" else sub_body["text"]["format"]
    assert format_["type"] == "json_schema"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_sub_runs_usage_reaches_the_parents_token_budget(protocol: Protocol) -> None:
    # 50 tokens of the parent's own, then the sub-agent's 70: the budget of 100 is spent by delegation, and
    # the parent stops before its next model call.
    async with servers([DELEGATE], [Reply(text="Paris.", usage=(60, 10))]) as (parent_server, sub_server):
        researcher = Agent(make_model(protocol, sub_server), name="Researcher")
        parent = Agent(
            make_model(protocol, parent_server),
            tools=[researcher.as_tool(description="Finds facts.")],
            options=AgentOptions(max_tokens=100),
        )
        steps: list[StepFinished] = []
        with anyio.fail_after(10):
            result = await parent.run("Capital of France?", on=[(StepFinished, steps.append)])
        await parent.aclose()
        await researcher.aclose()

    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.usage.total_tokens == 50 + 70
    assert [s.usage.total_tokens for s in steps] == [120]  # the step that delegated counts the sub-run
    assert result.tool_results[0].output == "Paris."
    assert len(parent_server.requests) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_what_the_parents_budget_has_left_caps_the_sub_run(protocol: Protocol) -> None:
    looked_up: list[str] = []

    @tool
    async def lookup(query: str) -> str:
        """Look a fact up."""
        looked_up.append(query)
        return "nothing"

    # The parent has 60 tokens left when it delegates; the sub-agent (no budget of its own) spends 70 on
    # its first call, so it stops there, its tool call refused, rather than spending on.
    sub_turn = Reply(text="Looking it up.", tool_calls=[("lookup", {"query": "capital"})], usage=(60, 10))
    async with servers([DELEGATE], [sub_turn]) as (parent_server, sub_server):
        researcher = Agent(make_model(protocol, sub_server), name="Researcher", tools=[lookup])
        parent = Agent(
            make_model(protocol, parent_server),
            tools=[researcher.as_tool(description="Finds facts.")],
            options=AgentOptions(max_tokens=110),
        )
        with anyio.fail_after(10):
            result = await parent.run("Capital of France?")
        await parent.aclose()
        await researcher.aclose()

    assert looked_up == []
    assert len(sub_server.requests) == 1
    [call_result] = result.tool_results
    assert not call_result.ok
    assert call_result.error_type == "exception"
    assert "AgentToolError: agent 'researcher' stopped at its token budget" in call_result.output
    assert "its last message: Looking it up." in call_result.output
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.usage.total_tokens == 120
    assert researcher.options.max_tokens is None  # the cap was the sub-run's own, not the agent's


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_failing_sub_run_is_a_tool_error_the_parent_model_reads(protocol: Protocol) -> None:
    parent_script = [DELEGATE, Reply(text="I could not find out.")]
    async with servers(parent_script, [Fault.status(400)]) as (parent_server, sub_server):
        researcher = Agent(make_model(protocol, sub_server), name="Researcher")
        parent = Agent(
            make_model(protocol, parent_server), tools=[researcher.as_tool(description="Finds facts.")]
        )
        failed: list[ToolFailed] = []
        with anyio.fail_after(10):
            result = await parent.run("Capital of France?", on=[(ToolFailed, failed.append)])
        await parent.aclose()
        await researcher.aclose()

    assert result.stop_reason is StopReason.FINAL_ANSWER
    [call_result] = result.tool_results
    assert call_result.error_type == "exception"
    assert call_result.error is not None
    assert call_result.error.startswith("AgentToolError: agent 'researcher' failed: BadRequestError:")
    assert call_result.output.startswith("TOOL_ERROR: ")
    assert last_tool_output(protocol, parent_server.requests[1].body) == call_result.output
    assert [f.result for f in failed] == [call_result]


@pytest.mark.parametrize("on_max_steps", ["stop", "final_answer"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_sub_run_at_its_step_limit_is_an_error_unless_it_gave_a_final_answer(
    protocol: Protocol, on_max_steps: Literal["stop", "final_answer"]
) -> None:
    @tool
    async def lookup(query: str) -> str:
        """Look a fact up."""
        return "no entry"

    sub_script = [
        Reply(text="Let me check the archive.", tool_calls=[("lookup", {"query": "capital of France"})]),
        Reply(text="Best guess: Paris."),
    ]
    async with servers([DELEGATE, Reply(text="Done.")], sub_script) as (parent_server, sub_server):
        researcher = Agent(
            make_model(protocol, sub_server),
            name="Researcher",
            tools=[lookup],
            options=AgentOptions(max_steps=1, on_max_steps=on_max_steps),
        )
        parent = Agent(
            make_model(protocol, parent_server), tools=[researcher.as_tool(description="Finds facts.")]
        )
        with anyio.fail_after(10):
            result = await parent.run("Capital of France?")
        await parent.aclose()
        await researcher.aclose()

    [call_result] = result.tool_results
    if on_max_steps == "final_answer":
        # The sub-agent's own policy gave an answer in its extra call: that is its output.
        assert call_result.ok
        assert call_result.output == "Best guess: Paris."
    else:
        assert not call_result.ok
        assert call_result.error == (
            "AgentToolError: agent 'researcher' stopped at its step limit (1 step) before a final answer; "
            "its last message: Let me check the archive."
        )
    assert result.output_text == "Done."


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_observed_parent_sees_the_sub_runs_events_as_tool_progress(protocol: Protocol) -> None:
    parent_script = [DELEGATE, Reply(text="Paris.")]
    sub_script = [Reply(text="The capital of France is Paris.", chunk_size=8, usage=(20, 7))]
    async with servers(parent_script, sub_script) as (parent_server, sub_server):
        researcher = Agent(make_model(protocol, sub_server), name="Researcher")
        parent = Agent(
            make_model(protocol, parent_server), tools=[researcher.as_tool(description="Finds facts.")]
        )
        events: list[Event] = []
        with anyio.fail_after(10):
            async with parent.stream("Capital of France?") as run:
                async for event in run:
                    events.append(event)
        await parent.aclose()
        await researcher.aclose()

    [started] = [e for e in events if isinstance(e, ToolStarted)]
    [succeeded] = [e for e in events if isinstance(e, ToolSucceeded)]
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert events.index(started) < events.index(progress[0])
    assert events.index(progress[-1]) < events.index(succeeded)
    assert {(p.call_id, p.tool) for p in progress} == {(started.call.id, "researcher")}
    nested = [p.data for p in progress]
    assert [p.message for p in progress] == [e.type for e in nested]
    assert isinstance(nested[0], RunStarted)
    assert isinstance(nested[-1], RunFinished)
    assert nested[-1].result.output_text == "The capital of France is Paris."
    sub_run_ids = {e.run_id for e in nested}
    assert len(sub_run_ids) == 1
    assert sub_run_ids != {run.run_id}
    assert [e.seq for e in nested] == list(range(1, len(nested) + 1))  # all of them, in order
    # Someone watches, so the sub-agent streamed: its text arrived in deltas, as it was written.
    assert sub_server.requests[0].stream
    deltas = [e.text for e in nested if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "The capital of France is Paris."
    # Forwarded to a browser, the nested event is plain JSON inside the ToolProgress.
    data = orjson.loads(dumps(progress[0].to_dict()))
    assert data["type"] == "tool_progress"
    assert data["message"] == "run_started"
    assert data["data"]["type"] == "run_started"
    assert data["data"]["run_id"] == nested[0].run_id


async def test_forward_events_false_keeps_the_sub_run_quiet() -> None:
    async with servers([DELEGATE, Reply(text="Paris.")], [Reply(text="Paris.")]) as (
        parent_server,
        sub_server,
    ):
        researcher = Agent(make_model("chat", sub_server), name="Researcher")
        quiet = researcher.as_tool(description="Finds facts.", forward_events=False)
        parent = Agent(make_model("chat", parent_server), tools=[quiet])
        with anyio.fail_after(10):
            async with parent.stream("Capital of France?") as run:
                events = [event async for event in run]
        await parent.aclose()
        await researcher.aclose()

    assert not [e for e in events if isinstance(e, ToolProgress)]
    assert run.result.tool_results[0].output == "Paris."


async def test_an_unobserved_parent_builds_no_events_for_its_sub_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[AgentRun[Any]] = []
    new_run = Agent._new_run

    def recording_new_run(self: Agent[Any], *args: Any, **kwargs: Any) -> AgentRun[Any]:
        run = new_run(self, *args, **kwargs)
        runs.append(run)
        return run

    monkeypatch.setattr(Agent, "_new_run", recording_new_run)
    async with servers([DELEGATE, Reply(text="Paris.")], [Reply(text="Paris.")]) as (
        parent_server,
        sub_server,
    ):
        researcher = Agent(make_model("chat", sub_server), name="Researcher")
        parent = Agent(
            make_model("chat", parent_server), tools=[researcher.as_tool(description="Finds facts.")]
        )
        with anyio.fail_after(10):
            result = await parent.run("Capital of France?")
        await parent.aclose()
        await researcher.aclose()

    assert result.tool_results[0].output == "Paris."
    parent_run, sub_run = runs
    assert sub_run.ctx.input_text == "What is the capital of France?"
    # Nobody listens to either run: each published its terminal event alone, and built nothing else.
    assert parent_run.ctx.bus.seq == 1
    assert sub_run.ctx.bus.seq == 1
    assert not sub_server.requests[0].stream


async def test_a_parent_watched_for_other_events_does_not_make_its_sub_runs_stream() -> None:
    # A metrics callback on RunFinished (or tracing) receives no ToolProgress: forwarding the sub-run's
    # events would build them for nobody, and make the sub-agent stream what it would have fetched whole.
    async with servers([DELEGATE, Reply(text="Paris.")], [Reply(text="Paris.")]) as (
        parent_server,
        sub_server,
    ):
        researcher = Agent(make_model("chat", sub_server), name="Researcher")
        parent = Agent(
            make_model("chat", parent_server), tools=[researcher.as_tool(description="Finds facts.")]
        )
        finished: list[RunFinished] = []
        parent.on(RunFinished, finished.append)
        with anyio.fail_after(10):
            result = await parent.run("Capital of France?")
        await parent.aclose()
        await researcher.aclose()
    assert result.tool_results[0].output == "Paris."
    assert len(finished) == 1
    assert not sub_server.requests[0].stream


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_two_sub_agents_called_in_one_step_run_at_the_same_time(protocol: Protocol) -> None:
    arrived: list[str] = []
    both_arrived = anyio.Event()

    async def answer_once_both_asked(request: dict[str, Any]) -> Reply:
        # Deadlocks unless both sub-runs are waiting on their model at once.
        [task] = user_texts(protocol, request)
        arrived.append(task)
        if len(arrived) == 2:
            both_arrived.set()
        await both_arrived.wait()
        return Reply(text=f"done: {task}", usage=(10, 2))

    parent_script = [
        Reply(
            tool_calls=[("researcher", {"input": "Find X."}), ("writer", {"input": "Draft Y."})],
            usage=(5, 1),
        ),
        Reply(text="Both done.", usage=(5, 1)),
    ]
    async with servers(parent_script, [answer_once_both_asked], [answer_once_both_asked]) as (
        parent_server,
        researcher_server,
        writer_server,
    ):
        researcher = Agent(make_model(protocol, researcher_server), name="Researcher")
        writer = Agent(make_model(protocol, writer_server), name="Writer")
        parent = Agent(
            make_model(protocol, parent_server),
            tools=[
                researcher.as_tool(description="Finds facts."),
                writer.as_tool(description="Writes drafts."),
            ],
        )
        with anyio.fail_after(10):  # a deadlock guard only
            result = await parent.run("X and Y, please.")
        for agent in (parent, researcher, writer):
            await agent.aclose()

    assert sorted(arrived) == ["Draft Y.", "Find X."]
    assert [r.output for r in result.tool_results] == ["done: Find X.", "done: Draft Y."]
    assert result.usage.total_tokens == 2 * 6 + 2 * 12


LONG = Reply(text="one two three four five six seven eight nine ten eleven twelve", chunk_size=4)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_cancelling_the_parent_mid_sub_run_closes_the_sub_agents_connection(protocol: Protocol) -> None:
    tasks_before = len(asyncio.all_tasks())
    transport = TrackingTransport()
    async with servers([DELEGATE], [Fault.stall(after_chunks=6, reply=LONG)]) as (parent_server, sub_server):
        researcher = Agent(make_model(protocol, sub_server, transport), name="Researcher")
        parent = Agent(
            make_model(protocol, parent_server), tools=[researcher.as_tool(description="Finds facts.")]
        )
        events: list[Event] = []
        with anyio.fail_after(10):
            async with parent.stream("Capital of France?") as run:
                async for event in run:
                    events.append(event)
                    if isinstance(event, ToolProgress) and isinstance(event.data, TextDelta):
                        await run.cancel()  # the sub-agent is mid-answer
        await parent.aclose()
        await researcher.aclose()

        [response] = transport.responses
        assert response.closed
        assert not response.finished
        assert response.socket_released

    assert isinstance(events[-1], RunCancelled)
    nested = [e.data for e in events if isinstance(e, ToolProgress)]
    assert len([e for e in nested if isinstance(e, RunCancelled)]) == 1  # the sub-run's, once
    assert isinstance(nested[-1], RunCancelled)
    partial = run.partial
    assert partial is not None
    assert partial.stop_reason is StopReason.CANCELLED
    assert_memory_valid(partial.new_items)
    [call_result] = partial.tool_results
    assert call_result.error_type == "cancelled"
    assert partial.usage.total_tokens >= 50  # the parent's own call, kept
    assert len(asyncio.all_tasks()) == tasks_before  # nothing left running, the servers' tasks included

"""``RunStarted`` says which conversation a run belongs to (``session_id``) and, for an agent used as a
tool, which run and tool call started it (``parent_run_id``, ``parent_call_id``): a metrics sink watching a
sub-agent can tie its runs to the calling ones, as LangChain's ``parent_run_id`` lets one."""

from __future__ import annotations

from agentflow.agent.agent import Agent
from agentflow.events import RunStarted, ToolCallRequested
from agentflow.testing.fake import FakeModelClient, reply


async def test_a_session_s_runs_name_it_and_a_one_off_run_names_none() -> None:
    agent = Agent(FakeModelClient([reply("a"), reply("b")]))
    started: list[RunStarted] = []
    agent.on(RunStarted, started.append)
    chat = agent.session(session_id="user-42")
    await chat.run("hi")
    await agent.run("hi")
    assert [event.session_id for event in started] == ["user-42", None]
    assert [event.parent_run_id for event in started] == [None, None]


async def test_a_sub_agent_s_run_names_the_run_and_the_call_that_started_it() -> None:
    researcher = Agent(FakeModelClient([reply("Paris.")]), name="Researcher")
    sub_runs: list[RunStarted] = []
    researcher.on(RunStarted, sub_runs.append)
    turns = [reply(tool_calls=[("call_7", "researcher", {"input": "Capital of France?"})]), reply("Paris.")]
    parent = Agent(FakeModelClient(turns), tools=[researcher.as_tool(description="Finds facts.")])
    requested: list[ToolCallRequested] = []
    parent.on(ToolCallRequested, requested.append)

    result = await parent.run("Capital of France?")

    [sub_run] = sub_runs
    assert (sub_run.parent_run_id, sub_run.parent_call_id) == (result.run_id, requested[0].call.id)
    assert sub_run.parent_call_id == "call_7"
    assert sub_run.session_id is None
    assert sub_run.to_dict()["parent_run_id"] == result.run_id

"""The agent benchmarks' pieces: a missing peer is skipped by name, "best peer" targets, the scripted model.

No timing here: ``test_benchmark_harness`` runs every measurement end to end; these pin what it cannot show.
"""

from __future__ import annotations

import sys

import pytest

from benchmarks.agent_contenders import OPENAI_AGENTS, PYDANTIC_AI, PeerMissing, open_runs
from benchmarks.agent_script import CALLS, FINAL_TEXT, TOOL_NAME
from benchmarks.agent_server import agent_responder
from benchmarks.harness import Figure, Measurement, Target
from benchmarks.report import render, summary


@pytest.mark.parametrize(("peer", "module"), [(OPENAI_AGENTS, "agents"), (PYDANTIC_AI, "pydantic_ai")])
async def test_a_peer_that_is_not_installed_is_reported_missing_by_name(
    monkeypatch: pytest.MonkeyPatch, peer: str, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(PeerMissing, match=f"{peer} not installed"):
        async with open_runs(peer, "http://127.0.0.1:9/v1"):
            pass


def test_an_unknown_contender_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown contender 'crewai'"):
        open_runs("crewai", "http://127.0.0.1:9/v1")


def rss(agentflow: float, **peers: float) -> Measurement:
    measurement = Measurement(
        key="agent_many_rss",
        title="peak RSS",
        unit="MB",
        targets=[Target("agentflow", 0.5, relative_to=("openai-agents", "pydantic-ai"))],
        sdk=None,
    )
    measurement.figures = [Figure("agentflow", [agentflow])]
    measurement.figures += [Figure(name.replace("_", "-"), [value]) for name, value in peers.items()]
    return measurement


def test_a_best_peer_target_is_relative_to_the_smallest_peer_measured() -> None:
    assert rss(50.0, openai_agents=160.0, pydantic_ai=101.0).met(rss(0).targets[0]) is True
    assert rss(51.0, openai_agents=160.0, pydantic_ai=101.0).met(rss(0).targets[0]) is False
    assert rss(50.0, pydantic_ai=90.0).met(rss(0).targets[0]) is False  # only the peers measured count
    assert rss(50.0).met(rss(0).targets[0]) is None  # no peer measured: no verdict


def test_the_table_names_the_best_peer_target_and_a_skipped_peer() -> None:
    measurement = rss(50.0, openai_agents=160.0)
    measurement.notes.append("skipped: pydantic-ai not installed (pip install -e '.[bench]')")
    env = {"cores": 2, "cpu": "cpu", "system": "Linux", "python": "3.11", "packages": {}, "command": "x"}
    text = render([measurement], env)
    assert "≤ 0.5× best of openai-agents, pydantic-ai  met" in text
    assert "skipped: pydantic-ai not installed" in text
    assert summary([measurement]) == "targets: 1 met, 0 missed"


def test_the_scripted_model_answers_a_tool_loop_and_a_long_story() -> None:
    respond = agent_responder(4)
    first = respond({"messages": [{"role": "user", "content": "sums?"}], "tools": [{}]})
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        (TOOL_NAME, '{"a":1,"b":2}'),
        (TOOL_NAME, '{"a":3,"b":4}'),
        (TOOL_NAME, '{"a":5,"b":6}'),
    ]
    assert len(CALLS) == 3
    assert respond({"messages": [{"role": "tool", "content": "3"}]}).text == FINAL_TEXT
    story = respond({"stream": True, "messages": [{"role": "user", "content": "story"}]})
    assert story.text == " word" * 4
    assert story.chunk_size == len(" word")


async def test_the_model_layer_of_agent_layers_does_a_whole_tool_loop() -> None:
    # ``benchmarks.agent_layers`` times it; here only that it really is the tool loop (checked answer).
    from agentflow.testing import ScriptedServer
    from benchmarks.agent_layers import _model_layer

    async with ScriptedServer(agent_responder(4)) as server:
        tool_run, close = await _model_layer(server.base_url)
        try:
            await tool_run()
        finally:
            await close()
        assert [len(r.body["messages"]) for r in server.requests] == [2, 6]


@pytest.mark.parametrize("group", [False, True])
async def test_the_bare_agents_of_agent_layers_do_a_whole_tool_loop(group: bool) -> None:
    # The lower bound that ``benchmarks.agent_layers`` times does the same work: two calls, the results sent.
    from agentflow.testing import ScriptedServer
    from benchmarks.agent_layers import _bare_agent

    async with ScriptedServer(agent_responder(4)) as server:
        tool_run, close = await _bare_agent(server.base_url, group=group)
        try:
            await tool_run()
        finally:
            await close()
        assert [len(r.body["messages"]) for r in server.requests] == [2, 6]
        assert [m["content"] for m in server.requests[1].body["messages"][3:]] == ["3", "7", "11"]

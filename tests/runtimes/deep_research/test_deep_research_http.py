"""DeepResearch end to end over real HTTP: a model-made plan, a tool step, a re-plan and a summary."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from deep_research_support import collect, lookup

from agentflow.agent.agents import Agents
from agentflow.events import PlanCreated, PlanUpdated
from agentflow.plan import StepStatus
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.runtimes.deep_research import DEEP_RESEARCH_INSTRUCTIONS
from agentflow.runtimes.planner import ModelPlanner
from agentflow.testing import Reply, ScriptedServer

SCRIPT = [
    Reply(text='Here is the plan:\n```json\n{"steps": ["Look up Paris", "Summarise"]}\n```', usage=(40, 12)),
    Reply(text="Looking it up.", tool_calls=[("lookup", {"topic": "Paris"})], usage=(60, 8)),
    Reply(
        text='{"steps": [{"step": "Look up Paris", "status": "done"}, '
        '{"step": "Summarise", "status": "in_progress"}]}',
        usage=(70, 20),
    ),
    Reply(text="## Summary\nParis is the capital of France.\n## Evidence\n- lookup(Paris)", usage=(90, 15)),
]


def _texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of every message of a Chat or Responses request body."""
    out = []
    if isinstance(body.get("instructions"), str):
        out.append(("system", body["instructions"]))
    for item in body.get("messages") or body.get("input") or ():
        if not isinstance(item, dict) or "role" not in item:
            continue
        content = item.get("content")
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or ())
        out.append((item["role"], text))
    return out


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_model_planned_run_with_a_re_plan_over_http(protocol: Literal["chat", "responses"]) -> None:
    async with ScriptedServer(SCRIPT) as server:
        model_type = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        async with model_type(base_url=server.base_url, model="gpt-4o-mini") as model:
            agent = Agents.deep_research(model, planner=ModelPlanner(model), replan_every=1, tools=[lookup])
            events, result = await collect(agent, "What is the capital of France?")
        requests = [r.body for r in server.requests]

    assert result.output_text.startswith("## Summary\nParis is the capital of France.")
    assert result.usage.total_tokens == 52 + 68 + 90 + 105  # planning calls included
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    (updated,) = [e for e in events if isinstance(e, PlanUpdated)]
    assert created.plan.texts == ("Look up Paris", "Summarise")
    assert [s.status for s in updated.plan.steps] == [StepStatus.DONE, StepStatus.IN_PROGRESS]

    assert len(requests) == 4
    planner, first_step, replanner, last_step = requests
    # the planner's call: its own prompt, no tools
    assert "tools" not in planner
    assert _texts(planner)[0][1].startswith("You are the planner of a research agent")
    assert (
        "user",
        "Goal: What is the capital of France?\n\nTools the agent can use:\n- lookup: Look a topic up.",
    ) in _texts(planner)
    # the agent's first step: instructions, the user input, then the plan
    first = _texts(first_step)
    assert any(role == "system" and DEEP_RESEARCH_INSTRUCTIONS in text for role, text in first)
    assert first[-2:] == [
        ("user", "What is the capital of France?"),
        ("system", "Plan:\n1. Look up Paris\n2. Summarise\n"),
    ]
    assert first_step["tools"]
    # the re-planner sees the progress: the tool call and its result
    replan_text = _texts(replanner)[-1][1]
    assert 'lookup({"topic":"Paris"}) -> facts about Paris' in replan_text
    assert "Current plan:\n1. Look up Paris\n2. Summarise" in replan_text
    # the last step sees the updated plan after the tool result
    assert _texts(last_step)[-1] == (
        "system",
        "Updated plan:\n1. Look up Paris (done)\n2. Summarise (in progress)\n",
    )

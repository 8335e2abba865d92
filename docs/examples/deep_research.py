"""DeepResearch: a model-made plan, edited by a hook, re-planned after every step; and a custom planner."""

from __future__ import annotations

import anyio
import orjson

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.events import PlanCreated, PlanUpdated, ToolSucceeded
from agentflow.plan import Plan, PlanStep, StepStatus
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.runtimes.planner import ModelPlanner, PlanContext, Planner
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

NOTES = {
    "paris": "Paris: 2.1 million inhabitants (INSEE, 2021).",
    "berlin": "Berlin: 3.7 million inhabitants (Destatis, 2021).",
}


@tool
def search_notes(query: str) -> str:
    """Search the research notes.

    Args:
        query: What to look for, e.g. "population of Paris".
    """
    return " ".join(text for key, text in NOTES.items() if key in query.lower()) or "no note matches"


def script() -> list[Reply]:
    """The scripted model: the plan, a tool step, the revised plan, the summary."""
    steps = ["Find the population of Paris", "Find the population of Berlin", "Compare and summarise"]
    revised = [
        {"step": steps[0], "status": "done"},
        {"step": steps[1], "status": "done"},
        {"step": steps[2], "status": "in_progress"},
        {"step": "Cite the note behind every number", "status": "pending"},
    ]
    return [
        Reply(text=f"```json\n{orjson.dumps({'steps': steps}).decode()}\n```"),  # the planner's answer
        Reply(
            tool_calls=[
                ("search_notes", {"query": "population of Paris"}),
                ("search_notes", {"query": "population of Berlin"}),
            ]
        ),
        Reply(text=orjson.dumps({"steps": revised}).decode()),  # the re-planner's answer
        Reply(
            text="## Summary\nBerlin has more people: 3.7 million against 2.1 million.\n\n"
            "## Evidence\n- Paris: 2.1 million (INSEE, 2021)\n- Berlin: 3.7 million (Destatis, 2021)"
        ),
    ]


async def main() -> None:
    async with ScriptedServer(script()) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")

        def review(plan: Plan) -> Plan | None:
            """Sees every plan before the agent uses it; may return an edited one (or None to keep it)."""
            if plan.revision == 0:
                return Plan(plan.goal, (*plan.steps, PlanStep("Cite the note behind every number")))
            return None

        agent = Agents.deep_research(
            model,
            planner=ModelPlanner(model),  # or "model"; the default is Planner.simple()
            replan_every=1,  # re-plan after every step, with the progress so far
            on_plan=review,
            tools=[search_notes],
        )
        async with agent, agent.stream("Which city has more people, Paris or Berlin?") as run:
            async for event in run:
                if isinstance(event, PlanCreated | PlanUpdated):
                    print(event.plan.to_text(), end="")
                    # Plan:
                    # 1. Find the population of Paris
                    # 2. Find the population of Berlin
                    # 3. Compare and summarise
                    # 4. Cite the note behind every number
                elif isinstance(event, ToolSucceeded):
                    print(f"[{event.call.name}] {event.result.output}")
        print(run.result.output_text)  # ## Summary\nBerlin has more people: …
        # --8<-- [end:agent]
        planner_request, first_step, *_ = server.requests
    assert run.result.output_text.startswith("## Summary\nBerlin has more people")
    assert "tools" not in planner_request.body  # the planner's own call offers no tools
    plan_message = first_step.body["messages"][-1]
    assert plan_message["role"] == "system"
    assert plan_message["content"].startswith("Plan:\n1. Find the population of Paris\n")
    assert plan_message["content"].endswith("4. Cite the note behind every number\n")
    await custom_planner()


async def custom_planner() -> None:
    # --8<-- [start:custom]
    class ChecklistPlanner(Planner):
        """The same checklist for every goal; a re-plan marks the steps the run has covered as done."""

        async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
            if context is None or context.current is None:
                return Plan.of(goal, ["Search the notes", "Summarise with citations"])
            done = StepStatus.DONE if context.tool_results else StepStatus.PENDING
            return context.current.mark(0, done)

    runtime = DeepResearchRuntime(ChecklistPlanner(), replan_every=1)
    agent = Agent(
        FakeModelClient(
            [reply(tool_calls=[("search_notes", {"query": "paris"})]), reply("Paris: 2.1 million [INSEE].")]
        ),
        runtime=runtime,  # or: Agent(model, runtime="deep_research") for the defaults
        tools=[search_notes],
    )
    async with agent.stream("How many people live in Paris?") as run:
        plans = [e.plan async for e in run if isinstance(e, PlanUpdated)]
    print(plans[0].to_text("Updated plan:"), end="")
    # Updated plan:
    # 1. Search the notes (done)
    # 2. Summarise with citations
    # --8<-- [end:custom]
    assert plans[0].steps[0].status is StepStatus.DONE
    assert run.result.output_text == "Paris: 2.1 million [INSEE]."


if __name__ == "__main__":
    anyio.run(main)

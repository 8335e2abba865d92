"""How many times in a row the model may get a tool wrong: ``@tool(max_retries=...)``, else
``AgentOptions(max_tool_retries=...)`` (3); once exceeded the run fails with ``ToolRetriesExceeded``."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.errors import ToolRetriesExceeded
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import RejectCall, tool

CITIES = {"Paris": "48.86 N, 2.35 E", "Lyon": "45.76 N, 4.84 E"}


# --8<-- [start:limit]
@tool(max_retries=1)  # one more try after a failed call: a second failing step in a row ends the run
async def locate(city: str) -> str:
    """The coordinates of a city, by its exact name."""
    if city not in CITIES:
        raise RejectCall(f"no city is named {city!r}; use its exact name, such as 'Paris'")
    return CITIES[city]


# --8<-- [end:limit]


def looks_up(*cities: str) -> list[Reply]:
    return [Reply(tool_calls=[("locate", {"city": city})]) for city in cities]


async def main() -> None:
    script = [*looks_up("Pariss", "Paris", "Lyonn"), Reply(text="Paris is at 48.86 N, 2.35 E.")]
    script += looks_up("Pariss", "Parris")
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[locate])
        # A failure, then a success: the count starts again, and the next failure is a first one.
        result = await agent.run("Where are Paris and Lyon?")
        print(result.output_text)
        # --8<-- [start:run]
        try:
            await agent.run("Where is Paris?")
        except ToolRetriesExceeded as exc:
            print(
                exc
            )  # ...failed in 2 steps in a row, more than its max_retries=1 allows; the last error: ...
            print(exc.tool, exc.max_retries, exc.error_type)  # locate 1 exception
            partial = exc.partial  # the run's work, every call answered, as for any failed run
            print(partial.stop_reason, [r.error for r in partial.tool_results])
        # --8<-- [end:run]
        else:
            raise AssertionError("the second failure in a row should have ended the run")
        assert len(server.requests) == 6  # the model was not asked again after the second failure
        await agent.aclose()

    # --8<-- [start:unlimited]
    # No limit for the tools of this agent that set none of their own (the model may retry until max_steps):
    patient = AgentOptions(max_tool_retries=None)
    # --8<-- [end:unlimited]
    assert patient.max_tool_retries is None


if __name__ == "__main__":
    anyio.run(main)

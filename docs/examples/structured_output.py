"""Structured output: the final answer read into a type, offline."""

from __future__ import annotations

import anyio
import attrs

from agentflow import Agent, OpenAIChatModel, OutputRejected
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temperature": 21, "sky": "sunny"}


# --8<-- [start:type]
@attrs.frozen
class Report:
    """A weather report."""

    city: str
    temperature_c: float
    advice: str
    umbrella: bool = False


# --8<-- [end:type]


def script() -> list[Reply]:
    """The scripted model: a tool call; an answer missing a field; then one that matches."""
    return [
        Reply(tool_calls=[("get_weather", {"city": "Paris"})]),
        Reply(text='{"city": "Paris", "temperature_c": 21}'),
        Reply(text='{"city": "Paris", "temperature_c": 21, "advice": "Sunglasses.", "umbrella": null}'),
    ]


async def main() -> None:
    async with ScriptedServer(script()) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        async with Agent(model, tools=[get_weather], output_type=Report) as agent:
            agent.on(OutputRejected, lambda event: print("sent back:", event.error))
            result = await agent.run("Weather in Paris, and what should I take?")
            report = result.output  # a Report
            print(report.city, report.temperature_c, report.advice)  # Paris 21.0 Sunglasses.
        # --8<-- [end:agent]
        assert report == Report("Paris", 21.0, "Sunglasses.")
        assert result.steps == 3
        first = server.requests[0].body
        assert first["response_format"]["json_schema"]["name"] == "Report"
        assert first["response_format"]["json_schema"]["strict"] is True


if __name__ == "__main__":
    anyio.run(main)

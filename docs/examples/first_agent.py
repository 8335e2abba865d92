"""Getting started: an agent with one tool, run to the end and then streamed, offline."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.events import RunFinished, ToolSucceeded
from agentflow.model.events import TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


# --8<-- [start:tool]
@tool
async def get_weather(city: str, unit: str = "C") -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: "C" or "F".
    """
    return {"city": city, "temperature": 21, "unit": unit, "sky": "sunny"}


# --8<-- [end:tool]


def weather_script() -> list[Reply]:
    """What the scripted model says: first a tool call, then (after seeing the result) the answer."""
    return [
        Reply(tool_calls=[("get_weather", {"city": "Paris"})]),
        Reply(text="It is 21 °C and sunny in Paris."),
    ]


async def main() -> None:
    async with ScriptedServer(weather_script() * 2) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        async with Agent(model, tools=[get_weather], system_prompt="You are a weather assistant.") as agent:
            # 1. The whole run, then its result.
            result = await agent.run("What is the weather in Paris?")
            print(result.output_text)  # It is 21 °C and sunny in Paris.
            print(result.stop_reason, result.steps, result.usage.total_tokens)

            # 2. The same run as events, as they happen.
            async with agent.stream("What is the weather in Paris?") as run:
                async for event in run:
                    if isinstance(event, TextDelta):
                        print(event.text, end="")
                    elif isinstance(event, ToolSucceeded):
                        print(f"[{event.call.name} -> {event.result.output}]")
                    elif isinstance(event, RunFinished):
                        print(f"\n[done in {event.result.steps} steps]")
            print(run.result.output_text)
        # --8<-- [end:agent]
        assert result.output_text == "It is 21 °C and sunny in Paris."
        assert run.result.output_text == result.output_text
        assert [c.name for c in result.tool_calls] == ["get_weather"]


if __name__ == "__main__":
    anyio.run(main)

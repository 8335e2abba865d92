"""Hosted tools (run by the provider) beside function tools, on the Responses API."""

from __future__ import annotations

import anyio

from agentflow import Agent
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"18°C in {city}"


async def main() -> None:
    script = [Reply(tool_calls=[("get_weather", {"city": "Paris"})]), Reply(text="18°C, and sunny news.")]
    async with ScriptedServer(script) as server:
        # --8<-- [start:hosted]
        search = {"type": "web_search"}
        files = {"type": "file_search", "vector_store_ids": ["vs_1"]}
        model = OpenAIResponsesModel(base_url=server.base_url, model="gpt-4.1")
        async with Agent(model, tools=[get_weather, search, files]) as agent:
            result = await agent.run("Weather in Paris, and any news there?")
        print(agent.tools.names, [t["type"] for t in agent.tools.hosted])  # ('get_weather',) […]
        # --8<-- [end:hosted]
        assert result.output_text == "18°C, and sunny news."
        sent = [t["type"] for t in server.requests[0].body["tools"]]
        assert sent == ["function", "web_search", "file_search"]


if __name__ == "__main__":
    anyio.run(main)

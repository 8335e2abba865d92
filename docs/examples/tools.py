"""Tools: schemas from type hints, argument validation, TOOL_ERROR results, progress, timeouts."""

from __future__ import annotations

import math
from typing import Annotated, Literal

import anyio
import orjson

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.events import ToolFailed, ToolProgress, ToolSucceeded
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import Param, ToolContext, tool


# --8<-- [start:schema]
@tool
def forecast(
    city: str,
    days: Annotated[int, Param("How many days ahead", schema={"minimum": 1, "maximum": 7})] = 3,
    unit: Literal["C", "F"] = "C",
) -> list[dict[str, object]]:
    """Daily forecast for a city.

    Args:
        city: The city name.
        unit: Temperature unit.
    """
    return [{"day": d, "city": city, "high": 20 + d, "unit": unit} for d in range(1, days + 1)]


# --8<-- [end:schema]


# --8<-- [start:context]
@tool(timeout=30)
async def crawl(url: str, pages: int, ctx: ToolContext) -> str:
    """Fetch a number of pages of a site."""
    for page in range(1, pages + 1):
        await ctx.emit_progress(f"page {page} of {pages}", data={"page": page})  # a ToolProgress event
    return f"{pages} pages of {url}"


@tool(timeout=math.inf)  # no time limit for this one
def slow_sum(values: list[float]) -> float:
    """Sum numbers (a sync tool: it runs in a worker thread, off the event loop)."""
    return math.fsum(values)


# --8<-- [end:context]


async def main() -> None:
    # --8<-- [start:print_schema]
    print(orjson.dumps(forecast.spec.parameters, option=orjson.OPT_INDENT_2).decode())
    # --8<-- [end:print_schema]
    assert forecast.spec.parameters["required"] == ["city"]
    assert forecast.spec.parameters["properties"]["days"]["maximum"] == 7

    # --8<-- [start:errors]
    script = [
        # Step 1: three calls at once: a bad argument, an unknown tool, and a good call with progress.
        Reply(
            tool_calls=[
                ("forecast", {"city": "Paris", "days": 30}),
                ("teleport", {"to": "Mars"}),
                ("crawl", {"url": "https://example.com", "pages": 2}),
            ]
        ),
        # Step 2: the model saw the TOOL_ERROR texts and tries again.
        Reply(tool_calls=[("forecast", {"city": "Paris", "days": 2})]),
        Reply(text="Mild, highs of 21-22 °C."),
    ]
    async with ScriptedServer(script) as server:
        agent = Agent(
            OpenAIChatModel(base_url=server.base_url, model="m"),
            tools=[forecast, crawl, slow_sum],
            options=AgentOptions(tool_timeout=10, max_tool_concurrency=4),
        )
        async with agent, agent.stream("Forecast for Paris?") as run:
            async for event in run:
                if isinstance(event, ToolFailed):
                    print(event.result.output)
                    # TOOL_ERROR: {"errorType":"invalid_arguments","error":"...","tool":"forecast",...}
                elif isinstance(event, ToolProgress):
                    print(f"{event.tool}: {event.message}")
                elif isinstance(event, ToolSucceeded):
                    print(f"{event.call.name} -> {event.result.output[:60]}")
    # --8<-- [end:errors]
    failures = [r for r in run.result.tool_results if not r.ok]
    assert [r.error_type for r in failures] == ["invalid_arguments", "unknown_tool"]
    assert run.result.output_text == "Mild, highs of 21-22 °C."
    # The model received the error texts as tool results.
    sent = server.requests[1].body["messages"]
    assert any(m["role"] == "tool" and m["content"].startswith("TOOL_ERROR: ") for m in sent)


if __name__ == "__main__":
    anyio.run(main)

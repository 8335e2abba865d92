"""Structured output as it streams: partial values of the output type while the answer is written, offline."""

from __future__ import annotations

import json

import anyio
import attrs

from agentflow import Agent, OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
async def find_sights(city: str) -> list[str]:
    """The sights of a city."""
    return ["Louvre", "Orsay"]


# --8<-- [start:type]
@attrs.frozen
class Stop:
    sight: str
    hours: float


@attrs.frozen
class Itinerary:
    city: str
    stops: list[Stop] = attrs.Factory(list)


# --8<-- [end:type]

ANSWER = {"city": "Paris", "stops": [{"sight": "Louvre", "hours": 3}, {"sight": "Orsay", "hours": 2.5}]}


def script() -> list[Reply]:
    """The scripted model: a tool call, then the answer streamed 6 characters at a time (twice: one run
    each)."""
    answer = Reply(text=json.dumps(ANSWER), chunk_size=6)
    return [Reply(tool_calls=[("find_sights", {"city": "Paris"})]), answer, answer]


async def main() -> None:
    async with ScriptedServer(script()) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        async with Agent(model, tools=[find_sights], output_type=Itinerary) as agent:
            # --8<-- [start:stream]
            async with agent.stream("A day in Paris?") as run:
                async for itinerary in run.stream_output(debounce=None):
                    print(itinerary)  # Itinerary(city='Pa', stops=[]), …, then run.result.output
            # --8<-- [end:stream]
            assert itinerary == run.result.output  # the last value is the run's output, validated
            assert itinerary == Itinerary("Paris", [Stop("Louvre", 3.0), Stop("Orsay", 2.5)])
            # --8<-- [start:json]
            async with agent.stream("Another day in Paris?") as run:
                async for data in run.stream_json(debounce=None):
                    print(data)  # {}, {'city': 'Pa'}, …, {'city': 'Paris', 'stops': [{'sight': 'Lou'}]}, …
            # --8<-- [end:json]
            assert data == {
                "city": "Paris",
                "stops": [{"sight": "Louvre", "hours": 3.0}, {"sight": "Orsay", "hours": 2.5}],
            }


if __name__ == "__main__":
    anyio.run(main)

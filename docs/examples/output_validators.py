"""Output validators: checks of your own on the final answer, offline."""

from __future__ import annotations

import anyio
import attrs

from agentflow import Agent, OpenAIChatModel, OutputRejected, OutputType, RejectOutput
from agentflow.testing import Reply, ScriptedServer


@attrs.frozen
class Trip:
    """A trip plan."""

    city: str
    days: int


def script() -> list[Reply]:
    """The scripted model: a plan the validator rejects, then one it accepts."""
    return [
        Reply(text='{"city": "rome", "days": 40}'),
        Reply(text='{"city": "rome", "days": 5}'),
    ]


# --8<-- [start:validator]
def reasonable(trip: Trip) -> Trip:
    if not 1 <= trip.days <= 14:
        # Sent back to the model, which answers again (counted in the output type's retries).
        raise RejectOutput(f"{trip.days} days is too long; plan 1 to 14 days")
    return attrs.evolve(trip, city=trip.city.title())  # what the validator returns is the output


# --8<-- [end:validator]


async def main() -> None:
    async with ScriptedServer(script()) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        async with Agent(model, output_type=OutputType(Trip, validators=[reasonable])) as agent:
            agent.on(OutputRejected, lambda event: print("sent back:", event.error))
            result = await agent.run("Plan a trip to Rome.")  # an AgentResult[Trip]
            trip = result.output  # Trip(city='Rome', days=5); a type checker sees a Trip | None
        # --8<-- [end:agent]
        assert trip == Trip("Rome", 5)
        assert server.requests[1].body["messages"][-1]["content"] == (
            "Your final answer was rejected: 40 days is too long; plan 1 to 14 days\n"
            "Correct it and answer again, in the same format."
        )


if __name__ == "__main__":
    anyio.run(main)

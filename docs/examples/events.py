"""Streaming and events: filtering, callbacks, events of your own, a slow consumer, and to_dict()."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import anyio
import anyio.lowlevel
import attrs
import orjson

from agentflow.agent.agent import Agent
from agentflow.bus import EventBus
from agentflow.events import RunFinished, StepFinished, ToolStarted, ToolSucceeded
from agentflow.model.events import Event, TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --8<-- [start:custom]
@attrs.frozen
class Citation(Event):
    """An event of your own: where a part of the answer came from."""

    source: str


async def with_citations(events: AsyncIterable[Event]) -> AsyncIterator[Event]:
    """The run's events, each tool result followed by a ``Citation`` of it."""
    async for event in events:
        yield event
        if isinstance(event, ToolSucceeded):
            # Not published on the bus, so it takes the stamps of the event it follows: seq never goes back.
            source = f"the {event.call.name} tool"
            yield Citation(source, run_id=event.run_id, step=event.step, seq=event.seq)


# --8<-- [end:custom]


async def main() -> None:
    script = [Reply(tool_calls=[("add", {"a": 2, "b": 3})]), Reply(text="2 + 3 = 5", chunk_size=1)] * 4
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[add])
        async with agent:
            # --8<-- [start:types]
            # Only the events you ask for (isinstance match): here tool results and the end of the run.
            async with agent.stream("2 + 3?", types=(ToolSucceeded, RunFinished)) as run:
                seen = [event.type async for event in run]
            print(seen)  # ['tool_succeeded', 'run_finished']
            # --8<-- [end:types]
            assert seen == ["tool_succeeded", "run_finished"]

            # --8<-- [start:callbacks]
            # Callbacks see every run the agent starts afterwards (logging, tracing, metrics).
            log: list[str] = []
            remove = agent.on(ToolStarted, lambda e: log.append(f"step {e.step}: {e.call.name}"))
            agent.on(StepFinished, lambda e: log.append(f"step {e.step} used {e.usage.total_tokens} tokens"))
            await agent.run("2 + 3?")
            remove()
            print(log)
            # --8<-- [end:callbacks]
            assert log[0] == "step 0: add"

            # --8<-- [start:custom-use]
            async with agent.stream("2 + 3?", types=(ToolSucceeded, RunFinished)) as run:
                seen = [
                    event.type async for event in with_citations(run)
                ]  # or sse_stream(with_citations(run))
            print(seen)  # ['tool_succeeded', 'citation', 'run_finished']
            # --8<-- [end:custom-use]
            assert seen == ["tool_succeeded", "citation", "run_finished"]

            # --8<-- [start:drop]
            # A consumer that may fall behind (a UI): with a tiny buffer, deltas are dropped instead of
            # slowing the run; boundaries and the terminal event always arrive.
            async with agent.stream("2 + 3?", buffer=1, policy="drop_deltas") as run:
                async for event in run:
                    await anyio.lowlevel.checkpoint()  # pretend to be slow
                    if isinstance(event, RunFinished):
                        print(event.result.output_text)
            # --8<-- [end:drop]
            assert run.result.output_text == "2 + 3 = 5"

    # --8<-- [start:to_dict]
    # Every event is an immutable attrs value with run_id, step, seq and a JSON-ready to_dict().
    bus = EventBus("run_demo")
    seen_events: list[Event] = []
    bus.on(None, seen_events.append)
    stamped = await bus.publish(TextDelta("Hel"))
    print(stamped)  # TextDelta(run_id='run_demo', step=0, seq=1, text='Hel')
    print(orjson.dumps(stamped.to_dict()).decode())
    # {"type":"text_delta","run_id":"run_demo","step":0,"seq":1,"text":"Hel"}
    # --8<-- [end:to_dict]
    assert seen_events == [stamped]
    assert stamped.to_dict() == {
        "type": "text_delta",
        "run_id": "run_demo",
        "step": 0,
        "seq": 1,
        "text": "Hel",
    }


if __name__ == "__main__":
    anyio.run(main)

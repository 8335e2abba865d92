"""Getting started: one blocking and one streaming model call, offline against a ScriptedServer."""

from __future__ import annotations

import anyio

from agentflow import TextDelta, UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


async def main() -> None:
    # A local OpenAI-compatible server that answers from a script: swap its base_url for a real endpoint.
    script = [Reply(text="CAS is compare-and-swap."), Reply(text="Once upon a time...", chunk_size=5)]
    async with ScriptedServer(script) as server:
        # --8<-- [start:model]
        async with OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-4o-mini") as model:
            response = await model.chat([UserMessage("What is CAS?")], temperature=0)
            print(response.text)  # CAS is compare-and-swap.
            print(response.finish_reason, response.usage)

            async with model.stream([UserMessage("Tell me a story")]) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        print(event.text, end="", flush=True)
            print()
            print(stream.response.text)  # the aggregated ChatResponse
        # --8<-- [end:model]
        assert response.text == "CAS is compare-and-swap."
        assert stream.response.text == "Once upon a time..."
        # What went over the wire: the scripted server records every request.
        body = server.requests[0].body
        assert body["messages"] == [{"role": "user", "content": "What is CAS?"}]
        assert body["temperature"] == 0


if __name__ == "__main__":
    anyio.run(main)

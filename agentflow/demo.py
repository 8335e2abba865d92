"""``make demo``: stream a chat completion (text, then a tool call) from the bundled scripted server.

Runs offline against ``agentflow.testing.ScriptedServer``; with ``OPENAI_API_KEY`` set it talks to
``OPENAI_BASE_URL`` (default the OpenAI API) with model ``AGENTFLOW_MODEL`` (default ``gpt-4o-mini``) instead.
"""

from __future__ import annotations

import os
import sys

import anyio

import agentflow as af
from agentflow.testing import Reply, ScriptedServer

WEATHER = af.ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def _stream(model: af.OpenAIChatModel, question: str) -> None:
    request = af.ChatRequest([af.UserMessage(question)], af.ChatParameters(tools=(WEATHER,)))
    async with model.stream(request) as stream:
        async for event in stream:
            if isinstance(event, af.TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, af.ToolCallReady):
                print(f"\n→ tool call {event.call.name}({event.call.arguments})", flush=True)
    response = stream.response
    print(f"\n[finish: {response.finish_reason}, usage: {response.usage}]")


async def main() -> None:
    """Run the demo against the scripted server, or a real endpoint when ``OPENAI_API_KEY`` is set."""
    api_key = os.environ.get("OPENAI_API_KEY")
    if api_key:
        base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
        model_name = os.environ.get("AGENTFLOW_MODEL", "gpt-4o-mini")
        async with af.OpenAIChatModel(base_url=base_url, api_key=api_key, model=model_name) as model:
            await _stream(model, "Say hello, then look up the weather in Paris with the tool.")
        return
    script = [
        Reply(
            text="Hello from agentflow! Let me check the weather for you.",
            tool_calls=[("get_weather", {"city": "Paris"})],
        )
    ]
    async with ScriptedServer(script) as server:
        print(f"scripted OpenAI-compatible server at {server.base_url}\n")
        async with af.OpenAIChatModel(base_url=server.base_url, model="scripted-model") as model:
            await _stream(model, "What's the weather in Paris?")


if __name__ == "__main__":
    try:
        anyio.run(main)
    except af.ModelError as error:
        print(f"agentflow demo: {error}", file=sys.stderr)
        raise SystemExit(1) from None

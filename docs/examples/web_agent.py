"""The agent both web-service examples serve: OpenAIChatModel with two tools, and a scripted model for demos.

``build_agent(base_url)`` points the model at any OpenAI-compatible endpoint; ``demo_server()`` is a
``ScriptedServer`` whose answers depend on the question, so the services run offline; ``endpoint()`` picks
a real endpoint instead when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from agentflow.agent.agent import Agent
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.client import DEFAULT_BASE_URL
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
async def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temperature_c": 21, "sky": "sunny"}


@tool
def local_time(city: str) -> str:
    """The local time in a city (HH:MM)."""
    return "14:05"


def build_agent(base_url: str, *, api_key: str | None = None, model: str = "gpt-4o-mini") -> Agent:
    """A weather agent whose model is served at ``base_url``."""
    chat_model = OpenAIChatModel(base_url=base_url, api_key=api_key, model=model)
    return Agent(chat_model, tools=[get_weather, local_time], system_prompt="You are a weather assistant.")


def endpoint(offline_base_url: str) -> dict[str, Any]:
    """``build_agent``'s keywords: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``AGENTFLOW_MODEL`` when set
    (a key alone means the OpenAI API), else the scripted server at ``offline_base_url``."""
    api_key = os.environ.get("OPENAI_API_KEY") or None
    base_url = os.environ.get("OPENAI_BASE_URL") or (DEFAULT_BASE_URL if api_key else offline_base_url)
    return {
        "base_url": base_url,
        "api_key": api_key,
        "model": os.environ.get("AGENTFLOW_MODEL") or "gpt-4o-mini",
    }


def _city(question: str) -> str:
    names = re.findall(r"\b[A-Z][a-z]+\b", question)
    return names[-1] if names else "Paris"


def demo_reply(request: dict[str, Any]) -> Reply:
    """The scripted model: first both tools at once, then an answer built from their results."""
    messages = request["messages"]
    if messages[-1]["role"] == "user":
        city = _city(messages[-1]["content"])
        return Reply(tool_calls=[("get_weather", {"city": city}), ("local_time", {"city": city})])
    results = [m["content"] for m in messages if m["role"] == "tool"]
    weather = orjson.loads(results[0])
    city, temperature, sky = weather["city"], weather["temperature_c"], weather["sky"]
    text = f"In {city} it is {temperature} °C and {sky}; local time {results[1]}."
    return Reply(text=text, chunk_size=6)


def demo_server() -> ScriptedServer:
    """A local OpenAI-compatible server answering every request with ``demo_reply``."""
    return ScriptedServer(demo_reply)

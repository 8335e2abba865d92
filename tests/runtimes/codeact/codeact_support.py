"""Helpers of the CodeAct tests: protocol answers, an agent on a ScriptedServer, memory and event checks."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson

from agentflow.agent.agent import Agent
from agentflow.agent.items import tool_call_ids, tool_output_call_id
from agentflow.events import RunCancelled, RunFailed, RunFinished
from agentflow.model.events import Event
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_protocol import CodeMessage, parse_answer
from agentflow.sandbox import ExecutionLimits, ProcessSandbox
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

TERMINAL = (RunFinished, RunFailed, RunCancelled)
# Small limits keep the bad-code tests fast; the wall time is long enough for a loaded CI machine.
SMALL_LIMITS = ExecutionLimits(wall_time=1.0, cpu_seconds=5, memory_bytes=256 * 1024 * 1024)


def code(source: str, language: str = "python") -> str:
    """A protocol answer that runs ``source``."""
    return orjson.dumps({"type": "code", "language": language, "code": source}).decode()


def final(output: Any) -> str:
    """A protocol answer that ends the run with ``output``."""
    return orjson.dumps({"type": "final", "output": output}).decode()


def says(text: str, usage: tuple[int, int] = (10, 5)) -> Reply:
    """A scripted model turn answering ``text``."""
    return Reply(text=text, usage=usage)


class Recorder:
    """An agent-level listener keeping every event of every run."""

    def __init__(self, agent: Agent) -> None:
        self.events: list[Event] = []
        agent.on(None, self.events.append)

    def of(self, kind: type[Any] | tuple[type[Any], ...]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def names(self) -> list[str]:
        return [type(e).__name__ for e in self.events]


class Boxes:
    """A ``CodeActOptions.executor`` factory that keeps every ``ProcessSandbox`` it makes."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.made: list[ProcessSandbox] = []

    def __call__(self) -> ProcessSandbox:
        box = ProcessSandbox(**self.kwargs)
        self.made.append(box)
        return box


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer exists at all (a zombie still has a /proc entry)."""
    return not os.path.exists(f"/proc/{pid}")


@tool
async def get_price(item: str) -> float:
    """The unit price of an item, in euros.

    Args:
        item: The item's name.
    """
    return {"apple": 0.5, "pear": 0.75, "melon": 2.0}[item]


@tool(name="stock-level")
async def stock_level(item: str) -> int:
    """How many of an item are in stock."""
    return {"apple": 10, "pear": 4, "melon": 1}[item]


@asynccontextmanager
async def codeact_agent(
    turns: Sequence[Any],
    *,
    protocol: Literal["chat", "responses"] = "chat",
    codeact: CodeActOptions | None = None,
    tools: Sequence[Any] = (get_price, stock_level),
    planning: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> AsyncIterator[tuple[Agent, ScriptedServer]]:
    """A CodeAct agent on the real OpenAI model classes, talking to a ScriptedServer playing ``turns``;
    ``planning`` holds the runtime's planning arguments (``planner``, ``replan_every``…), if any."""
    async with ScriptedServer(turns) as server:
        model_class = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        model = model_class(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        runtime = CodeActRuntime(codeact, **(planning or {}))
        agent = Agent(model, runtime=runtime, tools=tools, **kwargs)
        try:
            yield agent, server
        finally:
            await agent.aclose()


def item_text(item: Any) -> str:
    """The text of a message item."""
    content = item.get("content") if isinstance(item, Mapping) else None
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or () if isinstance(p, Mapping))


def system_texts(items: Sequence[Any]) -> list[str]:
    """The texts of the system items (CODE_RESULT, CODE_ERROR, corrections) in memory order."""
    return [item_text(i) for i in items if isinstance(i, Mapping) and i.get("role") == "system"]


def chat_messages(body: Any) -> list[dict[str, Any]]:
    """The messages of a recorded Chat request body."""
    assert isinstance(body, dict)
    messages = body["messages"]
    assert isinstance(messages, list)
    return messages


def seen_results(body: Any) -> list[str]:
    """The CODE_RESULT / CODE_ERROR / PROTOCOL_ERROR texts the model was sent in one Chat request."""
    return [
        m["content"]
        for m in chat_messages(body)[2:]  # after the system prompt and the user message
        if m["role"] == "system"
    ]


def outcome(text: str) -> tuple[str, dict[str, Any]]:
    """``("CODE_RESULT", {...})`` from a memory text."""
    prefix, _, payload = text.partition(": ")
    decoded = orjson.loads(payload)
    assert isinstance(decoded, dict)
    return prefix, decoded


def assert_codeact_memory_valid(items: Sequence[Any]) -> None:
    """Every code turn is followed by exactly one CODE_RESULT or CODE_ERROR; tool calls are all answered."""
    pending_code = False
    open_calls: list[str] = []
    for index, item in enumerate(items):
        open_calls.extend(tool_call_ids(item))
        answered = tool_output_call_id(item)
        if answered is not None:
            assert answered in open_calls, f"item {index} answers an unknown call"
            open_calls.remove(answered)
        if not isinstance(item, Mapping):
            continue
        text = item_text(item)
        if item.get("role") == "assistant" and isinstance(parse_answer(text), CodeMessage):
            assert not pending_code, f"item {index}: a code turn before the previous one got its outcome"
            pending_code = True
        elif item.get("role") == "system" and text.startswith(("CODE_RESULT: ", "CODE_ERROR: ")):
            assert pending_code, f"item {index}: an outcome without a code turn"
            pending_code = False
    assert not pending_code, "the last code turn has no CODE_RESULT / CODE_ERROR"
    assert not open_calls, f"tool calls without a result: {open_calls}"

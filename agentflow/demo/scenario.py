"""The demo: four agent runs through the real HTTP clients, rendered live.

1. ReAct on Chat Completions: two tools called at once (``calculator`` and ``utc_now``);
2. the same on the Responses API;
3. CodeAct: the model writes Python that calls both tools concurrently in the sandbox;
4. DeepResearch: a model-made plan, one step of evidence at a time, re-planning after every step, and a
   structured summary.

Offline (the default without ``OPENAI_API_KEY``) the model is the bundled scripted responder
(``agentflow.demo.responder``) behind an in-process ``ScriptedServer`` on 127.0.0.1, so it runs in a few
seconds with no network. With ``OPENAI_API_KEY`` set (and optionally ``OPENAI_BASE_URL`` and
``AGENTFLOW_MODEL``) the same runs go to that endpoint. A section that fails says why in one line and the
demo goes on; the exit code says whether every section succeeded.

The scripted model answers at once, so offline a whole section would appear in one go; ``pace`` (seconds per
streamed text fragment, used by ``python -m agentflow.demo`` on a terminal) lets the eye follow the stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import attrs

from ..agent.agent import Agent
from ..agent.agents import Agents
from ..agent.options import AgentOptions
from ..model.events import ReasoningDelta, TextDelta
from ..model.protocol import ChatModel
from ..providers.openai.chat_model import OpenAIChatModel
from ..providers.openai.client import DEFAULT_BASE_URL
from ..providers.openai.responses_model import OpenAIResponsesModel
from ..runtimes.planner import ModelPlanner
from ..testing import ScriptedServer
from .render import Renderer
from .responder import respond
from .tools import BUILTIN_TOOLS

__all__ = ["QUESTIONS", "SECTIONS", "Endpoint", "endpoint_from_env", "run_demo"]

DEFAULT_MODEL = "gpt-4o-mini"

QUESTIONS: Mapping[str, str] = {
    "react": "What is 1234 * 5678, and what is the current UTC time?",
    "codeact": "Using Python, work out 2 ** 32 + 3 ** 20 and tell me the current UTC time.",
    "deep_research": (
        "Which gives more pizza: one pizza of radius 15 cm, or two of radius 10 cm? "
        "Compare the areas 3.14159 * 15 ** 2 and 2 * 3.14159 * 10 ** 2."
    ),
}
"""The question each section asks."""

SECTIONS = (
    "ReAct on Chat Completions (two tools at once)",
    "ReAct on the Responses API (two tools at once)",
    "CodeAct (Python in a sandbox calls the tools)",
    "DeepResearch (model-made plan, re-planned after every step)",
)
"""The demo's section titles, in order."""


@attrs.frozen
class Endpoint:
    """Where the demo's models live (the key is never shown)."""

    base_url: str
    model: str
    api_key: str | None = attrs.field(default=None, repr=lambda key: "<set>" if key else "None")
    offline: bool = False


def endpoint_from_env(environ: Mapping[str, str]) -> Endpoint | None:
    """The real endpoint when ``OPENAI_API_KEY`` is set, else ``None`` (the demo runs offline).

    >>> endpoint_from_env({})
    >>> endpoint_from_env({"OPENAI_API_KEY": "sk-x", "AGENTFLOW_MODEL": "gpt-4.1-mini"})
    Endpoint(base_url='https://api.openai.com/v1', model='gpt-4.1-mini', api_key=<set>, offline=False)
    """
    api_key = environ.get("OPENAI_API_KEY")
    if not api_key:
        return None
    return Endpoint(
        base_url=environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        model=environ.get("AGENTFLOW_MODEL") or DEFAULT_MODEL,
        api_key=api_key,
    )


def _codeact_agent(model: ChatModel) -> Agent | None:
    try:
        return Agents.codeact(model, tools=BUILTIN_TOOLS, options=AgentOptions(max_steps=6))
    except (ImportError, ValueError):
        # The CodeAct runtime (agentflow.runtimes.codeact) is not part of this build.
        return None


async def _section(
    render: Renderer, title: str, make_agent: Callable[[], Agent | None], question: str, pace: float = 0.0
) -> bool:
    """One section: a heading, the run rendered live; whether it succeeded."""
    render.heading(title)
    agent = make_agent()
    if agent is None:
        render.line("(not available in this build: skipped)", "yellow")
        return True
    # CodeAct's text is its JSON protocol, which the renderer does not show: nothing to pace there.
    pace = 0.0 if agent.runtime.name == "codeact" else pace
    async with agent.stream(question) as run:
        async for event in run:
            render(event)
            if pace and isinstance(event, TextDelta | ReasoningDelta):
                await anyio.sleep(pace)
    return run.error is None


async def run_demo(render: Renderer, endpoint: Endpoint | None = None, *, pace: float = 0.0) -> int:
    """Run every section against ``endpoint`` (``None``: the bundled scripted server); the failed count.

    ``pace``: seconds to wait after rendering each streamed text fragment (0: none).
    """
    async with contextlib.AsyncExitStack() as stack:
        if endpoint is None:
            server = await stack.enter_async_context(ScriptedServer(respond))
            endpoint = Endpoint(base_url=server.base_url, model=DEFAULT_MODEL, offline=True)
            render.line(
                f"offline: the bundled scripted model at {server.base_url} "
                "(set OPENAI_API_KEY to run against a real endpoint)",
                "dim",
            )
        else:
            render.line(f"endpoint: {endpoint.base_url}, model {endpoint.model}", "dim")
        connection: dict[str, Any] = {
            "base_url": endpoint.base_url,
            "api_key": endpoint.api_key,
            "model": endpoint.model,
        }
        chat = await stack.enter_async_context(OpenAIChatModel(**connection))
        responses = await stack.enter_async_context(OpenAIResponsesModel(**connection))
        options = AgentOptions(max_steps=8)

        def react_on(model: ChatModel) -> Callable[[], Agent]:
            return lambda: Agents.react(model, tools=BUILTIN_TOOLS, options=options)

        def deep_research() -> Agent:
            return Agents.deep_research(
                chat, planner=ModelPlanner(chat), replan_every=1, tools=BUILTIN_TOOLS, options=options
            )

        plans: list[tuple[str, Callable[[], Agent | None], str]] = [
            (SECTIONS[0], react_on(chat), QUESTIONS["react"]),
            (SECTIONS[1], react_on(responses), QUESTIONS["react"]),
            (SECTIONS[2], lambda: _codeact_agent(chat), QUESTIONS["codeact"]),
            (SECTIONS[3], deep_research, QUESTIONS["deep_research"]),
        ]
        failed = 0
        for title, make_agent, question in plans:
            if not await _section(render, title, make_agent, question, pace):
                failed += 1
        render.line()
        if failed:
            render.line(f"{failed} of {len(plans)} sections failed", "red", "bold")
        else:
            render.line(f"all {len(plans)} sections finished", "green", "bold")
        return failed

"""The CLI's live rendering in your own program: feed a run's events to ``Renderer``."""

from __future__ import annotations

import io
import sys

import anyio

from agentflow.agent.agent import Agent
from agentflow.demo.render import Renderer, json_line, use_color
from agentflow.demo.responder import respond
from agentflow.demo.tools import calculator, utc_now
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import ScriptedServer


async def main() -> None:
    out = io.StringIO()  # sys.stdout in a real program
    # The bundled scripted model (what `agentflow run --offline` uses) behind a local server.
    async with ScriptedServer(respond) as server:
        # --8<-- [start:render]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        render = Renderer(out, color=use_color(out))  # colour only on a terminal without NO_COLOR
        agent = Agent(model, tools=[calculator, utc_now])
        lines: list[bytes] = []
        async with agent, agent.stream("What is 6 * 7?") as run:
            async for event in run:
                render(event)
                lines.append(json_line(event))  # the --json form: one JSON object per line
        # > [react] What is 6 * 7?
        # -- step 1 --
        # (reasoning) The question needs calculator, so I call it.
        # Let me look that up.
        # -> calculator({"expression":"6 * 7"})
        # <- calculator: 42
        # -- step 2 --
        # Here is what I found: 6 * 7 = 42.
        # == done: final_answer, 2 steps, 1 tool call
        #    … in / … out / … total tokens
        # --8<-- [end:render]
    text = out.getvalue()
    sys.stdout.write(text)
    assert '-> calculator({"expression":"6 * 7"})\n<- calculator: 42\n' in text
    assert "== done: final_answer, 2 steps, 1 tool call" in text
    assert run.result.output_text == "Here is what I found: 6 * 7 = 42."
    assert lines[0].startswith(b'{"type":"run_started"')


if __name__ == "__main__":
    anyio.run(main)

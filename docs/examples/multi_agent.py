"""Agents as tools: an assistant delegating to a researcher and a structured fact-checker, offline."""

from __future__ import annotations

import anyio
import attrs

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.events import ToolProgress, ToolSucceeded
from agentflow.model.events import TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer

QUESTION = "When was the Eiffel Tower finished, and is it taller than 300 m?"


# --8<-- [start:verdict]
@attrs.frozen
class Verdict:
    """A fact-checker's verdict on one claim."""

    claim: str
    true: bool
    source: str


# --8<-- [end:verdict]


def assistant_script() -> list[Reply]:
    """The assistant delegates to both agents at once, then answers from what they said."""
    return [
        Reply(
            tool_calls=[
                ("researcher", {"input": "When was the Eiffel Tower finished?"}),
                ("fact_checker", {"input": "Claim: the Eiffel Tower is taller than 300 m."}),
            ],
            usage=(300, 40),
        ),
        Reply(text="It was finished in 1889, and yes: it is 330 m tall.", usage=(420, 20)),
    ]


def researcher_script() -> list[Reply]:
    return [Reply(text="It was finished in March 1889.", usage=(120, 10), chunk_size=8)]


def checker_script() -> list[Reply]:
    verdict = '{"claim": "taller than 300 m", "true": true, "source": "toureiffel.paris: 330 m"}'
    return [Reply(text=verdict, usage=(150, 30))]


async def main() -> None:
    async with (
        ScriptedServer(assistant_script() * 2) as assistant_server,
        ScriptedServer(researcher_script() * 2) as research_server,
        ScriptedServer(checker_script() * 2) as checker_server,
    ):
        # --8<-- [start:agents]
        researcher = Agent(
            OpenAIChatModel(base_url=research_server.base_url, model="gpt-4.1-mini"),
            name="Researcher",
            system_prompt="You research one question and answer it in a sentence, with its date.",
        )
        fact_checker = Agent(
            OpenAIChatModel(base_url=checker_server.base_url, model="gpt-4.1-mini"),
            name="Fact checker",  # the tool's name: fact_checker
            output_type=Verdict,
        )
        assistant = Agent(
            OpenAIChatModel(base_url=assistant_server.base_url, model="gpt-4.1"),
            tools=[
                researcher.as_tool(description="Researches one factual question and answers it."),
                fact_checker.as_tool(description="Checks one claim; answers with a verdict and a source."),
            ],
            options=AgentOptions(max_tokens=20_000),  # the sub-agents' runs count toward it too
        )
        result = await assistant.run(QUESTION)
        print(result.output_text)  # It was finished in 1889, and yes: it is 330 m tall.
        for call in result.tool_results:
            print(call.name, "->", call.output)  # the researcher's text, the checker's Verdict as JSON
        print(result.usage.total_tokens)  # 1090: the assistant's 780 and its sub-agents' 130 + 180
        # --8<-- [end:agents]
        assert result.tool_results[1].value == Verdict("taller than 300 m", True, "toureiffel.paris: 330 m")
        assert result.usage.total_tokens == 340 + 440 + 130 + 180

        # --8<-- [start:stream]
        async with assistant.stream(QUESTION) as run:
            async for event in run:
                if isinstance(event, ToolProgress) and isinstance(event.data, TextDelta):
                    print(f"[{event.tool}] {event.data.text}")  # a sub-agent's text, as it writes it
                elif isinstance(event, ToolSucceeded):
                    print(f"[{event.call.name} done]")
                elif isinstance(event, TextDelta):
                    print(event.text, end="")  # the assistant's own answer
        # --8<-- [end:stream]
        assert run.result.output_text == result.output_text
        for agent in (assistant, researcher, fact_checker):
            await agent.aclose()


if __name__ == "__main__":
    anyio.run(main)

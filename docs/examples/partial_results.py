"""What a run cut short keeps: "stop generating" mid-answer, and the partial result of a run that failed."""

from __future__ import annotations

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.model.errors import BadRequestError
from agentflow.model.events import TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.runtimes.errors import run_result
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def main() -> None:
    # The model starts a long answer, then stalls: the user presses "stop" after a few words.
    long_answer = Reply(text="Once upon a time there was a framework that kept every word.", chunk_size=5)
    script: list[Reply | Fault] = [Fault.stall(after_chunks=4, reply=long_answer), Reply(text="…")]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m")

        # --8<-- [start:stop]
        agent = Agent(model, options=AgentOptions(keep_partial_answer=True))
        chat = agent.session()
        async with chat.stream("Tell me a story.") as run:
            async for event in run:
                if isinstance(event, TextDelta):
                    await run.cancel()  # the user pressed "stop generating"
        cut = run.result
        print(cut.stop_reason, repr(cut.output_text))  # StopReason.CANCELLED 'Once upon a tim'
        # With keep_partial_answer=True the cut answer is the session's last assistant turn, so the next
        # turn can refer to it; by default memory keeps only the question.
        await chat.run("Go on.")
        # --8<-- [end:stop]
        assert cut.stop_reason is StopReason.CANCELLED
        assert cut.output_text.startswith("Once ")
        assert cut.output_text in str(server.requests[-1].body)
        await agent.aclose()

    script = [Reply(tool_calls=[("add", {"a": 2, "b": 3})], usage=(120, 8)), Fault.status(400)]
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[add])
        async with agent:
            # --8<-- [start:failed]
            try:
                await agent.run("What is 2 + 3?")
            except BadRequestError as exc:  # the model's own error type, as ever
                partial = run_result(exc)  # the run's partial result (also exc.run_result)
                assert partial is not None
                print(partial.stop_reason, partial.steps, partial.usage.total_tokens)  # ERROR 1 128
                print([r.output for r in partial.tool_results])  # ['5']: the finished tool step
                # partial.new_items: what the run wrote to memory, to persist or to retry from
            # --8<-- [end:failed]
            assert partial is not None
            assert partial.usage.total_tokens == 128

"""Keeping a conversation: stored as JSON between processes (and checked when loaded), passed back as
``history=`` (``all_items``: the whole conversation after a run), and a session that rolls a failed run
back."""

from __future__ import annotations

import anyio

from agentflow import dump_items, load_items
from agentflow.agent.agent import Agent
from agentflow.agent.items import HistoryError
from agentflow.agent.memory import InMemoryMemory
from agentflow.http.retry import RetryPolicy
from agentflow.model.errors import ServerError
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Fault, Reply, ScriptedServer

DB: dict[str, bytes] = {}  # stands for your database: conversation id -> stored items


async def main() -> None:
    script = [
        Reply(text="Nice to meet you, Ada."),
        Reply(text="Your name is Ada."),
        Reply(text="Ada, as you said."),
        Fault.status(500),  # the failed run (the model does not retry, see below)
        Reply(text="Still Ada."),
    ]
    async with ScriptedServer(script) as server:
        # No retries, so that the failure in the last example comes at once.
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none()))
        async with agent:
            # --8<-- [start:persist]
            # One request: load the conversation, run the next turn, store it again.
            async def answer(conversation_id: str, question: str) -> str:
                stored = DB.get(conversation_id)
                chat = agent.session(InMemoryMemory(load_items(stored) if stored else []))
                result = await chat.run(question)
                DB[conversation_id] = dump_items(chat.items)  # JSON bytes, for any store
                return result.output_text

            await answer("c1", "My name is Ada.")
            print(await answer("c1", "What is my name?"))  # Your name is Ada.
            # --8<-- [end:persist]
            assert len(load_items(DB["c1"])) == 4

            # --8<-- [start:history]
            # The same without a session: pass the stored items as history=, append what the run added.
            items = load_items(DB["c1"])
            result = await agent.run("And my name again?", history=items)
            items.extend(result.new_items)  # only this run's: the question and the answer
            assert list(result.all_items) == items  # or the whole conversation at once
            # --8<-- [end:history]
            assert len(result.new_items) == 2
            assert len(items) == 6

            # --8<-- [start:checked]
            # A tool result whose call is not in the conversation: refused where it is loaded, not by the
            # provider's 400 at the next run's first model call.
            try:
                load_items(b'[{"type": "function_call_output", "call_id": "c9", "output": "42"}]')
            except HistoryError as error:
                print(error)  # load_items item 0: a function_call_output answers call 'c9', which no item…
                refused = error.index  # 0: the item at fault
            # --8<-- [end:checked]
            assert refused == 0

            # --8<-- [start:rollback]
            chat = agent.session(InMemoryMemory(items), rollback_on_failure=True)
            try:
                await chat.run("Still there?")
            except ServerError as error:
                print("failed:", error.status)  # memory is as the run found it: no question twice
            result = await chat.run("Still there?")
            # --8<-- [end:rollback]
            assert result.output_text == "Still Ada."
            assert len(chat.items) == 8


if __name__ == "__main__":
    anyio.run(main)

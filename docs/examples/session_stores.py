"""A session whose conversation lives in an SQLite file: loaded on its first run, each run appended as it
ends; a new process (here, a new agent and store) continues it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from agentflow import Agent, SQLiteStore
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


async def main() -> None:
    script = [
        Reply(text="Nice to meet you, Ada."),
        Reply(text="Your name is Ada."),
        Reply(text="You asked for your name."),
    ]
    async with ScriptedServer(script) as server:
        with tempfile.TemporaryDirectory() as folder:
            chats_db = Path(folder) / "chats.db"
            # --8<-- [start:store]
            store = SQLiteStore(chats_db)  # one per process, shared by every session
            agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"))

            # One request of a web app: a session per request, keyed by the conversation's id. Two requests
            # of one conversation at once (two tabs) take turns: the second answers after the first's turn.
            async def answer(user_id: str, question: str) -> str:
                chat = agent.session(session_id=user_id, store=store)
                result = await chat.run(question)  # loads the conversation, then appends this turn
                return result.output_text

            await answer("user-42", "My name is Ada.")
            print(await answer("user-42", "What is my name?"))  # Your name is Ada.
            # --8<-- [end:store]
            await agent.aclose()
            await store.aclose()

            # --8<-- [start:restart]
            # After a restart: a new store on the same file, and the conversation goes on.
            model = OpenAIChatModel(base_url=server.base_url, model="m")
            async with Agent(model) as agent, SQLiteStore(chats_db) as store:
                chat = agent.session(session_id="user-42", store=store)
                history = await chat.load()  # to show it before the user writes; run() loads too
                print(len(history))  # 4
                await chat.run("What did I ask you?")
            # --8<-- [end:restart]
            roles = [m["role"] for m in server.requests[2].body["messages"]]
            assert roles == ["system", "user", "assistant", "user", "assistant", "user"]


if __name__ == "__main__":
    anyio.run(main)

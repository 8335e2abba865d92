"""Falling back to another model: a run whose primary model is down finishes on the backup."""

from __future__ import annotations

import anyio

from agentflow import (
    Agent,
    AllModelsFailedError,
    FallbackModelClient,
    ModelRetry,
    OpenAIChatModel,
    OpenAIResponsesModel,
    RateLimitError,
    RetryPolicy,
)
from agentflow.testing import Fault, Reply, ScriptedServer


async def main() -> None:
    down = [Fault.status(503), Fault.status(429)]
    backup_script = [Reply(text="Paris."), Fault.status(429)]
    async with ScriptedServer(down) as primary_server, ScriptedServer(backup_script) as backup_server:
        primary_url, backup_url = primary_server.base_url, backup_server.base_url
        # --8<-- [start:fallback]
        primary = OpenAIResponsesModel(base_url=primary_url, model="gpt-5-mini", retry=RetryPolicy.none())
        backup = OpenAIChatModel(base_url=backup_url, model="llama-3.3-70b", retry=RetryPolicy.none())
        agent = Agent(FallbackModelClient(primary, backup), system_prompt="Be brief.")

        retries: list[ModelRetry] = []
        agent.on(ModelRetry, retries.append)  # a fallback is a ModelRetry of the run
        result = await agent.run("Capital of France?")
        print(result.output_text)  # Paris.  (from llama-3.3-70b, after gpt-5-mini answered 503)
        print(
            retries[0].reason
        )  # HTTP 503: …; falling back from 'gpt-5-mini' (1 of 2) to 'llama-3.3-70b' (2 of 2)

        try:
            await agent.run("And of Italy?")
        except AllModelsFailedError as error:  # a ModelError and an ExceptionGroup
            print(error.models)  # ("'gpt-5-mini' (1 of 2)", "'llama-3.3-70b' (2 of 2)")
            print([type(e).__name__ for e in error.exceptions])  # ['RateLimitError', 'RateLimitError']
            failure = error
        await agent.aclose()
        # --8<-- [end:fallback]
        assert result.output_text == "Paris."
        assert "falling back from 'gpt-5-mini' (1 of 2) to 'llama-3.3-70b' (2 of 2)" in retries[0].reason
        assert failure.status == 429
        assert all(isinstance(e, RateLimitError) for e in failure.exceptions)
        assert [r.body["model"] for r in backup_server.requests] == ["llama-3.3-70b"] * 2


if __name__ == "__main__":
    anyio.run(main)

"""When a tool fails: the model is told (the default), the run fails (``on_error="raise"``), or the model is
told something else (a formatter); ``RejectCall`` and ``ToolFatalError`` say so from inside the tool."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.model.messages import ToolCall
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.errors import run_result
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import RejectCall, ToolFatalError, tool

ACCOUNTS = {"A-1": 120}


class PaymentDeclined(Exception):
    """The bank refused the payment."""


# --8<-- [start:policies]
@tool(on_error="raise")  # a payment must not be retried by the model: its failure ends the run
async def pay(account: str, amount: int) -> str:
    """Pay an amount from an account."""
    if account not in ACCOUNTS:
        raise RejectCall(f"there is no account {account!r}; ask the user for the account number")
    raise PaymentDeclined("bank code 51: insufficient funds")


def unavailable(exc: Exception, call: ToolCall) -> str | None:
    """What the model reads when ``balance`` fails: no host names or credentials, and what to do next."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return "The balance service is unavailable; tell the user to try again in a few minutes."
    return None  # anything else: the standard TOOL_ERROR text


@tool(on_error=unavailable)
async def balance(account: str) -> int:
    """The balance of an account."""
    raise ConnectionError("postgres://ledger:s3cret@10.0.0.7:5432 refused the connection")


@tool
async def export(table: str) -> str:
    """Export a table (fed back by default, like every tool, unless it says the run must end)."""
    raise ToolFatalError(f"exporting {table} needs an operator's approval")


# --8<-- [end:policies]


async def main() -> None:
    script = [
        Reply(tool_calls=[("balance", {"account": "A-1"})]),
        Reply(tool_calls=[("pay", {"account": "B-7", "amount": 30})]),
        Reply(tool_calls=[("pay", {"account": "A-1", "amount": 30})]),
        Reply(tool_calls=[("export", {"table": "users"})]),
    ]
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[pay, balance, export])
        # --8<-- [start:run]
        try:
            await agent.run("Pay 30 from my account.")
        except PaymentDeclined as exc:
            print(f"payment failed: {exc}")  # the run failed with the tool's own exception
            partial = run_result(exc)  # what the run did before (usage, tool results, new items)
            assert partial is not None
            for result in partial.tool_results:
                print(result.name, "->", result.output[:70])
        # --8<-- [end:run]
        try:
            await agent.run("Export the users.")
        except ToolFatalError as exc:
            print(f"stopped: {exc}")
        else:
            raise AssertionError("the export should have ended the run")
        await agent.aclose()
    told = [m["content"] for m in server.requests[2].body["messages"] if m["role"] == "tool"]
    assert told[0] == "The balance service is unavailable; tell the user to try again in a few minutes."
    assert "there is no account 'B-7'" in told[1]
    assert "s3cret" not in str(server.requests[2].body)
    assert len(server.requests) == 4  # after each failure that ended a run, the model was not asked again


if __name__ == "__main__":
    anyio.run(main)

"""A tool offered only to some users: ``@tool(enabled=...)``, a function of the run, offline."""

from __future__ import annotations

import anyio
import attrs

from agentflow import Agent, PromptContext, tool
from agentflow.testing.fake import FakeModelClient, reply


# --8<-- [start:enabled]
@attrs.frozen
class User:
    name: str
    admin: bool = False


def admins_only(run: PromptContext[User]) -> bool:
    return run.deps.admin  # asked before each step's model call


@tool(enabled=admins_only)
def delete_account(user_id: str) -> str:
    """Delete a user's account for good."""
    return f"deleted {user_id}"


@tool
def account_status(user_id: str) -> str:
    """The status of a user's account."""
    return f"{user_id}: active"


# --8<-- [end:enabled]


async def main() -> None:
    model = FakeModelClient([reply("ok"), reply("ok")])
    agent = Agent(model, tools=[account_status, delete_account])
    await agent.run("Close account 7.", deps=User("ada", admin=True))
    await agent.run("Close account 7.", deps=User("bob"))
    offered = [[t.name for t in prompt.tools] for prompt in model.prompts]
    print(offered)  # [['account_status', 'delete_account'], ['account_status']]
    assert offered == [["account_status", "delete_account"], ["account_status"]]


if __name__ == "__main__":
    anyio.run(main)

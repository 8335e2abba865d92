"""``@tool(enabled=...)``: a tool offered only in the steps a function of the run says so.

Evaluated once per step, before the prompt (with the ``PromptContext`` prompt functions get); a tool left out
is not offered, not in CodeAct's tool list, and a call to it is an unknown tool's ``TOOL_ERROR``; a function
that raises or returns a non-bool fails the run with ``ToolAvailabilityError``.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    PromptContext,
    ToolAvailabilityError,
    ToolRegistry,
    ToolRetriesExceeded,
    handoff,
    tool,
)
from agentflow.model.tools import ToolChoice
from agentflow.testing.fake import FakeModelClient, reply


@attrs.frozen
class User:
    name: str
    admin: bool = False


def _is_admin(run: PromptContext[User]) -> bool:
    return run.deps.admin


@tool(enabled=_is_admin)
def delete_user(user_id: str) -> str:
    """Delete a user's account."""
    return f"deleted {user_id}"


@tool
def whoami() -> str:
    """The current user."""
    return "someone"


def _offered(model: FakeModelClient) -> list[list[str]]:
    return [[t.name for t in prompt.tools] for prompt in model.prompts]


@pytest.mark.parametrize("admin", [False, True])
async def test_a_tool_is_offered_when_its_function_says_so(admin: bool) -> None:
    model = FakeModelClient([reply("ok")])
    agent = Agent(model, tools=[whoami, delete_user])
    await agent.run("hi", deps=User("ada", admin=admin))
    assert _offered(model) == [["whoami", "delete_user"] if admin else ["whoami"]]


async def test_it_is_asked_each_step_and_an_async_function_is_awaited() -> None:
    asked: list[int] = []

    async def first_step_only(run: PromptContext[Any]) -> bool:
        asked.append(run.step)
        return run.step == 0

    @tool(enabled=first_step_only)
    def search(q: str) -> str:
        """Search."""
        return "found"

    model = FakeModelClient([reply(tool_calls=[("search", {"q": "x"})]), reply("done")])
    await Agent(model, tools=[whoami, search]).run("hi")
    assert asked == [0, 1]
    assert _offered(model) == [["whoami", "search"], ["whoami"]]


async def test_a_call_to_a_tool_left_out_is_an_unknown_tool_s_error() -> None:
    model = FakeModelClient([reply(tool_calls=[("delete_user", {"user_id": "7"})]), reply("sorry")])
    result = await Agent(model, tools=[whoami, delete_user]).run("delete 7", deps=User("bob"))
    (failed,) = result.tool_results
    assert not failed.ok
    assert failed.error_type == "unknown_tool"
    assert result.output == "sorry"


async def test_enabled_false_keeps_the_tool_registered_but_never_offered() -> None:
    @tool(enabled=False)
    def beta() -> str:
        """A feature behind a flag."""
        return "beta"

    model = FakeModelClient([reply("ok")])
    agent = Agent(model, tools=[whoami, beta])
    assert agent.tools.names == ("whoami", "beta")
    await agent.run("hi")
    assert _offered(model) == [["whoami"]]
    assert tool(enabled=True)(whoami.fn).enabled is None


async def test_a_tool_that_needs_approval_enabled_in_a_later_step_is_still_asked_for() -> None:
    asked: list[str] = []

    @tool(needs_approval=True, enabled=lambda run: run.step > 0)
    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    def decide(request: Any) -> bool:
        asked.append(request.tool)
        return True

    model = FakeModelClient(
        [reply(tool_calls=[("whoami", {})]), reply(tool_calls=[("refund", {"order": "9"})]), reply("done")]
    )
    agent = Agent(model, tools=[whoami, refund], options=AgentOptions(tool_approval=decide))
    result = await agent.run("refund 9")
    assert asked == ["refund"]
    assert [r.output for r in result.tool_results] == ["someone", "refunded 9"]


async def test_max_tool_retries_counts_on_across_steps_with_other_tools() -> None:
    @tool(enabled=lambda run: run.step % 2 == 0)
    def flaky() -> str:
        """Fails."""
        raise ValueError("down")

    script = [reply(tool_calls=[("flaky", {})]) for _ in range(5)]
    agent = Agent(FakeModelClient(script), tools=[whoami, flaky], options=AgentOptions(max_tool_retries=1))
    with pytest.raises(ToolRetriesExceeded, match="'flaky' failed in 2 steps in a row"):
        await agent.run("go")


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (lambda run: run.deps["role"], "KeyError: 'role'"),
        (lambda run: "yes", "it returned a str, not a bool"),
    ],
)
async def test_a_failing_function_fails_the_run(function: Any, message: str) -> None:
    guarded = tool(name="guarded", enabled=function)(lambda: "x")
    agent = Agent(FakeModelClient([reply("never")]), tools=[guarded])
    with pytest.raises(ToolAvailabilityError) as caught:
        await agent.run("hi", deps={})
    assert caught.value.tool == "guarded"
    assert message in str(caught.value)
    assert caught.value.partial.stop_reason.value == "error"


def test_a_bad_enabled_value_is_refused_where_it_is_written() -> None:
    with pytest.raises(TypeError, match="enabled must be True, False or a function"):
        tool(enabled="admins")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="did you mean enabled="):
        tool(is_enabled=False)  # type: ignore[call-overload]


def test_a_registry_leaves_tools_out_and_keeps_each_subset() -> None:
    registry = ToolRegistry([whoami, delete_user, {"type": "web_search"}])
    assert registry.has_conditional
    subset = registry.without(frozenset({"delete_user"}))
    assert (subset.names, subset.hosted) == (("whoami",), registry.hosted)
    assert registry.without(frozenset({"delete_user"})) is subset
    assert not ToolRegistry([whoami]).has_conditional


async def test_codeact_lists_only_the_tools_offered() -> None:
    model = FakeModelClient([reply('{"final_answer": "ok"}')])
    agent = Agent(model, runtime="codeact", tools=[whoami, delete_user])
    await agent.run("hi", deps=User("bob"))
    system = str(model.prompts[0].system_prompt)
    assert "whoami" in system
    assert "delete_user" not in system


async def test_a_handoff_may_be_offered_conditionally() -> None:
    billing = Agent(FakeModelClient([]), name="Billing")
    model = FakeModelClient([reply("ok")])
    agent = Agent(model, handoffs=[handoff(billing, enabled=lambda run: run.deps.admin)])
    await agent.run("hi", deps=User("bob"))
    assert _offered(model) == [[]]


async def test_an_approved_call_to_a_tool_left_out_by_now_is_not_run() -> None:
    ran: list[str] = []

    @tool(enabled=_is_admin, needs_approval=True)
    def wipe(user_id: str) -> str:
        """Wipe a user's data."""
        ran.append(user_id)
        return "wiped"

    model = FakeModelClient([reply(tool_calls=[("wipe", {"user_id": "7"})]), reply("could not")])
    agent = Agent(model, tools=[whoami, wipe], options=AgentOptions(tool_approval="defer"))
    paused = await agent.run("wipe 7", deps=User("ada", admin=True))
    (waiting,) = paused.pending_approvals
    # By the time someone approves, the tool is no longer offered.
    asked: list[int] = []

    def not_now(run: PromptContext[Any]) -> bool:
        asked.append(run.step)
        return False

    with agent.override(tools=[whoami, attrs.evolve(wipe, enabled=not_now)]):
        resumed = await agent.run(history=paused.all_items, approvals={waiting.call_id: True})
    assert asked == [0]  # once for the step: its decided calls and its prompt
    assert ran == []
    assert [(r.name, r.error_type) for r in resumed.tool_results] == [("wipe", "unknown_tool")]
    assert resumed.output == "could not"


async def test_a_step_that_offers_no_tool_still_declares_those_the_history_called() -> None:
    @tool(enabled=lambda run: run.step == 0)
    def search(q: str) -> str:
        """Search."""
        return "found"

    @tool(enabled=False)
    def unrelated() -> str:
        """Never offered."""
        return "x"

    model = FakeModelClient([reply(tool_calls=[("search", {"q": "x"})]), reply("done")])
    await Agent(model, tools=[search, unrelated]).run("hi")
    assert _offered(model) == [["search"], ["search"]]
    assert model.prompts[0].tool_choice is None
    assert model.prompts[1].tool_choice == ToolChoice.none()


async def test_a_step_offering_only_a_hosted_tool_keeps_its_tool_choice() -> None:
    @tool(enabled=lambda run: run.step == 0)
    def search(q: str) -> str:
        """Search."""
        return "found"

    model = FakeModelClient([reply(tool_calls=[("search", {"q": "x"})]), reply("done")])
    await Agent(model, tools=[search, {"type": "web_search"}]).run("hi")
    assert _offered(model) == [["search"], []]
    assert [prompt.tool_choice for prompt in model.prompts] == [None, None]  # web_search stays callable

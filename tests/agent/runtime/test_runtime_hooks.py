"""Runtimes extend the base loop through its hooks (what CodeAct and DeepResearch build on)."""

from __future__ import annotations

from typing import ClassVar

from runtime_support import Recorder, assert_memory_valid

from agentflow.agent.agent import Agent
from agentflow.agent.items import system_item
from agentflow.agent.prompt import AgentModelResult
from agentflow.events import RunStarted
from agentflow.model.messages import ToolCall
from agentflow.result import StopReason, ToolResult
from agentflow.runtimes import AgentRuntime, ReActRuntime, RunContext, register_runtime, resolve_runtime
from agentflow.testing.fake import FakeModelClient, reply


class PlanFirst(ReActRuntime):
    """Writes a plan after the user input, like DeepResearch."""

    name: ClassVar[str] = "plan_first"
    instructions: ClassVar[str | None] = "Follow the plan."

    async def start(self, ctx: RunContext) -> None:
        await super().start(ctx)
        ctx.remember([system_item(f"Plan:\n1. {ctx.input_text}\n")])


class Simulated(AgentRuntime):
    """Replaces running tool calls (as CodeAct replaces them with running code)."""

    name: ClassVar[str] = "simulated"

    async def run_tool_calls(self, ctx: RunContext, calls: tuple[ToolCall, ...]) -> list[ToolResult]:
        return [ToolResult(call.id, call.name, f"simulated {call.name}") for call in calls]


class JsonFinal(AgentRuntime):
    """Reads the model turn its own way: text ``FINAL: x`` ends the run, anything else loops."""

    name: ClassVar[str] = "json_final"

    async def handle_model_result(
        self, ctx: RunContext, result: AgentModelResult, *, final: bool = False
    ) -> StopReason | None:
        ctx.remember(result.memory_items)
        if result.output_text.startswith("FINAL: "):
            ctx.output_text = result.output_text.removeprefix("FINAL: ")
            return StopReason.FINAL_ANSWER
        ctx.remember([system_item("Answer with FINAL: <answer>.")])
        return None


async def test_start_hook_adds_to_memory_after_the_input() -> None:
    model = FakeModelClient([reply("done")])
    agent = Agent(model, runtime=PlanFirst(), system_prompt="Base.")
    recorder = Recorder(agent)

    result = await agent.run("find X")

    assert [i["role"] for i in model.prompts[0].items] == ["user", "system"]
    assert model.prompts[0].system_prompt == "Base.\n\nFollow the plan."
    assert recorder.of(RunStarted)[0].runtime == "plan_first"
    assert result.stop_reason is StopReason.FINAL_ANSWER


async def test_run_tool_calls_hook_replaces_execution_and_memory_stays_paired() -> None:
    model = FakeModelClient([reply(tool_calls=[("anything", {})]), reply("ok")])
    result = await Agent(model, runtime=Simulated()).run("go")

    assert [r.output for r in result.tool_results] == ["simulated anything"]
    assert_memory_valid(result.new_items)


async def test_handle_model_result_hook_changes_how_a_turn_is_read() -> None:
    model = FakeModelClient([reply("thinking"), reply("FINAL: 42")])
    result = await Agent(model, runtime=JsonFinal()).run("go")

    assert (result.output_text, result.steps) == ("42", 2)


async def test_registered_runtime_names_resolve() -> None:
    register_runtime("plan_first_test", PlanFirst)
    assert isinstance(resolve_runtime("plan_first_test"), PlanFirst)
    assert isinstance(Agent(FakeModelClient([]), runtime="plan_first_test").runtime, PlanFirst)

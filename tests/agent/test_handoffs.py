"""Handoffs: ``Agent(handoffs=[...])`` gives the rest of a run to another agent.

The target runs the next steps with its own model, tools, prompts, settings and handoffs, on the same
conversation and in the same run (id, events, limits, output type, guardrails); ``HandedOff`` is published
between the two steps and ``AgentResult.agent_name`` names the agent the run ended with.
"""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    Handoff,
    HistoryError,
    ModelSettings,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputGuardrailTripped,
    Tripwire,
    handoff,
    tool,
    without_tool_calls,
)
from agentflow.agent.memory import InMemoryMemory, WindowedMemory
from agentflow.events import (
    HandedOff,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolFailed,
    ToolSucceeded,
)
from agentflow.model.events import Event, TextDelta
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.result import StopReason
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply


@tool
def lookup(order: str) -> str:
    """Look up an order."""
    return f"order {order}: shipped"


@tool(return_direct=True)
def status(order: str) -> str:
    """The status of an order, as the answer."""
    return f"order {order} is on its way"


def _texts(items: Any) -> list[str]:
    """Each item as a short label: role or type, and its text or call names."""
    labels = []
    for item in items:
        if item.get("tool_calls"):
            labels.append("calls " + ",".join(c["function"]["name"] for c in item["tool_calls"]))
        elif item.get("type") == "function_call_output":
            labels.append("output " + item["output"])
        else:
            labels.append(f"{item['role']} {item['content'][0]['text']}")
    return labels


def _pair(
    triage_script: list[Any], billing_script: list[Any], **triage: Any
) -> tuple[Agent[Any], Agent[str], FakeModelClient, FakeModelClient]:
    billing_model = FakeModelClient(billing_script)
    billing = Agent(billing_model, name="Billing", system_prompt="You handle billing.", tools=[lookup])
    triage_model = FakeModelClient(triage_script)
    agent = Agent(triage_model, name="Triage", system_prompt="Route.", handoffs=[billing], **triage)
    return agent, billing, triage_model, billing_model


async def test_the_target_answers_on_the_whole_conversation_with_its_own_prompt_and_tools() -> None:
    agent, _, triage_model, billing_model = _pair(
        [reply("Let me pass you on.", tool_calls=[("transfer_to_billing", {})])],
        [reply(tool_calls=[("lookup", {"order": "7"})]), reply("Order 7 shipped; refund on its way.")],
    )
    assert agent.tools.names == ("transfer_to_billing",)
    assert triage_model.remaining == 1
    result = await agent.run("Where is my refund for order 7?")
    assert result.output == "Order 7 shipped; refund on its way."
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert (result.agent_name, result.steps) == ("Billing", 3)
    first = billing_model.prompts[0]
    assert str(first.system_prompt).startswith("You handle billing.")
    assert [t.name for t in first.tools] == ["lookup"]  # its own tools; it has no handoffs
    assert _texts(first.items) == [
        "user Where is my refund for order 7?",
        "calls transfer_to_billing",
        "output Handed the conversation over to Billing.",
    ]
    assert _texts(result.new_items)[-3:] == [
        "calls lookup",
        "output order 7: shipped",
        "assistant Order 7 shipped; refund on its way.",
    ]


async def test_handed_off_comes_between_the_two_agents_steps() -> None:
    agent, *_ = _pair([reply(tool_calls=[("c9", "transfer_to_billing", {})])], [reply("Done.")])
    events: list[Event] = []
    async with agent.stream("refund please") as run:
        events = [e async for e in run]
    kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta)]
    at = kinds.index("HandedOff")
    assert kinds[at - 1 : at + 2] == ["StepFinished", "HandedOff", "StepStarted"]
    handed = events[[type(e) for e in events].index(HandedOff)]
    assert isinstance(handed, HandedOff)
    assert (handed.source, handed.target, handed.call_id) == ("Triage", "Billing", "c9")
    assert handed.to_dict()["type"] == "handed_off"
    assert sum(isinstance(e, RunStarted) for e in events) == 1  # one run, one id
    assert len({e.run_id for e in events}) == 1
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.agent_name == "Billing"


async def test_a_turn_hands_over_once_the_other_transfers_are_refused_and_its_other_calls_run() -> None:
    other = Agent(FakeModelClient([]), name="Sales")
    billing_model = FakeModelClient([reply("Billing here.")])
    billing = Agent(billing_model, name="Billing")
    agent = Agent(
        FakeModelClient(
            [
                reply(
                    tool_calls=[
                        ("c1", "lookup", {"order": "1"}),
                        ("c2", "transfer_to_billing", {}),
                        ("c3", "transfer_to_sales", {}),
                    ]
                )
            ]
        ),
        name="Triage",
        tools=[lookup],
        handoffs=[billing, other],
    )
    events: list[Event] = []
    async with agent.stream("hi") as run:
        events = [e async for e in run]
    result = run.result
    assert result.agent_name == "Billing"
    outputs = {r.call_id: (r.ok, r.output) for r in result.tool_results}
    assert outputs["c1"] == (True, "order 1: shipped")
    assert outputs["c2"] == (True, "Handed the conversation over to Billing.")
    assert outputs["c3"][0] is False
    assert "hands the conversation over to Billing already" in outputs["c3"][1]
    assert [e.call.id for e in events if isinstance(e, ToolFailed)] == ["c3"]
    assert sorted(e.call.id for e in events if isinstance(e, ToolSucceeded)) == ["c1", "c2"]


async def test_the_run_keeps_its_output_type_options_and_guardrails() -> None:
    @attrs.frozen
    class Refund:
        order: str
        amount: int

    seen: list[Any] = []

    def record(ctx: Any, answer: Any) -> None:
        seen.append(answer)

    billing = Agent(FakeModelClient([reply('{"order": "7", "amount": 12}')]), name="Billing")
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        output_type=Refund,
        output_guardrails=[record],
        handoffs=[billing],
    )
    result = await agent.run("refund order 7")
    assert result.output == Refund("7", 12)
    assert seen == [Refund("7", 12)]


async def test_the_entry_agent_s_output_guardrails_check_the_target_s_answer() -> None:
    def no_secrets(ctx: Any, answer: str) -> Tripwire | None:
        return Tripwire("secret") if "SECRET" in answer else None

    billing = Agent(FakeModelClient([reply("the SECRET is 42")]), name="Billing")
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        output_guardrails=[no_secrets],
        handoffs=[billing],
    )
    chat = agent.session()
    with pytest.raises(OutputGuardrailTripped):
        await chat.run("tell me")
    assert chat.memory.items == ()


async def test_limits_count_across_the_agents() -> None:
    agent, _, _, billing_model = _pair(
        [reply(tool_calls=[("transfer_to_billing", {})])],
        [reply(tool_calls=[("lookup", {"order": "1"})]), reply("never asked")],
        options=AgentOptions(max_steps=2),
    )
    result = await agent.run("hi")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert (result.steps, result.agent_name, len(billing_model.prompts)) == (2, "Billing", 1)


async def test_agents_may_hand_back_and_forth() -> None:
    triage_model = FakeModelClient(
        [reply(tool_calls=[("transfer_to_billing", {})]), reply("Triage again: anything else?")]
    )
    triage = Agent(triage_model, name="Triage")
    billing = Agent(FakeModelClient([reply(tool_calls=[("transfer_to_triage", {})])]), name="Billing")
    triage.handoffs = [billing]
    billing.handoffs = [triage]  # a cycle: set once both exist
    assert [h.tool_name for h in triage.handoffs] == ["transfer_to_billing"]
    assert billing.tools.names == ("transfer_to_triage",)
    events: list[Event] = []
    async with triage.stream("hi") as run:
        events = [e async for e in run]
    hops = [(e.source, e.target) for e in events if isinstance(e, HandedOff)]
    assert hops == [("Triage", "Billing"), ("Billing", "Triage")]
    assert run.result.output == "Triage again: anything else?"
    assert run.result.agent_name == "Triage"
    assert [t.name for t in triage_model.prompts[1].tools] == ["transfer_to_billing"]


async def test_an_input_filter_changes_what_the_target_is_shown_not_memory() -> None:
    billing_model = FakeModelClient([reply("Billing: how can I help?"), reply("Sure.")])
    billing = Agent(billing_model, name="Billing")
    triage = Agent(
        FakeModelClient(
            [
                reply("Checking.", tool_calls=[("lookup", {"order": "1"})]),
                reply(tool_calls=[("transfer_to_billing", {})]),
            ]
        ),
        name="Triage",
        tools=[lookup],
        handoffs=[handoff(billing, input_filter=without_tool_calls)],
    )
    chat = triage.session()
    result = await chat.run("my order")
    assert result.agent_name == "Billing"
    assert _texts(billing_model.prompts[0].items) == ["user my order", "assistant Checking."]
    assert len(chat.memory.items) == 6  # everything: input, two turns of calls, two outputs, the answer
    # The next turn of the session is the entry agent's again, on the whole conversation.
    triage_next = FakeModelClient([reply("Triage here.")])
    with triage.override(model=triage_next):
        await chat.run("thanks")
    assert len(triage_next.prompts[0].items) == 7


async def test_an_input_filter_returning_a_broken_conversation_fails_the_run() -> None:
    def keep_outputs_only(items: tuple[Any, ...]) -> list[Any]:
        return [item for item in items if item.get("type") == "function_call_output"]

    billing = Agent(FakeModelClient([reply("never")]), name="Billing")
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        handoffs=[handoff(billing, input_filter=keep_outputs_only)],
    )
    with pytest.raises(HistoryError, match="input_filter of the handoff to 'Billing'"):
        await agent.run("hi")


async def test_a_return_direct_answer_in_the_same_turn_ends_the_run_without_handing_over() -> None:
    agent, _, _, billing_model = _pair(
        [reply(tool_calls=[("status", {"order": "3"}), ("transfer_to_billing", {})])], [], tools=[status]
    )
    result = await agent.run("where is order 3?")
    assert (result.output, result.agent_name) == ("order 3 is on its way", "Triage")
    assert billing_model.prompts == []


async def test_the_run_s_settings_and_headers_go_over_the_target_s_own() -> None:
    billing_model = FakeModelClient([reply("ok")])
    billing = Agent(
        billing_model,
        name="Billing",
        settings=ModelSettings(model="billing-model", temperature=0.9, extra_headers={"x-agent": "billing"}),
    )
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        settings=ModelSettings(model="triage-model", extra_headers={"x-agent": "triage"}),
        handoffs=[billing],
    )
    run_settings = ModelSettings(temperature=0.0, extra_headers={"x-request": "r1"})
    await agent.run("hi", settings=run_settings)
    prompt = billing_model.prompts[0]
    assert (prompt.model, prompt.temperature) == ("billing-model", 0.0)
    assert prompt.extra_headers == {"x-request": "r1", "x-agent": "billing"}


async def test_an_override_of_the_target_applies() -> None:
    billing = Agent(FakeModelClient([]), name="Billing")
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]), name="Triage", handoffs=[billing]
    )
    stand_in = FakeModelClient([reply("from the stand-in")])
    with billing.override(model=stand_in):
        assert (await agent.run("hi")).output == "from the stand-in"


async def test_a_deep_research_target_plans_for_the_run_s_goal_first() -> None:
    researcher = Agent(
        FakeModelClient([reply("Findings.")]), name="Researcher", runtime=DeepResearchRuntime()
    )
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_researcher", {})])]),
        name="Triage",
        handoffs=[researcher],
    )
    events: list[Event] = []
    async with agent.stream("compare the two offers") as run:
        events = [e async for e in run if not isinstance(e, TextDelta)]
    kinds = [type(e) for e in events]
    assert kinds.index(HandedOff) < kinds.index(PlanCreated) < len(kinds) - kinds[::-1].index(StepStarted)
    plan = events[kinds.index(PlanCreated)]
    assert isinstance(plan, PlanCreated)
    assert plan.plan.goal == "compare the two offers"
    assert run.result.output == "Findings."


async def test_cancelling_the_run_while_the_target_answers_leaves_memory_valid() -> None:
    reached = anyio.Event()

    class Hanging(FakeModelClient):
        async def create(self, prompt: Any) -> Any:
            reached.set()
            await anyio.sleep_forever()

    billing = Agent(Hanging([]), name="Billing")
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]), name="Triage", handoffs=[billing]
    )
    chat = agent.session()
    events: list[Event] = []
    with anyio.fail_after(30):
        async with chat.stream("hi", options=AgentOptions(stream=False)) as run:
            async for event in run:
                events.append(event)
                if isinstance(event, StepStarted) and event.step == 1:
                    await reached.wait()
                    await run.cancel()
    assert isinstance(events[-1], RunCancelled)
    assert run.result.stop_reason is StopReason.CANCELLED
    assert run.result.agent_name == "Billing"
    assert _texts(chat.memory.items) == [
        "user hi",
        "calls transfer_to_billing",
        "output Handed the conversation over to Billing.",
    ]


def test_bad_handoffs_are_refused_when_the_agent_is_built() -> None:
    model = FakeModelClient([])
    named = Agent(model, name="Billing")
    with pytest.raises(TypeError, match="handoffs must be a list"):
        Agent(model, handoffs=named)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"handoffs\[0\] is a str"):
        Agent(model, handoffs=["billing"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="no name of its own"):
        Agent(model, handoffs=[Agent(model)])
    with pytest.raises(ValueError, match="two handoffs have the tool name 'transfer_to_billing'"):
        Agent(model, handoffs=[named, Agent(model, name="billing")])
    with pytest.raises(ValueError, match="two tools are named 'transfer_to_billing'"):
        Agent(model, tools=[tool(name="transfer_to_billing")(lambda: 1)], handoffs=[named])
    with pytest.raises(TypeError, match="codeact runtime cannot be handed a run"):
        Agent(model, handoffs=[Agent(model, name="Coder", runtime="codeact")])
    with pytest.raises(TypeError, match="codeact runtime cannot hand its run over"):
        Agent(model, runtime="codeact", handoffs=[named])
    with pytest.raises(TypeError, match="non-empty str"):
        handoff(named, description="  ")
    with pytest.raises(TypeError, match="input_filter"):
        handoff(named, input_filter="all")  # type: ignore[arg-type]
    found = handoff(named, tool_name="to_money_people", description="Money questions.")
    assert isinstance(found, Handoff)
    assert found.tool.spec.description == "Money questions."
    assert Agent(model, handoffs=[found]).tools.names == ("to_money_people",)


async def test_a_chat_agent_hands_over_to_a_responses_agent_over_http() -> None:
    chat_turn = Reply(text="Passing you on.", tool_calls=[("transfer_to_billing", {}, "call_t")])
    async with ScriptedServer([chat_turn, Reply(text="Billing here: refunded.")]) as server:
        billing = Agent(
            OpenAIResponsesModel(base_url=server.base_url, model="billing-m", api_key="k"), name="Billing"
        )
        triage = Agent(
            OpenAIChatModel(base_url=server.base_url, model="triage-m", api_key="k"),
            name="Triage",
            handoffs=[billing],
        )
        async with triage, billing:
            result = await triage.run("refund me")
        first, second = server.requests
    assert (first.api, second.api) == ("chat", "responses")
    assert result.output == "Billing here: refunded."
    assert [t["function"]["name"] for t in first.body["tools"]] == ["transfer_to_billing"]
    assert "tools" not in second.body
    kinds = [(item.get("type"), item.get("role")) for item in second.body["input"]]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("function_call", None),
        ("function_call_output", None),
    ]
    assert second.body["input"][2]["call_id"] == "call_t"
    assert result.agent_name == "Billing"


async def test_a_run_without_handoffs_names_its_own_agent() -> None:
    result = await Agent(FakeModelClient([reply("hi")]), name="Solo").run("hello")
    assert result.agent_name == "Solo"
    assert result.to_dict()["agent_name"] == "Solo"


async def test_step_finished_of_the_handing_step_counts_its_calls() -> None:
    agent, *_ = _pair([reply(tool_calls=[("transfer_to_billing", {})])], [reply("ok")])
    async with agent.stream("hi") as run:
        finished = [e for e in [e async for e in run] if isinstance(e, StepFinished)]
    assert [e.tool_calls for e in finished] == [1, 0]


async def test_a_filtered_view_follows_the_run_s_items_when_memory_trims() -> None:
    billing_model = FakeModelClient(
        [reply(tool_calls=[("lookup", {"order": str(n)})]) for n in range(3)] + [reply("done")]
    )
    billing = Agent(billing_model, name="Billing", tools=[lookup])
    triage = Agent(
        FakeModelClient([reply("Over to billing.", tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        handoffs=[handoff(billing, input_filter=without_tool_calls)],
        memory=lambda: WindowedMemory(max_items=3),  # trims while billing works
    )
    assert (await triage.run("go")).output == "done"
    last = _texts(billing_model.prompts[-1].items)
    assert last[:2] == ["user go", "assistant Over to billing."]
    assert last[2:] == [  # everything billing did since, none of it lost to the window
        "calls lookup",
        "output order 0: shipped",
        "calls lookup",
        "output order 1: shipped",
        "calls lookup",
        "output order 2: shipped",
    ]


# -- review fixes: limits, pauses, sub-runs, filters --------------------------------------------------------


@tool(needs_approval=True)
async def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@pytest.mark.parametrize("limit", ["steps", "tokens"])
async def test_a_step_that_reaches_a_limit_hands_nothing_over(limit: str) -> None:
    options = AgentOptions(max_steps=1) if limit == "steps" else AgentOptions(max_tokens=10)
    triage_turn = reply(tool_calls=[("transfer_to_billing", {})], usage=(8, 4))
    agent, _, _, billing_model = _pair([triage_turn], [], options=options)
    events: list[Event] = []
    async with agent.stream("hi") as run:
        events = [e async for e in run]
    assert run.result.stop_reason is (StopReason.MAX_STEPS if limit == "steps" else StopReason.MAX_TOKENS)
    assert run.result.agent_name == "Triage"
    assert not any(isinstance(e, HandedOff) for e in events)
    assert billing_model.prompts == []


async def test_a_run_paused_on_the_target_resumes_there_with_its_tools() -> None:
    billing_model = FakeModelClient([reply(tool_calls=[("refund", {"order": "9"})]), reply("Billing: done")])
    billing = Agent(billing_model, name="Billing", tools=[refund])
    triage_model = FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])])
    triage = Agent(
        triage_model, name="Triage", handoffs=[billing], options=AgentOptions(tool_approval="defer")
    )
    paused = await triage.run("refund 9")
    assert (paused.stop_reason, paused.agent_name) == (StopReason.APPROVAL_REQUIRED, "Billing")
    (waiting,) = paused.pending_approvals
    events: list[Event] = []
    async with triage.stream(history=paused.all_items, approvals={waiting.call_id: True}) as run:
        events = [e async for e in run]
    resumed = run.result
    assert (resumed.output, resumed.agent_name) == ("Billing: done", "Billing")
    assert [(r.name, r.output) for r in resumed.tool_results] == [("refund", "refunded 9")]
    assert [(e.source, e.target) for e in events if isinstance(e, HandedOff)] == [("Triage", "Billing")]
    assert len(triage_model.prompts) == 1  # the triage was not asked again


async def test_a_transfer_in_a_turn_that_pauses_takes_place_when_the_run_resumes() -> None:
    billing_model = FakeModelClient([reply("Billing here.")])
    billing = Agent(billing_model, name="Billing")
    triage_model = FakeModelClient(
        [reply(tool_calls=[("refund", {"order": "7"}), ("transfer_to_billing", {})])]
    )
    triage = Agent(
        triage_model,
        name="Triage",
        tools=[refund],
        handoffs=[billing],
        options=AgentOptions(tool_approval="defer"),
    )
    paused = await triage.run("refund 7 and pass me on")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    resumed = await triage.run(
        history=paused.all_items, approvals={paused.pending_approvals[0].call_id: True}
    )
    assert (resumed.output, resumed.agent_name) == ("Billing here.", "Billing")
    # The approved call ran with the tools of the agent whose turn made it, before the handoff took place.
    assert [(r.name, r.output) for r in resumed.tool_results] == [("refund", "refunded 7")]
    assert len(triage_model.prompts) == 1


async def test_the_caller_decides_the_approvals_of_a_sub_run_s_handoff_target() -> None:
    asked: list[str] = []

    def decide(request: Any) -> bool:
        asked.append(request.tool)
        return True

    billing = Agent(
        FakeModelClient([reply(tool_calls=[("refund", {"order": "9"})]), reply("refunded")]),
        name="Billing",
        tools=[refund],
    )
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]), name="Triage", handoffs=[billing]
    )
    boss = Agent(
        FakeModelClient([reply(tool_calls=[("triage", {"input": "refund 9"})]), reply("boss done")]),
        tools=[triage.as_tool(description="Support.")],
        options=AgentOptions(tool_approval=decide),
    )
    result = await boss.run("refund order 9")
    assert asked == ["refund"]
    assert result.tool_results[0].output == "refunded"


async def test_the_target_s_forced_tool_choice_holds_for_its_first_step() -> None:
    billing_model = FakeModelClient([reply(tool_calls=[("lookup", {"order": "1"})]), reply("ok")])
    billing = Agent(
        billing_model, name="Billing", tools=[lookup], settings=ModelSettings(tool_choice="required")
    )
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]), name="Triage", handoffs=[billing]
    )
    await agent.run("hi")
    assert [p.tool_choice for p in billing_model.prompts] == ["required", None]


async def test_a_filter_keeping_a_call_without_its_output_shows_a_synthetic_one() -> None:
    def calls_only(items: tuple[Any, ...]) -> list[Any]:
        return [item for item in items if item.get("type") != "function_call_output"]

    billing_model = FakeModelClient([reply("Billing here")])
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("c1", "transfer_to_billing", {})])]),
        name="Triage",
        handoffs=[handoff(Agent(billing_model, name="Billing"), input_filter=calls_only)],
    )
    assert (await agent.run("hi")).output == "Billing here"
    (output,) = [i for i in billing_model.prompts[0].items if i.get("type") == "function_call_output"]
    assert output["call_id"] == "c1"
    assert output["output"].startswith("TOOL_ERROR:")


def test_without_tool_calls_drops_the_reasoning_item_that_led_to_a_call() -> None:
    items = (
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "transfer_to_billing", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Handed over."},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
    )
    kept = without_tool_calls(items)
    assert [(i["type"], i.get("id")) for i in kept] == [
        ("message", None),
        ("reasoning", "rs_2"),
        ("message", None),
    ]


@pytest.mark.parametrize("arguments", ['{"reason": "a billing question"}', ""])
async def test_a_transfer_call_with_arguments_still_hands_over(arguments: str) -> None:
    agent, *_ = _pair([reply(tool_calls=[("transfer_to_billing", arguments)])], [reply("Billing here")])
    result = await agent.run("hi")
    assert (result.output, result.agent_name) == ("Billing here", "Billing")


async def test_output_guardrails_are_told_which_agent_wrote_the_answer() -> None:
    told: list[str] = []

    def record(ctx: Any, answer: str) -> None:
        told.append(ctx.agent_name)

    agent, *_ = _pair(
        [reply(tool_calls=[("transfer_to_billing", {})])], [reply("ok")], output_guardrails=[record]
    )
    await agent.run("hi")
    assert told == ["Billing"]


async def test_async_with_the_entry_agent_enters_its_targets_toolsets() -> None:
    class Server:
        name = "crm"
        entered = 0

        async def __aenter__(self) -> Server:
            self.entered += 1
            return self

        async def __aexit__(self, *exc: object) -> None:
            self.entered -= 1

        async def tools(self) -> list[Any]:
            if not self.entered:
                raise ConnectionError("not connected")
            return [lookup]

    server = Server()
    billing_model = FakeModelClient([reply("Billing here")])
    billing = Agent(billing_model, name="Billing", tools=[server])
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]), name="Triage", handoffs=[billing]
    )
    async with triage:
        assert server.entered == 1
        assert (await triage.run("hi")).agent_name == "Billing"
    assert server.entered == 0
    assert [t.name for t in billing_model.prompts[0].tools] == ["lookup"]


async def test_a_deep_research_agent_that_hands_over_does_not_re_plan_first() -> None:
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        runtime=DeepResearchRuntime(replan_every=1),
        handoffs=[Agent(FakeModelClient([reply("ok")]), name="Billing")],
    )
    async with triage.stream("hi") as run:
        kinds = [type(e) async for e in run]
    assert PlanUpdated not in kinds
    assert kinds.count(PlanCreated) == 1


def _billing_with_refunds(script: list[Any]) -> tuple[Agent[Any], FakeModelClient]:
    billing = Agent(FakeModelClient(script), name="Billing", tools=[refund])
    triage_model = FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])])
    triage = Agent(
        triage_model, name="Triage", handoffs=[billing], options=AgentOptions(tool_approval="defer")
    )
    return triage, triage_model


async def test_a_second_pause_after_a_resume_with_input_resumes_on_the_same_agent() -> None:
    triage, triage_model = _billing_with_refunds(
        [
            reply(tool_calls=[("refund", {"order": "1"})]),
            reply(tool_calls=[("refund", {"order": "2"})]),
            reply("Both refunded."),
        ]
    )
    chat = triage.session()
    first = await chat.run("refund 1")
    second = await chat.run("and 2 too", approvals={first.pending_approvals[0].call_id: True})
    assert (second.stop_reason, second.agent_name) == (StopReason.APPROVAL_REQUIRED, "Billing")
    third = await chat.run(approvals={second.pending_approvals[0].call_id: True})
    assert (third.output, third.agent_name) == ("Both refunded.", "Billing")
    assert [(r.name, r.output) for r in third.tool_results] == [("refund", "refunded 2")]
    assert len(triage_model.prompts) == 1  # the triage was asked once, in the first run


async def test_a_resumed_fresh_run_of_the_entry_agent_stays_with_it() -> None:
    # An earlier run of the conversation handed over; the run that paused began on the triage again.
    billing = Agent(FakeModelClient([reply("Billing: done.")]), name="Billing", tools=[refund])
    triage_model = FakeModelClient(
        [
            reply(tool_calls=[("transfer_to_billing", {})]),
            reply(tool_calls=[("refund", {"order": "3"})]),
            reply("Triage: refunded."),
        ]
    )
    triage = Agent(
        triage_model,
        name="Triage",
        tools=[refund],
        handoffs=[billing],
        options=AgentOptions(tool_approval="defer"),
    )
    chat = triage.session()
    assert (await chat.run("billing please")).agent_name == "Billing"
    paused = await chat.run("refund 3")
    assert paused.agent_name == "Triage"
    resumed = await chat.run(approvals={paused.pending_approvals[0].call_id: True})
    assert (resumed.output, resumed.agent_name) == ("Triage: refunded.", "Triage")


async def test_a_target_resumed_with_an_input_filter_sees_its_own_later_turns_whole() -> None:
    billing_model = FakeModelClient([reply(tool_calls=[("refund", {"order": "4"})]), reply("Refunded.")])
    billing = Agent(billing_model, name="Billing", tools=[refund])
    triage = Agent(
        FakeModelClient([reply("Passing you on.", tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        handoffs=[handoff(billing, input_filter=without_tool_calls)],
        options=AgentOptions(tool_approval="defer"),
    )
    paused = await triage.run("refund 4")
    assert paused.agent_name == "Billing"
    resumed = await triage.run(
        history=paused.all_items, approvals={paused.pending_approvals[0].call_id: True}
    )
    assert resumed.output == "Refunded."
    # The filter made its view of the conversation up to the transfer; the target's own call comes after it,
    # with its output (not an output without its call).
    assert _texts(billing_model.prompts[-1].items) == [
        "user refund 4",
        "assistant Passing you on.",
        "calls refund",
        "output refunded 4",
    ]


async def test_a_transfer_the_step_does_not_offer_does_not_block_one_it_does() -> None:
    ops = Agent(FakeModelClient([]), name="Ops")
    billing = Agent(FakeModelClient([reply("Billing here.")]), name="Billing")
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_ops", {}), ("transfer_to_billing", {})])]),
        name="Triage",
        handoffs=[handoff(ops, enabled=False), billing],
    )
    result = await triage.run("help")
    assert (result.output, result.agent_name) == ("Billing here.", "Billing")
    assert [(r.name, r.error_type) for r in result.tool_results] == [
        ("transfer_to_ops", "unknown_tool"),
        ("transfer_to_billing", None),
    ]


@attrs.frozen
class Escalation:
    reason: str
    urgent: bool = False


async def test_input_type_arguments_reach_on_handoff_before_the_target_answers() -> None:
    seen: list[Any] = []

    async def record(ctx: Any, data: Escalation) -> None:
        seen.append((ctx.deps, ctx.tool_name, data))

    billing, billing_model = _target("Billing", [reply("Billing here.")])
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {"reason": "double charge"})])]),
        name="Triage",
        handoffs=[handoff(billing, input_type=Escalation, on_handoff=record)],
    )
    spec = triage.tools.get("transfer_to_billing")
    assert spec is not None
    assert spec.spec.parameters["required"] == ["reason"]
    result = await triage.run("help", deps="deps")
    assert (result.output, result.agent_name) == ("Billing here.", "Billing")
    assert seen == [("deps", "transfer_to_billing", Escalation("double charge"))]
    assert len(billing_model.prompts) == 1


@pytest.mark.parametrize(
    ("arguments", "error_type"),
    [({"urgent": "very"}, "invalid_arguments"), ({"reason": "x"}, "exception")],
)
async def test_invalid_handoff_data_or_a_failing_on_handoff_hands_nothing_over(
    arguments: dict[str, Any], error_type: str
) -> None:
    def refuse(ctx: Any, data: Escalation) -> None:
        raise RuntimeError("no agent free")

    billing, billing_model = _target("Billing", [])
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", arguments)]), reply("Triage still.")]),
        name="Triage",
        handoffs=[handoff(billing, input_type=Escalation, on_handoff=refuse)],
    )
    result = await triage.run("help")
    assert (result.output, result.agent_name) == ("Triage still.", "Triage")
    assert [r.error_type for r in result.tool_results] == [error_type]
    assert billing_model.prompts == []


async def test_on_handoff_without_input_type_gets_the_call_s_context() -> None:
    calls: list[str] = []
    billing, _ = _target("Billing", [reply("ok")])
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {"ignored": 1})])]),
        name="Triage",
        handoffs=[handoff(billing, on_handoff=lambda ctx: calls.append(ctx.call_id))],
    )
    result = await triage.run("help")
    assert result.agent_name == "Billing"
    assert calls == [result.tool_results[0].call_id]


def test_bad_input_type_or_on_handoff_is_refused_when_the_handoff_is_made() -> None:
    billing, _ = _target("Billing", [])
    with pytest.raises(TypeError, match="class with fields"):
        handoff(billing, input_type=int)
    with pytest.raises(TypeError, match="on_handoff"):
        handoff(billing, on_handoff="log")  # type: ignore[arg-type]


def _target(name: str, script: list[Any]) -> tuple[Agent[str], FakeModelClient]:
    model = FakeModelClient(script)
    return Agent(model, name=name), model


async def test_a_session_whose_window_dropped_the_transfer_resumes_on_the_agent_with_the_open_calls() -> None:
    billing_model = FakeModelClient(
        [reply(tool_calls=[("lookup", {"order": str(i)})]) for i in range(3)]
        + [reply(tool_calls=[("refund", {"order": "9"})]), reply("Billing: done")]
    )
    billing = Agent(billing_model, name="Billing", tools=[lookup, refund])
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("transfer_to_billing", {})])]),
        name="Triage",
        handoffs=[billing],
        options=AgentOptions(tool_approval="defer"),
    )
    chat = triage.session(WindowedMemory(max_items=6))
    paused = await chat.run("refund 9")
    assert not any("transfer" in label for label in _texts(chat.memory.items))
    resumed = await chat.run(approvals={paused.pending_approvals[0].call_id: True})
    assert (resumed.output, resumed.agent_name) == ("Billing: done", "Billing")
    assert [(r.name, r.output) for r in resumed.tool_results] == [("refund", "refunded 9")]


async def test_a_return_direct_answer_in_the_paused_turn_ends_the_resumed_run_without_handing_over() -> None:
    billing_model = FakeModelClient([reply("Billing here.")])
    billing = Agent(billing_model, name="Billing")
    triage = Agent(
        FakeModelClient(
            [
                reply(
                    tool_calls=[
                        ("refund", {"order": "7"}),
                        ("status", {"order": "1"}),
                        ("transfer_to_billing", {}),
                    ]
                )
            ]
        ),
        name="Triage",
        tools=[refund, status],
        handoffs=[billing],
        options=AgentOptions(tool_approval="defer"),
    )
    paused = await triage.run("refund 7, status of 1")
    resumed = await triage.run(
        history=paused.all_items, approvals={paused.pending_approvals[0].call_id: True}
    )
    # As when the call is approved in the run: the turn's answer ends it, and nobody is handed it.
    assert (resumed.stop_reason, resumed.output, resumed.agent_name) == (
        StopReason.FINAL_ANSWER,
        "order 1 is on its way",
        "Triage",
    )
    assert billing_model.prompts == []


async def test_a_memory_of_message_values_resumes_on_the_target() -> None:
    billing = Agent(FakeModelClient([reply("Billing: done")]), name="Billing", tools=[refund])
    triage = Agent(
        FakeModelClient([]), name="Triage", handoffs=[billing], options=AgentOptions(tool_approval="defer")
    )
    memory = InMemoryMemory(
        [
            UserMessage("refund 9"),
            AiMessage(None, tool_calls=(ToolCall("t1", "transfer_to_billing", "{}"),)),
            ToolResultMessage("t1", "Handed the conversation over to Billing."),
            AiMessage(None, tool_calls=(ToolCall("r1", "refund", '{"order": "9"}'),)),
        ]
    )
    resumed = await triage.session(memory).run(approvals={"r1": True})
    assert (resumed.output, resumed.agent_name) == ("Billing: done", "Billing")
    assert [(r.name, r.output) for r in resumed.tool_results] == [("refund", "refunded 9")]

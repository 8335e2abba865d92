"""``AutoModelClient``: a fake model that needs no script (pydantic-ai's ``TestModel``).

It calls every offered tool once, in one turn, with arguments made up from the tool's schema, then answers
with the results as JSON (or ``text=``, ``output=``, or a value made up from the output type's schema),
and keeps to what the prompt allows (``tool_choice``, ``parallel_tool_calls``). CodeAct prompts are refused.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated, Any

import anyio
import attrs
import pytest

from agentflow import Agent, AgentPrompt, Agents, ModelSettings, OutputType, PlanCreated, RejectOutput, tool
from agentflow.agent.items import function_call_item, function_call_output_item, user_item
from agentflow.events import ToolSucceeded
from agentflow.model.events import (
    ModelCompleted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.model.tools import ToolSpec
from agentflow.runtimes.codeact_prompt import CODEACT_INSTRUCTIONS
from agentflow.runtimes.planner import PLANNER_PROMPT, REPLANNER_PROMPT
from agentflow.testing import AutoModelClient, SchemaValueError
from agentflow.testing.auto import CODEACT_MARK, NO_TOOL_CALLS, PLANNER_MARK
from agentflow.tools import Param

calls: list[str] = []


@tool
def get_price(sku: str) -> float:
    """The price of a product."""
    calls.append(f"get_price({sku})")
    return {"A-1": 9.5}.get(sku, 1.0)


@tool
def stock(sku: str, warehouse: int = 1) -> int:
    """Units in stock."""
    calls.append(f"stock({sku}, {warehouse})")
    return 3


@tool
def broken(n: int) -> int:
    """Always fails."""
    raise ValueError("boom")


@attrs.frozen
class Quote:
    sku: str
    price: float


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    calls.clear()


async def test_every_tool_is_called_once_in_one_turn_then_the_results_are_the_answer() -> None:
    model = AutoModelClient()
    result = await Agent(model, tools=[get_price, stock]).run("How much is A-1?")

    assert calls == ["get_price(a)", "stock(a, 1)"]  # made-up arguments; optional ones keep their defaults
    assert result.output_text == '{"get_price":"1.0","stock":"3"}'
    assert len(model.prompts) == 2
    assert [(c.name, c.arguments) for c in model.last_tool_calls] == [
        ("get_price", '{"sku":"a"}'),
        ("stock", '{"sku":"a"}'),
    ]
    assert model.tool_calls == list(model.last_tool_calls) == list(result.tool_calls)
    assert [len(r.tool_calls) for r in model.results] == [2, 0]


async def test_without_tools_it_answers_at_once() -> None:
    model = AutoModelClient()
    assert (await Agent(model).run("hi")).output_text == NO_TOOL_CALLS == "success (no tool calls)"
    assert model.last_tool_calls == ()


async def test_call_tools_names_the_tools_to_call() -> None:
    model = AutoModelClient(call_tools=["stock", "not_offered"])
    result = await Agent(model, tools=[get_price, stock]).run("x")
    assert calls == ["stock(a, 1)"]
    assert result.output_text == '{"stock":"3"}'

    model = AutoModelClient(call_tools=[])
    result = await Agent(model, tools=[get_price, stock]).run("x")
    assert result.output_text == NO_TOOL_CALLS
    assert len(model.prompts) == 1


async def test_text_is_the_final_answer() -> None:
    result = await Agent(AutoModelClient(text="It costs 9.5 EUR."), tools=[get_price]).run("x")
    assert result.output_text == "It costs 9.5 EUR."
    assert calls == ["get_price(a)"]


async def test_arguments_of_your_own_are_sent_and_the_others_made_up() -> None:
    model = AutoModelClient(arguments={"stock": {"warehouse": 7}, "get_price": {"sku": "A-1"}})
    result = await Agent(model, tools=[get_price, stock]).run("x")
    assert calls == ["get_price(A-1)", "stock(a, 7)"]
    assert result.output_text == '{"get_price":"9.5","stock":"3"}'


async def test_a_structured_answer_is_made_up_from_the_output_type() -> None:
    model = AutoModelClient()
    result = await Agent(model, tools=[get_price], output_type=Quote).run("x")
    assert result.output == Quote("a", 1.5)  # the leaf counter starts again for the answer
    assert calls == ["get_price(a)"]


async def test_a_prompted_output_type_s_schema_is_found_in_the_system_prompt() -> None:
    agent = Agent(AutoModelClient(), output_type=OutputType(list[int], mode="prompted"))
    result = await agent.run("x")
    assert result.output == [0]


async def test_output_is_the_structured_answer() -> None:
    model = AutoModelClient(output=Quote("A-1", 9.5))
    result = await Agent(model, tools=[get_price], output_type=Quote).run("x")
    assert result.output == Quote("A-1", 9.5)
    assert model.results[-1].output_text == '{"sku":"A-1","price":9.5}'


async def test_an_answer_sent_back_is_answered_again_without_calling_the_tools_again() -> None:
    rejected: list[Quote] = []

    def once(quote: Quote) -> None:
        if not rejected:
            rejected.append(quote)
            raise RejectOutput("try again")

    agent = Agent(AutoModelClient(), tools=[get_price], output_type=OutputType(Quote, validators=[once]))
    result = await agent.run("x")
    assert result.output == Quote("a", 1.5)
    assert calls == ["get_price(a)"]


async def test_a_session_s_next_question_calls_the_tools_again() -> None:
    chat = Agent(AutoModelClient(), tools=[get_price]).session()
    await chat.run("one")
    await chat.run("two")
    assert calls == ["get_price(a)", "get_price(a)"]


async def test_a_failed_tool_s_error_is_in_the_answer() -> None:
    result = await Agent(AutoModelClient(), tools=[broken]).run("x")
    assert result.output_text.startswith('{"broken":"TOOL_ERROR: ')
    assert "boom" in result.output_text


async def test_tool_choice_none_calls_nothing_and_a_forced_function_only_that_one() -> None:
    model = AutoModelClient()
    agent = Agent(model, tools=[get_price, stock], settings=ModelSettings(tool_choice="none"))
    assert (await agent.run("x")).output_text == NO_TOOL_CALLS

    forced = ModelSettings(tool_choice={"type": "function", "function": {"name": "stock"}})
    model = AutoModelClient(call_tools=["get_price"])
    await Agent(model, tools=[get_price, stock], settings=forced).run("x")
    # Forced first, whatever call_tools says; then, the choice reset, the tools call_tools names.
    assert [[c.name for c in r.tool_calls] for r in model.results] == [["stock"], ["get_price"], []]


async def test_without_parallel_tool_calls_it_calls_one_tool_per_turn() -> None:
    model = AutoModelClient()
    agent = Agent(model, tools=[get_price, stock], settings=ModelSettings(parallel_tool_calls=False))
    result = await agent.run("x")
    assert [[c.name for c in r.tool_calls] for r in model.results] == [["get_price"], ["stock"], []]
    assert result.output_text == '{"get_price":"1.0","stock":"3"}'


async def test_a_stream_is_the_events_a_provider_sends() -> None:
    model = AutoModelClient(chunk_size=4)
    prompt = AgentPrompt(tools=[get_price.spec], items=[user_item("x")])
    events = [e async for e in model.create_stream(prompt)]
    assert [type(e) for e in events] == [
        ToolCallStarted,
        ToolCallArgumentsDelta,
        ToolCallArgumentsDelta,
        ToolCallArgumentsDelta,
        ToolCallReady,
        *[type(e) for e in events[5:-1]],
        ModelCompleted,
    ]
    assert model.streams_opened == model.streams_closed == 1

    agent = Agent(model, tools=[get_price])
    async with agent.stream("x") as run:
        seen = [event async for event in run]
    assert any(isinstance(e, TextDelta) for e in seen)
    assert any(isinstance(e, ToolSucceeded) for e in seen)
    assert model.streams_open == 0


async def test_the_same_seed_makes_the_same_calls_and_another_seed_others() -> None:
    prompt = AgentPrompt(tools=[stock.spec], items=[user_item("x")])
    first, again = AutoModelClient(seed=5), AutoModelClient(seed=5)
    other = AutoModelClient(seed=6, fill_optional=True)
    assert (await first.create(prompt)).tool_calls[0].arguments == '{"sku":"f"}'
    assert (await again.create(prompt)).tool_calls[0].arguments == '{"sku":"f"}'
    assert (await other.create(prompt)).tool_calls[0].arguments == '{"sku":"g","warehouse":7}'


async def test_the_answer_carries_a_deterministic_usage_estimate() -> None:
    first = await Agent(AutoModelClient(), tools=[get_price]).run("How much is A-1?")
    second = await Agent(AutoModelClient(), tools=[get_price]).run("How much is A-1?")
    assert first.usage == second.usage
    assert first.usage.input_tokens > 100  # 50 per call, plus the prompt's words
    assert first.usage.output_tokens > 0


async def test_concurrent_runs_on_one_model_do_not_mix() -> None:
    model = AutoModelClient()
    agent = Agent(model, tools=[get_price])
    results: list[str] = []

    async def one() -> None:
        results.append((await agent.run("x")).output_text)

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(one)
    assert results == ['{"get_price":"1.0"}'] * 5
    assert len(model.prompts) == 10


@pytest.mark.parametrize(
    "items",
    [
        [user_item("x"), function_call_item("c1", "get_price", "{}"), function_call_output_item("c1", "9.5")],
        [
            UserMessage("x"),
            AiMessage(tool_calls=(ToolCall("c1", "get_price", "{}"),)),
            ToolResultMessage("c1", "9.5"),
        ],
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "get_price"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "9.5"},
        ],
    ],
    ids=["responses items", "messages", "chat mappings"],
)
async def test_tool_results_are_read_from_every_item_shape(items: list[Any]) -> None:
    prompt = AgentPrompt(tools=[get_price.spec], items=items)
    assert (await AutoModelClient().create(prompt)).output_text == '{"get_price":"9.5"}'


async def test_a_codeact_agent_is_refused_with_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"CodeAct.*FakeModelClient"):
        await Agent(AutoModelClient(), runtime="codeact", tools=[get_price]).run("x")
    prompt = AgentPrompt(system_prompt=CODEACT_INSTRUCTIONS)
    with pytest.raises(TypeError, match="CodeAct"):
        AutoModelClient().create_stream(prompt)  # when the call is made, before anything streams


async def test_a_deep_research_planner_gets_a_plan() -> None:
    model = AutoModelClient()
    agent = Agents.deep_research(model, tools=[get_price], planner="model")
    plans: list[PlanCreated] = []
    async with agent.stream("Compare prices") as run:
        async for event in run:
            if isinstance(event, PlanCreated):
                plans.append(event)
        result = run.result
    assert [s.text for s in plans[0].plan.steps] == ["Call the tools", "Answer from their results"]
    assert result.output_text == '{"get_price":"1.0"}'


def test_the_prompts_it_recognises_are_the_runtimes_own() -> None:
    assert CODEACT_INSTRUCTIONS.startswith(CODEACT_MARK)
    assert PLANNER_PROMPT.startswith(PLANNER_MARK)
    assert REPLANNER_PROMPT.startswith(PLANNER_MARK)


@tool
def coded(code: Annotated[str, Param(schema={"pattern": "^(?=.*Q).+$"})]) -> str:
    """Takes a code with a Q (a lookahead wanting a character the writer never tries)."""
    return code


async def test_arguments_it_cannot_make_name_the_tool_and_the_way_out() -> None:
    with pytest.raises(
        SchemaValueError, match=r"tool 'coded' \(code: no string .*arguments=\{'coded'"
    ) as caught:
        await Agent(AutoModelClient(), tools=[coded]).run("x")
    assert caught.value.path == ".code"
    result = await Agent(AutoModelClient(arguments={"coded": {"code": "Q-1"}}), tools=[coded]).run("x")
    assert result.output_text == '{"coded":"Q-1"}'


async def test_an_answer_it_cannot_make_says_output_is_the_way_out() -> None:
    spec = ToolSpec("t")
    prompt = AgentPrompt(
        tools=[spec],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "integer", "minimum": 2, "maximum": 1}},
        },
    )
    model = AutoModelClient(call_tools=[])
    with pytest.raises(SchemaValueError, match=r"structured answer .*output="):
        await model.create(prompt)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"call_tools": "get_price"}, "write \\['get_price'\\]"),
        ({"call_tools": [1]}, "tool names"),
        ({"call_tools": 3}, "'all' or a list"),
        ({"text": "a", "output": 1}, "not both"),
        ({"text": 3}, "text must be a str"),
        ({"output": object()}, "output= must be a JSON value"),
        ({"arguments": {"t": 3}}, "tool name"),
        ({"arguments": {"t": {"x": object()}}}, "JSON values"),
        ({"seed": "1"}, "seed must be an int"),
    ],
)
def test_bad_options_are_type_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(TypeError, match=words):
        AutoModelClient(**options)


async def test_it_works_as_an_application_agent_s_override() -> None:
    agent = Agent(AutoModelClient(text="unused"), tools=[get_price])
    fake = AutoModelClient()
    with agent.override(model=fake):
        result = await agent.run("x")
    assert result.output_text == '{"get_price":"1.0"}'
    assert repr(fake) == "AutoModelClient(2 calls, 1 tool calls)"
    await fake.aclose()
    assert fake.closed


def test_importing_agentflow_testing_leaves_the_auto_model_unloaded() -> None:
    code = (
        "import sys, agentflow.testing; "
        "names = ('agentflow.testing.auto', 'agentflow.testing.schema_values', 'agentflow.runtimes'); "
        "print([m for m in names if m in sys.modules]); "
        "from agentflow.testing import AutoModelClient, schema_value; print(AutoModelClient.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "agentflow.testing.auto"]

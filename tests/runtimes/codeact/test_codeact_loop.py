"""The CodeAct loop end to end: the real OpenAI model classes against a ScriptedServer that answers in the
CodeAct protocol, code running in the real ProcessSandbox."""

from __future__ import annotations

from typing import Any, Literal

import anyio
import orjson
import pytest
from codeact_support import (
    Recorder,
    assert_codeact_memory_valid,
    code,
    codeact_agent,
    final,
    outcome,
    says,
    seen_results,
    system_texts,
)

from agentflow.agent.options import AgentOptions
from agentflow.events import (
    CodeExecuted,
    StepFinished,
    ToolCallRequested,
    ToolFailed,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import TextDelta
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.runtimes.codeact_prompt import (
    CODEACT_INSTRUCTIONS,
    FINAL_STEP_REMINDER,
    unsupported_language_text,
)
from agentflow.testing import Reply

MULTI_TOOL = """\
prices = map_tool("get_price", [{"item": i} for i in ("apple", "pear")])
stock = parallel(("stock-level", {"item": "apple"}), ("stock-level", {"item": "pear"}))
print("prices", prices, "stock", stock)
sum(p * s for p, s in zip(prices, stock))"""


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_multi_tool_computation_runs_as_code_and_its_value_is_the_answer(
    protocol: Literal["chat", "responses"],
) -> None:
    async with codeact_agent([says(code(MULTI_TOOL))], protocol=protocol, system_prompt="Be exact.") as (
        agent,
        server,
    ):
        recorder = Recorder(agent)
        with anyio.fail_after(20):  # a deadlock guard only
            result = await agent.run("What is the stock of apples and pears worth?")

    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "8.0"  # 0.5 * 10 + 0.75 * 4, the step's value (react is off)
    assert result.steps == 1
    assert result.usage.total_tokens == 15
    assert [(c.name, orjson.loads(c.arguments)) for c in result.tool_calls] == [
        ("get_price", {"item": "apple"}),
        ("get_price", {"item": "pear"}),
        ("stock-level", {"item": "apple"}),
        ("stock-level", {"item": "pear"}),
    ]
    assert [c.id for c in result.tool_calls] == [r.call_id for r in result.tool_results]
    assert [r.output for r in result.tool_results] == ["0.5", "0.75", "10", "4"]
    for kind in (ToolCallRequested, ToolStarted, ToolSucceeded):
        assert len(recorder.of(kind)) == 4
    [executed] = recorder.of(CodeExecuted)
    assert (executed.ok, executed.result, executed.code) == (True, 8.0, MULTI_TOOL)
    assert executed.stdout == "prices [0.5, 0.75] stock [10, 4]\n"
    assert recorder.of(StepFinished)[0].tool_calls == 4
    assert system_texts(result.new_items) == [
        'CODE_RESULT: {"result":8.0,"stdout":"prices [0.5, 0.75] stock [10, 4]\\n"}'
    ]
    assert_codeact_memory_valid(result.new_items)
    [request] = server.requests
    body = request.body
    assert "tools" not in body  # tools are text, never protocol tools
    assert "tool_choice" not in body
    system = body["messages"][0]["content"] if protocol == "chat" else body["instructions"]
    assert system.startswith("Be exact.\n\n" + CODEACT_INSTRUCTIONS)
    assert "- get_price(item)\n  The unit price of an item, in euros." in system
    assert '- call_tool("stock-level", {"item": ...})' in system


async def test_state_persists_across_steps_and_with_react_the_model_answers() -> None:
    def second(body: Any) -> Reply:
        assert seen_results(body) == ['CODE_RESULT: {"result":{"apple":0.5,"melon":2.0}}']
        return says(code("round(sum(prices.values()) * count, 2)"))

    def third(body: Any) -> Reply:
        assert seen_results(body)[-1] == 'CODE_RESULT: {"result":7.5}'
        return says(final("Three of each cost 7.50 euros."))

    first = code("count = 3\nprices = {i: get_price(item=i) for i in ('apple', 'melon')}\nprices")
    async with codeact_agent([says(first), second, third], codeact=CodeActOptions(react=True)) as (
        agent,
        server,
    ):
        recorder = Recorder(agent)
        result = await agent.run("What do three apples and three melons cost?")

    assert not server.errors
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "Three of each cost 7.50 euros."
    assert result.steps == 3
    assert result.usage.total_tokens == 45  # summed over the three model calls
    assert [e.result for e in recorder.of(CodeExecuted)] == [{"apple": 0.5, "melon": 2.0}, 7.5]
    assert_codeact_memory_valid(result.new_items)


async def test_with_react_off_a_failed_step_goes_back_to_the_model() -> None:
    def retry(body: Any) -> Reply:
        kind, payload = outcome(seen_results(body)[-1])
        assert kind == "CODE_ERROR"
        assert payload["error"].endswith("ZeroDivisionError: division by zero")
        assert payload["stdout"] == "dividing\n"
        return says(code("21 * 2"))

    async with codeact_agent([says(code("print('dividing')\n1 / 0")), retry]) as (agent, server):
        result = await agent.run("Compute.")

    assert not server.errors
    assert (result.stop_reason, result.output_text, result.steps) == (StopReason.FINAL_ANSWER, "42", 2)


async def test_with_react_off_a_step_without_a_value_ends_with_what_it_printed() -> None:
    async with codeact_agent([says(code("x = 6 * 7\nprint(f'The answer is {x}.')"))]) as (agent, _):
        result = await agent.run("Compute.")
    assert result.output_text == "The answer is 42."


async def test_with_react_off_a_step_with_no_value_and_no_output_goes_back_to_the_model() -> None:
    async with codeact_agent([says(code("x = 6 * 7")), says(code("x"))]) as (agent, _):
        result = await agent.run("Compute.")
    assert (result.output_text, result.steps) == ("42", 2)


async def test_final_answer_in_code_ends_the_run_even_with_react_on() -> None:
    turns = [says(code("final_answer({'total': get_price(item='melon') * 2})"))]
    async with codeact_agent(turns, codeact=CodeActOptions(react=True)) as (agent, _):
        result = await agent.run("Two melons?")
    assert (result.stop_reason, result.output_text, result.steps) == (
        StopReason.FINAL_ANSWER,
        '{"total":4.0}',
        1,
    )
    assert system_texts(result.new_items) == ['CODE_RESULT: {"result":{"total":4.0}}']


async def test_a_fenced_answer_with_prose_runs_its_code() -> None:
    answer = "Let me look that up.\n```json\n" + code("get_price(item='pear')") + "\n```\nOne moment."
    async with codeact_agent([says(answer)]) as (agent, _):
        result = await agent.run("Pear price?")
    assert result.output_text == "0.75"


async def test_an_answer_that_is_not_the_protocol_is_the_final_text() -> None:
    async with codeact_agent([says("Pears cost 0.75 euros.")], codeact=CodeActOptions(react=True)) as (
        agent,
        _,
    ):
        result = await agent.run("Pear price?")
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "Pears cost 0.75 euros.")


async def test_code_cut_at_the_token_limit_is_not_run_and_the_model_writes_shorter_code() -> None:
    cut = Reply(text='{"type": "code", "language": "python", "code": "total = sum(', finish_reason="length")

    def shorter(body: Any) -> Reply:
        kind, payload = outcome(seen_results(body)[-1])
        assert kind == "CODE_ERROR"
        assert payload["error"].startswith("not run: your code was cut at the output-token limit")
        return says(code("sum(range(4))"))

    async with codeact_agent([cut, shorter], codeact=CodeActOptions(react=False)) as (agent, server):
        recorder = Recorder(agent)
        result = await agent.run("Sum it.")
    assert not server.errors
    assert (result.stop_reason, result.output_text, result.steps) == (StopReason.FINAL_ANSWER, "6", 2)
    assert [(e.ok, e.error_type) for e in recorder.of(CodeExecuted)] == [(False, "not_run"), (True, None)]
    assert [t.split(":")[0] for t in system_texts(result.new_items)] == ["CODE_ERROR", "CODE_RESULT"]


async def test_prose_cut_at_the_token_limit_is_truncated_not_final() -> None:
    cut = Reply(text="The total of the first four numbers is", finish_reason="length")
    async with codeact_agent([cut], codeact=CodeActOptions(react=True)) as (agent, _):
        result = await agent.run("Sum it.")
    assert (result.stop_reason, result.output_text) == (
        StopReason.TRUNCATED,
        "The total of the first four numbers is",
    )


async def test_correct_format_sends_prose_back_up_to_twice_in_a_row() -> None:
    def corrected(body: Any) -> Reply:
        [text] = seen_results(body)
        assert text.startswith("PROTOCOL_ERROR: your last answer was not a CodeAct JSON object (")
        return says(code("6 * 7"))

    def prose_again(body: Any) -> Reply:
        assert seen_results(body)[-1] == 'CODE_RESULT: {"result":42}'
        return says("It is 42, I think.")

    def still_prose(body: Any) -> Reply:
        assert seen_results(body)[-1].startswith("PROTOCOL_ERROR: ")  # the count starts again after code
        return says("Really, 42.")

    def prose_once_more(body: Any) -> Reply:
        assert seen_results(body)[-1].startswith("PROTOCOL_ERROR: ")  # the second in a row
        return says("42, as I said.")

    options = CodeActOptions(react=True, correct_format=True)
    turns = [says("Hmm, let me think."), corrected, prose_again, still_prose, prose_once_more]
    async with codeact_agent(turns, codeact=options) as (agent, server):
        result = await agent.run("Compute.")
    assert not server.errors
    assert (result.stop_reason, result.output_text, result.steps) == (
        StopReason.FINAL_ANSWER,
        "42, as I said.",
        5,
    )
    assert [t.split(":")[0] for t in system_texts(result.new_items)] == [
        "PROTOCOL_ERROR",
        "CODE_RESULT",
        "PROTOCOL_ERROR",
        "PROTOCOL_ERROR",
    ]


async def test_code_in_another_language_gets_a_code_error_saying_only_python_runs() -> None:
    def retry(body: Any) -> Reply:
        kind, payload = outcome(seen_results(body)[-1])
        assert kind == "CODE_ERROR"
        assert payload == {"error": unsupported_language_text("javascript")}
        assert payload["error"].startswith('unsupported language "javascript": only Python is supported')
        return says(code("40 + 2"))

    async with codeact_agent([says(code("console.log(42)", "javascript")), retry]) as (agent, server):
        recorder = Recorder(agent)
        result = await agent.run("Compute.")
    assert not server.errors
    assert result.output_text == "42"
    assert [e.ok for e in recorder.of(CodeExecuted)] == [False, True]


async def test_a_failing_tool_reaches_the_code_as_a_tool_error_and_the_model_reads_it() -> None:
    source = (
        "try:\n"
        "    get_price(item='kiwi')\n"
        "except ToolError as error:\n"
        "    print('caught', str(error)[:11])\n"
        "get_price(colour='red')"
    )
    async with codeact_agent([says(code(source)), says(final("No kiwis."))]) as (agent, _):
        recorder = Recorder(agent)
        result = await agent.run("Kiwi price?")
    assert [(r.ok, r.error_type) for r in result.tool_results] == [
        (False, "exception"),
        (False, "invalid_arguments"),
    ]
    assert len(recorder.of(ToolFailed)) == 2
    kind, payload = outcome(system_texts(result.new_items)[0])
    assert kind == "CODE_ERROR"
    assert payload["stdout"] == "caught TOOL_ERROR:\n"
    assert 'TOOL_ERROR: {"errorType":"invalid_arguments"' in payload["error"]
    assert result.output_text == "No kiwis."


async def test_max_tool_calls_counts_the_calls_made_from_code() -> None:
    source = (
        "got = []\n"
        "for item in ('apple', 'pear', 'melon'):\n"
        "    try:\n"
        "        got.append(get_price(item=item))\n"
        "    except ToolError as error:\n"
        "        got.append('refused' if 'limit of 2 tool calls' in str(error) else str(error))\n"
        "got"
    )
    options = AgentOptions(max_tool_calls=2)
    async with codeact_agent([says(code(source))], codeact=CodeActOptions(react=True), options=options) as (
        agent,
        server,
    ):
        recorder = Recorder(agent)
        result = await agent.run("Prices?")
    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    assert len(server.requests) == 1
    assert [(r.ok, r.error_type) for r in result.tool_results] == [
        (True, None),
        (True, None),
        (False, "cancelled"),
    ]
    assert system_texts(result.new_items) == ['CODE_RESULT: {"result":[0.5,0.75,"refused"]}']
    assert [type(e).__name__ for e in recorder.events if isinstance(e, ToolCallRequested | ToolFailed)][
        -2:
    ] == [
        "ToolCallRequested",
        "ToolFailed",
    ]
    assert_codeact_memory_valid(result.new_items)


async def test_with_react_off_a_step_that_used_up_the_tool_calls_still_answers_with_its_value() -> None:
    source = (
        "got = []\n"
        "for item in ('apple', 'pear'):\n"
        "    try:\n"
        "        got.append(get_price(item=item))\n"
        "    except ToolError:\n"
        "        got.append(None)\n"
        "got"
    )
    options = AgentOptions(max_tool_calls=1)
    async with codeact_agent([says(code(source))], options=options) as (agent, server):
        result = await agent.run("Prices?")
    assert len(server.requests) == 1
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "[0.5,null]")
    assert [(r.ok, r.error_type) for r in result.tool_results] == [(True, None), (False, "cancelled")]


async def test_max_steps_with_a_final_answer_call_reminds_the_model_and_never_runs_its_code() -> None:
    def last_call(body: Any) -> Reply:
        last = body["messages"][-1]
        assert last["role"] == "user"
        assert last["content"].endswith(FINAL_STEP_REMINDER)
        assert "tools" not in body
        return says(code("'still coding'"))

    options = AgentOptions(max_steps=2, on_max_steps="final_answer")
    turns = [says(code("1")), says(code("2")), last_call]
    async with codeact_agent(turns, codeact=CodeActOptions(react=True), options=options) as (agent, server):
        recorder = Recorder(agent)
        result = await agent.run("Count.")
    assert not server.errors
    assert (result.stop_reason, result.steps, result.output_text) == (StopReason.MAX_STEPS, 3, "")
    assert (
        system_texts(result.new_items)[-1]
        == 'CODE_ERROR: {"error":"not run: the run reached its step limit"}'
    )
    assert [e.ok for e in recorder.of(CodeExecuted)] == [True, True, False]
    assert_codeact_memory_valid(result.new_items)


async def test_a_reached_token_budget_stops_before_running_code() -> None:
    options = AgentOptions(max_tokens=10)
    async with codeact_agent([says(code("1 + 1"), usage=(8, 4))], options=options) as (agent, _):
        recorder = Recorder(agent)
        result = await agent.run("Add.")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert system_texts(result.new_items) == [
        'CODE_ERROR: {"error":"not run: the run reached its token budget (10 tokens)"}'
    ]
    assert [e.ok for e in recorder.of(CodeExecuted)] == [False]


async def test_a_streamed_run_publishes_the_answer_text_and_code_events_in_order() -> None:
    async with codeact_agent([Reply(text=code("get_price(item='apple')"), chunk_size=7)]) as (agent, server):
        names: list[str] = []
        async with agent.stream("Apple price?") as run:
            async for event in run:
                names.append(type(event).__name__)
    assert server.requests[0].stream
    assert run.result.output_text == "0.5"
    kept = [n for n in names if n not in ("TextDelta", "UsageReported")]
    assert kept == [
        "RunStarted",
        "StepStarted",
        "ModelRequest",
        "ModelCompleted",
        "CodeStarted",
        "ToolCallRequested",
        "ToolStarted",
        "ToolSucceeded",
        "CodeExecuted",
        "StepFinished",
        "RunFinished",
    ]
    assert names.count("TextDelta") > 1
    assert TextDelta.__name__ in names

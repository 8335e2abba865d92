"""Malformed model answers never become the user's final answer: almost-JSON protocol objects are read as
meant, fenced Python runs, and what still cannot be used goes back to the model a bounded number of times."""

from __future__ import annotations

from typing import Any

import pytest
from codeact_support import code, final, get_price, item_text, system_texts

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import CodeExecuted, RunFailed
from agentflow.model.response import FinishReason
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_protocol import CodeMessage, FinalMessage, NotProtocol, parse_answer
from agentflow.testing import FakeModelClient, reply

# --- almost-JSON protocol objects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            r'{"type": "code", "language": "python", "code": "import re\nre.findall(' + "'\\d+'" + ', s)"}',
            CodeMessage("import re\nre.findall('\\d+', s)"),
        ),
        (
            r'{"type": "final", "output": "Paths like C:\Users are Windows paths"}',
            FinalMessage("Paths like C:\\Users are Windows paths"),
        ),
        (
            '{"type": "final", "output": "The book is called "Dune" and costs 9 EUR."}',
            FinalMessage('The book is called "Dune" and costs 9 EUR.'),
        ),
        (
            '{"type": "code", "language": "python", "code": "print("hi")"}',
            CodeMessage('print("hi")'),
        ),
        (
            '{"type": "code", "code": "d = {"a": "b"}\\nd["a"]", "language": "python"}',
            CodeMessage('d = {"a": "b"}\nd["a"]'),
        ),
        ('{"type": "code", "language": "python", "code": "print(1)",}', CodeMessage("print(1)")),
        (
            # Fenced: prose after the fence, even with a quote and a brace, is not part of the object.
            '```json\n{"type": "final", "output": "It is "x"."}\n```\nHope {"this"} helps"}',
            FinalMessage('It is "x".'),
        ),
    ],
    ids=[
        "regex-escape",
        "windows-path",
        "quotes-in-output",
        "quotes-in-code",
        "member-after-code",
        "comma",
        "fence",
    ],
)
def test_almost_json_protocol_objects_are_read_as_meant(text: str, expected: object) -> None:
    assert parse_answer(text) == expected


def test_in_a_repaired_object_json_escapes_keep_their_meaning_and_others_stay_as_written() -> None:
    text = r'{"type": "final", "output": "caf\u00e9 \ud83d\ude00\ttab \"q\" \d It\'s"}'
    assert parse_answer(text) == FinalMessage('café 😀\ttab "q" \\d It\'s')
    # In code, ``\'`` may be Python's own escape (``'it\'s'``): it stays as written.
    assert parse_answer(r'{"type": "code", "code": "s = ' + "'it\\'s'" + r' \d"}') == CodeMessage(
        "s = 'it\\'s' \\d"
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "search", "query": "x\\d"}',  # not a code or final object
        '{"type": "final", "answer": "x\\d"}',  # an unknown key
        '{"type": "code", "code": print("hi")}',  # a value that is not a string
        '{"type": "code", "code": "x = 1\\nfor i in range(',  # never ends
    ],
)
def test_what_is_not_a_protocol_object_is_not_repaired_into_one(text: str) -> None:
    assert isinstance(parse_answer(text), NotProtocol)


# --- fenced code -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'll compute it.\n```python\nx = get_price(item='apple')\nx * 2\n```",
        "Thought: I need the price.\nCode:\n```py\nx = get_price(item='apple')\nx * 2\n```<end_code>",
        "Thought: x\n<code>\nx = get_price(item='apple')\nx * 2\n</code>",
    ],
    ids=["python-fence", "smolagents", "code-tag"],
)
def test_fenced_python_without_json_is_a_code_message(text: str) -> None:
    assert parse_answer(text) == CodeMessage("x = get_price(item='apple')\nx * 2")


def test_several_fenced_blocks_are_joined_and_other_fences_ignored() -> None:
    text = "```python\na = 1\n```\nthen\n```json\n{}\n```\nand\n```py\n    a + 1\n```"
    assert parse_answer(text) == CodeMessage("a = 1\n\na + 1")


def test_a_protocol_object_wins_over_fenced_code() -> None:
    text = "```python\nprint('draft')\n```\n" + code("print('real')")
    assert parse_answer(text) == CodeMessage("print('real')")


@pytest.mark.parametrize(
    ("text", "attempt"),
    [
        ('{"type": "final", "output": 4,, }', "final"),
        ("{'type': 'code', 'code': 'print(1)'}", "code"),
        ("Let me compute.\n```python\nx = sum(", "code"),
        ('```json\n{"type": "search"', "other"),
        ('{"answer": 42}', None),
        ("Paris.", None),
        ("", None),
    ],
)
def test_what_an_unreadable_answer_tried_to_be_is_known(text: str, attempt: str | None) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer.attempt == attempt


# --- the runtime: what becomes of such answers -------------------------------------------------------------


async def run(
    script: list[Any], *, options: AgentOptions | None = None, **codeact: Any
) -> tuple[AgentResult, FakeModelClient, list[Any]]:
    fake = FakeModelClient(script)
    agent = Agent(
        fake,
        runtime=CodeActRuntime(CodeActOptions(**codeact)),
        tools=[get_price],
        options=options or AgentOptions(),
    )
    events: list[Any] = []
    agent.on(None, events.append)
    try:
        result = await agent.run("Price of an apple, doubled?")
    finally:
        await agent.aclose()
    return result, fake, events


def last_system_text(prompt: AgentPrompt) -> str:
    return [item_text(i) for i in prompt.items if isinstance(i, dict) and i.get("role") == "system"][-1]


@pytest.mark.parametrize("correct_format", [False, True])
async def test_fenced_code_runs_instead_of_being_the_answer(correct_format: bool) -> None:
    fenced = "I'll compute it.\n```python\nx = get_price(item='apple')\nx * 2\n```"
    result, fake, events = await run([reply(fenced)], correct_format=correct_format)
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "1.0")
    assert len(fake.prompts) == 1
    assert [e.code for e in events if isinstance(e, CodeExecuted)] == ["x = get_price(item='apple')\nx * 2"]


async def test_code_with_a_regex_escape_runs() -> None:
    answer = r'{"type":"code","language":"python","code":"import re\nre.findall(' + "'\\d+', 'a1b22')" + '"}'
    result, _, _ = await run([reply(answer)])
    assert result.output_text == '["1","22"]'


async def test_a_final_answer_with_stray_quotes_is_its_output_not_raw_json() -> None:
    result, _, _ = await run([reply('{"type": "final", "output": "It is called "Dune"."}')])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, 'It is called "Dune".')


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        ('{"type": "final", "output": 4,, }', "the JSON object is not valid JSON"),
        ('{"type": "lookup", "item": "apple"}', '"type" must be "code" or "final", not "lookup"'),
        ("", "it was empty"),
    ],
    ids=["unreadable-final", "unknown-type", "empty"],
)
async def test_an_unusable_answer_goes_back_to_the_model_whatever_correct_format_says(
    first: str, reason: str
) -> None:
    def second(prompt: AgentPrompt) -> Any:
        text = last_system_text(prompt)
        assert text.startswith("PROTOCOL_ERROR: your last answer was not a CodeAct JSON object (" + reason)
        return reply(final("2 x 0.5 = 1.0"))

    result, fake, _ = await run([reply(first), second])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "2 x 0.5 = 1.0")
    assert len(fake.prompts) == 2


async def test_an_empty_answer_at_the_token_limit_says_the_limit_was_reached() -> None:
    def second(prompt: AgentPrompt) -> Any:
        assert "the output-token limit was reached before any answer" in last_system_text(prompt)
        return reply(final("1.0"))

    spent = reply("", reasoning="thinking a lot...", finish_reason=FinishReason.LENGTH)
    result, _, _ = await run([spent, second])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "1.0")


async def test_a_final_object_cut_at_the_token_limit_is_asked_for_again_shorter() -> None:
    def second(prompt: AgentPrompt) -> Any:
        text = last_system_text(prompt)
        assert "cut at the output-token limit before its JSON object ended; give a shorter answer" in text
        return reply(final("1.0"))

    cut = reply('{"type": "final", "output": "The price of an apple is', finish_reason=FinishReason.LENGTH)
    result, _, _ = await run([cut, second])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "1.0")


async def test_three_unusable_answers_in_a_row_fail_the_run_with_a_clear_error() -> None:
    from agentflow.runtimes.codeact import CodeActProtocolError

    bad = '{"type": "final", "output": 4,, }'
    fake = FakeModelClient([reply(bad), reply(""), reply(bad), reply(final("never asked"))])
    agent = Agent(fake, runtime=CodeActRuntime(), tools=[get_price])
    failed: list[RunFailed] = []
    agent.on(RunFailed, failed.append)
    with pytest.raises(CodeActProtocolError) as caught:
        await agent.run("Price?")
    await agent.aclose()
    assert len(fake.prompts) == 3
    error = caught.value
    assert str(error).startswith(
        "the model answered outside the CodeAct protocol 3 times in a row (the first 2 answers were sent "
        "back), and its last answer could not be used: the JSON object is not valid JSON"
    )
    assert error.text == bad
    partial = error.partial
    assert partial.stop_reason is StopReason.ERROR
    assert partial.output_text == ""  # never the raw protocol text
    assert [t.split(":")[0] for t in system_texts(partial.new_items)] == ["PROTOCOL_ERROR", "PROTOCOL_ERROR"]
    assert [f.error_type for f in failed] == ["CodeActProtocolError"]


async def test_prose_sent_back_counts_with_unusable_answers_and_the_error_says_so() -> None:
    from agentflow.runtimes.codeact import CodeActProtocolError

    bad = '{"type": "final", "output": 4,, }'
    fake = FakeModelClient(
        [reply("It is 1.0."), reply("Still 1.0."), reply(bad), reply(final("never asked"))]
    )
    agent = Agent(fake, runtime=CodeActRuntime(CodeActOptions(correct_format=True)), tools=[get_price])
    with pytest.raises(CodeActProtocolError) as caught:
        await agent.run("Price?")
    await agent.aclose()
    assert len(fake.prompts) == 3
    message = str(caught.value)
    # Two of the three answers were prose, which could be used (and was only sent back): not claimed unusable.
    assert "could not be used 3 times" not in message
    assert message.startswith("the model answered outside the CodeAct protocol 3 times in a row")
    assert "its last answer could not be used: the JSON object is not valid JSON" in message
    assert caught.value.text == bad


async def test_the_count_of_unusable_answers_starts_again_after_a_usable_one() -> None:
    bad = '{"type": "final", "output": 4,, }'
    script = [reply(bad), reply(bad), reply(code("x = 1")), reply(bad), reply(bad), reply(final("done"))]
    result, fake, _ = await run(script, react=True)
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "done")
    assert len(fake.prompts) == 6


async def test_an_unusable_answer_in_the_last_call_after_max_steps_is_no_answer() -> None:
    options = AgentOptions(max_steps=1, on_max_steps="final_answer")
    result, _, _ = await run(
        [reply(code("x = 1")), reply('{"type": "final", "output": 4,, }')], react=True, options=options
    )
    assert (result.stop_reason, result.output_text) == (StopReason.MAX_STEPS, "")


async def test_an_unusable_answer_after_the_token_budget_ends_the_run_without_an_answer() -> None:
    options = AgentOptions(max_tokens=10)
    bad = reply('{"type": "final", "output": 4,, }', usage=(8, 4))
    result, fake, _ = await run([bad], options=options)
    assert (result.stop_reason, result.output_text) == (StopReason.MAX_TOKENS, "")
    assert len(fake.prompts) == 1
    assert system_texts(result.new_items) == []


async def test_plain_prose_is_still_the_final_answer_by_default() -> None:
    result, fake, _ = await run([reply("An apple costs 0.50 euros, so two cost 1.00.")])
    assert (result.stop_reason, result.output_text) == (
        StopReason.FINAL_ANSWER,
        "An apple costs 0.50 euros, so two cost 1.00.",
    )
    assert len(fake.prompts) == 1


def test_the_instructions_say_fenced_code_is_accepted() -> None:
    from agentflow.runtimes.codeact_prompt import CODEACT_INSTRUCTIONS

    assert "```python fenced block" in CODEACT_INSTRUCTIONS

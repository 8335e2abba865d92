"""Markdown fences beyond ```` ```python ````: untagged fences holding code and ``~~~`` / ``ipython`` fences
run as Python, a fence in another language goes back to the model (``unsupported_language``) instead of
becoming the user's answer, and code of an answer that did not run is named in the outcome of the code that
did."""

from __future__ import annotations

import time
from typing import Any

import pytest
from codeact_support import code, final, get_price, item_text, outcome, system_texts

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import CodeExecuted
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_prompt import skipped_code_text, unsupported_language_text
from agentflow.runtimes.codeact_protocol import CodeMessage, NotProtocol, parse_answer
from agentflow.testing import FakeModelClient, reply

# --- reading: which fences are Python ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Let me compute:\n```\nfinal_answer(6*7)\n```", "final_answer(6*7)"),
        ("```\nx = get_price('apple')\nx * 2\n```", "x = get_price('apple')\nx * 2"),
        ("```\nimport math\nmath.sqrt(2)\n```", "import math\nmath.sqrt(2)"),
        ("```\nfor i in range(3):\n    print(i)\n```", "for i in range(3):\n    print(i)"),
        ("```\nfinal_answer(6 *\n```", "final_answer(6 *"),  # its SyntaxError is the model's to see
        ("~~~python\nfinal_answer(42)\n~~~", "final_answer(42)"),
        ("~~~\nprint(1)\n~~~", "print(1)"),
        ("```ipython\nfinal_answer(42)\n```", "final_answer(42)"),
        ("```IPython3\nfinal_answer(42)\n```", "final_answer(42)"),
        ("```{.python}\nfinal_answer(42)\n```", "final_answer(42)"),
        ('````python\ns = """\n```\n"""\nfinal_answer(s)\n````', 's = """\n```\n"""\nfinal_answer(s)'),
        ('~~~python\ns = "```"\nfinal_answer(s)\n~~~', 's = "```"\nfinal_answer(s)'),
    ],
    ids=[
        "bare-final-answer",
        "bare-assignment",
        "bare-import",
        "bare-loop",
        "bare-broken-final-answer",
        "tildes-python",
        "tildes-bare",
        "ipython",
        "ipython3-capitals",
        "pandoc-tag",
        "four-backticks-around-three",
        "backticks-inside-tildes",
    ],
)
def test_fences_that_hold_python_are_code(text: str, expected: str) -> None:
    assert parse_answer(text) == CodeMessage(expected)


@pytest.mark.parametrize(
    "text",
    [
        "The result is:\n```\n[1, 2, 3]\n```",
        "The totals:\n```\ntotal: 3\ncount: 2\n```",
        'The record:\n```\n{"name": "apple", "price": 0.5, "fresh": true}\n```',
        "Install it with:\n```\npip install requests\n```",
        "List the files with:\n```\nls -la\n```",
        "It printed:\n```\nHello, world!\n```",
        "```json\n[1, 2]\n```",
        "```text\nprint(1)\n```",
    ],
    ids=["list", "yaml-like", "json", "pip", "ls", "output", "json-tag", "text-tag"],
)
def test_fences_of_data_output_or_commands_leave_prose_an_answer(text: str) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert (answer.attempt, answer.other_code) == (None, None)


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("```bash\nrm -rf /tmp/x\n```", "bash", "rm -rf /tmp/x"),
        ("Run this:\n```javascript\nconsole.log(6 * 7)\n```", "javascript", "console.log(6 * 7)"),
        ("```sh\nls\n```\nthen\n```js\nx()\n```\nand\n```sh\npwd\n```", "sh", "ls\n\npwd"),
        ("~~~Bash\nls\n~~~", "bash", "ls"),
    ],
    ids=["bash", "javascript-after-prose", "first-language-joined", "tildes"],
)
def test_a_fence_in_another_language_is_other_code_not_plain_prose(
    text: str, language: str, expected: str
) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer.attempt is None
    assert answer.other_code == CodeMessage(expected, language)


def test_python_fences_run_and_name_the_fences_in_other_languages() -> None:
    text = "```python\nprint('py ran')\n```\n```bash\nrm -rf /\n```\n```json\n{}\n```\n```js\nx()\n```"
    answer = parse_answer(text)
    assert answer == CodeMessage("print('py ran')")
    assert isinstance(answer, CodeMessage)
    assert answer.skipped == ("bash", "js")  # json is data, not code that did not run


def test_a_code_object_in_another_language_after_python_is_named() -> None:
    answer = parse_answer(code("x = 1") + code("ls", "bash") + code("x = 2"))
    assert isinstance(answer, CodeMessage)
    assert (answer.code, answer.skipped) == ("x = 1", ("bash",))


def test_python_code_objects_join_whatever_name_they_give_python() -> None:
    answer = parse_answer(code("x = 1") + code("x + 1", "py") + code("x + 2", "Python3"))
    assert answer == CodeMessage("x = 1\n\nx + 1\n\nx + 2")
    assert isinstance(answer, CodeMessage)
    assert answer.skipped == ()


@pytest.mark.parametrize(
    "text",
    ["Let me compute.\n~~~python\nx = sum(", "Let me compute.\n```\nfinal_answer(sum(", "```\nprint(1)\n"],
    ids=["tildes", "bare-final-answer", "bare-whole-code"],
)
def test_an_unclosed_fence_of_code_is_an_attempt_at_code(text: str) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer.attempt == "code"


def test_long_untagged_fences_are_judged_from_a_bounded_start() -> None:
    long_code = "```\n" + "total = get_price('apple') * 2\n" * 5_000 + "```"  # 155,000 characters
    pathological = "```\n" + "f(" * 100_000 + "\n```\n" + "```\n" + "1+" * 100_000 + "1\n```"
    started = time.perf_counter()
    assert isinstance(parse_answer(long_code), CodeMessage)
    assert isinstance(parse_answer(pathological), NotProtocol)
    assert time.perf_counter() - started < 1.0  # generous: a few tens of milliseconds on a laptop


# --- the runtime -------------------------------------------------------------------------------------------


async def run(
    script: list[Any], *, options: AgentOptions | None = None, **codeact: Any
) -> tuple[AgentResult, FakeModelClient, list[CodeExecuted]]:
    fake = FakeModelClient(script)
    agent = Agent(
        fake,
        runtime=CodeActRuntime(CodeActOptions(**codeact)),
        tools=[get_price],
        options=options or AgentOptions(),
    )
    executed: list[CodeExecuted] = []
    agent.on(CodeExecuted, executed.append)
    try:
        result = await agent.run("How do I list the files here, and what does an apple cost?")
    finally:
        await agent.aclose()
    return result, fake, executed


def last_system_text(prompt: AgentPrompt) -> str:
    return [item_text(i) for i in prompt.items if isinstance(i, dict) and i.get("role") == "system"][-1]


@pytest.mark.parametrize(
    "fenced",
    [
        "Let me compute:\n```\nfinal_answer(get_price('apple') * 2)\n```",
        "~~~python\nfinal_answer(get_price('apple') * 2)\n~~~",
        "```ipython\nfinal_answer(get_price('apple') * 2)\n```",
    ],
    ids=["bare", "tildes", "ipython"],
)
async def test_code_in_other_python_fences_runs_instead_of_being_the_answer(fenced: str) -> None:
    result, fake, executed = await run([reply(fenced), reply(final("never asked"))])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "1.0")
    assert len(fake.prompts) == 1
    assert [e.code for e in executed] == ["final_answer(get_price('apple') * 2)"]


@pytest.mark.parametrize("correct_format", [False, True])
async def test_a_fence_in_another_language_goes_back_to_the_model(correct_format: bool) -> None:
    def second(prompt: AgentPrompt) -> Any:
        prefix, payload = outcome(last_system_text(prompt))
        assert (prefix, payload) == ("CODE_ERROR", {"error": unsupported_language_text("bash", fenced=True)})
        return reply(final("ls -la lists them; an apple costs 0.5."))

    result, fake, executed = await run([reply("```bash\nrm -rf /tmp/x\n```"), second])
    assert (result.stop_reason, result.output_text) == (
        StopReason.FINAL_ANSWER,
        "ls -la lists them; an apple costs 0.5.",
    )
    assert len(fake.prompts) == 2
    assert [(e.code, e.ok, e.error_type) for e in executed] == [
        ("rm -rf /tmp/x", False, "unsupported_language")
    ]


async def test_prose_that_only_shows_code_in_another_language_is_the_answer_on_the_third_try() -> None:
    # A model that keeps answering in prose with a ```bash example meant it as the answer: after two
    # send-backs (counted like prose under correct_format) the third is given to the user.
    answer = "Use `ls`:\n```bash\nls -la\n```\nThe `-a` flag shows hidden files too."
    result, fake, executed = await run([reply(answer)] * 3 + [reply(final("never asked"))])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, answer)
    assert len(fake.prompts) == 3
    assert [e.error_type for e in executed] == ["unsupported_language", "unsupported_language"]


async def test_prose_with_code_in_another_language_in_the_last_call_is_the_answer() -> None:
    answer = "Use:\n```bash\nls -la\n```"
    options = AgentOptions(max_steps=1, on_max_steps="final_answer")
    result, fake, _ = await run([reply(code("x = 1")), reply(answer)], react=True, options=options)
    assert result.output_text == answer
    assert len(fake.prompts) == 2


@pytest.mark.parametrize("react", [False, True])
async def test_the_model_is_told_which_code_of_its_answer_did_not_run(react: bool) -> None:
    def second(prompt: AgentPrompt) -> Any:
        prefix, payload = outcome(last_system_text(prompt))
        assert prefix == "CODE_RESULT"
        assert payload == {"result": None, "stdout": "py ran\n", "note": skipped_code_text(["bash"])}
        return reply(final("done"))

    answer = "```python\nprint('py ran')\n```\n```bash\nrm -rf /\n```"
    # With react=False the step's printed output is not taken as the answer: part of the answer never ran.
    result, fake, executed = await run([reply(answer), second], react=react)
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "done")
    assert len(fake.prompts) == 2
    assert [e.code for e in executed] == ["print('py ran')"]


async def test_final_answer_in_the_python_that_ran_still_ends_the_run() -> None:
    answer = "```python\nfinal_answer(get_price('apple'))\n```\n```bash\nls\n```"
    result, fake, _ = await run([reply(answer), reply(final("never asked"))])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "0.5")
    assert len(fake.prompts) == 1
    [text] = system_texts(result.new_items)
    assert outcome(text)[1]["note"] == skipped_code_text(["bash"])

"""The CodeAct protocol, pure: reading the model's answer tolerantly, writing CODE_RESULT / CODE_ERROR, and
the text the model is given about the tools."""

from __future__ import annotations

import orjson
import pytest
from codeact_support import get_price, stock_level

from agentflow.model.tools import ToolSpec
from agentflow.runtimes.codeact_prompt import correction_text, tools_guide
from agentflow.runtimes.codeact_protocol import (
    CodeMessage,
    FinalMessage,
    NotProtocol,
    code_error_text,
    code_result_text,
    parse_answer,
    result_preview,
    step_text,
)
from agentflow.sandbox import CodeErrorType, CodeResult, code_api_text

# --- reading answers ---------------------------------------------------------------------------------------


def test_a_bare_code_object_is_a_code_message() -> None:
    answer = parse_answer('{"type":"code","language":"python","code":"print(1)\\nx = 2"}')
    assert answer == CodeMessage("print(1)\nx = 2", "python")


def test_a_final_object_is_the_final_message() -> None:
    assert parse_answer('{"type": "final", "output": "Paris"}') == FinalMessage("Paris")


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"type": "code", "language": "python", "code": "1 + 1"}\n```',
        '```\n{"type": "code", "language": "python", "code": "1 + 1"}\n```',
        'I will compute it.\n\n{"type": "code", "language": "python", "code": "1 + 1"}\n\nLet me know!',
        'Here is the plan: {not json} then\n```json\n{"type": "code", "code": "1 + 1"}\n```',
        '{"thought": "add them"} {"type": "code", "language": "python", "code": "1 + 1"}',
        'Use braces { like this and then {"type": "code", "language": "python", "code": "1 + 1"}',
        '{"type": "code", "language": "python", "code": "1 + 1"} {"type": "final", "output": "x"}',
    ],
    ids=["json-fence", "bare-fence", "prose", "bad-object-first", "other-object-first", "unclosed", "two"],
)
def test_fences_prose_and_other_objects_around_the_message_are_tolerated(text: str) -> None:
    assert parse_answer(text) == CodeMessage("1 + 1", "python")


def test_braces_and_fences_inside_the_code_string_do_not_confuse_the_scanner() -> None:
    source = 'd = {"a": {"b": "}"}}\ns = "```"\nd["a"]["b"] + s'
    text = "```json\n" + orjson.dumps({"type": "code", "code": source}).decode() + "\n```"
    assert parse_answer(text) == CodeMessage(source, "python")


def test_raw_newlines_in_the_code_string_are_read_as_meant() -> None:
    text = '{"type": "code", "language": "python", "code": "x = 1\nfor i in range(3):\n\tx += i\nx"}'
    assert parse_answer(text) == CodeMessage("x = 1\nfor i in range(3):\n\tx += i\nx", "python")


def test_code_as_a_list_of_lines_is_joined() -> None:
    assert parse_answer('{"type": "code", "code": ["a = 1", "a + 1"]}') == CodeMessage("a = 1\na + 1")


@pytest.mark.parametrize("language", ["python", "Python", "python3", "py", " PY3 ", ""])
def test_python_language_names_are_python(language: str) -> None:
    answer = parse_answer(orjson.dumps({"type": "code", "language": language, "code": "1"}).decode())
    assert isinstance(answer, CodeMessage)
    assert answer.is_python


def test_another_language_is_kept_for_the_error_message() -> None:
    answer = parse_answer('{"type": "code", "language": "javascript", "code": "1"}')
    assert answer == CodeMessage("1", "javascript")
    assert not answer.is_python


@pytest.mark.parametrize(
    ("output", "expected"),
    [(None, ""), (42, "42"), ({"total": 3}, '{"total":3}'), ("  spaced  ", "  spaced  ")],
)
def test_a_final_output_that_is_not_a_string_becomes_text(output: object, expected: str) -> None:
    assert parse_answer(orjson.dumps({"type": "final", "output": output}).decode()) == FinalMessage(expected)


def test_the_type_is_read_case_insensitively() -> None:
    assert parse_answer('{"type": " FINAL ", "output": "ok"}') == FinalMessage("ok")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("The answer is 42.", "the answer holds no JSON object"),
        ("", "the answer holds no JSON object"),
        ('{"type": "code", "code": print("hi")}', "the JSON object is not valid JSON"),
        ("{'type': 'final', 'output': 'x'}", "the JSON object is not valid JSON"),
        ('{"type": "code", "code": "1 + ', "the JSON object is not complete (no closing brace)"),
        ('{"type": "shell", "command": "ls"}', '"type" must be "code" or "final", not "shell"'),
        ('{"answer": 42}', 'the JSON object has no "type" ("code" or "final")'),
        ('{"type": "code", "language": "python"}', 'a code message needs the code as a string in "code"'),
        ('{"type": "final", "answer": "42"}', 'a final message needs the answer in "output"'),
    ],
    ids=[
        "prose",
        "empty",
        "bad-quotes",
        "python-dict",
        "truncated",
        "bad-type",
        "no-type",
        "no-code",
        "no-output",
    ],
)
def test_answers_that_are_not_the_protocol_say_why(text: str, reason: str) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer.text == text
    assert answer.reason.startswith(reason)


def test_the_most_specific_reason_wins() -> None:
    answer = parse_answer('{bad} and {"type": "search"}')
    assert isinstance(answer, NotProtocol)
    assert answer.reason == '"type" must be "code" or "final", not "search"'


def test_a_brace_heavy_answer_is_read_in_bounded_time() -> None:
    answer = parse_answer("{" * 20_000 + "x")
    assert isinstance(answer, NotProtocol)
    assert answer.reason.startswith("the JSON object is not complete")


# --- writing outcomes --------------------------------------------------------------------------------------


def test_code_result_keeps_the_reference_format() -> None:
    assert code_result_text(7.5, "a\n") == 'CODE_RESULT: {"result":7.5,"stdout":"a\\n"}'
    assert code_result_text({"é": [1, None]}) == 'CODE_RESULT: {"result":{"é":[1,null]}}'
    assert code_result_text(None, "", "warn") == 'CODE_RESULT: {"result":null,"stderr":"warn"}'


def test_code_error_keeps_the_reference_format() -> None:
    assert code_error_text("NameError: name 'x' is not defined", "so far") == (
        'CODE_ERROR: {"error":"NameError: name \'x\' is not defined","stdout":"so far"}'
    )


def test_step_text_picks_result_or_error() -> None:
    assert step_text(CodeResult(ok=True, value=[1, 2], stdout="hi")) == (
        'CODE_RESULT: {"result":[1,2],"stdout":"hi"}'
    )
    timeout = CodeResult(ok=False, error="TimeoutError: too slow", error_type=CodeErrorType.TIMEOUT)
    assert step_text(timeout) == 'CODE_ERROR: {"error":"TimeoutError: too slow"}'
    assert step_text(CodeResult(ok=False, error_type=CodeErrorType.KILLED)) == (
        'CODE_ERROR: {"error":"the code step failed (killed)"}'
    )


def test_a_long_value_is_cut_for_the_model_with_a_marker_saying_how_much_is_missing() -> None:
    text = step_text(CodeResult(ok=True, value="a" * 30, stdout="printed"), max_result_chars=10)
    assert text == (
        'CODE_RESULT: {"result":"aaaaaaaaaa [... result truncated: 20 more characters not shown; keep big '
        'values in variables and return only the part you need to see ...]","stdout":"printed"}'
    )
    # A value that is not a string is cut as its JSON text; a value that fits is left as it is.
    assert result_preview({"k": list(range(10))}, 12) == (
        '{"k":[0,1,2, [... result truncated: 15 more characters not shown; keep big values in variables and '
        "return only the part you need to see ...]"
    )
    assert result_preview({"k": [1]}, 11) == {"k": [1]}
    assert step_text(CodeResult(ok=True, value="a" * 30)) == 'CODE_RESULT: {"result":"' + "a" * 30 + '"}'


def test_a_value_json_cannot_hold_is_shown_not_dropped() -> None:
    text = code_result_text(object())
    assert text.startswith('CODE_RESULT: {"result":"<object object at')


# --- the tools as text -------------------------------------------------------------------------------------


def test_the_tools_guide_lists_each_tool_with_its_call_description_and_parameters() -> None:
    guide = tools_guide([get_price.spec, stock_level.spec], code_api_text(), react=False)
    assert (
        "- get_price(item)\n  The unit price of an item, in euros.\n  item: str, required. The item's name."
        in guide
    )
    # A name that is not an identifier can only be called through call_tool.
    assert '- call_tool("stock-level", {"item": ...})\n  How many of an item are in stock.' in guide
    assert code_api_text() in guide
    assert "given to the user as the final answer" in guide


def test_the_tools_guide_renders_optional_enum_list_and_nested_parameters() -> None:
    spec = ToolSpec(
        "forecast",
        "Weather forecast.",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["C", "F"], "default": "C", "description": "Unit."},
                "days": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
                "exact": {"type": "boolean", "default": False},
                "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
            },
            "required": ["city"],
        },
    )
    guide = tools_guide([spec], "", react=True)
    assert '- forecast(city, unit="C", days=..., exact=False, where=...)' in guide
    assert '  unit: "C" or "F", default "C". Unit.' in guide
    assert "  days: list of int or None, optional" in guide
    assert "  exact: bool, default False" in guide
    assert "  where: dict {lat: float (optional)}, optional" in guide
    assert "decide: run more code" in guide


def test_the_tools_guide_defines_what_recursive_parameters_refer_to() -> None:
    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
    }
    spec = ToolSpec(
        "plant",
        "Plant a tree.",
        {"type": "object", "properties": {"tree": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": node}},
    )
    guide = tools_guide([spec], "", react=True)
    assert "  tree: Node, optional" in guide
    assert "  where Node is dict {name: str (optional), children: list of Node (optional)}" in guide


def test_without_tools_the_guide_says_so() -> None:
    assert tools_guide([], "api", react=False).startswith("No tools are available")


def test_the_correction_names_the_reason_and_the_protocol() -> None:
    text = correction_text("the answer holds no JSON object")
    assert text.startswith("PROTOCOL_ERROR: ")
    assert "(the answer holds no JSON object)" in text
    assert '{"type": "final", "output": "..."}' in text

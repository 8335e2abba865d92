"""A tool's value reaches code part by part: one part JSON has no type for does not turn the whole into text,
and floats that are not finite stay floats."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import math
from typing import Any

import attrs

from agentflow.result import ToolResult
from agentflow.sandbox import ProcessSandbox
from agentflow.sandbox.frames import code_value, encode_frame, tool_result_frame
from agentflow.tools.outcome import output_text


class Opaque:
    def __str__(self) -> str:
        return "Opaque()"


class Colour(enum.Enum):
    RED = frozenset("red")  # an enum whose value JSON has no type for either


@attrs.frozen
class Priced:
    _price: decimal.Decimal  # keyed by its alias, ``price``, as the model's text writes it
    tags: frozenset[str]


@dataclasses.dataclass
class Record:
    blob: bytes
    ratio: float


def sent_value(value: Any, output: str = "the text output") -> Any:
    """The value the child reads for a tool that returned ``value`` (its ``json.loads`` takes NaN)."""
    return json.loads(tool_result_frame(1, ToolResult("c", "t", output, value=value))[4:])["value"]


def test_one_odd_part_becomes_its_text_and_the_rest_stays_as_it_was() -> None:
    assert sent_value({"k": b"\x00\xff", "ok": 1}) == {"k": "<2 bytes of binary data>", "ok": 1}
    assert sent_value({"k": Opaque(), "ok": [1, 2]}) == {"k": "Opaque()", "ok": [1, 2]}
    assert sent_value([{"when": datetime.date(2024, 1, 2)}, {1, 2}, b"text"]) == [
        {"when": "2024-01-02"},
        [1, 2],
        "text",
    ]


def test_parts_take_the_form_the_model_s_text_gives_them() -> None:
    value = {
        "priced": Priced(decimal.Decimal("9.99"), frozenset({"x"})),
        "record": Record(b"\xff", math.inf),
        "colour": Colour.RED,
        ("a", 1): "tuple key",
        2: "int key",
        "path-like": "caf\udce9",
    }
    sent = sent_value(value)
    assert sent["priced"] == {"price": 9.99, "tags": ["x"]}
    assert sent["record"]["blob"] == "<1 bytes of binary data>"
    assert sent["record"]["ratio"] == math.inf
    assert sorted(sent["colour"]) == ["d", "e", "r"]
    assert sent["('a', 1)"] == "tuple key"
    assert sent["2"] == "int key"
    assert sent["path-like"] == "caf\\udce9"
    # The model reads the same parts (the text it sees is the tool's output).
    assert '"price":9.99' in output_text(value["priced"])


def test_floats_that_are_not_finite_are_sent_as_floats() -> None:
    sent = sent_value({"nan": math.nan, "up": math.inf, "down": -math.inf, "list": [1.5, math.nan]})
    assert math.isnan(sent["nan"])
    assert sent["up"] == math.inf
    assert sent["down"] == -math.inf
    assert sent["list"][0] == 1.5
    assert math.isnan(sent["list"][1])
    assert math.isnan(sent_value(math.nan))
    # None stays None: only a float that is not finite is a NaN or an infinity.
    assert sent_value({"none": None, "f": 0.5}) == {"none": None, "f": 0.5}


def test_a_value_with_no_json_form_at_all_is_the_tool_s_output_text() -> None:
    assert sent_value(Opaque(), "what the model read") == "what the model read"


def test_a_reference_cycle_is_cut_to_text_instead_of_failing() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    sent = sent_value({"loop": looped})
    depth = 0
    part = sent["loop"]
    while isinstance(part, list):
        part = part[1]
        depth += 1
    assert isinstance(part, str)
    assert depth > 10


def test_code_value_writes_what_encode_frame_can_write() -> None:
    assert encode_frame(code_value({"x": math.nan}))[4:] == b'{"x":NaN}'


async def test_code_gets_a_dict_whose_odd_part_is_text(sandbox: ProcessSandbox) -> None:
    async def invoker(name: str, args: dict[str, Any]) -> ToolResult:
        value = {"k": b"\x00\xff", "obj": Opaque(), "ok": 1, "nan": math.nan, "inf": -math.inf}
        return ToolResult("c", name, output_text(value), value=value)

    code = (
        "import math\nv = fetch()\n"
        "[type(v).__name__, v['k'], v['obj'], v['ok'], math.isnan(v['nan']), v['inf'] == -math.inf]"
    )
    result = await sandbox.execute(code, invoker, ["fetch"])
    assert result.ok, result.error
    assert result.value == ["dict", "<2 bytes of binary data>", "Opaque()", 1, True, True]

"""``exact_json``: orjson's behaviour, except that integers beyond 64 bits keep every digit both ways."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest

from agentflow import exact_json

BIG = 123456789012345678901234567890


# -- loads -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [2**64, 2**64 - 1, 10**20 + 1, -(2**63) - 1, -(2**63), -(10**40) - 7, 2**63, BIG],
)
def test_integers_of_any_size_are_read_exactly(number: int) -> None:
    text = f'{{"n": {number}, "deep": [[{{"m": {number}}}]]}}'
    for document in (text, text.encode()):
        value = exact_json.loads(document)
        assert value == {"n": number, "deep": [[{"m": number}]]}
        assert type(value["n"]) is int


def test_a_big_integer_at_the_top_level_is_read_exactly() -> None:
    assert exact_json.loads(str(BIG)) == BIG
    assert exact_json.loads(b"-18446744073709551617") == -(2**64) - 1


def test_floats_and_long_digit_strings_stay_as_orjson_reads_them() -> None:
    text = '{"f": 1e20, "g": 1.5, "h": 12345678901234567890.5, "s": "12345678901234567890123", "i": 7}'
    assert exact_json.loads(text) == orjson.loads(text)
    assert type(exact_json.loads(text)["f"]) is float


@pytest.mark.parametrize(
    "text",
    [
        f'{{"n": {BIG}, "x": NaN}}',
        f'["\\ud800", {BIG}]',
        f"[{BIG},]",
        f"[{BIG}",
        "",
        "1" + "0" * 400,  # beyond what orjson can hold even as a float: refused as today
    ],
)
def test_what_orjson_refuses_is_still_refused_with_its_error(text: str) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        exact_json.loads(text)


def test_nesting_deeper_than_pythons_recursion_limit() -> None:
    depth = 1024  # orjson's limit, above Python's default recursion limit of 1000
    assert exact_json.loads("[" * depth + "1234567890123456789" + "]" * depth) is not None
    with pytest.raises(orjson.JSONDecodeError, match="nests too deeply"):
        exact_json.loads("[" * depth + str(BIG) + "]" * depth)


# -- dumps -------------------------------------------------------------------------------------------------


def test_integers_beyond_64_bits_are_written_with_every_digit() -> None:
    value = {"total": 10**30, "list": [2**64, -(2**63) - 1], "tuple": (BIG, 1), "ok": 2**64 - 1}
    text = exact_json.dumps(value)
    assert text == (
        b'{"total":1000000000000000000000000000000,"list":[18446744073709551616,-9223372036854775809],'
        b'"tuple":[123456789012345678901234567890,1],"ok":18446744073709551615}'
    )
    assert exact_json.loads(text) == {**value, "tuple": [BIG, 1]}
    assert exact_json.dumps(2**100) == str(2**100).encode()


def test_values_orjson_can_write_are_written_by_orjson_unchanged() -> None:
    value = {"a": [1, 2.5, None, True, "é"], "b": {"c": -(2**63)}}
    option = orjson.OPT_SORT_KEYS
    assert exact_json.dumps(value, option=option) == orjson.dumps(value, option=option)


def test_big_integer_keys_become_strings_only_with_non_str_keys() -> None:
    option = orjson.OPT_NON_STR_KEYS
    assert exact_json.dumps({BIG: 1, 2: 2**70}, option=option) == (
        b'{"123456789012345678901234567890":1,"2":1180591620717411303424}'
    )
    with pytest.raises(orjson.JSONEncodeError, match="Dict key must be str"):
        exact_json.dumps({BIG: 1})


@attrs.frozen
class Total:
    amount: int


def test_what_default_returns_is_written_exactly_too() -> None:
    def default(value: Any) -> Any:
        return attrs.asdict(value)

    assert exact_json.dumps([Total(BIG)], default=default) == b'[{"amount":%d}]' % BIG


def test_a_value_with_no_json_form_raises_orjsons_own_error() -> None:
    with pytest.raises(orjson.JSONEncodeError, match="Type is not JSON serializable: object"):
        exact_json.dumps([BIG, object()])
    cycle: list[Any] = [BIG]
    cycle.append(cycle)
    with pytest.raises(orjson.JSONEncodeError, match="Recursion limit reached"):
        exact_json.dumps(cycle)


def test_an_integer_python_will_not_print_keeps_orjsons_error() -> None:
    with pytest.raises(orjson.JSONEncodeError, match="Integer exceeds 64-bit range"):
        exact_json.dumps([10**5000])  # over sys.get_int_max_str_digits()

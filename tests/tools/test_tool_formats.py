"""Parameters JSON carries as strings: dates and times, UUIDs, decimals and paths, both ways."""

from __future__ import annotations

import datetime
import decimal
import os
import pathlib
import uuid
from typing import Any

import attrs
import pytest

from agentflow.tools import ToolArgumentsError, tool
from agentflow.tools.outcome import output_text
from agentflow.tools.schema import shape_of

ID = "123e4567-e89b-12d3-a456-426614174000"


@pytest.mark.parametrize(
    ("annotation", "schema", "raw", "value"),
    [
        (
            datetime.datetime,
            {"type": "string", "format": "date-time"},
            "2024-05-31T14:30:00+02:00",
            datetime.datetime(2024, 5, 31, 14, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        ),
        # Models often leave the zone out; Python's ISO parser takes it (fastjsonschema's RFC 3339 would not).
        (
            datetime.datetime,
            {"type": "string", "format": "date-time"},
            "2024-05-31T14:30",
            datetime.datetime(2024, 5, 31, 14, 30),
        ),
        (datetime.date, {"type": "string", "format": "date"}, "2024-05-31", datetime.date(2024, 5, 31)),
        (datetime.time, {"type": "string", "format": "time"}, "14:30:05", datetime.time(14, 30, 5)),
        (uuid.UUID, {"type": "string", "format": "uuid"}, ID, uuid.UUID(ID)),
        (decimal.Decimal, {"type": ["string", "number"]}, "12.50", decimal.Decimal("12.50")),
        (decimal.Decimal, {"type": ["string", "number"]}, 0.1, decimal.Decimal("0.1")),
        (decimal.Decimal, {"type": ["string", "number"]}, 3, decimal.Decimal(3)),
        (pathlib.Path, {"type": "string"}, "data/in.csv", pathlib.Path("data/in.csv")),
        (pathlib.PurePosixPath, {"type": "string"}, "/etc", pathlib.PurePosixPath("/etc")),
        (os.PathLike, {"type": "string"}, "a", pathlib.Path("a")),
    ],
)
def test_string_borne_types_have_a_format_and_arrive_as_their_type(
    annotation: Any, schema: dict[str, Any], raw: Any, value: Any
) -> None:
    def f(x: int) -> None:
        pass

    f.__annotations__["x"] = annotation
    t = tool(f)
    assert t.spec.parameters["properties"]["x"] == schema
    converted = t.parse_arguments({"x": raw})["x"]
    assert converted == value
    assert type(converted) is type(value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            '{"when": "yesterday"}',
            "arguments.when must be an ISO 8601 date and time such as 2024-05-31T14:30:00+02:00, "
            'got the string "yesterday"',
        ),
        (
            '{"when": "2024-05-31", "day": "2024-02-30"}',
            "arguments.day must be an ISO 8601 date such as 2024-05-31",
        ),
        ('{"when": "2024-05-31", "ids": ["x"]}', "arguments.ids[0] must be a UUID such as"),
        (
            '{"when": "2024-05-31", "price": "about 3"}',
            'arguments.price must be a decimal number such as "12.50", got the string "about 3"',
        ),
        ('{"when": "2024-05-31", "price": "NaN"}', "arguments.price must be a decimal number"),
    ],
)
def test_a_malformed_string_is_told_what_it_should_look_like(raw: str, message: str) -> None:
    @tool
    def book(
        when: datetime.datetime,
        day: datetime.date | None = None,
        ids: list[uuid.UUID] | None = None,
        price: decimal.Decimal | None = None,
    ) -> None:
        pass

    with pytest.raises(ToolArgumentsError) as info:
        book.parse_arguments(raw)
    assert str(info.value).startswith(message)


def test_defaults_of_these_types_are_shown_as_their_strings_and_strict_mode_takes_them() -> None:
    @tool(strict=True)
    def report(
        since: datetime.date = datetime.date(2024, 1, 1),
        out: pathlib.Path = pathlib.Path("out.csv"),
        fee: decimal.Decimal = decimal.Decimal("0.50"),
    ) -> None:
        pass

    props = report.spec.parameters["properties"]
    assert props["since"]["description"] == 'Default: "2024-01-01"; null for the default'
    assert props["fee"]["description"] == 'Default: "0.50"; null for the default'
    assert tool(report.fn).spec.parameters["properties"]["out"]["default"] == "out.csv"
    assert report.parse_arguments('{"since": null, "out": "x.csv", "fee": null}') == {
        "out": pathlib.Path("x.csv")
    }


@attrs.frozen
class Booking:
    day: datetime.date
    id: uuid.UUID


def test_they_work_inside_classes_and_come_back_as_json_strings() -> None:
    shape = shape_of(Booking)
    assert shape.convert is not None
    booking = shape.convert({"day": "2024-05-31", "id": ID})
    assert booking == Booking(datetime.date(2024, 5, 31), uuid.UUID(ID))
    assert output_text(booking) == f'{{"day":"2024-05-31","id":"{ID}"}}'
    assert output_text(decimal.Decimal("12.50")) == "12.5"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"amount": 1.000000000000000001, "fee": 0.5}', "1.000000000000000001"),
        ('{"amount": 1234567890123456.78, "fee": 0.5}', "1234567890123456.78"),
        ('{"amount": "0.10", "fee": 0.5}', "0.10"),
        ('{"amount": 0.1, "fee": 0.5}', "0.1"),
        ('{"amount": 123456789012345678901234567890, "fee": 0.5}', "123456789012345678901234567890"),
    ],
)
def test_a_decimal_written_as_a_number_keeps_every_digit_the_model_wrote(raw: str, expected: str) -> None:
    @tool
    def transfer(amount: decimal.Decimal, fee: float) -> str:
        """Transfer an amount."""
        return str(amount)

    arguments = transfer.parse_arguments(raw)
    assert arguments["amount"] == decimal.Decimal(expected)
    assert str(arguments["amount"]) == expected
    assert type(arguments["fee"]) is float


@attrs.frozen
class Payment:
    amount: decimal.Decimal


def test_a_decimal_nested_in_a_class_keeps_its_digits_too() -> None:
    @tool
    def pay(payments: list[Payment]) -> str:
        """Pay."""
        return ""

    arguments = pay.parse_arguments('{"payments": [{"amount": 0.30000000000000000001}]}')
    assert arguments["payments"][0].amount == decimal.Decimal("0.30000000000000000001")

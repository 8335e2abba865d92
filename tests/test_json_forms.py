"""One JSON form per Python value, in a tool's output (what the model reads) and in event JSON (what a
browser reads): a ``timedelta`` is an ISO 8601 duration in both (not its ``repr``), and an enum is its value
as a mapping key as well as a value."""

from __future__ import annotations

import datetime
import enum

import orjson
import pytest

from agentflow.json_forms import iso_duration
from agentflow.model.events import to_jsonable
from agentflow.tools.outcome import output_text


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (datetime.timedelta(seconds=90), "PT1M30S"),
        (datetime.timedelta(hours=2), "PT2H"),
        (datetime.timedelta(days=3), "P3D"),
        (datetime.timedelta(0), "PT0S"),
        (datetime.timedelta(days=1, microseconds=250_000), "P1DT0.25S"),
        (-datetime.timedelta(minutes=5), "-PT5M"),
    ],
)
def test_a_duration_is_iso_8601(duration: datetime.timedelta, text: str) -> None:
    assert iso_duration(duration) == text


def test_tool_outputs_and_event_json_agree() -> None:
    value = {"wait": datetime.timedelta(seconds=90), "by_color": {Color.RED: 3}, "color": Color.RED}
    expected = {"wait": "PT1M30S", "by_color": {"red": 3}, "color": "red"}
    assert orjson.loads(output_text(value)) == expected
    assert to_jsonable(value) == expected

"""A tool's value is walked part by part (``code_value``) only when orjson may have written a float that is
not finite as ``null``: a ``None`` or the text "null" costs no second pass, and NaN and the infinities still
reach the code exactly."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import orjson
import pytest

from agentflow.result import ToolResult
from agentflow.sandbox import frames
from agentflow.sandbox.frames import tool_result_frame


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values ``code_value`` is called with."""
    seen: list[Any] = []
    original = frames.code_value

    def counted(value: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(value)
        return original(value, *args, **kwargs)

    monkeypatch.setattr(frames, "code_value", counted)
    return seen


def sent(value: Any) -> Any:
    return orjson.loads(tool_result_frame(1, ToolResult("c", "t", "", value=value))[4:])["value"]


@pytest.mark.parametrize(
    "value",
    [None, "null", {"price": 12.5, "discount": None}, [{"id": 1, "note": None}, (None, 2.0, True)]],
    ids=["none", "null-text", "dict", "records"],
)
def test_a_value_with_none_or_null_text_is_not_walked(walks: list[Any], value: Any) -> None:
    assert sent(value) == orjson.loads(orjson.dumps(value))
    assert walks == []


@dataclasses.dataclass
class Reading:
    level: float
    note: str | None = None


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ({"x": float("nan"), "y": None}, {"x": "nan", "y": None}),
        ([None, float("inf")], [None, "inf"]),
        (Reading(float("-inf")), {"level": "-inf", "note": None}),
    ],
    ids=["nan", "inf", "dataclass"],
)
def test_a_value_with_a_float_that_is_not_finite_is_still_walked(
    walks: list[Any], value: Any, read: Any
) -> None:
    frame = tool_result_frame(1, ToolResult("c", "t", "", value=value))
    assert walks[:1] == [value]
    # The child reads the frame with the stdlib's json, which takes NaN and Infinity back as floats.
    got = json.loads(frame[4:])["value"]
    assert _shown(got) == read


def _shown(value: Any) -> Any:
    """``value`` with every float that is not finite as its ``repr`` (NaN never equals itself)."""
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value

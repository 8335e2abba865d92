"""One ``allows_null`` decides which schemas accept ``null``, for strict pydantic schemas and for completing
CodeAct's calls alike: an ``enum`` or ``const`` with ``null`` counts, so code may leave out a nested
``Literal[..., None]`` field of a strict tool."""

from __future__ import annotations

from typing import Any, Literal

import orjson
import pytest

from agentflow.runtimes import codeact_calls
from agentflow.runtimes.codeact_calls import complete_arguments
from agentflow.tools import tool
from agentflow.tools.schema_shapes import allows_null


@pytest.mark.parametrize(
    ("schema", "nullable"),
    [
        (True, True),
        (False, False),
        ({"type": "null"}, True),
        ({"type": ["integer", "null"]}, True),
        ({"type": "integer"}, False),
        ({"enum": ["a", None]}, True),
        ({"enum": ["a", "b"]}, False),
        ({"const": None}, True),
        ({"const": "a"}, False),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, True),
        ({"oneOf": [{"type": "string"}, {"enum": [None]}]}, True),
        ({"anyOf": [{"type": "string"}]}, False),
        ({"type": ["string", "null"], "enum": ["a"]}, False),  # every keyword must let null through
        ({}, False),
        ({"$ref": "#/$defs/Node"}, False),
    ],
)
def test_which_schemas_accept_null(schema: Any, nullable: bool) -> None:
    assert allows_null(schema) is nullable


def test_there_is_one_allows_null() -> None:
    assert codeact_calls.allows_null is allows_null


try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is a test extra
    pydantic = None


if pydantic is not None:

    class Query(pydantic.BaseModel):
        """A query."""

        text: str
        mode: Literal["a", None] = None


@pytest.mark.skipif(pydantic is None, reason="needs pydantic")
def test_code_may_leave_out_a_nested_optional_literal_of_a_strict_pydantic_tool() -> None:
    @tool(strict=True)
    def search(q: Query) -> str:
        """Search."""
        return f"{q.text}|{q.mode}"

    completed = complete_arguments(search, {"q": {"text": "x"}})
    assert completed == {"q": {"text": "x", "mode": None}}
    arguments = search.parse_arguments(orjson.dumps(completed).decode())
    assert (arguments["q"].text, arguments["q"].mode) == ("x", None)

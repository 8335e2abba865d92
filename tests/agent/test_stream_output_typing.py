"""What type checkers see of a run's streamed output: ``stream_output()`` yields the run's output type,
``stream_json()`` JSON (``Any``), ``output_reader()`` reads partial values of the output type.

``typed_streams`` is never run: ``test_the_streamed_output_types_check`` runs ``mypy --strict`` over this
file, so each ``assert_type`` is checked, and each ``# type: ignore[...]`` too (``--strict`` reports an
ignore that silences nothing).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, assert_type

import attrs
import pytest

from agentflow import Agent, AgentRun, OutputReader, OutputType, PartialJson
from agentflow.testing.fake import FakeModelClient

ROOT = Path(__file__).resolve().parents[2]


@attrs.frozen
class City:
    name: str
    population: int


async def typed_streams(model: FakeModelClient) -> None:
    typed = Agent(model, output_type=City)
    async with typed.stream("Paris?") as run:
        assert_type(run, AgentRun[City])
        assert_type(run.stream_output(), AsyncIterator[City])
        async for city in run.stream_output(debounce=None):
            assert_type(city, City)
            assert_type(city.population, int)
        async for data in run.stream_json():
            assert_type(data, Any)
        reader = run.output_reader()
        assert_type(reader, OutputReader[City])
        assert_type(reader.partial(), City | None)
        _ = reader.partial().name  # type: ignore[union-attr]  # None while nothing reads
        run.stream_output(debounce="0.1")  # type: ignore[arg-type]

    plain = Agent(model)
    async with plain.stream("Hi") as text_run:
        async for text in text_run.stream_output():
            assert_type(text, str)

    async with plain.stream("Paris?", output_type=City) as own_run:
        async for own in own_run.stream_output():
            assert_type(own, City)

    async with Agent(model, output_type=OutputType(list[City])).stream("Cities?") as list_run:
        async for cities in list_run.stream_output():
            assert_type(cities, list[City])

    reader_of_json = PartialJson()
    reader_of_json.feed('{"a": 1')
    assert_type(reader_of_json.value(), Any)


def test_the_streamed_output_types_check() -> None:
    pytest.importorskip("mypy")
    # In a process of its own: mypy changes the recursion limit and the garbage collector's thresholds.
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    command = [sys.executable, "-m", "mypy", *options, "--strict", "--no-error-summary", __file__]
    checked = subprocess.run(command, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr

"""``agentflow.events.AgentEvent``: the union of every event class a run publishes, for exhaustive ``match``.

``incomplete`` is never run: ``test_the_event_matches_check`` runs ``mypy --strict`` over this file and the
docs example ``docs/examples/event_match.py`` (whose ``match`` handles every class and ends in
``assert_never``). Here a ``match`` that forgets a class must make ``assert_never`` an error: ``--strict``
reports a ``# type: ignore`` that silences nothing, so the ignore below pins that the error is there.
"""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path
from typing import assert_never

import pytest

import agentflow.events
import agentflow.model.events
from agentflow.events import AgentEvent, ModelCompleted, RunEvent, TerminalEvent, TextDelta
from agentflow.model.events import Event, ModelEvent

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "event_match.py"


def incomplete(event: AgentEvent) -> str:
    match event:
        case TextDelta(text=text):
            return text
        case ModelCompleted(response=response):
            return repr(response)
        case _:
            assert_never(event)  # type: ignore[arg-type]  # every other class is left: an error


def narrowed(event: Event) -> str:
    if isinstance(event, AgentEvent):
        typing.assert_type(event, AgentEvent)
        return incomplete(event)
    return ""


def test_the_event_matches_check() -> None:
    pytest.importorskip("mypy")
    # In a process of its own: mypy changes the recursion limit and the garbage collector's thresholds.
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    command = [
        sys.executable,
        "-m",
        "mypy",
        *options,
        "--strict",
        "--no-error-summary",
        __file__,
        str(EXAMPLE),
    ]
    checked = subprocess.run(command, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _defined(base: type) -> set[type]:
    """Every class below ``base`` that agentflow's event modules define (by the name they define it under:
    attrs builds a slotted class anew, and the class it replaced may linger in ``__subclasses__``)."""
    found: set[type] = set()
    sub: type
    for sub in base.__subclasses__():
        found |= _defined(sub)
        module = sys.modules.get(sub.__module__)
        if sub.__module__.startswith("agentflow.") and getattr(module, sub.__name__, None) is sub:
            found.add(sub)
    return found


def test_every_event_class_of_agentflow_is_in_the_union() -> None:
    union = set(typing.get_args(AgentEvent))
    assert union == _defined(Event) - {ModelEvent, RunEvent}
    assert set(typing.get_args(TerminalEvent)) <= union


def test_model_events_import_from_agentflow_events_too() -> None:
    for name in agentflow.model.events.__all__:
        value = getattr(agentflow.model.events, name)
        if isinstance(value, type) and issubclass(value, Event):
            assert getattr(agentflow.events, name) is value, name
            assert name in agentflow.events.__all__


def test_the_union_is_an_isinstance_check() -> None:
    assert isinstance(TextDelta("x"), AgentEvent)
    assert isinstance(ModelCompleted("anything"), AgentEvent)

    class Note(RunEvent):
        """An application's own event: published on a run's bus, never part of the union."""

    assert not isinstance(Note(), AgentEvent)

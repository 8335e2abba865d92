"""The public names: every name in ``agentflow.__all__`` resolves, and the agent layer loads lazily."""

import subprocess
import sys

import pytest

import agentflow


def test_every_public_name_resolves() -> None:
    missing = [name for name in agentflow.__all__ if getattr(agentflow, name, None) is None]
    assert missing == []


def test_importing_agentflow_leaves_the_agent_layer_unloaded() -> None:
    # ``decimal`` too: ~1 ms of the 15 ms that ``import agentflow`` may add, and only a Decimal needs it.
    code = (
        "import sys, agentflow; "
        "heavy = [m for m in ('agentflow.agent.agent', 'agentflow.tools', 'agentflow.sandbox', "
        "'agentflow.runtimes', 'fastjsonschema', 'docstring_parser', 'decimal') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_agent_layer_and_the_tools_leave_decimal_unloaded() -> None:
    # ``tools.formats`` reads ``Decimal`` annotations and values without importing ``decimal`` itself.
    code = (
        "import sys; from agentflow import Agent; import agentflow.agent, agentflow.tools; "
        "print('decimal' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = agentflow.NoSuchThing  # type: ignore[attr-defined]


def test_session_stores_are_public_and_sqlite3_loads_only_when_a_store_connects() -> None:
    code = (
        "import sys, agentflow; before = 'sqlite3' in sys.modules; "
        "store = agentflow.SQLiteStore(':memory:'); agentflow.InMemoryStore(); "
        "built = 'sqlite3' in sys.modules; "
        "assert isinstance(store, agentflow.SessionStore); "
        "assert issubclass(agentflow.SessionStoreError, Exception); "
        "print(before, built)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"

"""The public names: every name in ``agentflow.__all__`` resolves, and the agent layer loads lazily; so does
``agentflow.__version__``."""

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import agentflow


def test_every_public_name_resolves() -> None:
    missing = [name for name in agentflow.__all__ if getattr(agentflow, name, None) is None]
    assert missing == []


def test_importing_agentflow_leaves_the_agent_layer_unloaded() -> None:
    # ``decimal`` too: ~1 ms of the 15 ms that ``import agentflow`` may add, and only a Decimal needs it;
    # ``difflib`` and ``html`` (~5 ms each) only error messages need; OpenTelemetry, ``agentflow.tracing``.
    code = (
        "import sys, agentflow; "
        "heavy = [m for m in ('agentflow.agent.agent', 'agentflow.tools', 'agentflow.sandbox', "
        "'agentflow.runtimes', 'fastjsonschema', 'docstring_parser', 'decimal', 'difflib', 'html', "
        "'agentflow.tracing', 'opentelemetry') "
        "if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_agent_layer_and_the_tools_leave_decimal_unloaded() -> None:
    # ``tools.formats`` reads ``Decimal`` annotations and values without importing ``decimal`` itself.
    code = (
        "import sys; from agentflow import Agent, OpenAIChatModel, OpenAIResponsesModel; "
        "import agentflow.agent, agentflow.tools; "
        "print([m for m in ('decimal', 'difflib', 'html') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_model_fallback_names_are_public_and_load_on_first_use() -> None:
    code = (
        "import sys, agentflow; "
        "before = [m for m in ('agentflow.model.fallback', 'agentflow.agent.fallback_client') "
        "if m in sys.modules]; "
        "names = (agentflow.FallbackModelClient, agentflow.FallbackChatModel, "
        "agentflow.AllModelsFailedError, agentflow.may_succeed_elsewhere); "
        "assert issubclass(agentflow.AllModelsFailedError, (agentflow.ModelError, ExceptionGroup)); "
        "print(before, [n.__module__ for n in names])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "[] ['agentflow.agent.fallback_client', 'agentflow.model.fallback', 'agentflow.model.fallback', "
        "'agentflow.model.fallback']"
    )


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


def test_the_version_is_the_checkout_s_and_costs_import_agentflow_nothing() -> None:
    pyproject = Path(agentflow.__file__).resolve().parents[1] / "pyproject.toml"
    expected = tomllib.loads(pyproject.read_text("utf-8"))["project"]["version"]
    assert agentflow.__version__ == expected == importlib.metadata.version("agentflow")
    assert "__version__" in dir(agentflow)
    # Read on first use: importlib.metadata and tomllib are not loaded by ``import agentflow`` itself.
    code = (
        "import sys, agentflow; print([m for m in ('importlib.metadata', 'tomllib') if m in sys.modules]); "
        "print(agentflow.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", expected]


def test_outside_a_checkout_the_version_comes_from_the_installed_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path
    (root / "agentflow").mkdir()
    monkeypatch.setattr(agentflow, "__file__", str(root / "agentflow" / "__init__.py"))
    installed = importlib.metadata.version("agentflow")
    assert agentflow._read_version() == installed  # no pyproject.toml beside the package

    (root / "pyproject.toml").write_text('[project]\nname = "someone-else"\nversion = "9.9"\n')
    assert agentflow._read_version() == installed  # another project's pyproject.toml is not ours

    (root / "pyproject.toml").write_text('[project]\nname = "agentflow"\nversion = "2.0.0.dev1"\n')
    assert agentflow._read_version() == "2.0.0.dev1"  # a checkout says what it is

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    (root / "pyproject.toml").unlink()
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert agentflow._read_version() == "0+unknown"


def test_tool_guardrail_names_are_public_and_load_on_first_use() -> None:
    code = (
        "import sys, agentflow; "
        "before = 'agentflow.tools.tool_guardrails' in sys.modules; "
        "names = (agentflow.Rejection, agentflow.ToolGuardrailContext, agentflow.ToolGuardrailTripped, "
        "agentflow.ToolGuardrailError); "
        "assert issubclass(agentflow.ToolGuardrailTripped, agentflow.TripwireError); "
        "assert issubclass(agentflow.ToolGuardrailError, agentflow.GuardrailError); "
        "assert issubclass(agentflow.ToolGuardrailContext, agentflow.ToolContext); "
        "print(before, [n.__module__ for n in names])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "False ['agentflow.tools.tool_guardrails', 'agentflow.tools.tool_guardrails', "
        "'agentflow.runtimes.guardrails', 'agentflow.runtimes.guardrails']"
    )

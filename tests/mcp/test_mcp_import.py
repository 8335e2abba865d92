"""``agentflow.mcp`` is opt-in: ``import agentflow`` (and the agent layer) never loads ``mcp``, and without
the ``mcp`` package importing ``agentflow.mcp`` says what to install."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_importing_agentflow_and_building_an_agent_leaves_mcp_unloaded() -> None:
    out = _run(
        "import sys, agentflow; from agentflow import Agent; import agentflow.agent, agentflow.tools; "
        "print([m for m in ('mcp', 'mcp_types', 'agentflow.mcp', 'httpx2') if m in sys.modules])"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_without_the_mcp_package_the_import_error_says_what_to_install() -> None:
    out = _run(
        "import sys; sys.modules['mcp'] = None\n"  # what Python does for a package that is not installed
        "try:\n"
        "    import agentflow.mcp\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "agentflow.mcp needs the 'mcp' package (version 2.3 or later): pip install 'agentflow[mcp]'"
    )

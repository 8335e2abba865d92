"""``agentflow.tracing`` needs only the OpenTelemetry API, and says what to install when it is missing."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


# Makes ``opentelemetry`` look uninstalled, in the subprocess only.
_HIDE_OPENTELEMETRY = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
"""


def test_without_opentelemetry_the_import_error_says_what_to_install() -> None:
    code = _HIDE_OPENTELEMETRY + (
        "import agentflow\n"
        "try:\n"
        "    import agentflow.tracing\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc.name, '|', exc)\n"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    name, message = out.stdout.strip().split(" | ")
    assert name == "opentelemetry"
    assert "pip install 'agentflow[otel]'" in message


def test_the_tracing_module_loads_the_api_and_never_the_sdk() -> None:
    code = (
        "import sys, agentflow.tracing; "
        "sdk = any(m.startswith('opentelemetry.sdk') for m in sys.modules); "
        "print('opentelemetry.trace' in sys.modules, sdk)"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True False"

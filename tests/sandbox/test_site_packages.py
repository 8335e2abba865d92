"""``site_packages=True`` means the host's installed packages, also when the sandbox has to run another
interpreter (its own uid cannot run the host's): they are importable, or the sandbox refuses to start."""

from __future__ import annotations

import os
import sys

import pytest

from agentflow.sandbox import ProcessSandbox, SandboxStartError, _runner, process_sandbox

from .conftest import HostTools


def runs_host_python(python: str) -> bool:
    return os.path.realpath(python) == os.path.realpath(sys.executable)


async def test_the_host_s_installed_packages_can_be_imported(tools: HostTools) -> None:
    async with ProcessSandbox(site_packages=True) as box:
        result = await box.execute(
            "import attrs, orjson\n[attrs.__name__, orjson.dumps([1]).decode()]", tools
        )
    assert result.ok, result.error
    assert result.value == ["attrs", "[1]"]


async def test_packages_the_sandbox_cannot_use_are_a_start_error_not_a_surprise_later(
    tools: HostTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ProcessSandbox(site_packages=True) as probe:
        isolation = await probe.start()
    if runs_host_python(isolation.python):
        pytest.skip("the sandbox runs the host's own interpreter here, with its own packages")
    monkeypatch.setattr(process_sandbox, "host_site_dirs", lambda: ("/nonexistent/site-packages",))
    async with ProcessSandbox(site_packages=True) as box:
        with pytest.raises(SandboxStartError) as caught:
            await box.execute("1", tools)
        assert box.pids == ()
    message = str(caught.value)
    assert message.startswith(f"site_packages=True, but the sandbox runs {isolation.python} ")
    assert "the host's packages cannot be used there: the sandbox's user cannot read /nonexistent/" in message
    assert message.endswith(
        "Pass python= an interpreter that has the packages and that other users can run, or "
        "site_packages=False"
    )


def test_packages_of_another_python_version_are_not_added() -> None:
    assert _runner._add_site_dirs([]) is None
    assert _runner._add_site_dirs(["2.7", "/usr/lib/python2.7/site-packages"]) == (
        f"this interpreter is Python {sys.version_info[0]}.{sys.version_info[1]}, the host's packages are "
        "for Python 2.7"
    )

"""``agentflow --version`` / ``python -m agentflow --version``: the version of the copy that runs."""

from __future__ import annotations

import tomllib

import pytest
from cli_support import ROOT, agentflow

import agentflow as package
from agentflow.cli import main


def _project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"])


async def test_the_version_option_prints_the_package_version_and_exits_0() -> None:
    done = await agentflow("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == f"agentflow {_project_version()}\n"
    assert done.stderr == b""


def test_the_version_is_the_package_s(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"agentflow {package.__version__}\n"


def test_the_help_lists_the_version_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--version" in capsys.readouterr().out

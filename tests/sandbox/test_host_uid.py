"""Code that would run as the host's own uid can read and write the host user's files: ``isolation.notes``
always says so, and ``strict=True`` refuses to run it."""

from __future__ import annotations

import attrs
import pytest

from agentflow.sandbox import ProcessSandbox, SandboxIsolation, SandboxUnavailableError, launch
from agentflow.sandbox.process_sandbox import _require_strict_isolation

from .conftest import HostTools

HOST_UID = "runs as your uid: can read and write your files"


FULL = SandboxIsolation(
    platform="linux",
    python="python3",
    namespaces=True,
    network_isolated=True,
    host_processes_hidden=True,
    separate_user=True,
    resource_limits=True,
    process_limit_enforced=True,
)
"""What a Linux host with namespaces and root gives."""


def test_strict_refuses_the_host_s_uid_even_with_every_namespace() -> None:
    _require_strict_isolation(FULL, network=False)  # the full set passes
    with pytest.raises(SandboxUnavailableError) as caught:
        _require_strict_isolation(attrs.evolve(FULL, separate_user=False), network=False)
    message = str(caught.value)
    assert message.startswith(
        "strict sandbox isolation is not available here: the code would run as your uid and could read and "
        "write your files (~/.ssh, ~/.aws, .env); a uid of its own needs a host running as root"
    )
    assert message.endswith("or plug in a container or VM CodeExecutor")


async def test_separate_user_false_is_refused_by_strict_and_said_in_the_notes() -> None:
    async with ProcessSandbox(strict=True, separate_user=False) as box:
        with pytest.raises(SandboxUnavailableError, match="the code would run as your uid"):
            await box.execute("open('/root/.bashrc', 'a')", HostTools())
        assert box.pids == ()  # refused before any process started
        assert box.isolation is not None
        assert not box.isolation.separate_user
        assert box.isolation.notes[0].startswith(HOST_UID)


async def test_the_default_sandbox_says_whose_uid_it_runs_as() -> None:
    async with ProcessSandbox() as box:
        isolation = await box.start()
    if isolation.separate_user:
        assert not any(note.startswith(HOST_UID) for note in isolation.notes)
    else:  # a host that is not root: the code is the host's user as far as files go
        assert isolation.notes[0].startswith(HOST_UID)


async def test_without_namespaces_the_host_s_uid_is_said_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agentflow.sandbox.launch.shutil.which", lambda name, path=None: None)
    monkeypatch.setattr(launch, "_PLANS", {})
    plan = await launch.plan_launch(python=None, network=False, switch_user=False)
    assert not plan.isolation.separate_user
    assert plan.isolation.notes[0].startswith(HOST_UID)

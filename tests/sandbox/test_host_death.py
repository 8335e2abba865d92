"""A sandbox does not outlive its host process: killed with it (the kernel's parent-death signal, on Linux
with ``setpriv``) or ending itself when its channel closes, and its working directory is deleted by the
runner when it can, else by the next sandbox that starts in the same place."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentflow.sandbox import workdirs
from agentflow.sandbox.workdirs import Workdir, sweep_orphans

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on pidfds (Linux)")

HOST = """
import os, sys, anyio
from agentflow.sandbox import ExecutionLimits, ProcessSandbox, launch

if sys.argv[3] == "no-kernel-guard":
    async def no_guard(notes):
        return ()
    launch._parent_death_guard = no_guard

async def main():
    async with ProcessSandbox(workdir_parent=sys.argv[1]) as box:
        async def invoker(name, args):
            raise RuntimeError(name)
        isolation = await box.start()
        print(isolation.dies_with_host, isolation.private_tmp, box._child.workdir, *box.pids, flush=True)
        code = "open('running', 'w').close()\\n" + sys.argv[2]  # the test kills this process then
        await box.execute(code, invoker, [], ExecutionLimits(wall_time=60, cpu_seconds=60))

anyio.run(main)
"""
SLEEPING = "import time\nwhile True:\n    time.sleep(0.5)"
SPINNING = "while True:\n    pass"
IN_C = "sum(range(10**15))"  # holds the interpreter lock: no Python thread of the runner can act


class Host:
    """A host process running one sandbox step, and what it said about the sandbox."""

    def __init__(self, parent: Path, code: str, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOST, str(parent), code, mode], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        dies_with_host, private_tmp, self.workdir, *pids = self.process.stdout.readline().split()
        self.dies_with_host = dies_with_host == "True"
        self.private_tmp = private_tmp == "True"
        self.pids = [int(pid) for pid in pids]
        wait_for_file(os.path.join(self.workdir, "running"))

    def kill(self) -> None:
        """SIGKILL: the host gets no chance to clean up, as with the OOM killer."""
        self.process.kill()
        self.process.wait()


def wait_for_file(path: str) -> None:
    """Until the code has made ``path``: then it runs (a guard of 15 s)."""
    deadline = time.monotonic() + 15
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"the code never made {path}"
        time.sleep(0.01)


@pytest.fixture
def parent() -> Iterator[Path]:
    """A parent directory like /tmp, in /tmp: the sandbox's own uid (the host being root) can reach it and
    remove its entry (pytest's tmp_path sits under a directory only root may enter)."""
    path = Path(tempfile.mkdtemp(prefix="host-death-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cleanup() -> Iterator[list[int]]:
    """Pids to kill at the end if the test failed before they died."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def entries(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


async def wait_gone(pids: list[int]) -> None:
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            with anyio.fail_after(15):  # a guard only: readable once the process has exited
                await anyio.wait_readable(fd)
        finally:
            os.close(fd)


@pytest.mark.parametrize("code", [SLEEPING, SPINNING, IN_C], ids=["sleeping", "spinning", "in-c"])
async def test_the_sandbox_dies_with_its_host_and_leaves_no_directory(
    parent: Path, code: str, cleanup: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    host = Host(parent, code, "default")
    cleanup.extend(host.pids)
    if code == IN_C and not host.dies_with_host:
        host.kill()
        pytest.skip("no parent-death signal (setpriv) here: code holding the GIL outlives its host")
    host.kill()
    await wait_gone(host.pids)
    # The runner deletes its directory when it gets to; if the kernel killed it first, the next sandbox
    # started there deletes it (here at once: the claim's minimum age is only a guard against races).
    monkeypatch.setattr(workdirs, "_swept", set())
    monkeypatch.setattr(workdirs, "_MIN_AGE", 0.0)
    sweep_orphans(str(parent))
    assert entries(parent) == []


@pytest.mark.parametrize("code", [SLEEPING, SPINNING], ids=["sleeping", "spinning"])
async def test_without_the_kernel_s_help_the_runner_ends_itself_and_deletes_its_directory(
    parent: Path, code: str, cleanup: list[int]
) -> None:
    host = Host(parent, code, "no-kernel-guard")
    cleanup.extend(host.pids)
    host.kill()
    await wait_gone(host.pids)
    workdir = Path(host.workdir)
    if host.private_tmp:
        # Its path was a mount point in the sandbox (re-attached under the private /tmp): the runner
        # empties it, and the next sandbox's sweep deletes it with the host's claim.
        assert entries(parent) == sorted([workdir.name, workdir.name + ".lock"])
        assert entries(workdir) == []
    else:
        assert entries(parent) == [workdir.name + ".lock"]  # the host's claim, swept later


def test_the_sweep_takes_only_directories_no_live_host_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = Workdir(str(tmp_path))
    make_orphan = f"from agentflow.sandbox.workdirs import Workdir\nprint(Workdir({str(tmp_path)!r}).path)"
    orphan = subprocess.run(
        [sys.executable, "-c", make_orphan], capture_output=True, text=True, check=True
    ).stdout.strip()
    unclaimed = tmp_path / "agentflow-sandbox-older"  # made by a version without claim files: left alone
    unclaimed.mkdir()
    try:
        monkeypatch.setattr(workdirs, "_swept", set())
        assert sweep_orphans(str(tmp_path)) == []  # too young to be taken
        monkeypatch.setattr(workdirs, "_swept", set())
        monkeypatch.setattr(workdirs, "_MIN_AGE", 0.0)
        assert sweep_orphans(str(tmp_path)) == [orphan]
        assert sweep_orphans(str(tmp_path)) == []  # once per parent directory
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [Path(live.path).name, Path(live.path).name + ".lock", unclaimed.name]
        )
    finally:
        live.release()
    assert [p.name for p in tmp_path.iterdir()] == [unclaimed.name]

"""``SandboxProcess``: one live sandbox process — spawn, frame I/O, stderr, kill, reap and clean-up.

It knows nothing of steps or tools (``ProcessSandbox`` drives it). Kill is the only way to stop it: the
runner is killed through a pidfd (race-free; it is PID 1 of its namespace, so everything it started dies
with it), the ``unshare`` launcher then reaps it and exits, and the host reaps the launcher — no zombie is
left. All I/O is on the process pipes, on the event loop; threads only start the process (``spawn``: a fork
is too slow for the loop's thread), delete the working directory and sweep those that host processes which
died left behind (``workdirs``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from .errors import SandboxStartError
from .frames import HEADER, ChildMessage, FrameError, Ready, decode_child_message, frame_size, max_frame_bytes
from .launch import PRIVATE_TMP_DIRS, LaunchPlan, dynamic_id, runner_source, sandbox_environment
from .limits import ExecutionLimits
from .spawn import SpawnedProcess, spawn
from .workdirs import Workdir, needs_sweep, remove_files_of, sweep_orphans

__all__ = ["ChildExited", "SandboxProcess"]

_REAP_TIMEOUT = 5.0
"""How long the launcher gets to reap the killed runner before its whole process group is killed."""

_STDERR_ON_FAILURE = 4096
_MAX_DESCENDANTS = 4096
"""The most processes ``cpu_time(descendants=True)`` reads (``max_processes`` bounds them far below)."""


class ChildExited(Exception):
    """The sandbox process closed its end of the channel (it exited, crashed or was killed)."""


class SandboxProcess:
    """A started sandbox process that has greeted the host. Create with ``await SandboxProcess.spawn(…)``."""

    def __init__(
        self,
        process: SpawnedProcess,
        *,
        plan: LaunchPlan,
        limits: ExecutionLimits,
        workdir: Workdir,
        ident: int | None = None,
    ) -> None:
        self._process = process
        self._ident = ident  # the throw-away uid it runs as (host running as root), if any
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._stderr = process.stderr
        self._plan = plan
        self._send_lock = anyio.Lock()
        self._runner_pid: int | None = None
        self._runner_started: int | None = None  # its start time in /proc: tells a reused pid apart
        self._pidfd: int | None = None
        self._killed = False
        self.max_frame = max_frame_bytes(limits)
        """The largest frame ``receive`` accepts; ``ProcessSandbox`` sets it for each step's limits."""
        self._workdir = workdir
        self.workdir = workdir.path
        self.process_limits = limits.process_limits
        self._may_fork = limits.max_processes > 0
        self.rlimits = plan.rlimits(limits)
        self.python_version = ""
        self.stderr_closed = anyio.Event()

    @classmethod
    async def spawn(
        cls,
        plan: LaunchPlan,
        *,
        limits: ExecutionLimits,
        site_packages: bool = False,
        site_dirs: Sequence[str] = (),
        workdir_parent: str | None = None,
        startup_timeout: float = 10.0,
    ) -> SandboxProcess:
        """Start the process in a fresh private working directory and wait for its greeting.

        ``site_dirs``: the host's package directories for the runner to add (``site_packages=True`` with an
        interpreter other than the host's); when it cannot, the start fails with the reason.
        """
        # Directories left by host processes that died (their sandboxes died with them): once per parent.
        if needs_sweep(workdir_parent):
            await anyio.to_thread.run_sync(sweep_orphans, workdir_parent)
        try:
            workdir = Workdir(workdir_parent)
        except OSError as exc:
            raise SandboxStartError(f"cannot make the sandbox's working directory: {exc}") from exc
        ident = dynamic_id() if plan.switch_user else None
        try:
            if ident is not None:
                os.chown(workdir.path, ident, ident)
            # Started in the spawner thread: a fork and exec take milliseconds the loop has better uses for.
            process = await spawn(
                plan.argv(
                    site_packages=site_packages,
                    site_dirs=site_dirs,
                    tmp_bytes=limits.max_tmp_bytes,
                    workdir=workdir.path,
                ),
                cwd=workdir.path,
                env=sandbox_environment(workdir.path),
                start_new_session=True,
                user=ident,
                group=ident,
                extra_groups=[] if ident is not None else None,
                umask=0o077,
            )
        except BaseException as exc:
            workdir.release()
            if isinstance(exc, OSError):
                raise SandboxStartError(f"cannot start the sandbox process: {exc}{_notes(plan)}") from exc
            raise
        child = cls(process, plan=plan, limits=limits, workdir=workdir, ident=ident)
        try:
            with anyio.fail_after(startup_timeout):
                greeting = await child.receive()
            if not isinstance(greeting, Ready):
                raise FrameError(f"expected a greeting, got {type(greeting).__name__}")
            child.python_version = greeting.python
            child._watch_runner()
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                detail = await child._stderr_tail()
                await child.kill()
            if isinstance(exc, ChildExited | FrameError | TimeoutError):
                reason = "did not greet the host in time" if isinstance(exc, TimeoutError) else str(exc)
                argv = plan.argv(site_packages=site_packages)
                command = " ".join(argv[: argv.index(runner_source())])  # up to the runner's source
                raise SandboxStartError(
                    f"the sandbox process ({command} …) failed to start: {reason}{_notes(plan)}"
                    + (f"\n{detail}" if detail else "")
                ) from None
            raise
        if greeting.site_error is not None:
            with anyio.CancelScope(shield=True):
                await child.kill()
            # Telling the model that installed packages can be imported would be false: refuse instead.
            raise SandboxStartError(
                f"site_packages=True, but the sandbox runs {plan.python} (the sandbox's user cannot run "
                f"{sys.executable}), and the host's packages cannot be used there: {greeting.site_error}. "
                "Pass python= an interpreter that has the packages and that other users can run, or "
                "site_packages=False"
            )
        return child

    @property
    def pids(self) -> tuple[int, ...]:
        """Host pids of the launcher and of the runner (one pid when there is no launcher)."""
        pids = [self._process.pid]
        if self._runner_pid is not None and self._runner_pid != self._process.pid:
            pids.append(self._runner_pid)
        return tuple(pids)

    @property
    def alive(self) -> bool:
        """Whether the process has neither been killed nor exited."""
        return not self._killed and self._process.returncode is None

    def cpu_time(self, *, descendants: bool = False) -> float | None:
        """CPU seconds (user and system, all threads) the runner has used, read from ``/proc``; ``None``
        where that cannot be read (no ``/proc``, as on macOS) or the runner is gone.

        With ``descendants`` (and only when the code may start processes, ``max_processes > 0``), also
        the time of every process below the runner, live or not yet reaped, and of those it has reaped:
        code that forked a process that goes on using CPU is seen too. In a PID namespace that is every
        process of the sandbox (orphans are adopted by the runner, its PID 1); without one, a process
        whose parent exited has left the runner's tree and is not counted.
        """
        if self._runner_pid is None or self._runner_started is None or not self.alive:
            return None
        stat = _proc_stat(self._runner_pid)
        if stat is None or stat[1] != self._runner_started:
            return None
        if descendants and self._may_fork:
            return _tree_cpu_time(self._runner_pid)
        return stat[0]

    def cpu_soft_limit(self) -> float | None:
        """The runner's soft ``RLIMIT_CPU`` in seconds (``inf``: unlimited), read from ``/proc``; ``None``
        where that cannot be read."""
        if self._runner_pid is None or not self.alive:
            return None
        try:
            with open(f"/proc/{self._runner_pid}/limits", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Max cpu time"):
                        soft = line[len("Max cpu time") :].split()[0]
                        return float("inf") if soft == "unlimited" else float(soft)
        except (OSError, ValueError, IndexError):
            pass
        return None

    async def send(self, frame: bytes) -> None:
        """Write one whole frame (frames from concurrent tool answers never interleave).

        Raises ``ChildExited`` when the process has closed its end.
        """
        async with self._send_lock:
            try:
                await self._stdin.send(frame)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise ChildExited("the sandbox process closed its channel") from exc

    async def receive(self) -> ChildMessage:
        """The next message from the child; ``ChildExited`` at end of stream, ``FrameError`` on garbage."""
        try:
            size = frame_size(await self._stdout.receive_exactly(HEADER.size), self.max_frame)
            body = await self._stdout.receive_exactly(size)
        except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError) as exc:
            raise ChildExited("the sandbox process closed its channel") from exc
        return decode_child_message(body)

    async def drain_stderr(self, sink: Callable[[bytes], bool]) -> None:
        """Pass what the process writes to its stderr pipe to ``sink`` until the pipe closes
        (``stderr_closed`` is set then) or ``sink`` returns ``False``: then the pipe is left unread, and a
        process writing more to it waits until it is killed or the next step reads again.

        Runs only while a step runs (the child is idle in between); the pipe never fills up meanwhile.
        """
        try:
            async for chunk in self._stderr:
                if not sink(chunk):
                    return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        self.stderr_closed.set()

    async def kill(self) -> None:
        """Kill the process and everything it started, reap it and delete its working directory.

        Idempotent, and shielded from cancellation so that a cancelled step still cleans up.
        """
        if self._killed:
            return
        self._killed = True
        with anyio.CancelScope(shield=True):
            if self._process.returncode is None:
                self._kill_runner()
                # The step's output is read by now. The launcher may report the runner's death on stderr,
                # and a pipe the host stopped reading (a flood, see ``drain_stderr``) is full: closed, the
                # write fails at once instead of holding the launcher until ``_REAP_TIMEOUT``.
                await self._stderr.aclose()
                with anyio.move_on_after(_REAP_TIMEOUT):
                    await self._process.wait()
                if self._process.returncode is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(self._process.pid, signal.SIGKILL)
            await self._process.aclose()
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            # A throw-away uid that had the host's /tmp, /var/tmp and /dev/shm (no private ones) may have left
            # files there that no later sandbox could delete; once its process is gone, nothing of that uid
            # writes any more (unless code started a process that left the sandbox's process group, which
            # needs max_processes > 0 and no PID namespace).
            gone = self._process.returncode is not None
            owner = self._ident if gone and not self._plan.isolation.private_tmp else None
            await anyio.to_thread.run_sync(self._clean_up, owner)

    def _clean_up(self, owner: int | None) -> None:
        """Delete the working directory, and what ``owner`` left directly in the host's temporary
        directories."""
        self._workdir.release()
        if owner is not None:
            remove_files_of(owner, PRIVATE_TMP_DIRS)

    async def exit_status(self) -> int | None:
        """The launcher's exit status once it has ended (``None`` if it still runs a second later)."""
        with anyio.move_on_after(1.0):
            return await self._process.wait()
        return None

    def _watch_runner(self) -> None:
        """Find the runner behind the ``unshare`` launcher and hold a pidfd to it for a race-free kill."""
        launcher = self._process.pid
        runner: int | None = launcher
        if self._plan.forks:
            runner = _first_child(launcher)
        self._runner_pid = runner
        if runner is not None:
            stat = _proc_stat(runner)
            self._runner_started = stat[1] if stat is not None else None
        if runner is not None and hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self._pidfd = os.pidfd_open(runner)

    def _kill_runner(self) -> None:
        if self._pidfd is not None and hasattr(signal, "pidfd_send_signal"):
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            if self._plan.forks:
                return  # PID 1 of its own PID namespace: everything it started dies with it
        # Without a pidfd, or without a PID namespace (where the runner's children would outlive it): the
        # whole process group (the runner may have left it, but --kill-child still takes it). The launcher
        # is not reaped yet, so its pid, which names the group, cannot have been reused.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)

    async def _stderr_tail(self) -> str:
        data = bytearray()
        with (
            anyio.move_on_after(1.0),
            contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError),
        ):
            async for chunk in self._stderr:
                data += chunk
                if len(data) > 4 * _STDERR_ON_FAILURE:
                    break
        return data[-_STDERR_ON_FAILURE:].decode("utf-8", "replace").strip()


def _notes(plan: LaunchPlan) -> str:
    notes = plan.isolation.notes
    return f" ({'; '.join(notes)})" if notes else ""


def _proc_stat(pid: int) -> tuple[float, int] | None:
    """CPU seconds used by ``pid`` (user + system) and its start time (clock ticks after boot), from
    ``/proc/<pid>/stat``; ``None`` when there is no such file."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()  # the name before ")" may hold spaces
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks, int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _tree_cpu_time(root: int) -> float | None:
    """CPU seconds of ``root`` and every process below it (user and system, with what each has reaped),
    from ``/proc``; ``None`` when ``root`` cannot be read. Processes that end while it reads are skipped."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    pending, seen = [root], {root}
    while pending and len(seen) <= _MAX_DESCENDANTS:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        except (OSError, ValueError, IndexError):
            if pid == root:
                return None
            continue
        for child in _children(pid):
            if child not in seen:
                seen.add(child)
                pending.append(child)
    return total / ticks


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (``/proc/<pid>/task/<tid>/children``; empty without it)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with (
                contextlib.suppress(OSError, ValueError),
                open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as handle,
            ):
                found.extend(int(part) for part in handle.read().split())
    return found


def _first_child(pid: int) -> int | None:
    """The first child of ``pid`` (the runner that ``unshare --fork`` started), from ``/proc``."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            children = handle.read().split()
        if children:
            return int(children[0])
    except OSError:
        pass
    # Kernels without CONFIG_PROC_CHILDREN: scan for the process whose parent is the launcher.
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == pid:
                        return int(entry)
    return None

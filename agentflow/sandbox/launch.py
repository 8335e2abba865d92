"""How the sandbox process is launched on this machine: what isolation works here, and the command for it.

``plan_launch`` tries the strongest set-up first, with real commands, and keeps the first that works
(cached per host process):

1. Linux with ``unshare`` (util-linux): new user, PID, mount, IPC, UTS and (unless ``network=True``) network
   namespaces. The runner is PID 1 of its own PID namespace with a fresh ``/proc``, so no host process is
   visible (no ``/proc/<host pid>/environ``); its uid inside is an unprivileged 1000, so it holds no
   capabilities and cannot unmount that ``/proc``; the network namespace has only a downed loopback.
   ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are private, size-capped tmpfs mounts in its mount namespace
   (``max_tmp_bytes``), gone with it: the launcher maps the runner to root of its user namespace, and the
   runner's first act (``_runner._make_private_tmp``, before any code or thread) mounts them, re-attaches
   the working directory at its path when it lived under one of them, then moves itself into a nested user
   namespace where it is 1000 and drops every capability. It holds none in the namespace that owns the
   mounts, so it can neither unmount them nor reach what they cover. Where that fails (no ``ctypes``, a
   kernel that refuses the mounts): the same namespaces with 1000 mapped directly, said in a note.
2. When the host runs as root, the process also gets a fresh unprivileged uid/gid of its own (like
   systemd's DynamicUser) *outside* the namespace: it cannot read or write root's files beyond what
   "other" may, cannot signal or trace the host, and ``RLIMIT_NPROC`` applies to it (root ignores it).
   That uid must be able to run the interpreter: when the host's Python lives in a private directory
   (e.g. ``/root/.pyenv``), a system ``/usr/bin/python3`` is used instead (the runner needs only the stdlib).
3. Without ``unshare`` or user namespaces (macOS, hardened kernels): a plain child process, with the
   separate uid when root. ``SandboxIsolation`` says what is missing; ``strict=True`` refuses to run then.

On Linux, when util-linux's ``setpriv`` can set a parent-death signal, the whole command runs under
``setpriv --pdeathsig KILL``: the kernel kills the launcher (and, through ``unshare --kill-child``, the
runner and everything in its PID namespace) the moment the host process dies, whatever the code is doing.
The runner also ends itself when its channel to the host closes (see ``_runner.py``).

This module must not run user code or hold processes: it only decides and describes.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from .errors import SandboxStartError, SandboxUnavailableError
from .limits import ExecutionLimits

__all__ = [
    "LaunchPlan",
    "SandboxIsolation",
    "host_site_dirs",
    "plan_launch",
    "runner_source",
    "sandbox_environment",
]

INNER_ID = 1000
"""The uid/gid the code sees inside the user namespace: not 0, so it has no capabilities there."""

_DYNAMIC_ID_RANGE = (0x60000000, 0x70000000)
"""Fresh per-process uids/gids when the host is root: far above any real account."""

_SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
_PROBE_CODE = "import sys; sys.exit(sys.version_info < (3, 8))"
_PROBE_TIMEOUT = 10.0
PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
"""World-writable directories that get a private tmpfs in the sandbox's mount namespace, where they exist."""
_PROBE_TMP_BYTES = 1024 * 1024


@attrs.frozen
class SandboxIsolation:
    """What the sandbox process is isolated from on this machine (see docs/sandbox-security.md).

    - ``namespaces``: own user, PID, mount, IPC and UTS namespaces (Linux);
    - ``network_isolated``: own empty network namespace (no interfaces but a downed loopback);
    - ``host_processes_hidden``: own PID namespace and ``/proc``: host processes are invisible;
    - ``separate_user``: a fresh unprivileged uid/gid (host running as root);
    - ``resource_limits``: ``setrlimit`` limits are applied;
    - ``process_limit_enforced``: ``max_processes`` holds exactly (``RLIMIT_NPROC`` counts only the sandbox);
    - ``dies_with_host``: the kernel kills the sandbox when the host process dies (a parent-death signal);
      without it the runner still exits when it notices its channel close, unless code holds it in one
      long call into C;
    - ``private_tmp``: ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are the sandbox's own, size-capped
      (``ExecutionLimits.max_tmp_bytes``) and deleted with it; otherwise they are the host's;
    - ``notes``: why something is missing, or what was chosen instead (and ``runs as your uid: …`` whenever
      the code runs under the host's uid).
    """

    platform: str
    python: str
    namespaces: bool
    network_isolated: bool
    host_processes_hidden: bool
    separate_user: bool
    resource_limits: bool
    process_limit_enforced: bool
    notes: tuple[str, ...] = ()
    dies_with_host: bool = False
    private_tmp: bool = False

    @property
    def host_environment_protected(self) -> bool:
        """Whether the code cannot read the host's environment through ``/proc/<host pid>/environ``."""
        return self.host_processes_hidden or self.separate_user


@attrs.frozen
class LaunchPlan:
    """A tested way to start the sandbox: the command prefix, the interpreter and the uid policy."""

    prefix: tuple[str, ...]
    python: str
    switch_user: bool
    nproc_base: int | None
    """``RLIMIT_NPROC`` = this + ``max_processes`` (processes and threads of the sandbox uid that exist
    before user code runs, in the runner's user namespace: the runner and its watch thread, and the launcher
    when it shares that namespace); ``None`` when the count would include other processes (only
    ``max_processes=0`` holds)."""
    isolation: SandboxIsolation
    tmp_dirs: tuple[str, ...] = ()
    """The directories the runner covers with a private tmpfs (none: they are the host's)."""

    @property
    def forks(self) -> bool:
        """Whether the launcher forks the runner (``unshare --fork``), rather than being it."""
        return self.isolation.namespaces

    def argv(
        self,
        *,
        site_packages: bool,
        site_dirs: Sequence[str] = (),
        tmp_bytes: int = ExecutionLimits().max_tmp_bytes,
        workdir: str | None = None,
    ) -> list[str]:
        """The full command: wrappers, interpreter in isolated mode, runner source, the private-tmp step's
        arguments when there is one (``tmp_bytes`` sizes each tmpfs; ``workdir``, the process's working
        directory, is re-attached at its path when one of them covers it), then the host's package
        directories to add when there are any (``site_dirs``; see ``host_site_dirs``)."""
        flags = ["-I", "-B"] if site_packages else ["-I", "-B", "-S"]
        tmp = private_tmp_args(self.tmp_dirs, tmp_bytes, workdir) if self.tmp_dirs else []
        extra = [f"{sys.version_info[0]}.{sys.version_info[1]}", *site_dirs] if site_dirs else []
        return [*self.prefix, self.python, *flags, "-c", runner_source(), *tmp, *extra]

    @property
    def runs_host_python(self) -> bool:
        """Whether the sandbox runs the host's own interpreter (so it sees the same installed packages)."""
        return os.path.realpath(self.python) == os.path.realpath(sys.executable)

    def rlimits(self, limits: ExecutionLimits) -> dict[str, int | None]:
        """The ``resource`` limits the child applies before its first step (name → value, ``None``: leave)."""
        if self.nproc_base is not None:
            nproc: int | None = self.nproc_base + limits.max_processes
        else:
            nproc = 0 if limits.max_processes == 0 else None
        return {
            "RLIMIT_AS": limits.memory_bytes,
            "RLIMIT_NOFILE": limits.max_open_files,
            "RLIMIT_NPROC": nproc,
            "RLIMIT_FSIZE": limits.max_file_bytes,
            "RLIMIT_CORE": 0,
        }


def private_tmp_args(dirs: Sequence[str], tmp_bytes: int, workdir: str | None) -> list[str]:
    """The runner's arguments for its private-tmp step (``_runner._make_private_tmp``): each tmpfs gets
    ``tmp_bytes`` and one inode per 4 KiB page of it (empty files cost kernel memory too, which ``size`` does
    not bound), the uid the code gets, and ``workdir`` re-attached at its real path when it lies under one
    of ``dirs`` (``''``: nothing to re-attach).

    >>> private_tmp_args(("/tmp", "/dev/shm"), 1 << 20, "/tmp/agentflow-sandbox-x")
    ['--private-tmp', '1048576', '256', '1000', '/tmp/agentflow-sandbox-x', '/tmp', '/dev/shm', '--']
    >>> private_tmp_args(("/tmp",), 1 << 20, "/srv/agentflow-sandbox-x")[4]
    ''
    """
    real = os.path.realpath(workdir) if workdir is not None else ""
    covered = any(real.startswith(directory.rstrip("/") + "/") for directory in dirs)
    size, inodes = str(tmp_bytes), str(max(tmp_bytes // 4096, 16))
    return ["--private-tmp", size, inodes, str(INNER_ID), real if covered else "", *dirs, "--"]


def runner_source() -> str:
    """The child's program: the text of ``_runner.py``, passed with ``-c``.

    Passing the text (not the path) means the sandbox uid needs no access to the host's installation, and
    the child never imports anything from it.
    """
    global _RUNNER_SOURCE
    if _RUNNER_SOURCE is None:
        _RUNNER_SOURCE = Path(__file__).with_name("_runner.py").read_text(encoding="utf-8")
    return _RUNNER_SOURCE


_RUNNER_SOURCE: str | None = None


def sandbox_environment(workdir: str) -> dict[str, str]:
    """The child's whole environment: nothing of the host's (no API keys), just enough to run.

    >>> sorted(sandbox_environment("/tmp/x"))
    ['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']
    """
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
    }


def host_site_dirs() -> tuple[str, ...]:
    """The directories of the host interpreter's installed packages (a virtual environment's own), for a
    sandbox that runs another interpreter with ``site_packages=True``."""
    import site

    found: list[str] = []
    for path in site.getsitepackages():
        if os.path.isdir(path) and path not in found:
            found.append(path)
    return tuple(found)


def dynamic_id() -> int:
    """A fresh uid/gid for one sandbox process (host running as root)."""
    return random.randrange(*_DYNAMIC_ID_RANGE)


def can_switch_user() -> bool:
    """Whether this host can give the sandbox its own uid (it runs as root on a POSIX system)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


_PLANS: dict[tuple[str | None, bool, bool], LaunchPlan] = {}


async def plan_launch(*, python: str | None, network: bool, switch_user: bool) -> LaunchPlan:
    """The strongest working launch for these options; probed once per host process, then cached.

    Raises ``SandboxUnavailableError`` on platforms that cannot host the sandbox (Windows), and
    ``SandboxStartError`` when ``python`` is not an interpreter.
    """
    key = (python, network, switch_user)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    # Sandboxes that start together (concurrent runs) wait for one probe instead of each running their own.
    async with _probe_lock():
        plan = _PLANS.get(key)
        if plan is None:
            plan = await _probe(python=python, network=network, switch_user=switch_user)
            if not any("TimeoutError" in note for note in plan.isolation.notes):  # a slow machine: again
                _PLANS[key] = plan
    return plan


_PROBE_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.Lock] = weakref.WeakKeyDictionary()


def _probe_lock() -> anyio.Lock:
    """The running loop's probing lock (one per loop: a lock belongs to the loop it waits on)."""
    loop = asyncio.get_running_loop()
    lock = _PROBE_LOCKS.get(loop)
    if lock is None:
        lock = _PROBE_LOCKS[loop] = anyio.Lock()
    return lock


async def _run(argv: Sequence[str], **options: Any) -> subprocess.CompletedProcess[bytes]:
    """Run a probe to its end in a worker thread (a start takes milliseconds the loop has better uses for);
    ``TimeoutError`` past ``_PROBE_TIMEOUT`` (the probe is killed), ``OSError`` when it cannot start."""

    def run() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(list(argv), capture_output=True, timeout=_PROBE_TIMEOUT, check=False, **options)

    try:
        return await anyio.to_thread.run_sync(run)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"the probe did not end within {_PROBE_TIMEOUT:g} s") from None


@attrs.frozen
class _Wrapping:
    """One way to wrap the interpreter, tried in order by ``_probe``: see ``LaunchPlan``."""

    prefix: tuple[str, ...]
    what: str
    tmp_dirs: tuple[str, ...] = ()

    def probe(self, python: str) -> list[str]:
        """The probe's command: a version check, or (with ``tmp_dirs``) the runner's private-tmp step on a
        small tmpfs, which then exits (``--probe``)."""
        if not self.tmp_dirs:
            return [*self.prefix, python, "-I", "-S", "-c", _PROBE_CODE]
        tmp = private_tmp_args(self.tmp_dirs, _PROBE_TMP_BYTES, None)
        return [*self.prefix, python, "-I", "-S", "-c", runner_source(), *tmp, "--probe"]


async def _probe(*, python: str | None, network: bool, switch_user: bool) -> LaunchPlan:
    if sys.platform == "win32":
        raise SandboxUnavailableError(
            "ProcessSandbox needs a POSIX system (resource limits, process groups, signals); "
            "on Windows plug in a container or remote CodeExecutor instead"
        )
    notes: list[str] = []
    pythons = _candidate_pythons(python)
    guard = await _parent_death_guard(notes)
    wrappings: list[_Wrapping] = []
    unshare = shutil.which("unshare") if sys.platform.startswith("linux") else None
    if unshare:
        private = _private_tmp_wrapping(guard, unshare, network=network)
        if private is not None:
            wrappings.append(private)
        wrappings.append(_Wrapping((*guard, *_namespace_prefix(unshare, network=network)), "namespaces"))
    elif sys.platform.startswith("linux"):
        notes.append("no 'unshare' binary (util-linux): no namespaces")
    else:
        notes.append(f"no namespaces on {sys.platform}")
    plain = _Wrapping(guard, "a plain process")
    wrappings.append(plain)

    switch = switch_user and can_switch_user()
    for use_switch in (True, False) if switch else (False,):
        for wrapping in wrappings:
            if wrapping is plain and not use_switch:
                return _plan(wrapping, pythons[0], False, network, notes)
            failures: list[str] = []
            for candidate in pythons if use_switch else pythons[:1]:
                error = await _try(wrapping.probe(candidate), switch_user=use_switch)
                if error is None:
                    if candidate != pythons[0]:
                        notes.append(
                            f"runs {candidate}: the sandbox uid cannot run {pythons[0]} "
                            f"({failures[0]}; the runner needs only the standard library)"
                        )
                    return _plan(wrapping, candidate, use_switch, network, notes)
                failures.append(f"{candidate}: {error}")
            who = "a separate uid" if use_switch else "the host's uid"
            notes.append(f"{wrapping.what} with {who} failed: {'; '.join(failures)}")
    raise AssertionError("unreachable: the plain process is always accepted")  # pragma: no cover


def _plan(wrapping: _Wrapping, python: str, switch: bool, network: bool, notes: list[str]) -> LaunchPlan:
    prefix = wrapping.prefix
    namespaces = any(os.path.basename(part) == "unshare" for part in prefix)
    root = can_switch_user()
    try:
        import resource  # noqa: F401

        rlimits = True
    except ImportError:  # pragma: no cover - not POSIX
        rlimits = False
        notes.append("no 'resource' module: no memory, file or process limits")
    # The runner and its watch thread, plus the unshare launcher when it is in the runner's user namespace
    # (RLIMIT_NPROC counts per user namespace): with a private /tmp the runner is in a nested one.
    base = 3 if namespaces and not wrapping.tmp_dirs else 2
    if switch:
        nproc_base: int | None = base
    elif root:
        nproc_base = None
        notes.append("the sandbox runs as root's uid: RLIMIT_NPROC is ignored (no fork-bomb limit)")
    else:
        nproc_base = base if namespaces else None
    if not switch:
        # The first thing to know: no separate user means the code is you, as far as files go.
        mine = "every file root owns" if root else "~/.ssh, ~/.aws, .env files, sockets you own"
        notes.insert(0, f"runs as your uid: can read and write your files ({mine})")
    if not namespaces and not network:
        notes.append("network is NOT isolated")
    if not switch and not namespaces:
        notes.append("host processes are visible: /proc/<host pid>/environ is readable")
    if not wrapping.tmp_dirs:
        notes.append(
            "/tmp and /dev/shm are the host's: files written there outlive the sandbox, and /dev/shm uses "
            "RAM outside the memory limit"
        )
    isolation = SandboxIsolation(
        platform=sys.platform,
        python=python,
        namespaces=namespaces,
        network_isolated=namespaces and not network,
        host_processes_hidden=namespaces,
        separate_user=switch,
        resource_limits=rlimits,
        process_limit_enforced=nproc_base is not None,
        notes=tuple(notes),
        dies_with_host=bool(prefix) and os.path.basename(prefix[0]) == "setpriv",
        private_tmp=bool(wrapping.tmp_dirs),
    )
    return LaunchPlan(
        prefix=prefix,
        python=python,
        switch_user=switch,
        nproc_base=nproc_base,
        isolation=isolation,
        tmp_dirs=wrapping.tmp_dirs,
    )


async def _parent_death_guard(notes: list[str]) -> tuple[str, ...]:
    """``setpriv --pdeathsig KILL --no-new-privs --`` where it works (Linux, util-linux 2.33+), else
    ``()`` with a note.

    The signal is set in the launcher and kept across its ``exec`` (``unshare`` is not set-uid); the kernel
    sends it when the host thread that started the launcher ends: ``spawn``'s thread, which lives as long as
    the host process. It reaches the runner through ``unshare --kill-child``.
    """
    if not sys.platform.startswith("linux"):
        return ()
    setpriv, true = shutil.which("setpriv"), shutil.which("true")
    if setpriv is not None and true is not None:
        # ``--no-new-privs`` too, which spares the runner setting it itself (see ``_runner.py``).
        for guard in (
            (setpriv, "--pdeathsig", "KILL", "--no-new-privs", "--"),
            (setpriv, "--pdeathsig", "KILL", "--"),
        ):
            try:
                done = await _run([*guard, true], stdin=subprocess.DEVNULL)
            except (OSError, TimeoutError):
                continue
            if done.returncode == 0:
                return guard
    notes.append(
        "no 'setpriv --pdeathsig' (util-linux): if the host process is killed, the sandbox ends only "
        "once its runner notices"
    )
    return ()


def _namespace_prefix(unshare: str, *, network: bool, map_root: bool = False) -> tuple[str, ...]:
    """``unshare`` with every namespace; the code's uid inside is ``INNER_ID`` (or 0 with ``map_root``, for
    the runner's private-tmp step, which then moves to a nested namespace where it is ``INNER_ID``)."""
    users = ["--map-root-user"] if map_root else [f"--map-user={INNER_ID}", f"--map-group={INNER_ID}"]
    flags = [
        "--user",
        *users,
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--ipc",
        "--uts",
    ]
    if not network:
        flags.append("--net")
    return (unshare, *flags, "--")


def _private_tmp_wrapping(guard: tuple[str, ...], unshare: str, *, network: bool) -> _Wrapping | None:
    """The namespaces with a private ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (see the module docstring);
    ``None`` when none of them exists."""
    dirs: list[str] = []
    for directory in PRIVATE_TMP_DIRS:
        real = os.path.realpath(directory)
        if os.path.isdir(real) and real not in dirs:  # /var/tmp may be a link to /tmp
            dirs.append(real)
    if not dirs:
        return None
    return _Wrapping(
        prefix=(*guard, *_namespace_prefix(unshare, network=network, map_root=True)),
        what="namespaces with a private /tmp",
        tmp_dirs=tuple(dirs),
    )


def _candidate_pythons(python: str | None) -> list[str]:
    if python is not None:
        resolved = shutil.which(python)
        if resolved is None:
            raise SandboxStartError(f"no Python interpreter at {python!r}")
        return [resolved]
    found = [sys.executable]
    seen = {os.path.realpath(sys.executable)}
    for candidate in _SYSTEM_PYTHONS:
        real = os.path.realpath(candidate)
        if os.path.exists(real) and real not in seen:
            seen.add(real)
            found.append(candidate)
    return found


async def _try(command: Sequence[str], *, switch_user: bool) -> str | None:
    """Run the probe; ``None`` when it worked, else the last line of what went wrong."""
    ident = dynamic_id() if switch_user else None
    try:
        done = await _run(
            command,
            cwd="/",
            env=sandbox_environment("/"),
            stdin=subprocess.DEVNULL,
            user=ident,
            group=ident,
            extra_groups=[] if switch_user else None,
        )
    except (OSError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = lines[-1] if lines else f"exit status {done.returncode}"
    return detail if done.returncode != 1 or lines else "Python older than 3.8"

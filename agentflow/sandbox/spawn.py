"""Start a process off the event loop's thread, then talk to it through its pipes on the loop.

``subprocess.Popen`` forks the host and waits until the child has called ``exec``: milliseconds in which
the calling thread can do nothing else (more as root, where switching the child's uid rules out
``vfork``). ``anyio.open_process`` calls it on the loop's thread, so twenty CodeAct runs starting at once
stalled every other task of the loop for a quarter of a second (DESIGN §7). Here ``Popen`` runs in a thread
of its own, and the loop only wraps the child's pipes in asyncio pipe transports (``connect_read_pipe`` /
``connect_write_pipe``), seen as anyio byte streams.

The thread is one for the host process's lifetime, never a pool thread that ends when idle: a
parent-death signal (``setpriv --pdeathsig``, see ``launch.py``) fires when the *thread* that started the
process ends, so a thread that came and went would take every sandbox it started with it. (On Python
3.12+ a later ``os.fork()`` of the host warns that the process has threads; a forked child starts its own
spawner thread on first use.)

Nothing waits without bound: the spawner thread starts processes (and waits at most ``_DISCARD_WAIT`` for
one it killed), and a wait for a process to end is bounded wherever the caller cannot cancel it. A killed
process that does not end within ``REAP_WAIT`` (one in uninterruptible sleep ignores even SIGKILL until its
I/O returns) is left on a list of unreaped processes that every later start polls, so it is reaped once it
has ended, and nothing waits for it meanwhile. A start whose caller is cancelled while it waits for the
thread returns at once; the process, if it starts after all, is killed there and then.

This module knows nothing of sandboxes: ``child_process.SandboxProcess`` uses it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

__all__ = ["CLOSE_GRACE", "REAP_WAIT", "SpawnedProcess", "spawn"]

_WAIT_STEP = (0.001, 0.05)
"""The first and the longest pause between two looks at whether the process has ended."""
REAP_WAIT = 1.0
"""Seconds a killed process gets to end before it is left to be reaped later (SIGKILL takes effect at
once, unless the process is in uninterruptible sleep)."""
_DISCARD_WAIT = 0.1
"""Seconds the spawner thread waits for a process it killed (``_discard``) before it leaves it."""
CLOSE_GRACE = 5.0
"""Seconds ``SpawnedProcess.aclose`` lets a process that was not killed end on its own (its stdin closed)
before it kills it."""

_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()
_unreaped: list[subprocess.Popen[bytes]] = []
"""Killed processes that had not ended in ``REAP_WAIT``: polled (under ``_spawner_lock``) at each start."""


def _spawn_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread that starts processes (created on first use; it ends only when the host exits)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            # One thread: a pool of one never replaces its thread, and a fork holds the interpreter lock
            # anyway, so more threads would not start processes faster.
            _spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agentflow-sandbox-spawn")
        return _spawner


def _forget_spawn_thread() -> None:
    global _spawner, _spawner_lock, _unreaped
    # A forked child has the pool but not its thread: it starts its own on first use. The parent's children
    # are not its own to reap.
    _spawner, _spawner_lock, _unreaped = None, threading.Lock(), []


def _leave(popen: subprocess.Popen[bytes]) -> None:
    """Note a killed process that has not ended yet: a later start reaps it (``_reap_left``)."""
    with _spawner_lock:
        _unreaped.append(popen)


def _reap_left() -> None:
    """Reap the left processes that have ended since (a ``waitpid`` that never blocks for each)."""
    with _spawner_lock:
        if _unreaped:
            _unreaped[:] = [popen for popen in _unreaped if popen.poll() is None]


def _sigkill(popen: subprocess.Popen[bytes], *, group: bool) -> None:
    """SIGKILL the process (its whole process group with ``group``); one that has ended is left alone."""
    if popen.returncode is not None:
        return  # reaped: its pid may belong to another process by now
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(popen.pid, signal.SIGKILL)
        else:
            popen.kill()


def _close_pipes(popen: subprocess.Popen[bytes]) -> None:
    for pipe in (popen.stdin, popen.stdout, popen.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


async def _reap(popen: subprocess.Popen[bytes], within: float) -> int | None:
    """Wait up to ``within`` seconds for the process to end and reap it; its exit status, or ``None`` if it
    still runs. Polled on the loop (a ``waitpid`` that never blocks), as ``SpawnedProcess.wait``."""
    pause, longest = _WAIT_STEP
    with anyio.move_on_after(within):
        while (status := popen.poll()) is None:
            await anyio.sleep(pause)
            pause = min(pause * 2, longest)
        return status
    return None


async def _kill_and_reap(popen: subprocess.Popen[bytes], *, group: bool) -> None:
    """SIGKILL the process and reap it within ``REAP_WAIT``, else leave it to a later start; shielded (the
    process must not be left running) but bounded."""
    with anyio.CancelScope(shield=True):
        _sigkill(popen, group=group)
        _close_pipes(popen)
        if await _reap(popen, REAP_WAIT) is None:
            _leave(popen)


def _discard(started: concurrent.futures.Future[subprocess.Popen[bytes]], *, group: bool) -> None:
    """A start whose caller has gone (cancelled while it waited for the spawner thread): kill the process it
    made, if any, and reap it. Runs on the spawner thread as the start completes, so it waits no longer
    than ``_DISCARD_WAIT``: a process still there then is reaped by a later start."""
    if started.cancelled() or started.exception() is not None:
        return
    popen = started.result()
    _sigkill(popen, group=group)
    _close_pipes(popen)
    try:
        popen.wait(_DISCARD_WAIT)  # a killed process is gone in about a millisecond
    except subprocess.TimeoutExpired:
        _leave(popen)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spawn_thread)


class _WriteProtocol(asyncio.BaseProtocol):
    """Flow control of a write pipe: ``drain`` waits while the pipe is full, and ends when it breaks."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self.lost = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def drain(self) -> None:
        while self._paused and not self.lost:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class _PipeSendStream(anyio.abc.ByteSendStream):
    """The child's stdin."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _WriteProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._closed = False

    async def send(self, item: bytes) -> None:
        """Write ``item``, waiting while the pipe is full; ``BrokenResourceError`` once the child closed
        it."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise anyio.ClosedResourceError
        if self._protocol.lost or self._transport.is_closing():
            raise anyio.BrokenResourceError("the process closed its end of the pipe")
        self._transport.write(item)
        await self._protocol.drain()
        if self._protocol.lost:
            raise anyio.BrokenResourceError("the process closed its end of the pipe")

    async def aclose(self) -> None:
        """Close the pipe; what is still buffered is dropped (the child is being let go)."""
        self._closed = True
        if not self._transport.is_closing():  # (``abort`` on a transport that has closed would fail)
            self._transport.abort()
        await anyio.lowlevel.checkpoint()


class _PipeReceiveStream(anyio.abc.ByteReceiveStream):
    """The child's stdout or stderr."""

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport) -> None:
        self._reader = reader
        self._transport = transport
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """The next bytes; ``EndOfStream`` once the child has closed its end and everything was read."""
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except OSError as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc
        if not data:
            if self._closed:
                raise anyio.ClosedResourceError
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        """Close the pipe (a ``receive`` waiting on it ends)."""
        self._closed = True
        self._transport.close()
        await anyio.lowlevel.checkpoint()


class SpawnedProcess:
    """A process started by ``spawn``: its pid, its pipes as anyio streams, and waiting for its end."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: _PipeSendStream,
        stdout: _PipeReceiveStream,
        stderr: _PipeReceiveStream,
        *,
        group: bool = False,
    ) -> None:
        self._popen = popen
        self._group = group  # it leads a process group of its own (``start_new_session``): kill the group
        self.stdin: anyio.abc.ByteSendStream = stdin
        self.stdout: anyio.abc.ByteReceiveStream = stdout
        self.stderr: anyio.abc.ByteReceiveStream = stderr

    @property
    def pid(self) -> int:
        """The process id."""
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has ended and been reaped (a negative signal number when a
        signal ended it); ``None`` while it runs. Reaps it when it has just ended."""
        return self._popen.poll()

    async def wait(self) -> int:
        """Wait for the process to end, reap it, and return its exit status (cancellable)."""
        pause, longest = _WAIT_STEP
        # Polled (a ``waitpid`` that never blocks): the host waits only for a process it has just killed,
        # or for one whose pipes have closed, so the wait is short, and it needs no child watcher.
        while (status := self._popen.poll()) is None:
            await anyio.sleep(pause)
            pause = min(pause * 2, longest)
        return status

    async def aclose(self, grace: float = CLOSE_GRACE) -> None:
        """Close the pipes, then wait up to ``grace`` seconds for the process to end (kill it first to make
        that quick); one still running then is SIGKILLed (its process group too, when it leads one) and
        reaped within ``REAP_WAIT``, or left to a later start. Shielded from cancellation, and bounded."""
        with anyio.CancelScope(shield=True):
            for stream in (self.stdin, self.stdout, self.stderr):
                await stream.aclose()
            if await _reap(self._popen, grace) is None:
                await _kill_and_reap(self._popen, group=self._group)


async def spawn(argv: Sequence[str], **options: Any) -> SpawnedProcess:
    """Start ``argv`` with ``subprocess.Popen(argv, **options)`` in the spawner thread, its three standard
    streams piped, and connect the pipes to the running loop.

    ``OSError`` from ``Popen`` propagates. A cancellation takes effect at once: a start still queued for
    the spawner thread never happens, and a process that starts after its caller has gone is killed as it
    does (on the spawner thread, which waits at most ``_DISCARD_WAIT`` for it to end). Once the process has
    started, a cancellation kills and reaps it (bounded by ``REAP_WAIT``) before it propagates.
    """
    loop = asyncio.get_running_loop()
    group = bool(options.get("start_new_session"))
    started = _spawn_thread().submit(_popen, list(argv), options)
    try:
        # Not shielded: a spawner thread held up (by a start that hangs in ``exec``) must not make every
        # later start uncancellable. Cancelling this wait cancels a start not yet begun (``wrap_future``).
        popen = await asyncio.wrap_future(started)
    except BaseException:
        started.add_done_callback(functools.partial(_discard, group=group))
        raise
    with anyio.CancelScope(shield=True):
        try:
            process = await _connect(loop, popen, group=group)
        except BaseException:
            await _kill_and_reap(popen, group=group)
            raise
    try:
        await anyio.lowlevel.checkpoint_if_cancelled()
    except BaseException:
        await process.aclose(grace=0)  # killed at once, reaped within ``REAP_WAIT``
        raise
    return process


def _same(protocol: asyncio.StreamReaderProtocol) -> asyncio.StreamReaderProtocol:
    return protocol


def _popen(argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
    _reap_left()
    pipe = subprocess.PIPE
    return subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=pipe, bufsize=0, **options)


async def _connect(
    loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes], *, group: bool
) -> SpawnedProcess:
    assert popen.stdin is not None
    assert popen.stdout is not None
    assert popen.stderr is not None
    transports: list[asyncio.BaseTransport] = []
    try:
        readers = []
        for pipe in (popen.stdout, popen.stderr):
            reader = asyncio.StreamReader()
            protocol = asyncio.StreamReaderProtocol(reader)
            read_end, _ = await loop.connect_read_pipe(functools.partial(_same, protocol), pipe)
            transports.append(read_end)
            readers.append(_PipeReceiveStream(reader, read_end))
        write_end, flow = await loop.connect_write_pipe(_WriteProtocol, popen.stdin)
    except BaseException:
        for transport in transports:
            transport.close()
        raise
    return SpawnedProcess(popen, _PipeSendStream(write_end, flow), readers[0], readers[1], group=group)

"""Start a process off the event loop's thread, then talk to it through its pipes on the loop.

``subprocess.Popen`` forks the host and waits until the child has called ``exec``: milliseconds in which
the calling thread can do nothing else (more as root, where switching the child's uid rules out
``vfork``). ``anyio.open_process`` calls it on the loop's thread, so twenty CodeAct runs starting at once
stalled every other task of the loop for a quarter of a second (DESIGN §7). Here ``Popen`` runs in a thread
of its own, and the loop only wraps the child's pipes in asyncio pipe transports (``connect_read_pipe`` /
``connect_write_pipe``), seen as anyio byte streams.

The thread is one for the host process's lifetime, never a pool thread that ends when idle: a
parent-death signal (``setpriv --pdeathsig``, see ``launch.py``) fires when the *thread* that started the
process ends, so a thread that came and went would take every sandbox it started with it.

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

__all__ = ["SpawnedProcess", "spawn"]

_WAIT_STEP = (0.001, 0.05)
"""The first and the longest pause between two looks at whether the process has ended."""

_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


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
    global _spawner, _spawner_lock
    # A forked child has the pool but not its thread: it starts its own on first use.
    _spawner, _spawner_lock = None, threading.Lock()


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
    ) -> None:
        self._popen = popen
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
        """Wait for the process to end, reap it, and return its exit status."""
        pause, longest = _WAIT_STEP
        # Polled (a ``waitpid`` that never blocks): the host waits only for a process it has just killed,
        # or for one whose pipes have closed, so the wait is short, and it needs no child watcher.
        while (status := self._popen.poll()) is None:
            await anyio.sleep(pause)
            pause = min(pause * 2, longest)
        return status

    async def aclose(self) -> None:
        """Close the pipes, then wait for the process to end (kill it first to make that quick)."""
        with anyio.CancelScope(shield=True):
            for stream in (self.stdin, self.stdout, self.stderr):
                await stream.aclose()
            await self.wait()


def _kill_now(popen: subprocess.Popen[bytes], *, group: bool) -> None:
    """SIGKILL a process that was started but is not wanted, and reap it (in the spawner thread)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(popen.pid, signal.SIGKILL)
        else:
            popen.kill()
    popen.wait()
    for pipe in (popen.stdin, popen.stdout, popen.stderr):
        if pipe is not None:
            pipe.close()


async def spawn(argv: Sequence[str], **options: Any) -> SpawnedProcess:
    """Start ``argv`` with ``subprocess.Popen(argv, **options)`` in the spawner thread, its three standard
    streams piped, and connect the pipes to the running loop.

    ``OSError`` from ``Popen`` propagates. A cancellation that lands while the process starts takes effect
    once it has started (a start takes milliseconds); the process is then killed and reaped before the
    cancellation propagates, so nothing is left behind.
    """
    loop = asyncio.get_running_loop()
    group = bool(options.get("start_new_session"))
    started = _spawn_thread().submit(_popen, list(argv), options)
    with anyio.CancelScope(shield=True):
        popen = await asyncio.wrap_future(started)
        try:
            process = await _connect(loop, popen)
        except BaseException:
            await asyncio.wrap_future(_spawn_thread().submit(_kill_now, popen, group=group))
            raise
    try:
        await anyio.lowlevel.checkpoint_if_cancelled()
    except BaseException:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if group:
                    os.killpg(popen.pid, signal.SIGKILL)
                else:
                    popen.kill()
            await process.aclose()
        raise
    return process


def _same(protocol: asyncio.StreamReaderProtocol) -> asyncio.StreamReaderProtocol:
    return protocol


def _popen(argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
    pipe = subprocess.PIPE
    return subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=pipe, bufsize=0, **options)


async def _connect(loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes]) -> SpawnedProcess:
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
    return SpawnedProcess(popen, _PipeSendStream(write_end, flow), readers[0], readers[1])

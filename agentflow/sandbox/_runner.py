"""The sandbox's child side: runs the host's code steps in a persistent namespace, like a notebook kernel.

The host starts it as ``python -I -S -c <this file's source>`` inside the sandbox (see ``launch.py``), so it
must import nothing but the standard library (never ``agentflow``) and run on Python 3.8+. It trusts nothing
it runs: user code may replace ``sys.stdout``, raise ``BaseException`` or exit, and the runner still answers.

Channel: the process's original stdin/stdout carry length-prefixed JSON frames (4-byte big-endian length,
then UTF-8 JSON) to and from the host. At start-up the runner moves them to private descriptors and points
fd 0 at ``/dev/null`` and fd 1 at fd 2, so nothing user code writes can corrupt the channel. Prints go to
bounded capture objects that stream ``out`` frames to the host (so output printed before a timeout is kept),
flushed before each ``call`` frame so that the host sees output and tool calls in the order they happened.

Frames, child → host: ``ready``; ``call`` (a tool call: ``id``, ``name``, ``args``, and ``w`` when the
calling thread now waits for it); ``wait`` and ``resume`` (the code started and
stopped waiting for tool results, see ``_Calls._block``); ``out`` (``s``: stream name, ``d``: text);
``done`` (the step's outcome, with the ``step`` number of its ``exec``). Host → child:
``exec`` (one code step: the code, the tool names, each tool's parameter names in order under ``params``,
so a stub takes positional arguments, the tools whose first parameter takes an object under
``object_first``, and the step's limits) and ``result`` (the answer to a ``call``:
``ok`` plus ``value`` or ``error``). Several calls may be in flight at once (``parallel``, ``map_tool``,
``acall_tool`` with ``asyncio.gather``, threads of the code's own); results are matched by id, whichever
thread reads them (one at a time, see ``_Calls``). A host frame may hold the literals
``NaN``, ``Infinity`` and ``-Infinity`` (a tool's float that is not finite), which ``json.loads`` reads as
floats; the child's own frames are strict JSON.

A watch thread, started before any limit applies, does two things the main thread cannot while user code
holds it: it flushes output left in the capture buffers (a ``print(..., end="")`` before a hang still
reaches the host), and when the host's end of the channel closes (the host died, even mid-step) it deletes
the working directory and ends the process, so a sandbox never outlives its host for long.

Arguments after ``-c <source>``, all optional, in this order: ``--private-tmp <size> <inodes> <uid>
<workdir> <dir>... --`` (the private-tmp step, see ``_make_private_tmp``); ``--probe`` (the host's launch
probe: exit once that step worked); ``<major.minor> <site dir>...``: directories of the host's installed
packages to add (``site.addsitedir``) when this interpreter's version is ``major.minor``.
"""

from __future__ import annotations

# ``_thread``, not ``threading``: the watch thread needs no more, and ``threading`` costs start-up time.
import _thread
import ast
import builtins
import contextlib
import io
import json
import keyword
import linecache
import math
import os
import signal
import struct
import sys
import time
import traceback

# Not ``typing.TYPE_CHECKING``: importing ``typing`` would add ~7 ms to every sandbox start.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only
    import asyncio
    from collections.abc import Callable
    from typing import Any

PROTOCOL_VERSION = 1
_HEADER = struct.Struct(">I")
_MAX_FRAME = 256 * 1024 * 1024
_FLUSH_AT = 4096
_FLUSH_AFTER = 0.05
"""Seconds after the last ``out`` frame from which a write is sent at once, even without a line break."""
_MAX_ERROR_CHARS = 8000
_MAX_TRACEBACK_FRAMES = 8
_CO_COROUTINE = 0x80
_ALLOW_TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0x2000)
_LAST = "__agentflow_last__"
_RETURN = "__agentflow_return__"
_HELPERS = ("call_tool", "acall_tool", "map_tool", "parallel", "final_answer", "ToolError")
_STUB_MARK = "__agentflow_tool__"
_WATCH_EVERY_MS = 100
"""How often the watch thread flushes pending output (and at most how late it notices the host gone)."""
_CLONE_NEWUSER = 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_BIND = 0x2, 0x4, 0x1000
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAPABILITY_VERSION_3 = 0x20080522
_PRIVATE_TMP_FAILED = 126
"""The exit status when the private-tmp step failed: the code never runs with the host's ``/tmp``."""
_WORKDIR_PREFIX = "agentflow-sandbox-"
"""The working directory the host made for this process starts so (``workdirs.WORKDIR_PREFIX``); the runner
deletes nothing else."""


class ToolError(Exception):
    """A tool called from code failed; ``str(error)`` is the host's ``TOOL_ERROR: {…}`` text."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(message)
        self.tool = tool


class _Return(BaseException):
    """A top-level ``return`` (rewritten into a raise, so module-level variables stay global)."""

    def __init__(self, value: Any = None) -> None:
        super().__init__()
        self.value = value


class _FinalAnswer(BaseException):
    """``final_answer(x)`` was called: the step ends here with ``x``."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class CpuTimeExceeded(BaseException):
    """The step used up its CPU seconds (raised from the ``SIGXCPU`` handler)."""


class _TooBig(ValueError):
    """A frame the host would refuse: ``size`` bytes, over ``limit``."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes as JSON, over the limit of {limit}")
        self.size = size
        self.limit = limit


class _HostGone(BaseException):
    """The host closed or broke the channel: the runner exits (a ``BaseException`` so code cannot hide it)."""


class _CpuGuard:
    """Decides when the ``SIGXCPU`` handler may raise into the running code.

    It raises only while user code runs, and never while the main thread (the one signal handlers run in)
    is inside a section of the runner's own: a frame read or write (that would desynchronise the channel),
    or bookkeeping under a lock that other threads need. A signal that arrives then is kept and raised when
    the section ends. Other threads never enter sections: no signal handler runs in them.
    """

    def __init__(self) -> None:
        self.user_code = False
        self.depth = 0
        self.pending = False
        self.main = _thread.get_ident()

    def on_signal(self, signum: int, frame: Any) -> None:
        if not self.user_code:
            return
        if self.depth:
            self.pending = True
            return
        self.expire()

    def reset(self) -> None:
        """A new step: no section is open and no signal is kept from the last one."""
        self.depth = 0
        self.pending = False

    def enter(self) -> bool:
        """Open a section (sections nest); ``False``, with nothing to close, off the main thread."""
        if _thread.get_ident() != self.main:
            return False
        self.depth += 1
        return True

    def leave(self, entered: bool, *, defer: bool = False) -> None:
        """Close the section ``enter`` opened; a signal kept meanwhile raises now, once all are closed.

        ``defer``: keep it for later (the next section's end, or the kernel's next ``SIGXCPU`` a second on),
        for a section run by an event loop's callback, where asyncio would catch and log the exception
        instead of the code getting it.
        """
        if entered:
            self.depth -= 1
            if not self.depth and self.pending and self.user_code and not defer:
                self.expire()

    def expire(self) -> None:
        self.pending = False
        self.user_code = False
        raise CpuTimeExceeded("the step used up its CPU time limit")


class _Channel:
    """Blocking frame I/O on the two private descriptors.

    Any thread may write (the watch thread flushes output, code may call tools from threads of its own): a
    lock keeps frames whole. Reading is ``_Calls``'s to share out, one reader at a time, and ``receive``
    leaves the CPU guard to it (the frame must be handed on before a signal may raise).
    """

    def __init__(self, read_fd: int, write_fd: int, guard: _CpuGuard) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._guard = guard
        self._lock = _thread.allocate_lock()

    def send(self, message: dict[str, Any], limit: int = 0, *, waits: bool = False) -> None:
        """Write one frame; ``ValueError`` (nothing written) when it is not JSON or over ``limit`` bytes.

        ``waits`` adds ``"w":1`` (a call's mark that the code now waits for it), not counted in the size.
        """
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        payload = data.encode("utf-8", "replace")
        if limit and len(payload) > limit:
            raise _TooBig(len(payload), limit)
        if waits:
            payload = payload[:-1] + b',"w":1}'
        view = memoryview(_HEADER.pack(len(payload)) + payload)
        entered = self._guard.enter()
        try:
            with self._lock:
                while view:
                    written = os.write(self.write_fd, view)
                    view = view[written:]
        except OSError as exc:
            raise _HostGone(f"cannot write to the host: {exc}") from None
        finally:
            self._guard.leave(entered)

    def receive(self) -> dict[str, Any]:
        """Read one frame (blocking); the caller holds the reader's role and, on the main thread, a
        section of the CPU guard."""
        try:
            (size,) = _HEADER.unpack(self._read_exactly(_HEADER.size))
            if size > _MAX_FRAME:
                raise _HostGone(f"a frame of {size} bytes from the host")
            message = json.loads(self._read_exactly(size))
        except (OSError, ValueError) as exc:
            raise _HostGone(f"cannot read from the host: {exc}") from None
        if not isinstance(message, dict):
            raise _HostGone("a frame that is not a JSON object")
        return message

    def readable(self) -> bool:
        """Whether a frame has started to arrive (a read would not block until the host writes)."""
        import select

        poller = select.poll()
        poller.register(self.read_fd, select.POLLIN)
        try:
            return bool(poller.poll(0))
        except OSError:
            return True  # the read then tells what is wrong

    def _read_exactly(self, size: int) -> bytes:
        chunks: list[bytes] = []
        missing = size
        while missing:
            chunk = os.read(self.read_fd, missing)
            if not chunk:
                raise _HostGone("end of stream")
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)


class _Capture(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` during a step: streams lines to the host, up to a byte budget.

    A write goes out at once when it holds a line break, fills ``_FLUSH_AT`` bytes, or comes
    ``_FLUSH_AFTER`` seconds after the last frame; otherwise (a burst of small writes) it waits in a buffer
    until one of those, the end of the step, or the watch thread's next round. A re-entrant lock keeps the
    buffer whole between the two threads (re-entrant: a signal handler that prints runs in the main thread,
    maybe in the middle of a write).
    """

    def __init__(self, name: str, channel: _Channel) -> None:
        super().__init__()
        self._name = name
        self._channel = channel
        self._buffer: list[str] = []
        self._buffered = 0
        self._lock = _thread.RLock()
        self._sent_at = 0.0
        self.budget = 0
        self.dropped = 0

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def name(self) -> str:
        return "<" + self._name + ">"

    def reset(self, budget: int) -> None:
        with self._lock:
            self._buffer = []
            self._buffered = 0
            self._sent_at = 0.0
            self.budget = budget
            self.dropped = 0

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        length = len(text)
        size = length if text.isascii() else len(text.encode("utf-8", "replace"))
        with self._lock:
            if size > self.budget:
                # Keep what fits (on a character boundary) and count the rest.
                kept = text.encode("utf-8", "replace")[: self.budget].decode("utf-8", "ignore")
                kept_size = len(kept.encode("utf-8"))
                self.dropped += size - kept_size
                text, size = kept, kept_size
            if text:
                self.budget -= size
                self._buffer.append(text)
                self._buffered += size
                if (
                    self._buffered >= _FLUSH_AT
                    or "\n" in text
                    or time.monotonic() - self._sent_at >= _FLUSH_AFTER
                ):
                    self.flush()
        return length

    def flush(self) -> None:
        # Sent while holding the lock, so that two flushes cannot overtake each other.
        with self._lock:
            if self._buffer:
                data = "".join(self._buffer)
                self._buffer = []
                self._buffered = 0
                self._sent_at = time.monotonic()
                self._channel.send({"t": "out", "s": self._name, "d": data})


class _Calls:
    """Tool calls in flight: requests go out at once, results come back in any order, to any thread.

    Code may call tools from several threads (``max_processes > 0``) and event loops at once, so one thread
    at a time reads the channel (the reader) and hands each frame to whoever it is for: a blocking waiter
    (every waiter is woken to look), an ``asyncio`` future (settled in its loop's thread), or the step loop
    (``exec``). A thread that needs a frame while another reads sleeps until woken; an event loop whose
    reader callback finds another thread reading stops watching the channel until that one is done, rather
    than spin on a descriptor it may not read.

    It also tells the host when the code waits for results (see ``_block``), so that only then does the
    host stop the code's clock.
    """

    def __init__(self, channel: _Channel, guard: _CpuGuard, outputs: tuple[_Capture, ...] = ()) -> None:
        self._channel = channel
        self._guard = guard
        self._outputs = outputs
        self._lock = _thread.allocate_lock()
        """Guards the state below; never held across a read or a write of the channel."""
        self._marks = _thread.allocate_lock()
        """Held from a change of ``_blocked`` to the end of the frame that tells it: marks stay in order."""
        self._next_id = 0
        self.max_call_bytes = 0
        self.max_calls = 0
        """Tool calls a step may send (0: any number); the host kills a process that sends more."""
        self.sent = 0
        self.in_step = False
        self._open: set[int] = set()  # sent, no result read yet
        self._results: dict[int, dict[str, Any]] = {}
        self._futures: dict[int, asyncio.Future[Any]] = {}
        self._names: dict[int, str] = {}
        self._control: list[dict[str, Any]] = []  # frames for the step loop
        self._reading = False
        self._gone: _HostGone | None = None
        self._sleepers: list[Any] = []  # a locked lock per sleeping waiter, released to wake it
        self._parked: list[asyncio.AbstractEventLoop] = []
        self._blocked = 0

    def reset(self) -> None:
        """A new step (call ids go on counting: a late answer to an old call is never taken for a new one)."""
        with self._lock:
            self.sent = 0
            self.in_step = True
            self._open.clear()
            self._results.clear()
            self._futures.clear()
            self._names.clear()
            self._blocked = 0

    def after_fork(self) -> None:
        """In a process the code forked: only the forking thread lives on, so no lock is held, no one reads
        and no one sleeps."""
        self._lock = _thread.allocate_lock()
        self._marks = _thread.allocate_lock()
        self._reading = False
        self._sleepers = []
        self._parked = []
        self._blocked = 0

    def request(self, name: Any, args: Any, *, then_wait: bool = False) -> int:
        """Send one call; its id. ``then_wait``: this thread waits for it next (``wait(..., counted=True)``),
        which the call's frame tells the host (``w``, as a ``wait`` frame would)."""
        if not isinstance(name, str):
            raise TypeError("a tool name must be a string, not " + type(name).__name__)
        if not isinstance(args, dict):
            raise TypeError(f"the arguments of tool {name!r} must be a dict, not {type(args).__name__}")
        # What the code printed before the call (a partial line too) must reach the host before the call,
        # or the host shows that output after the call's events.
        for output in self._outputs:
            output.flush()
        entered = self._guard.enter()
        try:
            with self._lock:
                if self.max_calls and self.sent >= self.max_calls:
                    raise ToolError(
                        name,
                        f"TOOL_ERROR: not run: this code step reached its limit of {self.max_calls} tool "
                        "calls (ExecutionLimits.max_step_tool_calls); return what you have and make "
                        "further calls in the next step, or batch the work into fewer calls",
                    )
                self._next_id += 1
                call_id = self._next_id
                self.sent += 1
                # Known before the frame goes: another thread may read the answer before this one returns.
                self._names[call_id] = name
                self._open.add(call_id)
            try:
                self._send_call({"t": "call", "id": call_id, "name": name, "args": args}, then_wait)
            except BaseException:
                with self._lock:
                    self.sent -= 1
                    self._names.pop(call_id, None)
                    self._open.discard(call_id)
                raise
        finally:
            self._guard.leave(entered)
        return call_id

    def _send_call(self, message: dict[str, Any], then_wait: bool) -> None:
        name = message["name"]
        with self._marks:
            if then_wait:
                self._blocked += 1
            try:
                self._channel.send(message, self.max_call_bytes, waits=then_wait)
            except BaseException as exc:
                if then_wait:
                    self._blocked -= 1
                if isinstance(exc, _TooBig):
                    raise ValueError(
                        f"the call of tool {name!r} is {exc.size} bytes as JSON, over the sandbox's limit of "
                        f"{exc.limit}; pass smaller arguments"
                    ) from None
                if isinstance(exc, (TypeError, ValueError)):
                    raise TypeError(f"the arguments of tool {name!r} must be JSON values: {exc}") from None
                raise

    def call(self, name: Any, args: Any) -> tuple[bool, Any]:
        """One call, waited for at once: its frame also says that this thread waits."""
        call_id = self.request(name, args, then_wait=True)
        ((ok, value),) = self.wait([call_id], counted=True)
        return ok, value

    def wait(self, call_ids: list[int], *, counted: bool = False) -> list[tuple[bool, Any]]:
        """The outcomes of ``call_ids``, in order, once all have come. ``counted``: the last ``request``
        already counted this thread as waiting (``then_wait``)."""
        if not call_ids:
            return []
        if not counted:
            self._block()
        try:
            results = self._results
            self._await(lambda: all(call_id in results for call_id in call_ids))
            with self._lock:
                messages = [results.pop(call_id) for call_id in call_ids]
        finally:
            self._unblock()
        return [self._outcome(message) for message in messages]

    def next_control(self) -> dict[str, Any]:
        """The next frame for the step loop (between steps: ``exec``)."""
        control = self._control
        self._await(lambda: bool(control))
        with self._lock:
            return control.pop(0)

    def future(self, call_id: int, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
        """A future of ``loop`` settled with the outcome of ``call_id`` (at once if it has come already)."""
        future = loop.create_future()
        with self._lock:
            message = self._results.pop(call_id, None)
            if message is None:
                self._futures[call_id] = future
                return future
        ok, value = self._outcome(message)
        _settle(future, ok, value)
        return future

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Let ``loop`` read the channel while it waits on futures of ``future``, and tell the host while it
        waits for nothing else (see ``_idle_select``).

        Registering again replaces the same callback. The reader only runs while that loop runs, and a
        result it reads for someone else is handed on, so a loop left registered is harmless.
        """
        loop.add_reader(self._channel.read_fd, self.on_readable, loop)
        selector = getattr(loop, "_selector", None)
        if selector is not None and not getattr(selector, "_agentflow_idle", False):
            selector.select = self._idle_select(loop, selector.select)
            selector._agentflow_idle = True

    def _idle_select(self, loop: asyncio.AbstractEventLoop, select: Callable[..., Any]) -> Callable[..., Any]:
        """``loop``'s selector's ``select``, which counts the loop as waiting while it blocks with a tool
        call of its own unanswered: then it has nothing to run until an answer (or a timer) comes.

        Loops without a selector (not the standard library's) are never counted: their code's clock runs
        while they wait (stricter, never looser)."""

        def idle_select(timeout: float | None = None) -> Any:
            if timeout == 0 or not any(
                future.get_loop() is loop and not future.done() for future in list(self._futures.values())
            ):
                return select(timeout)
            self._block()
            try:
                return select(timeout)
            finally:
                self._unblock()

        return idle_select

    def on_readable(self, loop: asyncio.AbstractEventLoop) -> None:
        """``loop``'s reader callback: read one frame, unless another thread is the reader (then stop
        watching until it is done) or the frame was read already (then wait for the next readable)."""
        entered = self._guard.enter()
        try:
            with self._lock:
                if self._reading:
                    loop.remove_reader(self._channel.read_fd)
                    self._parked.append(loop)
                    return
                self._reading = True
            if not self._channel.readable():
                self._leave_reading(None, None)
                return
            self._read_one()
        finally:
            self._guard.leave(entered, defer=True)

    def _await(self, ready: Callable[[], bool]) -> None:
        """Return once ``ready()`` (checked under the lock), reading frames while no other thread does."""
        while True:
            entered = self._guard.enter()
            sleeper = None
            try:
                with self._lock:
                    if self._gone is not None:
                        raise _HostGone(str(self._gone))
                    if ready():
                        return
                    if self._reading:
                        sleeper = _thread.allocate_lock()
                        sleeper.acquire()
                        self._sleepers.append(sleeper)
                    else:
                        self._reading = True
                if sleeper is None:
                    self._read_one()
            finally:
                # A signal kept meanwhile raises here, once the frame read has been handed on.
                self._guard.leave(entered)
            if sleeper is not None:
                sleeper.acquire()  # released when a frame has been handed on or the reader left

    def _read_one(self) -> None:
        """(The reader) read one frame, hand it on, leave the reader's role and wake every sleeper."""
        try:
            message = self._channel.receive()
        except BaseException as exc:
            self._leave_reading(None, exc)
            raise
        self._leave_reading(message, None)

    def _leave_reading(self, message: dict[str, Any] | None, error: BaseException | None) -> None:
        with self._lock:
            self._reading = False
            try:
                if isinstance(error, _HostGone):
                    self._gone = error
                elif message is not None:
                    self._dispatch(message)
            except _HostGone as exc:
                self._gone = exc
                raise
            finally:
                sleepers, self._sleepers = self._sleepers, []
                parked, self._parked = self._parked, []
                for sleeper in sleepers:
                    sleeper.release()
        for loop in parked:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self.watch, loop)

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind != "result":
            if self.in_step:
                raise _HostGone("an unexpected frame during a step: " + repr(kind))
            self._control.append(message)
            return
        call_id = message.get("id")
        if not isinstance(call_id, int):
            raise _HostGone("a result frame without an id")
        self._open.discard(call_id)
        future = self._futures.pop(call_id, None)
        if future is None:
            if call_id in self._names:
                self._results[call_id] = message
            return  # a late answer to a call of an earlier step: nobody waits for it
        ok, value = self._outcome(message)
        _settle(future, ok, value)

    def _block(self) -> None:
        """Count this thread (or an idle event loop) as waiting for results, and tell the host (a ``wait``
        frame, or ``w`` on the call a thread waits for at once).

        The host stops the code's clock while the code waits and one of its calls runs there; it forgets a
        wait once none runs (every answer is on its way), so each new wait is told, not only the first of
        several threads'. A ``resume`` frame says when the last waiter goes on while calls are still
        unanswered; when none is, it is left out (no call runs on the host then, which the host knows).
        Threads other than the waiting ones may still compute meanwhile: that time is not counted
        (``cpu_seconds`` and ``max_step_time`` still bound it).
        """
        entered = self._guard.enter()
        try:
            with self._marks:
                self._blocked += 1
                try:
                    self._channel.send({"t": "wait"})
                except BaseException:
                    self._blocked -= 1
                    raise
        finally:
            self._guard.leave(entered)

    def _unblock(self) -> None:
        entered = self._guard.enter()
        try:
            with self._marks:
                if self._blocked > 0:
                    self._blocked -= 1
                    if self._blocked == 0 and self._open:
                        self._channel.send({"t": "resume"})
        finally:
            self._guard.leave(entered)

    def _outcome(self, message: dict[str, Any]) -> tuple[bool, Any]:
        name = self._names.pop(message["id"], "?")
        if message.get("ok"):
            return True, message.get("value")
        return False, ToolError(name, str(message.get("error") or "TOOL_ERROR: the tool failed"))


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """Settle ``future`` with a call's outcome, in its loop's thread (which may not be this one)."""
    import asyncio

    loop = future.get_loop()
    if asyncio._get_running_loop() is not loop:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody awaits the future any more
            loop.call_soon_threadsafe(_settle, future, ok, value)
        return
    if not future.done():
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _merge_args(name: str, args: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    if args is None:
        return dict(kwargs)
    if not isinstance(args, dict):
        raise TypeError(
            f"tool {name!r} takes keyword arguments or one dict of arguments, not {type(args).__name__}"
        )
    merged = dict(args)
    merged.update(kwargs)
    return merged


def _bind_args(
    name: str,
    params: list[str] | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    object_first: bool = False,
) -> dict[str, Any]:
    """The arguments of a call through a tool's stub: ``args`` by position in the order ``params`` (the
    tool's parameters, ``None`` when the host did not say), ``kwargs`` by name, or one dict of them.

    When the first parameter takes an object (``object_first``), a dict is always its value: ``save({})``
    saves an empty record. Otherwise one dict whose keys are all parameter names (any keys when ``params``
    is ``None``) is the arguments' dict, as ``call_tool`` takes it, and any other dict is the value of the
    first parameter.
    """
    if not args:
        return dict(kwargs)
    if (
        len(args) == 1
        and isinstance(args[0], dict)
        and not object_first
        and (params is None or all(k in params for k in args[0]))
    ):
        return _merge_args(name, args[0], kwargs)
    if params is None:
        raise TypeError(
            f"tool {name!r} takes keyword arguments or one dict of arguments, not {type(args[0]).__name__}"
        )
    if len(args) > len(params):
        given = f"{len(args)} {'was' if len(args) == 1 else 'were'} given"
        if not params:
            raise TypeError(f"tool {name!r} takes no positional arguments but {given}")
        listed = ", ".join(params)
        raise TypeError(
            f"tool {name!r} takes at most {len(params)} positional arguments ({listed}) but {given}"
        )
    bound = {params[index]: value for index, value in enumerate(args)}
    for key, value in kwargs.items():
        if key in bound:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        bound[key] = value
    return bound


class _ReturnRewriter(ast.NodeTransformer):
    """Turns top-level ``return x`` into ``raise __agentflow_return__(x)``; function bodies are left alone."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        value = node.value if node.value is not None else ast.Constant(value=None)
        call = ast.Call(func=ast.Name(id=_RETURN, ctx=ast.Load()), args=[value], keywords=[])
        return ast.copy_location(ast.Raise(exc=call, cause=None), node)


_MAX_EXACT_BITS = 1000
"""Integers up to this many bits (up to 302 digits) cross to the host as JSON numbers."""


def _big_int_text(value: int) -> str:
    try:
        return str(value)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        return f"<an integer of {value.bit_length()} bits>"


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value``: containers become lists/dicts, other objects their ``repr``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        # The host reads integers of any size exactly, up to the ~308 digits its JSON parser takes at all
        # (agentflow.exact_json); a bigger one travels as text (and never meets str()'s digit limit here).
        return int(value) if value.bit_length() <= _MAX_EXACT_BITS else _big_int_text(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(value)
    if depth >= 64:
        return repr(value)
    if isinstance(value, dict):
        return {_json_key(key): _jsonable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item, depth + 1) for item in value]
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return repr(bytes(value))
    return repr(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return repr(key)


def _user_traceback(error: BaseException) -> str:
    """The error as Python prints it, keeping only frames of the user's cells."""
    stack = traceback.extract_tb(error.__traceback__)
    frames = [frame for frame in stack if frame.filename.startswith("<cell")]
    lines = traceback.format_exception_only(type(error), error)
    if frames:
        shown = traceback.format_list(frames[-_MAX_TRACEBACK_FRAMES:])
        head = "Traceback (most recent call last):\n"
        if len(frames) > _MAX_TRACEBACK_FRAMES:
            head += f"  [... {len(frames) - _MAX_TRACEBACK_FRAMES} earlier frames ...]\n"
        lines = [head, *shown, *lines]
    text = "".join(lines).rstrip("\n")
    if len(text) > _MAX_ERROR_CHARS:
        half = _MAX_ERROR_CHARS // 2
        text = text[:half] + "\n[... error text truncated ...]\n" + text[-half:]
    return text


class Runner:
    """One sandbox kernel: the persistent namespace, the tool bridge and the step loop."""

    def __init__(self, channel: _Channel, guard: _CpuGuard) -> None:
        self.channel = channel
        self.guard = guard
        self.stdout = _Capture("stdout", channel)
        self.stderr = _Capture("stderr", channel)
        self.calls = _Calls(channel, guard, (self.stdout, self.stderr))
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.rlimits_applied = False
        self._install_helpers()

    # -- the helpers user code sees ------------------------------------------------------------

    def _install_helpers(self) -> None:
        calls = self.calls

        def call_tool(name: str, args: dict[str, Any] | None = None, /, **kwargs: Any) -> Any:
            """Call the tool ``name`` with a dict of arguments (or keywords) and return its value."""
            ok, value = calls.call(name, _merge_args(name, args, kwargs))
            if not ok:
                raise value
            return value

        async def acall_tool(name: str, args: dict[str, Any] | None = None, /, **kwargs: Any) -> Any:
            """Like ``call_tool`` but awaitable, e.g. ``await asyncio.gather(acall_tool(...), ...)``."""
            import asyncio

            loop = asyncio.get_running_loop()
            calls.watch(loop)  # the code may run its own loop (``asyncio.run(main())``)
            call_id = calls.request(name, _merge_args(name, args, kwargs))
            return await calls.future(call_id, loop)

        def parallel(*requests: Any, return_exceptions: bool = False) -> list[Any]:
            """Run several ``(name, args)`` tool calls at the same time; return their values in order."""
            call_ids = []
            for request in requests:
                if not (isinstance(request, (tuple, list)) and len(request) == 2):
                    raise TypeError("parallel() takes (tool_name, args_dict) pairs")
                call_ids.append(calls.request(request[0], _merge_args(str(request[0]), request[1], {})))
            return _gather(calls.wait(call_ids), return_exceptions)

        def map_tool(name: str, items: Any, return_exceptions: bool = False) -> list[Any]:
            """Call the tool ``name`` once per argument dict in ``items``, all at the same time."""
            call_ids = [calls.request(name, _merge_args(name, item, {})) for item in items]
            return _gather(calls.wait(call_ids), return_exceptions)

        def final_answer(answer: Any) -> None:
            """End this step now; ``answer`` becomes the final answer of the run."""
            raise _FinalAnswer(answer)

        for helper in (call_tool, acall_tool, parallel, map_tool, final_answer):
            self.namespace[helper.__name__] = helper
        self.namespace["ToolError"] = ToolError
        self.namespace[_RETURN] = _Return

    def _refresh_tool_stubs(
        self, tool_names: list[str], params: dict[str, Any], object_first: set[str]
    ) -> None:
        """Define a function per tool for this step (its parameters may have changed), never replacing a
        name the code has given a value of its own. ``object_first``: the tools whose first parameter takes
        an object (a lone dict is its value)."""
        wanted = set(tool_names)
        for name, value in list(self.namespace.items()):
            if getattr(value, _STUB_MARK, None) == name and name not in wanted:
                del self.namespace[name]
        for name in tool_names:
            if not is_stub_name(name):
                continue
            current = self.namespace.get(name)
            if current is None or getattr(current, _STUB_MARK, None) == name:
                names = params.get(name)
                known = [str(p) for p in names] if isinstance(names, list) else None
                self.namespace[name] = self._make_stub(name, known, bool(known) and name in object_first)

    def _make_stub(
        self, name: str, params: list[str] | None, object_first: bool = False
    ) -> Callable[..., Any]:
        calls = self.calls

        def stub(*args: Any, **kwargs: Any) -> Any:
            arguments = _bind_args(name, params, args, kwargs, object_first)
            ok, value = calls.call(name, arguments)
            if not ok:
                raise value
            return value

        stub.__name__ = stub.__qualname__ = name
        order = "(" + ", ".join(params) + ")" if params else ""
        if object_first and params:
            how = f"positional arguments in the order {order} or keywords; a dict alone is {params[0]}"
        elif order:
            how = f"positional arguments in the order {order}, keywords or one dict"
        else:
            how = "keywords or one dict"
        stub.__doc__ = f"Call the tool {name!r} ({how}) and return its value."
        setattr(stub, _STUB_MARK, name)
        return stub

    # -- one step ---------------------------------------------------------------------------

    def run_step(self, message: dict[str, Any]) -> dict[str, Any]:
        limits = message.get("limits") or {}
        if not self.rlimits_applied:
            _apply_rlimits(message.get("rlimits") or {})
            self.rlimits_applied = True
        budget = int(limits.get("max_output_bytes", 65536))
        self.stdout.reset(budget)
        self.stderr.reset(budget)
        self.guard.reset()
        self.calls.reset()
        self.calls.max_call_bytes = int(limits.get("max_call_bytes", 0))
        self.calls.max_calls = int(limits.get("max_tool_calls") or 0)
        params = message.get("params")
        object_first = message.get("object_first")
        self._refresh_tool_stubs(
            [str(name) for name in message.get("tools") or ()],
            params if isinstance(params, dict) else {},
            {str(n) for n in object_first} if isinstance(object_first, list) else set(),
        )
        filename = "<cell " + str(message.get("step", 0)) + ">"
        code = str(message.get("code", ""))
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)

        # The step number lets the host tell this step's outcome from a stale or forged one.
        done: dict[str, Any] = {"t": "done", "step": message.get("step", 0), "ok": True, "value": None}
        done["final"] = False
        sys.stdout, sys.stderr = self.stdout, self.stderr
        try:
            compiled = _compile(code, filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            done.update(ok=False, error_type="syntax", error=_user_traceback(exc))
            compiled = None
        if compiled is not None:
            cpu_seconds = int(limits.get("cpu_seconds", 0))
            self._execute(compiled, done, cpu_seconds, int(limits.get("max_result_bytes", 0)))
        self.stdout.flush()
        self.stderr.flush()
        sys.stdout = sys.stderr = sys.__stderr__
        self.calls.in_step = False
        done["dropped"] = {"stdout": self.stdout.dropped, "stderr": self.stderr.dropped}
        return done

    def _execute(self, compiled: Any, done: dict[str, Any], cpu_seconds: int, max_result_bytes: int) -> None:
        namespace = self.namespace
        try:
            value, final = self._run_user_code(compiled, cpu_seconds)
        except _HostGone:
            raise
        except BaseException as exc:  # user code may raise anything: SystemExit, KeyboardInterrupt…
            done.update(ok=False, error_type=_error_type(exc), error=_user_traceback(exc))
            return
        finally:
            self.guard.user_code = False
            _set_cpu_budget(0)
            namespace.pop(_LAST, None)
        done["final"] = final
        try:
            size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace"))
        except (MemoryError, RecursionError, ValueError) as exc:
            error = f"the result could not be encoded: {exc!r}"
            done.update(ok=False, error_type=_error_type(exc), error=error)
            return
        if max_result_bytes and size > max_result_bytes:
            done.update(
                ok=False,
                error_type="output_limit",
                error=(
                    f"the result is {size} bytes as JSON, over the limit of {max_result_bytes}; "
                    "return a smaller value (a summary or a slice) instead"
                ),
            )
            return
        done["value"] = value

    def _run_user_code(self, compiled: Any, cpu_seconds: int) -> tuple[Any, bool]:
        """Run one compiled cell; returns its JSON-safe value and whether ``final_answer`` ended it."""
        namespace = self.namespace
        namespace.pop(_LAST, None)
        _set_cpu_budget(cpu_seconds)
        self.guard.user_code = True
        final = False
        try:
            try:
                if compiled.co_flags & _CO_COROUTINE:
                    self._run_async(eval(compiled, namespace))
                else:
                    exec(compiled, namespace)
                value = namespace.get(_LAST)
            except _Return as returned:
                value = returned.value
            except _FinalAnswer as answer:
                value, final = answer.value, True
            # Converting runs user code too (``__repr__``), so it stays under the CPU guard.
            return _jsonable(value), final
        finally:
            # Inside the caller's ``try``: a SIGXCPU that lands here is still reported as cpu_limit.
            self.guard.user_code = False

    def _run_async(self, coroutine: Any) -> None:
        import asyncio

        async def main() -> None:
            loop = asyncio.get_running_loop()
            self.calls.watch(loop)
            try:
                await coroutine
            finally:
                loop.remove_reader(self.channel.read_fd)

        asyncio.run(main())


def _gather(outcomes: list[tuple[bool, Any]], return_exceptions: bool) -> list[Any]:
    if not return_exceptions:
        for ok, value in outcomes:
            if not ok:
                raise value
    return [value for _ok, value in outcomes]


def is_stub_name(name: str) -> bool:
    """Whether code can call the tool ``name`` as a function (else only through ``call_tool``)."""
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and not name.startswith("_")
        and name not in _HELPERS
        and not hasattr(builtins, name)
    )


def _compile(code: str, filename: str) -> Any:
    tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | _ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    tree = _ReturnRewriter().visit(tree)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        target = ast.Name(id=_LAST, ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", _ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def _error_type(error: BaseException) -> str:
    if isinstance(error, MemoryError):
        return "memory"
    if isinstance(error, CpuTimeExceeded):
        return "cpu_limit"
    if isinstance(error, ToolError):
        return "tool_error"
    return "exception"


def _apply_rlimits(limits: dict[str, Any]) -> None:
    """Cap this process for good: soft = hard = the limit, so user code cannot raise them back."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    for name, value in limits.items():
        which = getattr(resource, name, None)
        if which is None or value is None:
            continue
        _soft, hard = resource.getrlimit(which)
        target = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
        with contextlib.suppress(ValueError, OSError):  # the platform refuses this limit
            resource.setrlimit(which, (target, target))


def _set_cpu_budget(seconds: int) -> None:
    """Arm ``SIGXCPU`` ``seconds`` of CPU from now (0 disarms it until the next step).

    Only the soft limit: a hard one, lowered for this step, could never be raised for the next. Code that
    the handler cannot interrupt (one long call into C) is stopped by the host instead (``cpu_watch.py``).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if seconds > 0:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(usage.ru_utime + usage.ru_stime) + seconds
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    else:
        soft = hard
    with contextlib.suppress(ValueError, OSError):  # the platform refuses this limit
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _add_site_dirs(args: list[str]) -> str | None:
    """Make the host's installed packages importable: ``args`` is ``<major.minor> <dir>...`` (see the module
    docstring). Returns why that is impossible here, or ``None`` (also when there is nothing to add)."""
    if not args:
        return None
    wanted, directories = args[0], args[1:]
    have = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if have != wanted:
        # Compiled packages are built for one minor version: importing them here would fail or crash.
        return "this interpreter is Python " + have + ", the host's packages are for Python " + wanted
    unreadable = [path for path in directories if not os.access(path, os.R_OK | os.X_OK)]
    if unreadable:
        return "the sandbox's user cannot read " + ", ".join(unreadable)
    import site

    for path in directories:
        site.addsitedir(path)
    return None


def _split_args(args: list[str]) -> tuple[list[str] | None, bool, list[str]]:
    """The private-tmp step's arguments (``None``: none), whether this is a probe, and the rest."""
    private_tmp = None
    if args[:1] == ["--private-tmp"] and "--" in args:
        end = args.index("--")
        private_tmp, args = args[1:end], args[end + 1 :]
    probe = args[:1] == ["--probe"]
    return private_tmp, probe, args[1:] if probe else args


def _make_private_tmp(spec: list[str]) -> None:
    """Give the sandbox its own ``/tmp``, ``/var/tmp`` and ``/dev/shm``, then drop to an unprivileged uid.

    ``spec`` is ``<size> <inodes> <uid> <workdir> <dir>...``. The launcher made this process root of a new
    user namespace that owns its mount namespace (capabilities there, none on the host). This mounts a
    tmpfs of ``size`` bytes on each ``dir``, so what the code writes there stays in this mount namespace and
    vanishes with it; re-attaches the working directory (still this process's cwd) at ``workdir`` when a
    tmpfs hid its path (``''`` otherwise); then moves into a nested user namespace where it is ``uid`` and
    drops every capability. Owned by the outer namespace, the mounts cannot be undone from there, nor from
    any namespace the code makes (copied mounts are locked together). Raises ``OSError`` on any failure:
    the caller must then exit, never run code. Runs before any other thread exists (``unshare`` of a user
    namespace needs a single thread) and before any code.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, what: str) -> None:
        if result != 0:
            number = ctypes.get_errno()
            raise OSError(number, what + ": " + os.strerror(number))

    size, inodes, uid, workdir, directories = spec[0], spec[1], spec[2], spec[3], spec[4:]
    options = ("size=" + str(int(size)) + ",nr_inodes=" + str(int(inodes)) + ",mode=1777").encode()
    for directory in directories:
        flags = _MS_NOSUID | _MS_NODEV
        check(libc.mount(b"tmpfs", directory.encode(), b"tmpfs", flags, options), "mount " + directory)
    if workdir:
        os.makedirs(workdir, exist_ok=True)
        # "." is the working directory as it was before the mounts hid its path.
        check(libc.mount(b".", workdir.encode(), None, _MS_BIND, None), "bind " + workdir)
        # From inside the mount, ".." leads to the new tmpfs, never to what it covers.
        os.chdir(workdir)
    check(libc.unshare(_CLONE_NEWUSER), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", uid + " 0 1"), ("gid_map", uid + " 0 1")):
        with open("/proc/self/" + name, "w") as handle:
            handle.write(text)
    # The nested namespace owns nothing, but its capabilities go too: the bounding set (so no program can
    # bring one back), then the process's own.
    cap = 0
    while libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    check(libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    if os.getuid() != int(uid) or os.getgid() != int(uid):
        raise OSError(0, "the uid is " + str(os.getuid()) + ", not " + uid)


def _forbid_new_privileges() -> None:
    """Make sure no program the code runs gains privileges (Linux's ``no_new_privs``): a set-uid binary
    (``sudo``, ``su``, ``passwd``…) then runs as the code's own uid, and file capabilities are ignored. It
    is kept across ``fork`` and ``exec`` and can never be unset.

    The launcher's ``setpriv --no-new-privs`` usually set it already (read from ``/proc``, which costs less
    than loading ``ctypes``); without ``setpriv`` it is set here. Best effort: a kernel without it (before
    3.5) runs the code anyway, as on other systems.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError), open("/proc/self/status", "rb") as handle:
        if b"\nNoNewPrivs:\t1" in handle.read():
            return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _watch_host(channel: _Channel, outputs: tuple[_Capture, ...], workdir: str | None) -> None:
    """The watch thread: flush output that waits in a buffer; once the host is gone, clean up and exit.

    It polls the channel for hang-up only (pending data is the main thread's to read), so it costs nothing
    while it waits. It needs the interpreter lock to act: code stuck in one long call into C that holds it
    delays it until the call returns (on Linux the kernel's parent-death signal covers that case; see
    ``launch.py``).
    """
    import select

    poller = select.poll()
    poller.register(channel.read_fd, 0)  # 0: only POLLHUP, POLLERR and POLLNVAL are reported
    while True:
        try:
            if poller.poll(_WATCH_EVERY_MS):
                break
            for output in outputs:
                output.flush()
        except _HostGone:
            break
        except BaseException:  # a failed flush (say, MemoryError) is tried again next round
            continue
    _leave(workdir)


def _after_fork(runner: Runner) -> None:
    """In a process the code forked: the forking thread is its main thread now, and no other thread
    lives on to release a lock it held at the fork."""
    runner.guard.main = _thread.get_ident()
    runner.channel._lock = _thread.allocate_lock()
    runner.calls.after_fork()
    for output in (runner.stdout, runner.stderr):
        output._lock = _thread.RLock()


def _leave(workdir: str | None) -> None:
    """The host is gone: delete the working directory, kill what the code started, and exit."""
    if workdir is not None:
        with contextlib.suppress(BaseException):
            os.chdir("/")
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    # Without a PID namespace, processes the code started (``max_processes > 0``) share this process group
    # (the host started it in a new session); this process goes too. In a PID namespace its exit is enough.
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGKILL)
    os._exit(0)


def main() -> None:
    """Take over the standard descriptors, greet the host and serve ``exec`` frames until it leaves."""
    private_tmp, probe, args = _split_args(sys.argv[1:])
    if private_tmp is not None:
        try:
            _make_private_tmp(private_tmp)
        except BaseException as exc:
            os.write(2, ("the sandbox's private /tmp failed: " + repr(exc) + "\n").encode("utf-8", "replace"))
            os._exit(_PRIVATE_TMP_FAILED)
    _forbid_new_privileges()
    if probe:
        os._exit(0)
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # fd-level writes (C code, os.write(1, …)) reach the host's stderr pipe, not the channel
    cwd = os.getcwd()
    workdir = cwd if os.path.basename(cwd).startswith(_WORKDIR_PREFIX) else None
    site_error = _add_site_dirs(args)
    guard = _CpuGuard()
    channel = _Channel(read_fd, write_fd, guard)
    runner = Runner(channel, guard)
    import faulthandler

    faulthandler.enable()
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead
    if hasattr(signal, "SIGXCPU"):
        signal.signal(signal.SIGXCPU, guard.on_signal)
    # Before the first step's limits: the thread is one of the processes RLIMIT_NPROC counts (launch.py).
    _thread.start_new_thread(_watch_host, (channel, (runner.stdout, runner.stderr), workdir))
    if hasattr(os, "register_at_fork"):
        # A process the code forks has no watch thread: a lock that thread held at the fork would never be
        # released there.
        os.register_at_fork(after_in_child=lambda: _after_fork(runner))
    greeting: dict[str, Any] = {
        "t": "ready",
        "v": PROTOCOL_VERSION,
        "python": ".".join(str(part) for part in sys.version_info[:3]),
        "pid": os.getpid(),
    }
    if site_error is not None:
        greeting["site_error"] = site_error
    try:
        channel.send(greeting)
        while True:
            # A late tool answer the step no longer waited for is dropped on the way.
            message = runner.calls.next_control()
            kind = message.get("t")
            if kind != "exec":
                raise _HostGone("an unexpected frame between steps: " + repr(kind))
            channel.send(runner.run_step(message))
    except _HostGone:
        _leave(workdir)


if __name__ == "__main__":
    main()

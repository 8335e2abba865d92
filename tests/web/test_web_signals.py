"""``OpenRuns.cancel_on_signals``: a signal cancels the held runs, in the event loop, and still reaches the
handler that was there before (uvicorn's, asyncio's, Python's own); leaving the block puts that one back.

The first test serves the FastAPI example in a subprocess as ``uvicorn app:app`` does, with a stream held open
by a tool, and stops it with a real SIGTERM. The others raise signals that the test process can take safely
(SIGUSR1, SIGUSR2, SIGWINCH), each with its own handler installed for the test and put back after it.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp
import anyio
import anyio.lowlevel
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from web_support import SseReader, data

from agentflow import Agent, OpenRuns, StopReason
from agentflow.agent.run import AgentRun
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SERVICE = Path(__file__).with_name("signalled_service.py")


async def test_sigterm_to_a_uvicorn_process_ends_its_open_stream_with_run_cancelled() -> None:
    process = await anyio.open_process(
        [sys.executable, str(SERVICE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    async with process:
        assert process.stdout is not None
        assert process.stderr is not None
        stdout = BufferedByteReceiveStream(process.stdout)
        try:
            with anyio.fail_after(30):  # a hang guard only: uvicorn itself would wait an hour
                port = int((await stdout.receive_until(b"\n", 100)).split()[1])
                async with aiohttp.ClientSession() as http:
                    response = await http.get(f"http://127.0.0.1:{port}/runs", params={"q": "Deploy it"})
                    reader = SseReader(response)
                    await reader.until("tool_started")
                    process.send_signal(signal.SIGTERM)
                    frames = await reader.all()
                said = await stdout.receive_until(b"\n", 100)
                returncode = await process.wait()
        except BaseException:
            process.kill()
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                print((await process.stderr.receive(65536)).decode(errors="replace"), file=sys.stderr)
            raise

    assert [frame.event for frame in frames][-2:] == ["tool_failed", "run_cancelled"]
    assert data(frames[-1])["partial"]["tool_results"][0]["error_type"] == "cancelled"
    assert said == b"handlers restored True"
    # uvicorn got the signal too: once it had put its own predecessor (SIG_DFL) back, it raised it again.
    assert returncode == -signal.SIGTERM


@tool
async def wait_until_cancelled(change: str) -> str:
    """Wait until a human approves the change."""
    await anyio.sleep_forever()
    return "approved"


@asynccontextmanager
async def held() -> AsyncIterator[tuple[OpenRuns, AgentRun[Any]]]:
    """A run held in an ``OpenRuns``, its tool call waiting until the run is cancelled (entered in the test's
    task: the run's block cannot span a fixture's setup and teardown, which run in other tasks)."""
    runs = OpenRuns()
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("wait_until_cancelled", {"change": "x"})])]),
        tools=[wait_until_cancelled],
    )
    async with agent.stream("go") as run, runs.track(run):
        yield runs, run


async def _ended(run: AgentRun[Any]) -> list[str]:
    with anyio.fail_after(10):  # a hang guard only
        return [type(event).__name__ async for event in run]


@pytest.fixture
def own_handler() -> Iterator[list[int]]:
    """SIGUSR1 handled, for the test, by a Python handler that records the signals it gets."""
    got: list[int] = []

    def record(number: int, frame: FrameType | None) -> None:
        got.append(number)

    before = signal.signal(signal.SIGUSR1, record)
    try:
        yield got
    finally:
        signal.signal(signal.SIGUSR1, before)


async def test_the_previous_python_handler_still_gets_the_signal_and_is_restored(
    own_handler: list[int],
) -> None:
    previous = signal.getsignal(signal.SIGUSR1)
    async with held() as (runs, run):
        with runs.cancel_on_signals(signals=(signal.SIGUSR1,)):
            assert signal.getsignal(signal.SIGUSR1) is not previous
            signal.raise_signal(signal.SIGUSR1)
            assert own_handler == [signal.SIGUSR1]  # at once, in the handler
            events = await _ended(run)
        assert signal.getsignal(signal.SIGUSR1) is previous
    assert events[-1] == "RunCancelled"
    assert run.result.stop_reason is StopReason.CANCELLED
    assert runs.closing  # a run tracked from now on is cancelled at once


async def test_default_int_handler_still_raises_keyboard_interrupt_after_the_cancel_is_scheduled() -> None:
    before = signal.signal(signal.SIGUSR1, signal.default_int_handler)
    try:
        async with held() as (runs, run):
            with runs.cancel_on_signals(signals=(signal.SIGUSR1,)):
                with pytest.raises(KeyboardInterrupt):
                    signal.raise_signal(signal.SIGUSR1)
                events = await _ended(run)
            assert signal.getsignal(signal.SIGUSR1) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGUSR1, before)
    assert events[-1] == "RunCancelled"


async def test_a_loop_signal_handler_behind_the_chain_still_runs() -> None:
    loop_handled = anyio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR2, loop_handled.set)
    try:
        noop = signal.getsignal(signal.SIGUSR2)  # asyncio's: the loop learns of it through its wakeup fd
        async with held() as (runs, run):
            with runs.cancel_on_signals(signals=(signal.SIGUSR2,)):
                signal.raise_signal(signal.SIGUSR2)
                events = await _ended(run)
                with anyio.fail_after(10):  # a hang guard only
                    await loop_handled.wait()
            assert signal.getsignal(signal.SIGUSR2) is noop
    finally:
        loop.remove_signal_handler(signal.SIGUSR2)
    assert events[-1] == "RunCancelled"


async def test_a_default_action_is_taken_and_the_chain_stays() -> None:
    # SIGWINCH's default action is to ignore it, so the process survives taking it.
    before = signal.signal(signal.SIGWINCH, signal.SIG_DFL)
    try:
        async with held() as (runs, run):
            with runs.cancel_on_signals(signals=(signal.SIGWINCH,)):
                chained = signal.getsignal(signal.SIGWINCH)
                signal.raise_signal(signal.SIGWINCH)
                assert signal.getsignal(signal.SIGWINCH) is chained
                events = await _ended(run)
            assert signal.getsignal(signal.SIGWINCH) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGWINCH, before)
    assert events[-1] == "RunCancelled"


def test_with_no_handler_before_sigterm_still_ends_the_process() -> None:
    code = (
        "import asyncio, signal\n"
        "from agentflow import OpenRuns\n"
        "async def main():\n"
        "    with OpenRuns().cancel_on_signals():\n"
        "        signal.raise_signal(signal.SIGTERM)\n"
        "        print('survived')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, check=False)
    assert done.returncode == -signal.SIGTERM, done.stderr.decode()
    assert done.stdout == b""


async def test_an_ignored_signal_is_left_alone() -> None:
    before = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    try:
        async with held() as (runs, run):
            with runs.cancel_on_signals(signals=(signal.SIGUSR1,)):
                assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
                signal.raise_signal(signal.SIGUSR1)
                await anyio.lowlevel.checkpoint()  # where a callback scheduled by the signal would have run
            assert not runs.closing
            await run.cancel()
            await _ended(run)
    finally:
        signal.signal(signal.SIGUSR1, before)


async def test_a_handler_installed_over_the_chain_is_kept_on_exit(own_handler: list[int]) -> None:
    runs = OpenRuns()
    with runs.cancel_on_signals(signals=(signal.SIGUSR1,)):
        chained = signal.getsignal(signal.SIGUSR1)
        assert callable(chained)

        def newer(number: int, frame: FrameType | None) -> None:
            chained(number, frame)

        signal.signal(signal.SIGUSR1, newer)
    assert signal.getsignal(signal.SIGUSR1) is newer
    signal.raise_signal(signal.SIGUSR1)  # passed on, to the handler the chain was installed over
    assert own_handler == [signal.SIGUSR1]
    await anyio.lowlevel.checkpoint()  # where a callback scheduled by the signal would have run
    assert not runs.closing  # the block is over: the signal no longer cancels anything


async def test_outside_the_main_thread_it_is_refused() -> None:
    runs = OpenRuns()

    def enter() -> None:
        assert threading.current_thread() is not threading.main_thread()
        with runs.cancel_on_signals():
            pass  # pragma: no cover - refused

    with pytest.raises(RuntimeError, match="only be installed from the main thread"):
        await anyio.to_thread.run_sync(enter)


def test_without_a_running_event_loop_it_is_refused() -> None:
    with pytest.raises(RuntimeError, match="no running event loop"), OpenRuns().cancel_on_signals():
        pass  # pragma: no cover - refused


@pytest.mark.parametrize(
    ("signals", "error", "message"),
    [
        ((), ValueError, "signals is empty"),
        ((999,), ValueError, "999 is not a signal number"),
        (("SIGTERM",), TypeError, "signal numbers"),
        (signal.SIGTERM, TypeError, r"e.g. \(<Signals.SIGTERM: 15>,\)"),
    ],
)
async def test_bad_signals_are_refused(signals: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message), OpenRuns().cancel_on_signals(signals):
        pass  # pragma: no cover - refused


async def test_a_signal_that_cannot_be_caught_leaves_no_handler_behind(own_handler: list[int]) -> None:
    before = signal.getsignal(signal.SIGUSR1)
    refused = pytest.raises(OSError, match="Invalid argument")
    with refused, OpenRuns().cancel_on_signals((signal.SIGUSR1, signal.SIGKILL)):
        pass  # pragma: no cover - refused
    assert signal.getsignal(signal.SIGUSR1) is before


def test_a_signal_after_its_loop_closed_still_reaches_the_previous_handler(own_handler: list[int]) -> None:
    # uvicorn's forced exit (a second Ctrl+C) skips the lifespan's shutdown: the block is left open, and its
    # loop closes. uvicorn then puts back its own predecessors; until it does, a signal must still pass on.
    runs = OpenRuns()
    block = runs.cancel_on_signals((signal.SIGUSR1,))

    async def enter() -> None:
        block.__enter__()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(enter())
    finally:
        loop.close()
    try:
        signal.raise_signal(signal.SIGUSR1)
        assert own_handler == [signal.SIGUSR1]
    finally:
        block.__exit__(None, None, None)
    assert signal.getsignal(signal.SIGUSR1) is not None

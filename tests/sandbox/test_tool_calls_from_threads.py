"""Code may call tools from threads of its own (``max_processes > 0`` lets it start them), and from event
loops running in them: one thread at a time reads the channel and hands every answer to whoever waits for
it, so frames never interleave and no answer is lost, whoever reads it."""

from __future__ import annotations

import os
import threading
from typing import Any

import anyio
import pytest

from agentflow.sandbox import ExecutionLimits, ProcessSandbox, _runner

from .conftest import HostTools

THREADS = ExecutionLimits(wall_time=10, max_processes=16, max_step_tool_calls=None)


async def numbered(args: dict[str, Any]) -> Any:
    # Answers come back out of order: a later call may finish first.
    await anyio.sleep(0.001 * (args["i"] % 3))
    return args["i"]


@pytest.fixture
def number_tools() -> HostTools:
    return HostTools(echo=numbered)


async def test_tools_called_by_name_from_a_thread_pool_all_answer(
    sandbox: ProcessSandbox, number_tools: HostTools
) -> None:
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def work(k):\n"
        "    return [echo(i=k * 100 + j) for j in range(20)]\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    out = list(pool.map(work, range(8)))\n"
        "out"
    )
    result = await sandbox.execute(code, number_tools, number_tools.names, THREADS)
    assert result.ok, (result.error, result.stderr)
    assert result.value == [[k * 100 + j for j in range(20)] for k in range(8)]
    assert (await sandbox.execute("len(out)", number_tools, [], THREADS)).value == 8  # the process lived on


async def test_threads_and_an_event_loop_share_the_channel(
    sandbox: ProcessSandbox, number_tools: HostTools
) -> None:
    code = (
        "import asyncio, threading\n"
        "sums = []\n"
        "def work():\n"
        "    sums.append(sum(echo(i=j) for j in range(30)))\n"
        "threads = [threading.Thread(target=work) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "values = await asyncio.gather(*[acall_tool('echo', i=j) for j in range(60)])\n"
        "for t in threads: t.join()\n"
        "[values == list(range(60)), sums]"
    )
    result = await sandbox.execute(code, number_tools, number_tools.names, THREADS)
    assert result.ok, (result.error, result.stderr)
    assert result.value == [True, [435] * 4]


async def test_event_loops_in_threads_and_batches_in_threads_all_answer(
    sandbox: ProcessSandbox, number_tools: HostTools
) -> None:
    code = (
        "import asyncio\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def in_a_loop(k):\n"
        "    async def main():\n"
        "        return await asyncio.gather(*[acall_tool('echo', i=j) for j in range(15)])\n"
        "    return asyncio.run(main())\n"
        "def batched(k):\n"
        "    return map_tool('echo', [{'i': j} for j in range(15)]) + parallel(('echo', {'i': k}))\n"
        "with ThreadPoolExecutor(6) as pool:\n"
        "    loops = list(pool.map(in_a_loop, range(4)))\n"
        "    batches = list(pool.map(batched, range(4)))\n"
        "[loops, batches]"
    )
    result = await sandbox.execute(code, number_tools, number_tools.names, THREADS)
    assert result.ok, (result.error, result.stderr)
    assert result.value == [[list(range(15))] * 4, [[*range(15), k] for k in range(4)]]


def test_each_answer_reaches_the_thread_that_waits_for_it_whichever_thread_reads_it() -> None:
    """The runner's own ``_Calls`` over a pipe: two threads wait at once, and the answers come back in the
    reverse order of the calls, so the first reader reads the other thread's answer first."""
    to_child, from_host = os.pipe()
    to_host, from_child = os.pipe()
    guard = _runner._CpuGuard()
    calls = _runner._Calls(_runner._Channel(to_child, from_child, guard), guard)
    calls.reset()
    outcomes: dict[int, Any] = {}

    def call(slot: int) -> None:
        outcomes[slot] = calls.call("echo", {"slot": slot})

    threads = [threading.Thread(target=call, args=(slot,)) for slot in (1, 2)]
    host = os.fdopen(to_host, "rb", buffering=0)  # unbuffered: ``select`` sees what is left to read
    try:
        for thread in threads:
            thread.start()
        requests = [_read_frame(host) for _ in threads]
        for request in reversed(requests):
            answer = {"t": "result", "id": request["id"], "ok": True, "value": request["args"]["slot"] * 10}
            _write_frame(from_host, answer)
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads)
        assert outcomes == {1: (True, 10), 2: (True, 20)}
        # Each thread told the host that it waits for its call, on the call itself.
        assert all(request.get("w") == 1 for request in requests)
    finally:
        for fd in (from_host, to_child, from_child):
            os.close(fd)
        host.close()


def _read_frame(stream: Any) -> dict[str, Any]:
    import json
    import select

    def read_exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            # Bounded: a broken reader never sends its call, and the test must fail rather than hang.
            assert select.select([stream], [], [], 30)[0], "no call came"
            data += stream.read(size - len(data))
        return data

    (size,) = _runner._HEADER.unpack(read_exactly(_runner._HEADER.size))
    message = json.loads(read_exactly(size))
    assert isinstance(message, dict)
    return message


def _write_frame(fd: int, message: dict[str, Any]) -> None:
    import json

    payload = json.dumps(message).encode()
    os.write(fd, _runner._HEADER.pack(len(payload)) + payload)

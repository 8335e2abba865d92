"""Tool calls from code: by name, through call_tool, concurrently, and failing."""

from __future__ import annotations

from typing import Any

import anyio

from agentflow.result import ToolResult
from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox

from .conftest import HostTools, echo


async def test_a_tool_is_called_by_name_with_keywords_or_a_dict(sandbox: ProcessSandbox) -> None:
    async def weather(args: dict[str, Any]) -> Any:
        return {"city": args["city"], "temp": 21}

    tools = HostTools(get_weather=weather)
    result = await sandbox.execute(
        "a = get_weather(city='Paris')\nb = get_weather({'city': 'Rome'})\n[a['temp'], b['city']]",
        tools,
        tools.names,
    )
    assert result.ok, result.error
    assert result.value == [21, "Rome"]
    assert tools.calls == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]


async def test_call_tool_reaches_any_name(sandbox: ProcessSandbox) -> None:
    tools = HostTools(**{"my-tool": echo})
    result = await sandbox.execute("call_tool('my-tool', {'a': 1}, b=2)", tools, tools.names)
    assert result.value == {"a": 1, "b": 2}


async def test_stubs_follow_the_tool_names_of_each_step(sandbox: ProcessSandbox, tools: HostTools) -> None:
    assert (await sandbox.execute("echo(x=1)", tools, ["echo"])).value == {"x": 1}
    gone = await sandbox.execute("echo(x=1)", tools, [])
    assert gone.error is not None
    assert "NameError" in gone.error
    # A variable the code owns is never replaced by a stub.
    await sandbox.execute("echo = 'mine'", tools, [])
    assert (await sandbox.execute("echo", tools, ["echo"])).value == "mine"


async def test_a_tool_failure_raises_tool_error_in_the_code(sandbox: ProcessSandbox) -> None:
    async def broken(args: dict[str, Any]) -> Any:
        raise ValueError("no such city")

    tools = HostTools(lookup=broken)
    uncaught = await sandbox.execute("lookup(city='Atlantis')", tools, tools.names)
    assert not uncaught.ok
    assert uncaught.error_type is CodeErrorType.TOOL_ERROR
    assert uncaught.error is not None
    assert 'ToolError: TOOL_ERROR: {"errorType":"exception","error":"no such city"' in uncaught.error

    caught = await sandbox.execute(
        "try:\n    lookup(city='Atlantis')\nexcept ToolError as e:\n    r = (e.tool, str(e)[:11])\nr",
        tools,
        tools.names,
    )
    assert caught.ok
    assert caught.value == ["lookup", "TOOL_ERROR:"]


async def test_an_invoker_that_raises_still_answers_the_code(sandbox: ProcessSandbox) -> None:
    async def invoker(name: str, args: dict[str, Any]) -> ToolResult:
        raise RuntimeError("invoker bug")

    result = await sandbox.execute("call_tool('x')", invoker, ["x"])
    assert result.error_type is CodeErrorType.TOOL_ERROR
    assert result.error is not None
    assert "failed on the host: RuntimeError: invoker bug" in result.error


async def test_a_value_json_cannot_hold_falls_back_to_the_tool_output(sandbox: ProcessSandbox) -> None:
    async def invoker(name: str, args: dict[str, Any]) -> ToolResult:
        value: Any = {1, 2} if name == "a_set" else object()
        return ToolResult("c", name, "the text output", value=value)

    result = await sandbox.execute("[call_tool('a_set'), call_tool('an_object')]", invoker, [])
    assert result.value == [[1, 2], "the text output"]


class Rendezvous:
    """Host tools that each wait until ``expected`` calls are in flight at the same time."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.all_in = anyio.Event()

    async def __call__(self, args: dict[str, Any]) -> Any:
        self.arrived += 1
        if self.arrived == self.expected:
            self.all_in.set()
        await self.all_in.wait()  # deadlocks (then times out) unless the calls overlap
        return args["n"] * 10


async def test_parallel_runs_tool_calls_at_the_same_time(sandbox: ProcessSandbox) -> None:
    tools = HostTools(meet=Rendezvous(3))
    code = "parallel(('meet', {'n': 1}), ('meet', {'n': 2}), ('meet', {'n': 3}))"
    result = await sandbox.execute(code, tools, tools.names, ExecutionLimits(wall_time=10))
    assert result.ok, result.error
    assert result.value == [10, 20, 30]


async def test_map_tool_runs_tool_calls_at_the_same_time(sandbox: ProcessSandbox) -> None:
    tools = HostTools(meet=Rendezvous(4))
    code = "map_tool('meet', [{'n': n} for n in range(4)])"
    result = await sandbox.execute(code, tools, tools.names, ExecutionLimits(wall_time=10))
    assert result.value == [0, 10, 20, 30]


async def test_top_level_await_with_gather_runs_tool_calls_at_the_same_time(sandbox: ProcessSandbox) -> None:
    tools = HostTools(meet=Rendezvous(2))
    code = "import asyncio\nawait asyncio.gather(acall_tool('meet', n=1), acall_tool('meet', {'n': 2}))"
    result = await sandbox.execute(code, tools, tools.names, ExecutionLimits(wall_time=10))
    assert result.ok, result.error
    assert result.value == [10, 20]


async def test_acall_tool_works_in_the_codes_own_event_loop(sandbox: ProcessSandbox) -> None:
    # What models write most often: their own ``asyncio.run(main())`` rather than a top-level await.
    tools = HostTools(meet=Rendezvous(2))
    code = (
        "import asyncio\n"
        "async def main():\n"
        "    return await asyncio.gather(acall_tool('meet', n=1), acall_tool('meet', n=2))\n"
        "asyncio.run(main())"
    )
    result = await sandbox.execute(code, tools, tools.names, ExecutionLimits(wall_time=10))
    assert result.ok, result.error
    assert result.value == [10, 20]
    loop = "loop = asyncio.new_event_loop()\nloop.run_until_complete(acall_tool('echo', x=3))"
    again = await sandbox.execute(loop, HostTools(echo=echo), ["echo"], ExecutionLimits(wall_time=10))
    assert again.value == {"x": 3}


async def test_parallel_raises_the_first_failure_unless_asked_to_return_it(sandbox: ProcessSandbox) -> None:
    async def fail(args: dict[str, Any]) -> Any:
        raise ValueError("bad")

    tools = HostTools(ok=echo, fail=fail)
    raised = await sandbox.execute("parallel(('ok', {}), ('fail', {}))", tools, tools.names)
    assert raised.error_type is CodeErrorType.TOOL_ERROR
    returned = await sandbox.execute(
        "[type(v).__name__ for v in parallel(('ok', {}), ('fail', {}), return_exceptions=True)]",
        tools,
        tools.names,
    )
    assert returned.value == ["dict", "ToolError"]


async def test_tool_calls_in_flight_are_bounded(sandbox: ProcessSandbox) -> None:
    active = 0
    most = 0
    two_in = anyio.Event()

    async def slow(args: dict[str, Any]) -> Any:
        nonlocal active, most
        active += 1
        most = max(most, active)
        if active == 2:
            two_in.set()
        await two_in.wait()
        await anyio.lowlevel.checkpoint()
        active -= 1
        return None

    tools = HostTools(slow=slow)
    limits = ExecutionLimits(wall_time=10, max_parallel_tool_calls=2)
    result = await sandbox.execute("len(map_tool('slow', [{}] * 6))", tools, tools.names, limits)
    assert result.value == 6
    assert most == 2


async def test_tool_arguments_must_be_json(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("echo(when=object())", tools, tools.names)
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.error is not None
    assert "TypeError: the arguments of tool 'echo' must be JSON values" in result.error
    assert tools.calls == []


async def test_oversized_tool_arguments_raise_in_the_code_and_the_state_survives(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    limits = ExecutionLimits(max_result_bytes=1024, max_output_bytes=0)
    await sandbox.execute("kept = 1", tools, limits=limits)
    result = await sandbox.execute("echo(blob='x' * (20 * 1024 * 1024))", tools, tools.names, limits)
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.error is not None
    limit = 1024 + 16 * 1024 * 1024  # max_result_bytes + max_output_bytes + room for arguments
    assert result.error.endswith(
        "ValueError: the call of tool 'echo' is 20971572 bytes as JSON, over the sandbox's limit of "
        f"{limit}; pass smaller arguments"
    )
    assert not result.state_lost
    assert tools.calls == []
    assert (await sandbox.execute("kept", tools, limits=limits)).value == 1

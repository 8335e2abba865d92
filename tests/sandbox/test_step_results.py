"""What a code step returns: its value, its output, its errors — and that state persists between steps."""

from __future__ import annotations

import math

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox

from .conftest import HostTools, short_limits


async def test_last_expression_is_the_value(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("a = 20\na + 22", tools)
    assert result.ok
    assert result.value == 42
    assert result.is_final is False
    assert result.error is None
    assert result.error_type is None


async def test_code_ending_in_a_statement_has_no_value(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("a = 1", tools)
    assert result.ok
    assert result.value is None


async def test_top_level_return_is_the_value_even_inside_blocks(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    code = (
        "def f():\n"
        "    return 'inner'\n"
        "for i in range(10):\n"
        "    if i == 3:\n"
        "        return f() + str(i)\n"
        "'never'"
    )
    result = await sandbox.execute(code, tools)
    assert result.ok
    assert result.value == "inner3"
    # Names bound before the return stay global, like any top-level code.
    assert (await sandbox.execute("i", tools)).value == 3


async def test_final_answer_ends_the_step_and_marks_it_final(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    result = await sandbox.execute("def g():\n    final_answer({'answer': 7})\ng()\nreached = True", tools)
    assert result.ok
    assert result.is_final
    assert result.value == {"answer": 7}
    assert (await sandbox.execute("'reached' in globals()", tools)).value is False


async def test_values_are_made_json_safe(sandbox: ProcessSandbox, tools: HostTools) -> None:
    code = (
        "class Thing:\n    def __repr__(self): return 'Thing()'\n"
        "{'set': {1}, 'tuple': (1, 2), 'big': 2**70, 'huge': 10**400, 'enormous': 10**5000,\n"
        " 'nan': float('nan'), 'obj': Thing(), 3: b'bytes'}"
    )
    result = await sandbox.execute(code, tools)
    assert result.ok
    assert result.value == {
        "set": [1],
        "tuple": [1, 2],
        "big": 2**70,
        "huge": str(10**400),
        "enormous": "<an integer of 16610 bits>",
        "nan": "nan",
        "obj": "Thing()",
        "3": "bytes",
    }


async def test_a_result_over_max_result_bytes_is_an_output_limit_error(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    result = await sandbox.execute("'x' * 5000", tools, limits=ExecutionLimits(max_result_bytes=1000))
    assert not result.ok
    assert result.error_type is CodeErrorType.OUTPUT_LIMIT
    assert result.error is not None
    assert "over the limit of 1000" in result.error


async def test_variables_imports_and_functions_persist_between_steps(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute(
        "import math as m\ncounter = 1\ndef bump():\n    global counter\n    counter += 1", tools
    )
    await sandbox.execute("bump()", tools)
    result = await sandbox.execute("counter, m.floor(2.5)", tools)
    assert result.value == [2, math.floor(2.5)]


async def test_fresh_mode_starts_every_step_from_scratch(tools: HostTools) -> None:
    async with ProcessSandbox(persistent=False) as box:
        assert not box.persistent
        first = await box.execute("x = 1\nx", tools)
        assert first.value == 1
        assert box.pids == ()  # the process of the step is gone already
        second = await box.execute("x", tools)
        assert not second.ok
        assert second.error is not None
        assert "NameError" in second.error
        assert second.state_lost is False  # nothing was promised to survive


async def test_stdout_and_stderr_are_captured(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("import sys\nprint('out', 1)\nprint('err', file=sys.stderr)\n5", tools)
    assert result.stdout == "out 1\n"
    assert result.stderr == "err\n"
    assert result.value == 5


async def test_output_without_a_line_break_is_kept_when_the_step_times_out(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    # Progress output: no line breaks, the second write right after the first, then a hang.
    code = "print('50%', end='')\nprint('\\r75%', end='')\nimport time\ntime.sleep(60)"
    result = await sandbox.execute(code, tools, limits=short_limits())
    assert result.error_type is CodeErrorType.TIMEOUT
    assert result.stdout == "50%\r75%"


async def test_output_is_truncated_with_a_marker(sandbox: ProcessSandbox, tools: HostTools) -> None:
    limits = ExecutionLimits(max_output_bytes=1000)
    result = await sandbox.execute(
        "for i in range(10000):\n    print('y' * 99)\n'done'", tools, limits=limits
    )
    assert result.ok
    assert result.value == "done"
    body, marker = result.stdout.rsplit("\n[... output truncated: ", 1)
    assert len(body.encode()) <= 1000
    assert body.startswith("y" * 99 + "\n")
    assert marker == f"{10000 * 100 - 1000} more bytes not shown ...]"


async def test_output_written_to_the_descriptors_lands_in_stderr(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    result = await sandbox.execute(
        "import os\nos.write(1, b'raw one\\n')\nos.write(2, b'raw two\\n')\n1", tools
    )
    assert result.ok
    assert "raw one\n" in result.stderr
    assert "raw two\n" in result.stderr
    assert result.stdout == ""


async def test_a_syntax_error_points_at_the_line(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("x = 1\ny = (", tools)
    assert not result.ok
    assert result.error_type is CodeErrorType.SYNTAX
    assert result.error is not None
    assert 'File "<cell 1>", line 2' in result.error
    assert "SyntaxError" in result.error


async def test_an_exception_shows_a_traceback_of_the_users_code_only(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute("def divide(a):\n    return a / 0", tools)
    result = await sandbox.execute("print('before')\ndivide(1)", tools)
    assert not result.ok
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.stdout == "before\n"
    assert result.error is not None
    assert result.error.startswith(
        "Traceback (most recent call last):\n"
        '  File "<cell 2>", line 2, in <module>\n'
        "    divide(1)\n"
        '  File "<cell 1>", line 2, in divide\n'
        "    return a / 0\n"
    )
    assert result.error.endswith("\nZeroDivisionError: division by zero")
    assert "<string>" not in result.error  # no frame of the runner itself


async def test_sys_exit_is_an_ordinary_error(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("x = 3\nimport sys\nsys.exit(0)", tools)
    assert not result.ok
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.error is not None
    assert result.error.endswith("SystemExit: 0")
    assert (await sandbox.execute("x", tools)).value == 3


async def test_async_code_can_return_and_answer(sandbox: ProcessSandbox, tools: HostTools) -> None:
    returned = await sandbox.execute("import asyncio\nawait asyncio.sleep(0)\nreturn 'from async'", tools)
    assert returned.value == "from async"
    answered = await sandbox.execute("await asyncio.sleep(0)\nfinal_answer(['done'])", tools)
    assert answered.is_final
    assert answered.value == ["done"]


async def test_reading_stdin_ends_at_once(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("input('name? ')", tools)
    assert result.error is not None
    assert result.error.endswith("EOFError: EOF when reading a line")

"""Code holding a lone surrogate (a model's answer can) is not valid text: it fails as a syntax error, as
Python's ``compile`` fails it, and never raises out of ``execute``; nothing ran, so the state is kept."""

from __future__ import annotations

from agentflow.sandbox import CodeErrorType, ProcessSandbox

from .conftest import HostTools


async def test_a_lone_surrogate_in_the_code_is_a_syntax_error(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    assert (await sandbox.execute("x = 1", tools)).ok
    result = await sandbox.execute("y = 2\nprint('\ud800')", tools)
    assert not result.ok
    assert result.error_type is CodeErrorType.SYNTAX
    assert result.error == (
        "SyntaxError: the code holds a lone surrogate, '\\ud800' (line 2, column 8), which is not valid "
        "text; write it as an escape ('\\ud800') in a string"
    )
    kept = await sandbox.execute("[x, 'y' in globals(), len('\\ud800')]", tools)
    assert kept.value == [1, False, 1]  # the escape is fine
    assert kept.stderr == ""

"""The README's agent example runs as written, against the scripted server instead of OpenAI."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

import agentflow as af
from agentflow.testing import Reply, ScriptedServer

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "the README should show exactly one Python example"
    return blocks[0]


def test_readme_starts_with_the_two_commands() -> None:
    head = README.read_text(encoding="utf-8")[:400]
    assert "make demo" in head
    assert "make test" in head


def test_readme_agent_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _python_block()
    script = [
        Reply(tool_calls=[("get_weather", {"city": "Paris"})]),
        Reply(text="It is 21 °C and sunny in Paris."),
    ]

    async def serve_and_run() -> None:
        async with ScriptedServer(script) as server:
            real = af.OpenAIChatModel

            def pointed_at_server(**kwargs: Any) -> af.OpenAIChatModel:
                return real(**{**kwargs, "base_url": server.base_url})

            monkeypatch.setattr(af, "OpenAIChatModel", pointed_at_server)
            namespace: dict[str, Any] = {"__name__": "readme"}
            exec(compile(code.replace("anyio.run(main)", ""), "README.md", "exec"), namespace)
            await namespace["main"]()

    anyio.run(serve_and_run)
    out = capsys.readouterr().out
    assert "[get_weather -> 21 °C and sunny in Paris]" in out
    assert "It is 21 °C and sunny in Paris." in out
    assert "final_answer" in out

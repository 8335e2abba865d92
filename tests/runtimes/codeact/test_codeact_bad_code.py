"""Bad code never hurts the host: in one CodeAct run, every kind of bad code ends as a CODE_ERROR the model
reads, the run stays valid (the next step and its tools still work), and another run in the same event loop
carries on untouched."""

from __future__ import annotations

import os
from typing import Any

import anyio
import orjson
import pytest
from codeact_support import (
    SMALL_LIMITS,
    Boxes,
    assert_codeact_memory_valid,
    code,
    codeact_agent,
    final,
    gone,
    outcome,
    says,
    seen_results,
    system_texts,
)

from agentflow.events import CodeExecuted
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.sandbox import ProcessSandbox
from agentflow.testing import Reply

SECRET = "sk-codeact-host-secret-0815"


def bad_steps(host_pid: int, host_port: int) -> list[tuple[str, str, str]]:
    """``(name, code, what the model must read)`` for each kind of bad code."""
    return [
        ("syntax error", "def broken(:\n    pass", "SyntaxError"),
        ("exception", "raise ValueError('boom')", "ValueError: boom"),
        ("infinite loop", "while True:\n    pass", "TimeoutError: the code ran longer than 1 s"),
        ("memory bomb", "hog = bytearray(1024 ** 3)", "MemoryError"),
        ("fork bomb", "import os\nwhile True:\n    os.fork()", "BlockingIOError"),
        ("huge value", "'z' * 5_000_000", "over the limit of"),
        ("host environment", "import os\nos.environ['OPENAI_API_KEY']", "KeyError: 'OPENAI_API_KEY'"),
        (
            "host environment through /proc",
            f"open('/proc/{host_pid}/environ', 'rb').read()",
            "Error",  # FileNotFoundError (own PID namespace) or PermissionError (own uid)
        ),
        (
            "socket to the host",
            f"import socket\nsocket.create_connection(('127.0.0.1', {host_port}), timeout=2)",
            "OSError",
        ),
    ]


async def test_every_kind_of_bad_code_ends_as_a_code_error_and_the_run_carries_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # set before any sandbox starts
    async with ProcessSandbox() as probe:
        isolation = await probe.start(SMALL_LIMITS)  # what this machine isolates
    boxes = Boxes()
    options = CodeActOptions(react=True, executor=boxes, limits=SMALL_LIMITS)
    steps: list[tuple[str, str, str]] = []
    left_out: list[str] = []

    def answer(body: Any) -> Reply:
        index = len(seen_results(body))
        if index < len(steps):
            return says(code(steps[index][1]))
        if index == len(steps):
            return says(code("print('loud ' * 200_000)\nget_price(item='apple') * 2"))
        return says(final("Survived."))

    async with codeact_agent([], codeact=options) as (agent, server):
        server.add(*[answer] * 20)
        for step in bad_steps(os.getpid(), server.port):
            if step[0] == "host environment through /proc" and not isolation.host_environment_protected:
                left_out.append(step[0])  # docs/sandbox-security.md: readable as non-root without namespaces
            elif step[0] == "socket to the host" and not isolation.network_isolated:
                left_out.append(step[0])  # no network namespace: the socket connects
            else:
                steps.append(step)
        other: list[AgentResult] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_another_run, other)
            with anyio.fail_after(30):  # a deadlock guard only
                result = await agent.run("Try everything.")

    assert not server.errors
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "Survived."
    texts = system_texts(result.new_items)
    assert len(texts) == len(steps) + 1
    for (name, _, expected), text in zip(steps, texts, strict=False):
        kind, payload = outcome(text)
        assert kind == "CODE_ERROR", f"{name}: {text[:300]}"
        assert expected in payload["error"], f"{name}: {payload['error'][:300]}"
    # Huge printed output is not an error: it is cut, and the step (with its tool call) still works.
    kind, payload = outcome(texts[-1])
    assert kind == "CODE_RESULT"
    assert payload["result"] == 1.0
    assert len(payload["stdout"]) < SMALL_LIMITS.max_output_bytes + 200
    assert payload["stdout"].endswith("more bytes not shown ...]")
    # The model read every outcome, and the host's secret never reached it.
    assert seen_results(server.requests[-1].body) == texts
    assert all(SECRET not in request.raw_body.decode() for request in server.requests)
    assert_codeact_memory_valid(result.new_items)
    # The run's sandbox is gone, and the other run finished normally meanwhile.
    [box] = boxes.made
    assert box.pids == ()
    assert other[0].output_text == "0.5"
    if left_out:
        pytest.skip(
            f"all else passed; not isolated on this machine, so not tried: {left_out} ({isolation.notes})"
        )


async def _another_run(results: list[AgentResult]) -> None:
    async with codeact_agent([says(code("get_price(item='apple')"))]) as (agent, _):
        results.append(await agent.run("Apple price?"))


async def test_the_sandbox_process_is_gone_after_every_run() -> None:
    boxes = Boxes()
    async with codeact_agent(
        [says(code("import os\nos.getpid()")), says(orjson.dumps({"type": "final", "output": 1}).decode())],
        codeact=CodeActOptions(react=True, executor=boxes),
    ) as (agent, _):
        pids: list[int] = []
        agent.on(CodeExecuted, lambda _event: pids.extend(boxes.made[0].pids))
        await agent.run("Pid?")
    assert pids
    assert all(gone(pid) for pid in pids)

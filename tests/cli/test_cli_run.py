"""``agentflow run`` as a subprocess: offline, against a local server, errors and Ctrl-C."""

from __future__ import annotations

import signal
import sys

import anyio
import orjson
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from cli_support import ROOT, agentflow, clean_env, json_events, stderr_lines, types

from agentflow.testing import Fault, Reply, ScriptedServer

QUESTION = "What is 1234 * 5678, and what time is it?"


async def test_offline_run_renders_the_run_live_without_colour_when_piped() -> None:
    done = await agentflow("run", QUESTION, "--offline")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith(f"> [react] {QUESTION}\n")
    assert '-> calculator({"expression":"1234 * 5678"})' in out
    assert "-> utc_now({})" in out
    assert "<- calculator: 7006652" in out
    assert "(reasoning) The question needs calculator and utc_now" in out
    assert "Here is what I found: 1234 * 5678 = 7006652;" in out
    assert "== done: final_answer, 2 steps, 2 tool calls" in out
    assert "total tokens" in out.splitlines()[-1]
    assert "\x1b[" not in out
    assert done.stderr == b""


async def test_json_mode_prints_every_event_as_one_json_line() -> None:
    done = await agentflow("run", QUESTION, "--offline", "--json", "--protocol", "responses")
    assert done.returncode == 0, done.stderr
    events = json_events(done.stdout)
    kinds = types(events)
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    assert kinds.count("tool_call_requested") == 2
    assert {"text_delta", "reasoning_delta", "tool_succeeded", "step_finished"} <= set(kinds)
    assert len({e["run_id"] for e in events}) == 1
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert events[-1]["result"]["stop_reason"] == "final_answer"


async def test_deep_research_offline_shows_the_plan_and_its_updates() -> None:
    question = "Which is larger, 3.14159 * 15 ** 2 or 2 * 3.14159 * 10 ** 2?"
    done = await agentflow(
        "run", question, "--offline", "--runtime", "deep-research", "--replan-every", "1", "--json"
    )
    assert done.returncode == 0, done.stderr
    events = json_events(done.stdout)
    kinds = types(events)
    assert kinds.index("plan_created") < kinds.index("step_started")
    created = events[kinds.index("plan_created")]["plan"]
    assert [s["text"] for s in created["steps"]] == [
        "Compute 3.14159 * 15 ** 2 with the calculator",
        "Compute 2 * 3.14159 * 10 ** 2 with the calculator",
        "Compare the results and write a structured summary",
    ]
    updates = [e["plan"] for e in events if e["type"] == "plan_updated"]
    assert [u["revision"] for u in updates] == [1, 2]
    assert [s["status"] for s in updates[-1]["steps"]] == ["done", "done", "in_progress"]
    assert "## Conclusion" in events[-1]["result"]["output_text"]


async def test_codeact_offline_renders_the_code_it_ran() -> None:
    done = await agentflow(
        "run", "Work out 2 ** 32 + 3 ** 20 in Python.", "--offline", "--runtime", "codeact"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "> [codeact]" in out
    assert "code:\n  | " in out
    assert "<- calculator: 7781751697" in out
    assert "answer: Computed in the sandbox: 2 ** 32 + 3 ** 20 = 7781751697" in out


@pytest.mark.parametrize(
    ("protocol", "path"), [("chat", "/v1/chat/completions"), ("responses", "/v1/responses")]
)
async def test_a_run_against_a_local_server_uses_the_given_endpoint_model_and_key(
    protocol: str, path: str
) -> None:
    script = [Reply(tool_calls=[("calculator", {"expression": "6 * 7"})]), Reply(text="It is 42.")]
    env = clean_env(MY_KEY="sk-test-secret-123")
    async with ScriptedServer(script) as server:
        done = await agentflow(
            "run", "6 * 7?", "--base-url", server.base_url, "--protocol", protocol,
            "--model", "my-model", "--api-key-env", "MY_KEY", "--json", env=env,
        )  # fmt: skip
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert [r.path for r in requests] == [path, path]
    assert requests[0].headers["authorization"] == "Bearer sk-test-secret-123"
    assert requests[0].body["model"] == "my-model"
    events = json_events(done.stdout)
    (succeeded,) = [e for e in events if e["type"] == "tool_succeeded"]
    assert succeeded["result"]["output"] == "42"
    assert events[-1]["result"]["output_text"] == "It is 42."
    assert b"sk-test-secret-123" not in done.stdout + done.stderr


async def test_without_an_endpoint_it_says_what_to_set_in_one_line() -> None:
    done = await agentflow("run", "hi")
    assert done.returncode == 2
    (line,) = stderr_lines(done)
    assert line.startswith("agentflow: error: no model endpoint configured: set OPENAI_API_KEY")
    assert "--base-url" in line
    assert "--offline" in line
    assert done.stdout == b""


async def test_an_api_key_variable_that_is_not_set_is_a_configuration_error() -> None:
    done = await agentflow("run", "hi", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "NOPE_KEY")
    assert done.returncode == 2
    (line,) = stderr_lines(done)
    assert "NOPE_KEY" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "hi", "--runtime", "magic", "--offline"], "argument --runtime: invalid choice: 'magic'"),
        (["run", "--offline"], "the following arguments are required: question"),
        (["run", "hi", "--offline", "--max-steps", "0"], "expected a positive integer, got '0'"),
        (["run", "hi", "--offline", "--base-url", "http://x"], "--offline runs the bundled scripted model"),
        (
            ["run", "hi", "--offline", "--replan-every", "2"],
            "--replan-every applies to --runtime deep-research",
        ),
        (["run", " ", "--offline"], "the question is empty"),
        (["fly"], "invalid choice: 'fly'"),
    ],
    ids=["runtime", "question", "max-steps", "offline-and-base-url", "replan-every", "blank", "command"],
)
async def test_bad_arguments_are_one_line_with_exit_code_2(args: list[str], message: str) -> None:
    done = await agentflow(*args)
    assert done.returncode == 2
    (line,) = stderr_lines(done)
    assert line.startswith("agentflow: error: ")
    assert message in line


async def test_a_model_error_is_one_line_on_stderr_and_exit_code_1() -> None:
    async with ScriptedServer([Fault.status(401)]) as server:
        done = await agentflow(
            "run", "hi", "--base-url", server.base_url, env=clean_env(OPENAI_API_KEY="sk-bad")
        )
    assert done.returncode == 1
    (line,) = stderr_lines(done)
    assert line.startswith("agentflow: error: AuthenticationError: ")
    assert "Incorrect API key provided" in line
    assert "== failed: AuthenticationError" in done.stdout.decode()
    assert b"sk-bad" not in done.stdout + done.stderr


async def test_an_unreachable_server_is_one_line_too() -> None:
    async with ScriptedServer([]) as server:
        url = server.base_url
    # The server is gone: nothing listens on its port any more. Refused connections are not retried
    # forever; the run fails with a connection error.
    done = await agentflow("run", "hi", "--base-url", url, "--json")
    assert done.returncode == 1
    (line,) = stderr_lines(done)
    assert line.startswith("agentflow: error: ModelConnectionError: ")
    assert json_events(done.stdout)[-1]["type"] == "run_failed"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX behaviour")
@pytest.mark.parametrize(("sent", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_ctrl_c_or_sigterm_cancels_the_run_cleanly(sent: signal.Signals, exit_code: int) -> None:
    async with ScriptedServer([Fault.stall()]) as server:
        process = await anyio.open_process(
            [sys.executable, "-m", "agentflow", "run", "hi", "--base-url", server.base_url, "--json"],
            env=clean_env(),
            cwd=ROOT,
        )
        async with process:
            assert process.stdout is not None
            assert process.stderr is not None
            lines = BufferedByteReceiveStream(process.stdout)
            seen: list[dict[str, object]] = []
            with anyio.fail_after(30):  # a safety net against a hang, not a timing assertion
                while not seen or seen[-1]["type"] != "model_request":
                    seen.append(orjson.loads(await lines.receive_until(b"\n", 1 << 20)))
                process.send_signal(sent)
                rest = b""
                async for chunk in lines:
                    rest += chunk
                errors = b"".join([chunk async for chunk in process.stderr])
                code = await process.wait()
    tail = [orjson.loads(line) for line in rest.splitlines()]
    assert code == exit_code
    assert tail[-1]["type"] == "run_cancelled"
    assert tail[-1]["partial"]["stop_reason"] == "cancelled"
    assert errors.decode().splitlines() == ["agentflow: error: cancelled"]


_SLOW_CLEAN_UP = '''
import sys, anyio
import agentflow.demo.tools as demo_tools
from agentflow.tools import tool

@tool
async def calculator(expression: str) -> str:
    """Evaluate arithmetic (and take forever to clean up)."""
    print("TOOL STARTED", file=sys.stderr, flush=True)
    try:
        await anyio.sleep(600)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(600)  # a shielded clean-up that never ends
    return "0"

demo_tools.BUILTIN_TOOLS = (calculator,)
from agentflow.cli import main
sys.exit(main())
'''


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX behaviour")
async def test_a_second_ctrl_c_stops_waiting_for_the_clean_up() -> None:
    process = await anyio.open_process(
        [sys.executable, "-c", _SLOW_CLEAN_UP, "run", "What is 1234 * 5678?", "--offline"],
        env=clean_env(),
        cwd=ROOT,
    )
    async with process:
        assert process.stderr is not None
        errors = BufferedByteReceiveStream(process.stderr)
        try:
            with anyio.fail_after(60):  # a safety net against a hang, not a timing assertion
                await errors.receive_until(b"TOOL STARTED\n", 1 << 20)
                # Signals sent back to back may merge into one: repeat until the process has gone.
                while process.returncode is None:
                    process.send_signal(signal.SIGINT)
                    with anyio.move_on_after(0.2):
                        await process.wait()
                rest = b"".join([chunk async for chunk in errors])
        finally:
            if process.returncode is None:
                process.kill()  # never wait on a hung child when leaving the block
    code = process.returncode
    assert code == 130
    assert rest.decode().splitlines()[-1] == "agentflow: error: cancelled; clean-up abandoned"

"""``make demo`` (``python -m agentflow.demo``): offline as a subprocess, and the endpoint mode in-process."""

from __future__ import annotations

import io

from cli_support import clean_env, run_module

from agentflow.demo.render import Renderer
from agentflow.demo.responder import respond
from agentflow.demo.scenario import SECTIONS, Endpoint, run_demo
from agentflow.testing import Fault, ScriptedServer


async def test_the_demo_runs_every_section_offline_and_exits_0() -> None:
    done = await run_module("agentflow.demo")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith("offline: the bundled scripted model at http://127.0.0.1:")
    positions = [out.index(f"=== {title} ===") for title in SECTIONS]
    assert positions == sorted(positions)
    react_chat, react_responses, codeact, research = (
        out[start:end] for start, end in zip(positions, [*positions[1:], len(out)], strict=True)
    )
    for section in (react_chat, react_responses):
        assert "-> calculator(" in section
        assert "-> utc_now({})" in section
        assert "<- calculator: 7006652" in section
        assert "== done: final_answer, 2 steps, 2 tool calls" in section
    assert "code:\n  | " in codeact
    assert "answer: Computed in the sandbox" in codeact
    assert "Plan:\n  [ ] 1. Compute 3.14159 * 15 ** 2 with the calculator" in research
    assert "Plan (revision 2):" in research
    assert "## Conclusion" in research
    assert "total tokens" in research
    assert out.rstrip().endswith("all 4 sections finished")
    assert done.stderr == b""


async def test_offline_wins_over_a_key_in_the_environment() -> None:
    done = await run_module("agentflow.demo", "--offline", env=clean_env(OPENAI_API_KEY="sk-never-used"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"offline:")
    assert b"sk-never-used" not in done.stdout


async def test_with_an_endpoint_the_same_scenario_goes_there_with_the_key() -> None:
    out = io.StringIO()
    async with ScriptedServer(respond) as server:
        base_url = server.base_url
        failed = await run_demo(
            Renderer(out), Endpoint(base_url=base_url, model="my-model", api_key="sk-demo-key")
        )
        requests = server.requests
    assert failed == 0
    assert out.getvalue().startswith(f"endpoint: {base_url}, model my-model\n")
    assert {r.path for r in requests} == {"/v1/chat/completions", "/v1/responses"}
    assert {r.headers["authorization"] for r in requests} == {"Bearer sk-demo-key"}
    assert {r.body["model"] for r in requests} == {"my-model"}
    assert "sk-demo-key" not in out.getvalue()


async def test_a_failing_section_is_reported_and_the_demo_goes_on() -> None:
    out = io.StringIO()
    async with ScriptedServer([Fault.status(401)], default=respond) as server:
        failed = await run_demo(Renderer(out), Endpoint(base_url=server.base_url, model="m", api_key="k"))
    text = out.getvalue()
    assert failed == 1
    assert "== failed: AuthenticationError" in text
    assert text.count("== done: final_answer") == 3
    assert text.rstrip().endswith("1 of 4 sections failed")


async def test_the_demo_command_runs_against_the_endpoint_the_environment_names() -> None:
    async with ScriptedServer(respond) as server:
        base_url = server.base_url
        env = clean_env(OPENAI_API_KEY="sk-env-key", OPENAI_BASE_URL=base_url, AGENTFLOW_MODEL="env-model")
        done = await run_module("agentflow.demo", env=env)
        requests = server.requests
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith(f"endpoint: {base_url}, model env-model\n")
    assert out.rstrip().endswith("all 4 sections finished")
    assert {r.headers["authorization"] for r in requests} == {"Bearer sk-env-key"}
    assert {r.body["model"] for r in requests} == {"env-model"}
    assert b"sk-env-key" not in done.stdout + done.stderr

"""What a browser learns of a failure: public texts by default, the full ones only with ``errors="full"``.

A model error's message names the URL it was posted to (host, port, path, query) and may hint at how a key is
configured; a tool's exception says whatever its library put in it. ``to_dict()`` keeps them all for the
server; ``sse_stream`` / ``encode_sse`` send public texts in their place unless asked for the full ones.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio.lowlevel
import orjson
import pytest

from agentflow import Agent, AllModelsFailedError, FallbackModelClient, OpenAIChatModel, RetryPolicy
from agentflow.events import RunCancelled, RunFailed, RunFinished, TextDelta, ToolFailed, ToolSucceeded
from agentflow.http.sse import SseDecoder
from agentflow.model.errors import BadRequestError, ModelError, ModelTimeoutError, RateLimitError, ServerError
from agentflow.model.events import Event, ModelRetry
from agentflow.model.messages import ToolCall
from agentflow.result import AgentResult, StopReason, ToolResult
from agentflow.sse import ErrorDetail, encode_sse, public_event, public_run_error, sse_stream
from agentflow.testing import Fault, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

SECRET_DSN = "postgres://admin:hunter2@db.internal:5432/orders"


def decoded(frames: list[bytes]) -> list[dict[str, Any]]:
    out = []
    for frame in frames:
        [event] = SseDecoder().feed(frame)
        out.append(orjson.loads(event.data))
    return out


async def instantly(_seconds: float) -> None:
    await anyio.lowlevel.checkpoint()


async def nothing() -> AsyncIterator[Event]:
    return
    yield


async def failing_model_run(errors: ErrorDetail | None) -> tuple[list[Event], list[bytes]]:
    """A run whose model answers 503 (retried), then 401, on a host that stands for an internal gateway;
    no key is sent, so the 401's message also says how to configure one."""
    async with ScriptedServer([Fault.status(503), Fault.status(401)]) as server:
        base_url = server.base_url.replace("127.0.0.1", "localhost") + "?api-version=2024-10&key=SECRET"
        model = OpenAIChatModel(
            base_url=base_url, model="gpt-4o", retry=RetryPolicy(max_retries=1), sleep=instantly
        )
        events: list[Event] = []

        async def recorded(run: AsyncIterator[Event]) -> AsyncIterator[Event]:
            async for event in run:
                events.append(event)
                yield event

        async with Agent(model) as agent, agent.stream("hi") as run:
            source = recorded(aiter(run))
            stream = sse_stream(source) if errors is None else sse_stream(source, errors=errors)
            async with aclosing(stream) as frames:
                sent = [frame async for frame in frames]
    return events, sent


async def test_a_model_failure_reaches_the_browser_as_public_text_only() -> None:
    events, frames = await failing_model_run(None)
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    # The event itself, and its to_dict(), keep everything for the server's logs.
    assert "localhost" in failed.error
    assert "api_key" in failed.error
    assert "localhost" in str(failed.to_dict())

    sent = b"".join(frames)
    for leak in (b"localhost", b"/v1/chat/completions", b"POST", b"SECRET", b"api_key", b"OPENAI_API_KEY"):
        assert leak not in sent, leak
    data = decoded(frames)
    retry = next(d for d in data if d["type"] == "model_retry")
    assert retry["reason"] == "The model service returned an error (HTTP 503)."
    assert retry["max_attempts"] == 2
    end = data[-1]
    assert end["type"] == "run_failed"
    assert end["error"] == "The model service refused this server's credentials (HTTP 401)."
    assert (end["error_type"], end["status"], end["retryable"]) == ("AuthenticationError", 401, False)
    assert end["partial"]["error"] == end["error"]


async def test_errors_full_sends_the_texts_as_to_dict_holds_them() -> None:
    events, frames = await failing_model_run("full")
    data = decoded(frames)
    assert data[-1]["error"] == events[-1].to_dict()["error"]
    assert "localhost" in data[-1]["error"]
    assert b"localhost" in b"".join(frames)


@pytest.mark.parametrize("heartbeat", [None, 15.0])
async def test_a_tool_exception_is_sent_as_a_public_text_in_every_frame(heartbeat: float | None) -> None:
    @tool
    def orders(customer: str) -> str:
        """Look up a customer's orders."""
        raise ConnectionError(f"could not connect to {SECRET_DSN}")

    script = [reply(tool_calls=[("orders", {"customer": "ada"})]), reply("Sorry.")]
    agent = Agent(FakeModelClient(script), tools=[orders])
    async with agent.stream("my orders?") as run, aclosing(sse_stream(run, heartbeat=heartbeat)) as frames:
        sent = [frame async for frame in frames]
    assert isinstance(run.result.tool_results[0].error, str)
    assert "db.internal" in run.result.tool_results[0].error  # the server keeps it

    assert b"db.internal" not in b"".join(sent)
    data = decoded(sent)
    failed = next(d for d in data if d["type"] == "tool_failed")
    assert failed["result"]["error"] == failed["result"]["output"] == "The tool failed."
    assert (failed["result"]["ok"], failed["result"]["error_type"]) == (False, "exception")
    finished = data[-1]
    assert finished["type"] == "run_finished"
    assert finished["result"]["tool_results"][0]["error"] == "The tool failed."
    assert finished["result"]["output_text"] == "Sorry."


def test_events_without_a_failure_are_sent_as_they_are() -> None:
    call = ToolCall("call_1", "add", "{}")
    done = AgentResult(
        "run_1", "5", StopReason.FINAL_ANSWER, tool_results=(ToolResult("call_1", "add", "5"),)
    )
    for event in (
        TextDelta("Hi"),
        ToolSucceeded(call=call, result=done.tool_results[0]),
        RunFinished(result=done),
    ):
        assert public_event(event) is event
        assert encode_sse(event) == encode_sse(event, errors="full")


def test_a_cancelled_run_keeps_its_answer_and_gets_public_tool_texts() -> None:
    cut = ToolResult("call_1", "wait", "TOOL_ERROR: cancelled at /srv/app", ok=False, error_type="cancelled")
    cut = ToolResult(cut.call_id, cut.name, cut.output, ok=False, error_type="cancelled", error="at /srv/app")
    partial = AgentResult("run_1", "Half an ans", StopReason.CANCELLED, tool_results=(cut,))
    event = RunCancelled(partial=partial, run_id="run_1", seq=9)
    public = public_event(event)
    assert (public.run_id, public.seq, public.partial.output_text) == ("run_1", 9, "Half an ans")
    [result] = public.partial.tool_results
    assert result.error == result.output == "The tool call was cancelled."
    assert event.partial.tool_results[0].error == "at /srv/app"  # the event itself is unchanged


def test_a_tool_guardrail_s_rejection_is_sent_as_a_public_text() -> None:
    stopped = ToolResult("c1", "refund", "TOOL_ERROR: over 500 for ACME", ok=False, error_type="rejected")
    event = ToolFailed(call=ToolCall("c1", "refund", "{}"), result=stopped, run_id="run_1", seq=3)
    public = public_event(event)
    assert public.result.output == "The tool call was stopped by a policy check."
    assert "ACME" not in orjson.dumps(public.to_dict()).decode()


class GatewayError(ModelError):
    """A model error of a transport of your own."""


@pytest.mark.parametrize(
    ("error_type", "status", "text"),
    [
        ("RateLimitError", 429, "The model service is limiting requests (HTTP 429)."),
        ("ModelConnectionError", None, "The model service could not be reached."),
        ("BadRequestError", 400, "The model service returned an error (HTTP 400)."),
        ("NotFoundError", 404, "The model service returned an error (HTTP 404)."),
        ("GatewayError", 502, "The model service returned an error (HTTP 502)."),
        ("SessionConflictError", None, "The run failed."),  # retryable, but not the model's
        ("ToolFatalError", None, "The run failed."),
        ("ToolGuardrailTripped", None, "A tool call was stopped by a policy check."),
    ],
)
def test_public_run_error(error_type: str, status: int | None, text: str) -> None:
    assert public_run_error(error_type, status) == text


@pytest.mark.parametrize(
    ("errors", "status", "text"),
    [
        (
            [RateLimitError("HTTP 429: a", status=429)] * 2,
            429,
            "The model service could not answer (HTTP 429).",
        ),
        (
            [RateLimitError("HTTP 429: a", status=429), ServerError("HTTP 503: b", status=503)],
            None,  # the members' statuses differ: the public text has the last model's
            "The model service could not answer (HTTP 503).",
        ),
        (
            [ServerError("HTTP 503: b", status=503), ModelTimeoutError("timed out")],
            None,
            "The model service could not answer.",  # the last model had no HTTP status
        ),
    ],
    ids=["one-status", "last-status", "last-without-status"],
)
async def test_every_model_of_a_fallback_failing_is_a_model_error(
    errors: list[Exception], status: int | None, text: str
) -> None:
    model = FallbackModelClient(*(FakeModelClient([error]) for error in errors))
    failed: list[RunFailed] = []
    with pytest.raises(AllModelsFailedError):
        await Agent(model).run("?", on=[(RunFailed, failed.append)])
    [event] = failed
    assert event.status == status
    public = public_event(event)
    assert public.error == text
    assert public.partial is not None
    assert public.partial.error == text


def test_a_fallback_s_failure_is_a_model_error_where_fallbacks_were_never_imported() -> None:
    # A process that only relays events (a pickled RunFailed) need not have imported agentflow.model.fallback.
    code = (
        "import sys; from agentflow.sse import public_run_error; "
        "assert 'agentflow.model.fallback' not in sys.modules; "
        "print(public_run_error('AllModelsFailedError', 429))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "The model service could not answer (HTTP 429)."


async def test_a_run_failing_on_its_own_error_sends_only_its_type() -> None:
    agent = Agent(
        FakeModelClient([BadRequestError("HTTP 400: model 'internal-llm-v3' not found at 10.1.2.3")])
    )
    async with agent.stream("?") as run:
        frames = [frame async for frame in sse_stream(run)]
    assert b"10.1.2.3" not in b"".join(frames)
    assert b"internal-llm" not in b"".join(frames)
    end = decoded(frames)[-1]
    assert end["error_type"] == "BadRequestError"
    assert end["error"].startswith("The model service returned an error")


def test_a_retry_without_a_status_says_only_that_the_call_failed() -> None:
    retry = ModelRetry(1, 3, 0.5, "could not connect to http://10.0.0.7:4000/v1 (ConnectionRefusedError)")
    assert public_event(retry).reason == "The model call failed."
    assert public_event(ToolFailed(call=ToolCall("c", "t", "{}"), result=ToolResult("c", "t", "x"))).result.ok


async def test_errors_must_be_public_or_full() -> None:
    with pytest.raises(ValueError, match="errors must be 'public' or 'full'"):
        encode_sse(TextDelta("Hi"), errors="none")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="errors must be 'public' or 'full'"):
        await anext(sse_stream(nothing(), errors="none"))  # type: ignore[arg-type]


async def test_a_sub_agent_s_failure_forwarded_as_progress_is_public_too() -> None:
    from agentflow.model.errors import AuthenticationError

    secret = (
        "HTTP 401: Incorrect API key provided: sk-live-abc (POST http://10.0.0.7:8000/v1/chat/completions)"
    )
    child = Agent(FakeModelClient([AuthenticationError(secret, status=401)]), name="Researcher")
    turns = [reply(tool_calls=[("researcher", {"input": "go"})]), reply("Sorry, the researcher failed.")]
    parent = Agent(FakeModelClient(turns), tools=[child.as_tool(description="Researches.")])
    async with parent.stream("go") as run, aclosing(sse_stream(run)) as frames:
        sent = b"".join([frame async for frame in frames])
    assert b"10.0.0.7" not in sent
    assert b"sk-live" not in sent
    forwarded = [d for d in decoded_frames(sent) if d["type"] == "tool_progress"]
    failure = next(d["data"] for d in forwarded if d["data"]["type"] == "run_failed")
    assert failure["error"] == "The model service refused this server's credentials (HTTP 401)."


def decoded_frames(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(event.data) for event in SseDecoder().feed(body) if event.data]

"""FallbackModelClient and FallbackChatModel against local ScriptedServers: the real OpenAI models over HTTP,
Chat and Responses members, blocking and streamed calls, and whole agent runs."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import pytest

from agentflow import (
    AllModelsFailedError,
    FallbackChatModel,
    FallbackModelClient,
    may_succeed_elsewhere,
)
from agentflow.agent.agent import Agent
from agentflow.agent.items import user_item
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import RunFailed, RunFinished, ToolSucceeded
from agentflow.http.retry import RetryPolicy
from agentflow.model.errors import (
    AuthenticationError,
    BadRequestError,
    ContentFilterError,
    IncompleteResponseError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    NotFoundError,
    ProtocolError,
    RateLimitError,
    ServerError,
)
from agentflow.model.events import Event, ModelCompleted, ModelEvent, ModelRetry, TextDelta, UsageReported
from agentflow.model.messages import UserMessage
from agentflow.model.response import TokenUsage
from agentflow.model.retries import retry_listener
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Fault, Hold, Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

Api = Literal["chat", "responses"]
KEY = "sk-fallback-secret-0123456789"
PROMPT = AgentPrompt(items=[user_item("hi")])
LONG = Reply(text="one two three four five six", chunk_size=4)


def _model(api: Api, server: ScriptedServer, name: str) -> Any:
    kind = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    return kind(base_url=server.base_url, api_key=KEY, model=name, retry=RetryPolicy.none())


@asynccontextmanager
async def _pair(
    primary_api: Api, primary_turns: list[Any], backup_api: Api, backup_turns: list[Any], **kwargs: Any
) -> AsyncIterator[tuple[FallbackModelClient, ScriptedServer, ScriptedServer]]:
    async with ScriptedServer(primary_turns) as first, ScriptedServer(backup_turns) as second:
        client = FallbackModelClient(
            _model(primary_api, first, "primary-model"), _model(backup_api, second, "backup-model"), **kwargs
        )
        async with client:
            yield client, first, second


def _completed(events: list[ModelEvent]) -> AgentModelResult:
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert isinstance(last.response, AgentModelResult)
    return last.response


async def _collect(
    client: FallbackModelClient, prompt: AgentPrompt = PROMPT, seen: list[ModelEvent] | None = None
) -> list[ModelEvent]:
    events: list[ModelEvent] = [] if seen is None else seen
    async with client.create_stream(prompt) as stream:
        async for event in stream:
            events.append(event)
    return events


async def _call(client: FallbackModelClient, stream: bool) -> AgentModelResult:
    return _completed(await _collect(client)) if stream else await client.create(PROMPT)


PAIRS: list[tuple[Api, Api]] = [("chat", "responses"), ("responses", "chat")]


# --- one model call -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("primary", "backup"), PAIRS)
async def test_blocking_call_falls_back_after_a_503_and_says_so(primary: Api, backup: Api) -> None:
    heard: list[ModelRetry] = []

    async def note(retry: ModelRetry) -> None:
        heard.append(retry)

    async with _pair(primary, [Fault.status(503)], backup, [Reply(text="from the backup")]) as (client, a, b):
        token = retry_listener.set(note)
        try:
            result = await client.create(PROMPT)
        finally:
            retry_listener.reset(token)
    assert result.output_text == "from the backup"
    assert [r.body["model"] for r in a.requests] == ["primary-model"]
    assert [r.body["model"] for r in b.requests] == ["backup-model"]
    [retry] = heard
    assert (retry.attempt, retry.max_attempts, retry.delay) == (2, 2, 0.0)
    assert retry.reason.startswith("HTTP 503")
    assert "falling back from 'primary-model' (1 of 2) to 'backup-model' (2 of 2)" in retry.reason


@pytest.mark.parametrize(("primary", "backup"), PAIRS)
async def test_stream_falls_back_when_the_primary_fails_before_any_delta(primary: Api, backup: Api) -> None:
    # The connection drops after the first SSE event (Chat's role chunk, Responses' response.created): no part
    # of the answer had come.
    turns = [Fault.disconnect(1, reply=LONG)]
    async with _pair(primary, turns, backup, [LONG]) as (client, a, b):
        events = await _collect(client)
    assert isinstance(events[0], ModelRetry)
    assert "falling back from 'primary-model'" in events[0].reason
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == LONG.text
    assert _completed(events).output_text == LONG.text
    assert (len(a.requests), len(b.requests)) == (1, 1)
    assert b.requests[0].stream


@pytest.mark.parametrize(("primary", "backup"), PAIRS)
async def test_a_stream_that_failed_after_its_first_delta_is_not_sent_elsewhere(
    primary: Api, backup: Api
) -> None:
    cut = 3 if primary == "chat" else 5  # after the first text delta of either protocol
    async with _pair(primary, [Fault.disconnect(cut, reply=LONG)], backup, [LONG]) as (client, a, b):
        seen: list[ModelEvent] = []
        with pytest.raises(ModelConnectionError):
            await _collect(client, seen=seen)
    assert any(isinstance(e, TextDelta) for e in seen)
    assert not any(isinstance(e, ModelRetry) for e in seen)
    assert (len(a.requests), len(b.requests)) == (1, 0)


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_all_failing_raises_one_error_with_every_cause_and_no_secret(stream: bool) -> None:
    async with _pair("chat", [Fault.status(503)], "responses", [Fault.status(429)]) as (client, _, _):
        with pytest.raises(AllModelsFailedError) as caught:
            await _call(client, stream)
    error = caught.value
    assert isinstance(error, ModelError)
    assert isinstance(error, ExceptionGroup)
    assert [type(e) for e in error.exceptions] == [ServerError, RateLimitError]
    assert error.models == ("'primary-model' (1 of 2)", "'backup-model' (2 of 2)")
    assert error.status is None  # the members' statuses differ
    assert error.retryable
    assert str(error).startswith("all 2 models failed: 'primary-model' (1 of 2) with HTTP 503")
    assert "then 'backup-model' (2 of 2) with HTTP 429" in str(error)
    assert KEY not in repr(error) + str(error) + "".join(map(repr, error.exceptions))
    # The group's parts, as ``except* RateLimitError`` picks them.
    limited, rest = error.split(RateLimitError)
    assert isinstance(limited, AllModelsFailedError)
    assert isinstance(rest, AllModelsFailedError)
    assert [type(e) for e in limited.exceptions] == [RateLimitError]
    assert (limited.models, rest.models) == (("'backup-model' (2 of 2)",), ("'primary-model' (1 of 2)",))
    copied = copy.copy(error)  # built again from its message, members and models
    assert (str(copied), copied.models, len(copied.exceptions)) == (str(error), error.models, 2)


async def test_all_failing_with_one_status_keeps_it() -> None:
    async with _pair("chat", [Fault.status(429)], "chat", [Fault.status(429)]) as (client, _, _):
        with pytest.raises(AllModelsFailedError) as caught:
            await client.create(PROMPT)
    assert caught.value.status == 429


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_a_bad_request_of_our_own_is_not_sent_elsewhere(stream: bool) -> None:
    bad = Fault.status(400, message="Invalid schema for function 'f': 'object' is not valid under any schema")
    async with _pair("chat", [bad], "responses", [Reply(text="never")]) as (client, _, b):
        with pytest.raises(BadRequestError):
            await _call(client, stream)
    assert b.requests == ()


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_a_prompt_too_long_for_the_context_falls_back(stream: bool) -> None:
    too_long = Fault.status(
        400,
        body={
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages "
                "resulted in 9001 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    )
    async with _pair("chat", [too_long], "chat", [Reply(text="bigger window")]) as (client, _, b):
        result = await _call(client, stream)
    assert result.output_text == "bigger window"
    assert len(b.requests) == 1


async def test_a_later_error_not_to_fall_back_on_propagates_with_what_failed_before() -> None:
    async with _pair("chat", [Fault.status(502)], "chat", [Fault.status(400)]) as (client, _, _):
        with pytest.raises(BadRequestError) as caught:
            await client.create(PROMPT)
    assert caught.value.__notes__ == [
        f"tried after 'primary-model' (1 of 2) failed: {caught.value.__notes__[0].split('failed: ', 1)[1]}"
    ]
    assert "HTTP 502" in caught.value.__notes__[0]


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_cancellation_is_not_a_fallback(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    arrived = anyio.Event()

    async def held(body: dict[str, Any]) -> Hold:
        arrived.set()
        return Hold(LONG, anyio.Event(), after_chunks=1)  # never released

    async with _pair("chat", [held], "responses", [Reply(text="never")]) as (client, a, b):
        async with anyio.create_task_group() as group:
            group.start_soon(_call, client, stream)
            await arrived.wait()
            group.cancel_scope.cancel()
        assert (len(a.requests), len(b.requests)) == (1, 0)
    assert not [r for r in caplog.records if "falling back" in r.getMessage()]


@pytest.mark.parametrize(
    ("fallback_on", "falls_back"),
    [
        ((BadRequestError,), True),
        (BadRequestError, True),
        (ServerError, False),
        (lambda error: "Scripted" in str(error), True),
        (lambda error: False, False),
    ],
    ids=["tuple", "type", "other-type", "predicate", "never"],
)
async def test_fallback_on_takes_types_or_a_predicate(fallback_on: Any, falls_back: bool) -> None:
    async with _pair(
        "chat", [Fault.status(400)], "chat", [Reply(text="backup")], fallback_on=fallback_on
    ) as (client, _, b):
        if falls_back:
            assert (await client.create(PROMPT)).output_text == "backup"
        else:
            with pytest.raises(BadRequestError):
                await client.create(PROMPT)
    assert len(b.requests) == int(falls_back)


def test_fallback_on_refuses_what_is_neither_types_nor_a_function() -> None:
    with pytest.raises(TypeError, match="fallback_on takes"):
        FallbackModelClient(FakeModelClient([]), FakeModelClient([]), fallback_on="RateLimitError")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Exception subclasses"):
        FallbackModelClient(FakeModelClient([]), FakeModelClient([]), fallback_on=(KeyboardInterrupt,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model must be"):
        FallbackModelClient(FakeModelClient([]), "gpt-4o")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (RateLimitError("HTTP 429", status=429), True),
        (RateLimitError("HTTP 429: quota", status=429, retryable=False), True),
        (ServerError("HTTP 500", status=500), True),
        (ModelTimeoutError("read", limit="read"), True),
        (ModelConnectionError("refused"), True),
        (NotFoundError("HTTP 404: The model does not exist.", status=404), True),
        (ProtocolError("not JSON"), True),
        (BadRequestError("HTTP 413: Request Entity Too Large", status=413), True),
        (BadRequestError("HTTP 400: the request exceeds the available context size", status=400), True),
        (BadRequestError("HTTP 400: 'temperature' is not supported", status=400), False),
        (ContentFilterError("blocked"), False),
        (IncompleteResponseError("max_output_tokens"), False),
        (ModelError("HTTP 418", status=418), False),
        (ModelError("overloaded", retryable=True), True),
        (ValueError("a bad prompt"), False),
    ],
)
def test_which_failures_another_model_may_fix(error: Exception, expected: bool) -> None:
    assert may_succeed_elsewhere(error) is expected


# --- members and their model names --------------------------------------------------------------------------


async def test_the_prompt_s_model_goes_to_the_first_member_and_a_fallback_asks_for_its_own() -> None:
    async with ScriptedServer([Fault.status(500)]) as first, ScriptedServer([Reply(text="ok")]) as second:
        nameless = OpenAIChatModel(base_url=second.base_url, api_key=KEY, retry=RetryPolicy.none())
        async with FallbackModelClient(_model("chat", first, "primary-model"), nameless) as client:
            assert client.model_name == "primary-model"
            await client.create(AgentPrompt(model="settings-model", items=[user_item("hi")]))
        assert first.requests[0].body["model"] == "settings-model"
        assert second.requests[0].body["model"] == "settings-model"  # it names none of its own
    async with _pair("chat", [Fault.status(500)], "responses", [Reply(text="ok")]) as (client, a, b):
        await client.create(AgentPrompt(model="settings-model", items=[user_item("hi")]))
    assert a.requests[0].body["model"] == "settings-model"
    assert b.requests[0].body["model"] == "backup-model"


async def test_model_clients_are_members_as_they_are_and_every_member_is_closed() -> None:
    closed: list[str] = []

    class Closing(FakeModelClient):
        async def aclose(self) -> None:
            closed.append(repr(self))
            await super().aclose()

    primary, backup = Closing([reply("unused")]), Closing([reply("unused")])
    async with FallbackModelClient(primary, backup) as client:
        assert client.members == (primary, backup)
    assert len(closed) == 2


# --- whole runs ---------------------------------------------------------------------------------------------


def _calculator() -> Any:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return add


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize(("primary", "backup"), PAIRS)
async def test_a_tool_loop_whose_primary_fails_on_the_second_call_finishes_on_the_backup(
    primary: Api, backup: Api, stream: bool
) -> None:
    first_turns = [Reply(tool_calls=[("add", {"a": 2, "b": 3})], usage=(30, 5)), Fault.status(503)]
    async with _pair(primary, first_turns, backup, [Reply(text="2 + 3 = 5", usage=(60, 7))]) as (
        client,
        a,
        b,
    ):
        agent = Agent(client, tools=[_calculator()], options=AgentOptions(stream=stream))
        events: list[Event] = []
        with anyio.fail_after(10):  # a deadlock guard only
            async with agent.stream("What is 2 + 3?") as run:
                async for event in run:
                    events.append(event)
    result = run.result
    assert result.output_text == "2 + 3 = 5"
    assert result.usage.total_tokens == 35 + 67
    assert [e.result.output for e in events if isinstance(e, ToolSucceeded)] == ["5"]
    [fallback] = [e for e in events if isinstance(e, ModelRetry)]
    assert fallback.step == 1
    assert "falling back from 'primary-model' (1 of 2) to 'backup-model' (2 of 2)" in fallback.reason
    assert isinstance(events[-1], RunFinished)
    assert [r.stream for r in a.requests + b.requests] == [stream] * 3
    # The backup got the whole conversation, the primary's tool call and its result included.
    sent = b.requests[0].body
    if backup == "chat":
        assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
        assert sent["messages"][3]["content"] == "5"
    else:
        kinds = [item.get("type") or item.get("role") for item in sent["input"]]
        assert kinds[-2:] == ["function_call", "function_call_output"]
        assert sent["input"][-1]["output"] == "5"


async def test_a_run_on_models_that_all_fail_fails_with_the_group_error() -> None:
    turns = [Fault.status(503), Fault.status(503)]
    async with _pair("chat", turns, "responses", turns) as (client, _, _):
        agent = Agent(client)
        events: list[Event] = []
        async with agent.stream("hi") as run:
            async for event in run:
                events.append(event)
        assert isinstance(run.error, AllModelsFailedError)
        with pytest.raises(AllModelsFailedError):
            await agent.run("hi")
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "AllModelsFailedError"
    assert failed.status == 503
    assert failed.retryable is True


async def test_run_settings_name_the_primary_s_model_only() -> None:
    async with _pair("chat", [Fault.status(500)], "chat", [Reply(text="ok")]) as (client, a, b):
        agent = Agent(client, settings=ModelSettings(model="gpt-special"))
        assert (await agent.run("hi")).output_text == "ok"
    assert (a.requests[0].body["model"], b.requests[0].body["model"]) == ("gpt-special", "backup-model")


# --- the model layer ----------------------------------------------------------------------------------------


async def test_fallback_chat_model_falls_back_blocking_and_streamed() -> None:
    turns = [Fault.status(503), Fault.disconnect(1, reply=LONG)]
    async with ScriptedServer(turns) as first, ScriptedServer([Reply(text="ok"), LONG]) as second:
        model = FallbackChatModel(_model("chat", first, "primary-model"), _model("responses", second, "b"))
        async with model:
            assert model.model == "primary-model"
            response = await model.chat([UserMessage("hi")], model="asked-of-the-primary")
            assert response.text == "ok"
            async with model.stream([UserMessage("hi")]) as stream:
                events = [event async for event in stream]
            assert isinstance(events[0], ModelRetry)
            assert stream.response.text == LONG.text
        assert first.requests[0].body["model"] == "asked-of-the-primary"
        assert [r.body["model"] for r in second.requests] == ["b", "b"]
    with pytest.raises(TypeError, match="ChatModel"):
        FallbackChatModel(FakeModelClient([]))  # type: ignore[arg-type]


async def test_hosted_tools_are_refused_when_any_member_speaks_chat_completions() -> None:
    responses = OpenAIResponsesModel(base_url="http://127.0.0.1:9/v1", model="r", api_key="k")
    chat = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", model="c", api_key="k")
    hosted = [{"type": "web_search"}]
    with pytest.raises(TypeError, match=r"\('web_search'\) run on the Responses API only.*fallback models"):
        Agent(FallbackModelClient(responses, chat), tools=hosted)
    with pytest.raises(TypeError, match="Responses API only"):  # nested fallbacks too
        Agent(FallbackModelClient(responses, FallbackModelClient(responses, chat)), tools=hosted)
    agent = Agent(FallbackModelClient(responses, responses), tools=hosted)  # Responses all the way: fine
    assert agent.tools.hosted == ({"type": "web_search"},)
    await agent.aclose()


async def test_a_nested_fallback_whose_models_all_failed_falls_back_when_any_of_them_would() -> None:
    inner = FallbackModelClient(
        FakeModelClient([AuthenticationError("HTTP 401: bad key", status=401)]),
        FakeModelClient([NotFoundError("HTTP 404: no such model", status=404)]),
    )
    result = await Agent(FallbackModelClient(inner, FakeModelClient([reply("from the backup")]))).run("hi")
    assert result.output_text == "from the backup"
    refused = AllModelsFailedError("x", [BadRequestError("HTTP 400: bad schema", status=400)] * 2)
    assert may_succeed_elsewhere(refused) is False


@pytest.mark.parametrize(
    "fallback_on",
    [(RateLimitError,), RateLimitError, lambda error: isinstance(error, RateLimitError)],
    ids=["tuple", "type", "predicate"],
)
async def test_a_nested_fallback_falls_back_when_any_of_its_errors_matches_fallback_on(
    fallback_on: Any,
) -> None:
    def limited() -> FakeModelClient:
        return FakeModelClient([RateLimitError("HTTP 429: slow down", status=429)])

    inner = FallbackModelClient(limited(), FallbackModelClient(limited(), limited()))  # two levels deep
    outer = FallbackModelClient(inner, FakeModelClient([reply("from the backup")]), fallback_on=fallback_on)
    assert (await outer.create(PROMPT)).output_text == "from the backup"
    refused = FallbackModelClient(
        FallbackModelClient(
            FakeModelClient([ServerError("HTTP 503", status=503)]), FakeModelClient([ServerError("HTTP 503")])
        ),
        FakeModelClient([reply("never asked")]),
        fallback_on=fallback_on,
    )
    with pytest.raises(AllModelsFailedError):  # none of its errors is a rate limit
        await refused.create(PROMPT)


async def test_usage_a_streamed_model_reported_before_it_failed_counts_in_the_run() -> None:
    spent = TokenUsage(input_tokens=10, output_tokens=0, total_tokens=10)
    failing = FakeModelClient([[UsageReported(spent), ServerError("HTTP 502: bad gateway", status=502)]])
    agent = Agent(FallbackModelClient(failing, FakeModelClient([reply("second", usage=(5, 1))])))
    async with agent.stream("hi") as run:
        reports = [event.usage async for event in run if isinstance(event, UsageReported)]
    assert run.result.output_text == "second"
    assert (run.result.usage.input_tokens, run.result.usage.output_tokens) == (15, 1)
    assert [usage.input_tokens for usage in reports] == [10, 15]  # cumulative, as a call's reports are

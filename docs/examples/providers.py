"""Pointing the models at each provider: one factory per server, checked offline.

Each factory names the provider's real URL. ``main`` builds every model over a transport that records the
request it would send and answers it from a script, so the checks below (URL, headers, body) run without a
network; ``**options`` is how they pass that transport, and how you pass any other model option.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio
import orjson

from agentflow import UserMessage
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel


# --8<-- [start:openai]
def openai_chat(**options: Any) -> OpenAIChatModel:
    # No base_url, no api_key: https://api.openai.com/v1 with $OPENAI_API_KEY (and $OPENAI_ORG_ID,
    # $OPENAI_PROJECT_ID when set).
    return OpenAIChatModel(model="gpt-4o-mini", **options)


def openai_responses(**options: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(model="gpt-5-mini", **options)


# --8<-- [end:openai]


# --8<-- [start:azure]
def azure_openai(resource: str, deployment: str, api_key: str, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        # The deployment is in the path, the API version in the query (kept after /chat/completions).
        base_url=f"https://{resource}.openai.azure.com/openai/deployments/{deployment}?api-version=2024-10-21",
        custom_headers={"api-key": api_key},  # Azure's key header, instead of Authorization: Bearer
        model=deployment,
        **options,
    )


# --8<-- [end:azure]


# --8<-- [start:openrouter]
def openrouter(api_key: str, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url="https://openrouter.ai/api/v1",
        api_key=api_key,
        model="anthropic/claude-sonnet-4.5",
        # Optional: how OpenRouter names your app (its attribution headers).
        custom_headers={"HTTP-Referer": "https://myapp.example", "X-Title": "My App"},
        **options,
    )


# --8<-- [end:openrouter]


# --8<-- [start:ollama]
def ollama(**options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url="http://localhost:11434",  # no path: /v1 is added
        model="llama3.1",
        max_tokens_field="max_tokens",  # Ollama ignores max_completion_tokens without a word
        **options,
    )


# --8<-- [end:ollama]


# --8<-- [start:vllm]
def vllm(**options: Any) -> OpenAIChatModel:
    # Started with --reasoning-parser: the reasoning comes in reasoning_content, the content is the answer.
    # Without a parser, a leading <think>…</think> block of the content is split off (the default think_tags).
    return OpenAIChatModel(base_url="http://localhost:8000/v1", model="Qwen/Qwen3-8B", **options)


def vllm_r1_distill(**options: Any) -> OpenAIChatModel:
    # No reasoning parser, and a chat template that opens <think> in the prompt (DeepSeek-R1 distills): the
    # content starts inside the block and only closes it. An empty open tag says so.
    return OpenAIChatModel(
        base_url="http://localhost:8000/v1",
        model="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        think_tags=("", "</think>"),
        **options,
    )


# --8<-- [end:vllm]


# --8<-- [start:deepseek]
def deepseek(api_key: str, **options: Any) -> OpenAIChatModel:
    # deepseek-reasoner sends reasoning_content, which goes back on tool-call turns as DeepSeek requires.
    return OpenAIChatModel(
        base_url="https://api.deepseek.com/v1", api_key=api_key, model="deepseek-reasoner", **options
    )


# --8<-- [end:deepseek]


# --8<-- [start:groq]
def groq(api_key: str, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url="https://api.groq.com/openai/v1", api_key=api_key, model="openai/gpt-oss-120b", **options
    )


# --8<-- [end:groq]


# --8<-- [start:mistral]
def mistral(api_key: str, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url="https://api.mistral.ai/v1",
        api_key=api_key,
        model="mistral-large-latest",
        stream_usage=False,  # Mistral refuses stream_options (422 extra_forbidden)
        **options,
    )


# --8<-- [end:mistral]


# --8<-- [start:lmstudio]
def lm_studio(**options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url="http://localhost:1234/v1", model="qwen/qwen3-8b", max_tokens_field="max_tokens", **options
    )


# --8<-- [end:lmstudio]


# --8<-- [start:litellm]
def litellm_proxy(api_key: str, **options: Any) -> OpenAIChatModel:
    # The proxy's own key (a virtual key or its master key), and a model name from its config.
    return OpenAIChatModel(base_url="http://localhost:4000", api_key=api_key, model="gpt-4o", **options)


# --8<-- [end:litellm]


# --- offline checks --------------------------------------------------------------------------------------


class _Answer:
    """An ``HttpResponse`` holding a whole body."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.status = 200
        self.headers: Mapping[str, str] = {"Content-Type": content_type}
        self._body = body

    async def read(self) -> bytes:
        return self._body

    async def next_chunk(self) -> bytes:
        body, self._body = self._body, b""
        return body

    async def aclose(self) -> None:
        pass


class Recorder:
    """An ``HttpTransport`` that keeps each request and answers it at once with ``message``, offline."""

    def __init__(self, **message: Any) -> None:
        self.message = {"role": "assistant", "content": "ok", **message}
        self.url = ""
        self.headers: dict[str, str] = {}
        self.body: dict[str, Any] = {}

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,  # noqa: ASYNC109
        stream: bool = False,
    ) -> _Answer:
        self.url, self.headers, self.body = url, dict(headers), orjson.loads(body)
        if url.partition("?")[0].endswith("/responses"):
            item = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            }
            answer = {"id": "r", "object": "response", "status": "completed", "output": [item]}
            return _Answer(orjson.dumps(answer), "application/json")
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
        if stream:
            choice["delta"] = self.message
            chunk = b"data: " + orjson.dumps({"id": "c", "choices": [choice]}) + b"\n\ndata: [DONE]\n\n"
            return _Answer(chunk, "text/event-stream")
        choice["message"] = self.message
        return _Answer(orjson.dumps({"id": "c", "choices": [choice]}), "application/json")

    async def aclose(self) -> None:
        pass


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` (and without the other OPENAI_* variables), restored afterwards."""
    names = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


async def sent(model: OpenAIChatModel | OpenAIResponsesModel, **overrides: Any) -> Any:
    """One call of ``model`` (its transport records the request); the response."""
    async with model:
        return await model.chat([UserMessage("hi")], **overrides)


async def main() -> None:
    hi = [UserMessage("hi")]
    with environment(OPENAI_API_KEY="sk-from-env", OPENAI_ORG_ID="org-1"):
        for build, endpoint in ((openai_chat, "chat/completions"), (openai_responses, "responses")):
            recorder = Recorder()
            await sent(build(transport=recorder))
            assert recorder.url == f"https://api.openai.com/v1/{endpoint}"
            assert recorder.headers["Authorization"] == "Bearer sk-from-env"
            assert recorder.headers["OpenAI-Organization"] == "org-1"
        # A server you name yourself never gets the environment's key.
        recorder = Recorder()
        await sent(vllm(transport=recorder))
        assert "Authorization" not in recorder.headers

        recorder = Recorder()
        await sent(azure_openai("my-resource", "gpt-4o", "az-key", transport=recorder))
        assert recorder.url == (
            "https://my-resource.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        )
        assert recorder.headers["api-key"] == "az-key"
        assert "Authorization" not in recorder.headers

    recorder = Recorder()
    await sent(openrouter("sk-or", transport=recorder))
    assert recorder.url == "https://openrouter.ai/api/v1/chat/completions"
    assert (recorder.headers["HTTP-Referer"], recorder.headers["X-Title"]) == (
        "https://myapp.example",
        "My App",
    )
    assert recorder.headers["Authorization"] == "Bearer sk-or"

    for build, url in ((ollama, "http://localhost:11434/v1"), (lm_studio, "http://localhost:1234/v1")):
        recorder = Recorder()
        await sent(build(transport=recorder), max_completion_tokens=100)
        assert recorder.url == f"{url}/chat/completions"
        assert recorder.body["max_tokens"] == 100
        assert "max_completion_tokens" not in recorder.body

    recorder = Recorder(content="Hello!", reasoning_content="The user greets me.")
    response = await sent(vllm(transport=recorder))
    assert (response.text, response.message.reasoning) == ("Hello!", "The user greets me.")
    recorder = Recorder(content="<think>\nThe user greets me.\n</think>\n\nHello!")
    response = await sent(vllm(transport=recorder))
    assert (response.text, response.message.reasoning) == ("Hello!", "The user greets me.\n")
    recorder = Recorder(content="The user greets me.\n</think>\n\nHello!")
    response = await sent(vllm_r1_distill(transport=recorder))
    assert (response.text, response.message.reasoning) == ("Hello!", "The user greets me.\n")

    recorder = Recorder()
    await sent(deepseek("sk-ds", transport=recorder))
    assert recorder.url == "https://api.deepseek.com/v1/chat/completions"
    recorder = Recorder()
    await sent(groq("gsk", transport=recorder))
    assert recorder.url == "https://api.groq.com/openai/v1/chat/completions"

    recorder = Recorder()
    async with mistral("sk-m", transport=recorder) as model:
        await model.stream(hi).collect()
    assert recorder.url == "https://api.mistral.ai/v1/chat/completions"
    assert recorder.body["stream"] is True
    assert "stream_options" not in recorder.body

    recorder = Recorder()
    await sent(litellm_proxy("sk-litellm", transport=recorder))
    assert recorder.url == "http://localhost:4000/v1/chat/completions"
    assert recorder.headers["Authorization"] == "Bearer sk-litellm"
    print("every provider's request checked")


if __name__ == "__main__":
    anyio.run(main)

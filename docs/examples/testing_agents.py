"""Testing your agents: the real HTTP path against ScriptedServer, faults, in-process fakes, and a fake model
that needs no script.

The ``test_*`` functions below are what you would put in your own test suite (pytest with
``asyncio_mode = "auto"`` runs them as they are); ``main`` runs them here.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import attrs
import pytest

from agentflow import RateLimitError, UserMessage
from agentflow.agent.agent import Agent
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import ModelRetry
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import (
    AutoModelClient,
    Fault,
    ModelRequestBlocked,
    Reply,
    ScriptedServer,
    block_model_requests,
)
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
def get_price(sku: str) -> float:
    """The price of a product."""
    return {"A-1": 9.5}.get(sku, 0.0)


# --8<-- [start:scripted]
async def test_agent_answers_with_the_tool_result() -> None:
    script = [
        Reply(tool_calls=[("get_price", {"sku": "A-1"})]),
        # A callable turn answers from the request it receives (here: echo the tool result).
        lambda request: Reply(text=f"It costs {request['messages'][-1]['content']} EUR."),
    ]
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[get_price])
        async with agent:
            result = await agent.run("How much is A-1?")

    assert result.output_text == "It costs 9.5 EUR."
    first, second = (r.body for r in server.requests)
    assert first["tools"][0]["function"]["name"] == "get_price"
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": result.tool_calls[0].id,
        "content": "9.5",
    }


# --8<-- [end:scripted]


# --8<-- [start:faults]
async def test_rate_limit_is_retried_then_reported() -> None:
    delays: list[float] = []

    async def no_sleep(delay: float) -> None:  # injected: the test never waits
        delays.append(delay)

    script = [
        Fault.status(429, headers={"retry-after-ms": "250"}),
        Reply(text="ok"),
        Fault.status(429),
        Fault.status(429),
    ]
    async with ScriptedServer(script) as server:
        retries: list[ModelRetry] = []
        model = OpenAIChatModel(
            base_url=server.base_url,
            model="m",
            retry=RetryPolicy(max_retries=1),
            sleep=no_sleep,
            on_retry=retries.append,
        )
        async with model:
            assert (await model.chat([UserMessage("hi")])).text == "ok"  # the 429 was retried
            assert delays == [0.25]
            assert retries[0].attempt == 2

            with pytest.raises(RateLimitError) as caught:  # two 429s: the single retry is used up
                await model.chat([UserMessage("hi")])
    assert caught.value.status == 429


# --8<-- [end:faults]


# --8<-- [start:fake]
async def test_agent_logic_without_http() -> None:
    model = FakeModelClient([reply(tool_calls=[("get_price", {"sku": "B-2"})]), reply("Not for sale.")])
    result = await Agent(model, tools=[get_price]).run("How much is B-2?")

    assert result.output_text == "Not for sale."
    assert result.tool_results[0].output == "0.0"
    assert len(model.prompts) == 2
    assert model.streams_open == 0


# --8<-- [end:fake]


# --8<-- [start:auto]
@attrs.frozen
class PriceCheck:
    sku: str
    price: float


async def test_the_agent_s_wiring_without_a_script() -> None:
    model = AutoModelClient()  # calls every tool once, with arguments made up from its schema, then answers
    result = await Agent(model, tools=[get_price]).run("How much is A-1?")

    assert model.last_tool_calls[0].arguments == '{"sku":"a"}'
    assert result.tool_results[0].ok  # the made-up arguments passed the tool's own validation
    assert result.output_text == '{"get_price":"0.0"}'  # the tool results, as JSON

    # Arguments of your own where a made-up value will not do; a structured answer made up from its type.
    model = AutoModelClient(arguments={"get_price": {"sku": "A-1"}})
    typed = await Agent(model, tools=[get_price], output_type=PriceCheck).run("How much is A-1?")
    assert typed.tool_results[0].output == "9.5"
    assert typed.output == PriceCheck(sku="a", price=1.5)


# --8<-- [end:auto]


# --8<-- [start:override]
support_agent = Agent(FakeModelClient([]), tools=[get_price])  # built once by the application


async def test_the_application_s_agent_over_a_fake_model() -> None:
    fake = FakeModelClient([reply("We are open 9 to 5.")])
    with support_agent.override(model=fake):
        result = await support_agent.run("When are you open?")  # or the app code that runs it

    assert result.output_text == "We are open 9 to 5."
    assert fake.prompts[0].tools[0].name == "get_price"


# --8<-- [end:override]


# --8<-- [start:block]
@pytest.fixture(autouse=True)
def no_real_models() -> Iterator[None]:
    with block_model_requests():  # a model pointed at a real provider raises ModelRequestBlocked
        yield


# --8<-- [end:block]


async def test_a_real_provider_is_out_of_reach() -> None:
    real = OpenAIChatModel(base_url="https://api.openai.com/v1", api_key="sk-test", model="gpt-4.1")
    with block_model_requests(), pytest.raises(ModelRequestBlocked):
        await Agent(real).run("Hello")


async def main() -> None:
    await test_agent_answers_with_the_tool_result()
    await test_rate_limit_is_retried_then_reported()
    await test_agent_logic_without_http()
    await test_the_agent_s_wiring_without_a_script()
    await test_the_application_s_agent_over_a_fake_model()
    await test_a_real_provider_is_out_of_reach()
    print("all passed")


if __name__ == "__main__":
    anyio.run(main)

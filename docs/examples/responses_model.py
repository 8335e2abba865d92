"""The Responses API: native calls, raw output items, and the same model used as a ChatModel."""

from __future__ import annotations

import anyio

from agentflow import ReasoningDelta, TextDelta, ToolCallReady, UserMessage
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesRequest
from agentflow.testing import Reply, ScriptedServer


async def main() -> None:
    script = [
        Reply(text="Hi!", reasoning="The user greets me."),
        Reply(tool_calls=[("get_weather", {"city": "Paris"})]),
        Reply(text="Paris."),
    ]
    async with ScriptedServer(script) as server:
        # --8<-- [start:native]
        async with OpenAIResponsesModel(base_url=server.base_url, model="gpt-5-mini") as model:
            request = ResponsesRequest(
                "Say hi",
                instructions="Be brief.",
                reasoning={"effort": "low", "summary": "auto"},
                store=False,
            )
            response = await model.create(request)
            print(response.output_text, response.reasoning, response.usage)
            # The output items, verbatim: replay them as input of the next call (encrypted reasoning too).
            print([item["type"] for item in response.output])  # ['reasoning', 'message']

            async with model.create_stream("Weather in Paris?") as stream:
                async for event in stream:
                    if isinstance(event, ReasoningDelta | TextDelta):
                        print(event.text, end="")
                    elif isinstance(event, ToolCallReady):
                        print(event.call.name, event.call.arguments)  # get_weather {"city":"Paris"}

            # The same model is a ChatModel: unified messages in, ChatResponse out.
            chat = await model.chat([UserMessage("Capital of France?")], max_tokens=20)
            print(chat.text, chat.finish_reason)
        # --8<-- [end:native]
        assert response.output_text == "Hi!"
        assert stream.response.tool_calls[0].name == "get_weather"
        assert chat.text == "Paris."
        first = server.requests[0].body
        assert first["instructions"] == "Be brief."
        assert first["store"] is False
        assert server.requests[2].body["max_output_tokens"] == 20


if __name__ == "__main__":
    anyio.run(main)

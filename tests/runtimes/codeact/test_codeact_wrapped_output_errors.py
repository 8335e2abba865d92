"""An output type that is not an object (``list[int]``, ``int``) travels wrapped as ``{"result": …}`` on the
wire, but a CodeAct answer gives its value bare: what the model is told about a mismatch names the value
(``output[1]``), never the wrapper's key (``output.result[1]``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from codeact_support import code, final, item_text

from agentflow.agent.agents import Agents
from agentflow.events import OutputRejected
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.runtimes.codeact_prompt import OUTPUT_ERROR_PREFIX
from agentflow.sandbox import CodeResult, ExecutionLimits, ToolInvoker
from agentflow.testing.fake import FakeModelClient, reply


class Steps:
    """A ``CodeExecutor`` that runs nothing: each step returns the next ``CodeResult``."""

    def __init__(self, *results: CodeResult) -> None:
        self.results = list(results)

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        return self.results.pop(0)

    async def aclose(self) -> None:
        pass


async def test_a_mismatch_of_a_wrapped_type_names_the_bare_value() -> None:
    model = FakeModelClient([reply(code("final_answer([1, 'a'])")), reply(final(7)), reply(final([1, 2]))])
    options = CodeActOptions(executor=Steps(CodeResult(ok=True, value=[1, "a"], is_final=True)))
    agent = Agents.codeact(model, codeact=options, output_type=list[int])
    rejected: list[str] = []
    agent.on(OutputRejected, lambda event: rejected.append(event.error))
    result = await agent.run("go")
    assert result.output == [1, 2]
    assert rejected == [
        'output[1] must be integer, got the string "a"',
        "output must be array, got the number 7",
    ]
    told = [item_text(prompt.items[-1]) for prompt in model.prompts[1:]]
    assert told[0].startswith(
        'CODE_ERROR: {"error":"your final answer does not match the required type: output[1] must be integer'
    )
    assert told[1].startswith(
        f"{OUTPUT_ERROR_PREFIX}your final answer does not match the required type: output must be array"
    )
    assert not any("result" in text for text in told)


@attrs.frozen
class Score:
    result: int


async def test_an_object_type_keeps_its_field_paths_even_a_field_named_result() -> None:
    model = FakeModelClient([reply(final({"result": "x"})), reply(final({"result": 1}))])
    agent = Agents.codeact(model, codeact=CodeActOptions(executor=Steps()), output_type=Score)
    rejected: list[Any] = []
    agent.on(OutputRejected, lambda event: rejected.append(event.error))
    assert (await agent.run("go")).output == Score(1)
    assert rejected == ['output.result must be integer, got the string "x"']

"""Which model names ``wants_encrypted_reasoning`` takes for OpenAI reasoning models (asked for
``reasoning.encrypted_content`` on a stateless request): fine-tuned names (``ft:<base>:<org>::<id>``) and
``codex-mini`` were missed, so their stateless runs replayed bare ``rs_…`` ids."""

from __future__ import annotations

import pytest

from agentflow.agent.prompt import AgentPrompt
from agentflow.agent.responses_client import wants_encrypted_reasoning


@pytest.mark.parametrize(
    ("name", "reasons"),
    [
        ("ft:o4-mini-2025-04-16:acme::abc123", True),
        ("ft:o3-2025-04-16:acme:tuned:xyz", True),
        ("ft:gpt-5-mini-2025-08-07:acme::abc", True),
        ("codex-mini-latest", True),
        ("openai/codex-mini-latest", True),
        ("gpt-5-codex", True),
        ("o4-mini", True),
        ("openai/o3", True),
        ("gpt-5-chat-latest", False),
        ("ft:gpt-5-chat-latest:acme::abc", False),
        ("ft:gpt-4o-mini-2024-07-18:acme:o3-style:abc", False),  # the suffix is the user's, not a model
        ("ft:gpt-4.1-2025-04-14:acme::abc", False),
        ("gpt-4o", False),
    ],
)
def test_reasoning_model_names(name: str, reasons: bool) -> None:
    assert wants_encrypted_reasoning(AgentPrompt(model=name, store=False)) is reasons

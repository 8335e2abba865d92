"""What the spans say about a run's model and its usage: provider, server, model names, token counts.

Read from the model object (its ``provider_name``, ``base_url``, ``model_name``), from a provider's response
(``gen_ai.response.model`` / ``.id``) and from ``TokenUsage``. Pure: no I/O, nothing recorded here.
"""

from __future__ import annotations

import urllib.parse

from ..model.response import TokenUsage
from . import _names as attr
from ._otel import AttributeValue

__all__ = ["OTHER", "ModelFacts", "response_facts", "run_usage_attributes", "server", "usage_attributes"]

OTHER = "_OTHER"
"""The conventions' value for a provider or an error that has no name of its own."""

_DEFAULT_PORTS = {"https": 443, "http": 80}


class ModelFacts:
    """What the spans of a run say about its model: provider, server, default model name."""

    __slots__ = ("host", "model", "port", "provider")

    def __init__(self, client: object, settings_model: str | None) -> None:
        wrapped = getattr(client, "chat_model", None) or getattr(client, "responses_model", None) or client
        provider = getattr(wrapped, "provider_name", None) or getattr(client, "provider_name", None)
        if not isinstance(provider, str):
            module = type(wrapped).__module__
            provider = "openai" if module.startswith("agentflow.providers.openai") else OTHER
        self.provider: str = provider
        self.host, self.port = server(getattr(wrapped, "base_url", None) or getattr(client, "base_url", None))
        name = settings_model or getattr(client, "model_name", None)
        self.model: str | None = name if isinstance(name, str) else None


def server(url: object) -> tuple[str | None, int | None]:
    """``(host, port)`` of a base URL (the scheme's port when it has none); ``(None, None)`` without one.

    >>> server("https://api.openai.com/v1"), server("http://127.0.0.1:8000/v1"), server(None)
    (('api.openai.com', 443), ('127.0.0.1', 8000), (None, None))
    """
    if not isinstance(url, str):
        return None, None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is not a number: no server attributes rather than a failed callback
        return None, None
    host = parts.hostname
    if not host:
        return None, None
    return host, port if port is not None else _DEFAULT_PORTS.get(parts.scheme)


def usage_attributes(usage: object) -> dict[str, AttributeValue]:
    """One model call's usage as the conventions name it; the details only when non-zero.

    >>> usage_attributes(TokenUsage(50, 10, 60, cache_write_tokens=5))  # doctest: +NORMALIZE_WHITESPACE
    {'gen_ai.usage.input_tokens': 50, 'gen_ai.usage.output_tokens': 10,
     'gen_ai.usage.cache_write.input_tokens': 5, 'gen_ai.usage.cache_creation.input_tokens': 5}
    """
    if not isinstance(usage, TokenUsage):
        return {}
    out: dict[str, AttributeValue] = {
        attr.INPUT_TOKENS: usage.input_tokens,
        attr.OUTPUT_TOKENS: usage.output_tokens,
    }
    if usage.cached_input_tokens:
        out[attr.CACHE_READ_TOKENS] = usage.cached_input_tokens
    if usage.cache_write_tokens:
        # The current name, and the one conventions 1.38–1.40 gave it (what most backends read today).
        out[attr.CACHE_WRITE_TOKENS] = out[attr.CACHE_CREATION_TOKENS] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        out[attr.REASONING_TOKENS] = usage.reasoning_tokens
    return out


def run_usage_attributes(usage: object) -> dict[str, AttributeValue]:
    """A run's total usage, for its span: ``agentflow.run.usage.*`` (see ``_names.RUN_USAGE`` for why).

    >>> run_usage_attributes(TokenUsage(250, 30, 280))
    {'agentflow.run.usage.input_tokens': 250, 'agentflow.run.usage.output_tokens': 30}
    """
    if not isinstance(usage, TokenUsage):
        return {}
    out: dict[str, AttributeValue] = {
        attr.RUN_USAGE + "input_tokens": usage.input_tokens,
        attr.RUN_USAGE + "output_tokens": usage.output_tokens,
    }
    if usage.cached_input_tokens:
        out[attr.RUN_USAGE + "cache_read.input_tokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens:
        out[attr.RUN_USAGE + "cache_write.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        out[attr.RUN_USAGE + "reasoning.output_tokens"] = usage.reasoning_tokens
    return out


def response_facts(raw: object) -> dict[str, AttributeValue]:
    """``gen_ai.response.model`` / ``.id`` from a provider's response (a ``ChatResponse``'s metadata, or a
    ``ResponsesResponse``'s fields), when it says."""
    metadata = getattr(raw, "metadata", None)
    if isinstance(metadata, dict):
        model, ident = metadata.get("model"), metadata.get("id")
    else:
        model, ident = getattr(raw, "model", None), getattr(raw, "id", None)
    out: dict[str, AttributeValue] = {}
    if isinstance(model, str):
        out[attr.RESPONSE_MODEL] = model
    if isinstance(ident, str):
        out[attr.RESPONSE_ID] = ident
    return out

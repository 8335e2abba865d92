"""Construction-time checks of the HTTP client's options, and hints for the openai SDK's spellings.

A wrong value (``timeout=30``, ``retry=3``, as the openai SDK takes them) fails at construction with a
``TypeError`` that says what to pass, instead of later, inside a call, as an ``AttributeError``. The API key
and header values are never shown in a message.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any

from ...http.retry import RetryPolicy
from ...http.timeouts import Timeout, check_seconds
from ...http.transport import HttpTransport
from .base_url import DEFAULT_BASE_URL

__all__ = ["call_headers", "check_headers", "check_http_options", "check_sdk_keywords"]


def _got(value: object) -> str:
    """``int 30``: the type and a short repr of a wrong value, for an error message."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def check_http_options(
    *,
    base_url: object,
    api_key: object,
    headers: object,
    transport: object,
    timeout: object,
    connect_timeout: object,
    read_timeout: object,
    retry: object,
    sleep: object,
    on_retry: object,
    max_event_bytes: object = None,
) -> None:
    """Raise ``TypeError`` / ``ValueError`` for an HTTP option of the wrong type, at construction.

    Without it a wrong value (``timeout=30``, ``retry=3``, as the openai SDK takes them) would be accepted
    and fail later, inside a call, as an ``AttributeError``. The API key and header values are never shown.
    """
    if base_url is not None and not isinstance(base_url, str):
        raise TypeError(
            f"base_url must be a str such as {DEFAULT_BASE_URL!r} (or None: $OPENAI_BASE_URL, else "
            f"OpenAI's), got {_got(base_url)}"
        )
    if api_key is not None and not isinstance(api_key, str):
        raise TypeError(f"api_key must be a str or None, got {type(api_key).__name__}")
    if timeout is not None and not isinstance(timeout, Timeout):
        hint = ""
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            hint = (
                f" (for seconds use Timeout(total={timeout!r}) for the whole call, or "
                f"read_timeout={timeout!r})"
            )
        raise TypeError(f"timeout must be a Timeout, got {_got(timeout)}{hint}")
    check_seconds("connect_timeout", connect_timeout)
    check_seconds("read_timeout", read_timeout)
    if retry is not None and not isinstance(retry, RetryPolicy):
        if isinstance(retry, bool):
            hint = " (RetryPolicy.none() for no retries; leave it out for the default RetryPolicy())"
        elif isinstance(retry, int):
            hint = f" (e.g. RetryPolicy(max_retries={retry}))"
        else:
            hint = ""
        raise TypeError(f"retry must be a RetryPolicy, got {_got(retry)}{hint}")
    if transport is not None and not isinstance(transport, HttpTransport):
        hint = " (e.g. AiohttpTransport())"
        if type(transport).__module__.partition(".")[0] == "aiohttp":  # a ClientSession, most likely
            hint = " (to share an aiohttp session, pass transport=AiohttpTransport(session=session))"
        raise TypeError(f"transport must be an HttpTransport, got {type(transport).__name__}{hint}")
    if headers is not None:
        check_headers(headers, "custom header")
    if sleep is not None and not callable(sleep):
        raise TypeError(f"sleep must be an async function of seconds (like anyio.sleep), got {_got(sleep)}")
    if sleep is not None and _blocking(sleep):
        raise TypeError(
            f"sleep must be an async function of seconds (like anyio.sleep), got {_got(sleep)}: a function "
            "that blocks would stall every task of the event loop for the whole back-off (instead of "
            "time.sleep use anyio.sleep or asyncio.sleep)"
        )
    if on_retry is not None and not callable(on_retry):
        raise TypeError(f"on_retry must be a function taking a ModelRetry, got {_got(on_retry)}")
    if max_event_bytes is not None:
        if not isinstance(max_event_bytes, int) or isinstance(max_event_bytes, bool):
            raise TypeError(f"max_event_bytes must be an int (bytes), got {_got(max_event_bytes)}")
        if max_event_bytes <= 0:
            raise ValueError(f"max_event_bytes must be positive, got {max_event_bytes}")


def _blocking(sleep: object) -> bool:
    """Whether ``sleep`` is certainly no async function: a builtin (``time.sleep``), also in a partial.

    A plain Python function may still return an awaitable (``lambda s: anyio.sleep(s)``): it is accepted
    here and checked when it is used.
    """
    while isinstance(sleep, functools.partial):
        sleep = sleep.func
    return inspect.isbuiltin(sleep) or inspect.isclass(sleep)


def check_headers(headers: object, noun: str) -> Mapping[str, str]:
    """``headers`` if it is a mapping of str to str, else a ``TypeError`` naming them (``noun``: "custom
    header", "per-call header").

    >>> check_headers({"X-Request-Id": 7}, "per-call header")
    Traceback (most recent call last):
    ...
    TypeError: per-call header 'X-Request-Id' must have a str value, got int
    """
    if not isinstance(headers, Mapping):
        raise TypeError(f"{noun}s must be a mapping of str to str, got {type(headers).__name__}")
    for name, value in headers.items():
        if not isinstance(name, str):
            raise TypeError(f"{noun} names must be str, got {_got(name)}")
        if not isinstance(value, str):
            # The value itself is not shown: it may be a credential.
            raise TypeError(f"{noun} {name!r} must have a str value, got {type(value).__name__}")
    return headers


def call_headers(extra_headers: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """A call's ``extra_headers``, checked; ``None`` when it has none (the model's own headers alone)."""
    if not extra_headers:
        return None
    return check_headers(extra_headers, "per-call header")


_AZURE = (
    "for Azure OpenAI use base_url='https://<resource>.openai.azure.com/openai/deployments/<deployment>"
    "?api-version=...' and custom_headers={'api-key': ...} (see docs/model/providers.md)"
)
# The openai SDK's client options that agentflow spells differently (``max_retries``, with its count, is
# apart), and what to use instead.
_SDK_OPTIONS: dict[str, str] = {
    "default_headers": "custom_headers=",
    "extra_headers": "custom_headers=",
    "organization": "custom_headers={'OpenAI-Organization': ...} (OPENAI_ORG_ID is read for OpenAI's own "
    "base URL)",
    "project": "custom_headers={'OpenAI-Project': ...} (OPENAI_PROJECT_ID is read for OpenAI's own base URL)",
    "default_query": "a query string in base_url ('https://host/v1?api-version=...')",
    "extra_query": "a query string in base_url ('https://host/v1?api-version=...')",
    "http_client": "transport=AiohttpTransport(...) (to share an aiohttp session: "
    "AiohttpTransport(session=...))",
    "azure_endpoint": _AZURE,
    "azure_deployment": _AZURE,
    "api_version": _AZURE,
}


def check_sdk_keywords(owner: str, keywords: Mapping[str, Any]) -> None:
    """Raise ``TypeError`` for an openai SDK client option that agentflow spells differently, naming ours.

    >>> check_sdk_keywords("OpenAIResponsesModel", {"default_headers": {}})
    Traceback (most recent call last):
    ...
    TypeError: OpenAIResponsesModel takes no default_headers= (an openai SDK option): use custom_headers=
    """
    if "max_retries" in keywords:
        count = keywords["max_retries"]
        example = count if isinstance(count, int) and not isinstance(count, bool) else "…"
        use = f"retry=RetryPolicy(max_retries={example})"
        raise TypeError(f"{owner} takes no max_retries= (an openai SDK option): use {use}")
    for name, use in _SDK_OPTIONS.items():
        if name in keywords:
            raise TypeError(f"{owner} takes no {name}= (an openai SDK option): use {use}")

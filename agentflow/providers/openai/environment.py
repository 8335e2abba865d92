"""Where an OpenAI model's endpoint and API key come from when its constructor does not say: the environment.

An openai SDK user expects ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` to be read. A key read from the
environment must never go to a server the user did not mean it for, so the rule is narrow:

- the base URL is ``base_url=`` when given, else ``OPENAI_BASE_URL`` when set (and not empty), else
  OpenAI's (``https://api.openai.com/v1``);
- the API key is ``api_key=`` when given (a key, or ``""`` for none: an explicit value always wins), else
  ``OPENAI_API_KEY``, but only when the base URL is OpenAI's own (``https://api.openai.com`` or one of its
  regional ``https://*.api.openai.com`` hosts) or itself came from ``OPENAI_BASE_URL`` (the user set the
  pair). A local server (``base_url="http://localhost:8000/v1"``) therefore never gets the key of the
  environment: ``api_key=None`` (the default) sends no ``Authorization`` header there;
- under the same rule ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` become the ``OpenAI-Organization`` and
  ``OpenAI-Project`` headers, unless ``custom_headers`` set them.

Pure: it reads the mapping it is given (``os.environ`` by default) and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from .base_url import DEFAULT_BASE_URL

__all__ = ["ENV_API_KEY", "ENV_BASE_URL", "Endpoint", "is_openai_url", "resolve_endpoint"]

ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
_ENV_HEADERS = (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project"))
_OPENAI_HOST = "api.openai.com"


def is_openai_url(url: str) -> bool:
    """Whether ``url`` is OpenAI's own API over HTTPS: ``api.openai.com`` or a regional ``*.api.openai.com``.

    >>> is_openai_url("https://api.openai.com/v1"), is_openai_url("https://eu.api.openai.com/v1")
    (True, True)
    >>> is_openai_url("http://api.openai.com/v1"), is_openai_url("https://api.openai.com.evil.example/v1")
    (False, False)
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    return (
        parts.scheme == "https"
        and port in (None, 443)
        and (host == _OPENAI_HOST or host.endswith("." + _OPENAI_HOST))
    )


class Endpoint:
    """Where a model sends its requests, and with which key: ``resolve_endpoint``'s answer.

    ``base_from_env`` / ``key_from_env``: whether the base URL / the key came from the environment (an
    error message names the variable); ``headers``: the ``OpenAI-Organization`` / ``OpenAI-Project``
    headers the environment gives. The key is never shown in a repr. (A plain class, not attrs: it is built
    once per model, and ``import agentflow`` loads this module, where every attrs class costs ~0.5 ms.)
    """

    __slots__ = ("api_key", "base_from_env", "base_url", "headers", "key_from_env")

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        base_from_env: bool = False,
        key_from_env: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.base_from_env = base_from_env
        self.key_from_env = key_from_env
        self.headers: Mapping[str, str] = {} if headers is None else headers

    def __repr__(self) -> str:
        key = "<set>" if self.api_key else "None"
        return (
            f"Endpoint(base_url={self.base_url!r}, api_key={key}, base_from_env={self.base_from_env}, "
            f"key_from_env={self.key_from_env}, headers={self.headers!r})"
        )


def resolve_endpoint(
    base_url: str | None,
    api_key: str | None,
    custom_headers: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Endpoint:
    """The base URL, API key and environment headers of a model built with ``base_url`` and ``api_key``
    (``None``: not given), per the module's rule.

    >>> env = {"OPENAI_API_KEY": "sk-env"}
    >>> resolve_endpoint(None, None, environ=env)  # doctest: +NORMALIZE_WHITESPACE
    Endpoint(base_url='https://api.openai.com/v1', api_key=<set>, base_from_env=False, key_from_env=True,
             headers={})
    >>> resolve_endpoint("http://localhost:8000/v1", None, environ=env).api_key is None
    True
    """
    env = os.environ if environ is None else environ
    base_from_env = False
    if base_url is None:
        from_env = env.get(ENV_BASE_URL, "").strip()
        base_from_env = bool(from_env)
        base_url = from_env or DEFAULT_BASE_URL
    trusted = base_from_env or is_openai_url(base_url)
    key_from_env = False
    if api_key is None and trusted:
        api_key = env.get(ENV_API_KEY, "").strip() or None
        key_from_env = api_key is not None
    headers: dict[str, str] = {}
    if trusted:
        given = {name.lower() for name in custom_headers or ()}
        for variable, header in _ENV_HEADERS:
            value = env.get(variable, "").strip()
            if value and header.lower() not in given:
                headers[header] = value
    return Endpoint(base_url, api_key, base_from_env, key_from_env, headers)

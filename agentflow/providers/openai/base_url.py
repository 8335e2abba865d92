"""The base URL rule of OpenAI-compatible servers, shared by both models' HTTP client.

A URL with no path gets ``/v1`` (``http://localhost:8000`` → ``http://localhost:8000/v1``); a URL with a path
is used as is (``https://openrouter.ai/api/v1``, ``https://host/v1/``), trailing slashes dropped. A query
string (``?api-version=…``) is kept and appended after the endpoint path. Pure string work, no I/O.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["DEFAULT_BASE_URL", "join_url", "normalize_base_url"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def normalize_base_url(base_url: str) -> tuple[str, str]:
    """Apply the base URL rule; return ``(base without trailing slash, query string)``.

    >>> normalize_base_url("http://localhost:8000")
    ('http://localhost:8000/v1', '')
    >>> normalize_base_url("https://openrouter.ai/api/v1/")
    ('https://openrouter.ai/api/v1', '')
    >>> normalize_base_url("https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21")
    ('https://x.openai.azure.com/openai/deployments/d', 'api-version=2024-10-21')
    """
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base_url must be an absolute http(s) URL such as {DEFAULT_BASE_URL!r}")
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), parts.query


def join_url(base: str, query: str, path: str) -> str:
    """The URL of endpoint ``path`` under a normalized ``base`` and its ``query``.

    >>> join_url("https://x.openai.azure.com/openai/deployments/d", "api-version=1", "/chat/completions")
    'https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=1'
    """
    url = f"{base}/{path.lstrip('/')}"
    return f"{url}?{query}" if query else url

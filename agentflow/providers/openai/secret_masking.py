"""Masking the credentials a client sends (its own, and a call's own headers) in what a server says back.

Some servers and gateways echo the credential they refused (``Invalid API key: sk-…``, a header they could
not parse). The client knows what it sends, so an error that carries a server's words has each such value
replaced by a masked form (its first 3 and last 4 characters, for a long one) in its message and body,
before the error is raised, logged or announced as a retry. Pure string work, and only on the error path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit

from ...model.errors import ModelError

__all__ = ["CREDENTIAL_WORDS", "known_secrets", "mask", "mask_secrets", "with_call_secrets"]

CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "password", "signature")
"""Words in a header or query parameter name that say its value is a credential (Azure's ``api-key``,
APIM's ``subscription-key``, a gateway's ``x-auth-token``)."""
_SHORTEST = 8  # a shorter value ("EMPTY", "none") is no secret, and replacing it would mangle words
_SHOWN_FROM = 20  # a value this long keeps its first 3 and last 4 characters in its masked form


def known_secrets(api_key: str | None, headers: Mapping[str, str], base_url: str) -> tuple[str, ...]:
    """The credentials a client sends that a server could echo: the API key, the values of headers named
    like a credential (without an auth scheme such as ``Bearer``), those of the base URL's query parameters
    named so, and the password of its user info. Values shorter than 8 characters are left out.

    >>> known_secrets("sk-0123456789", {"api-key": "azure-secret-1"}, "https://h/v1?subscription-key=apim1234")
    ('sk-0123456789', 'azure-secret-1', 'apim1234')
    >>> known_secrets("EMPTY", {}, "http://localhost:8000/v1")
    ()
    """
    found: list[str] = [api_key] if api_key else []
    found.extend(_header_credentials(headers))
    parts = urlsplit(base_url)
    found.extend(value for name, value in parse_qsl(parts.query) if _credential(name))
    if parts.password:
        found.append(parts.password)
    return tuple(dict.fromkeys(secret for secret in found if len(secret) >= _SHORTEST))


def with_call_secrets(secrets: tuple[str, ...], headers: Mapping[str, str] | None) -> tuple[str, ...]:
    """``secrets`` (the client's, from ``known_secrets``) and the credentials among one call's own
    ``headers`` (``extra_headers=``, a run's ``ModelSettings.extra_headers``), which a server may echo as
    well. Meant for the error path: a call without headers of its own gets ``secrets`` back as they are.

    >>> with_call_secrets(("sk-0123456789",), {"x-api-key": "tenant-key-42", "x-trace": "abcdefgh1"})
    ('sk-0123456789', 'tenant-key-42')
    """
    if not headers:
        return secrets
    extra = [secret for secret in _header_credentials(headers) if len(secret) >= _SHORTEST]
    return tuple(dict.fromkeys((*secrets, *extra))) if extra else secrets


def mask(secret: str) -> str:
    """How a credential shows in an error message.

    >>> mask("sk-proj-0123456789abcdef"), mask("short-secret")
    ('sk-***cdef', '***')
    """
    return f"{secret[:3]}***{secret[-4:]}" if len(secret) >= _SHOWN_FROM else "***"


def mask_secrets(error: ModelError, secrets: Iterable[str]) -> ModelError:
    """Replace each of ``secrets`` in ``error``'s message and body with its masked form, in place; return
    ``error``.

    >>> mask_secrets(ModelError("HTTP 401: Invalid API key: sk-0123456789"), ["sk-0123456789"]).message
    'HTTP 401: Invalid API key: ***'
    """
    message, body = error.message, error.body
    for secret in secrets:
        if secret in message:
            message = message.replace(secret, mask(secret))
        if body is not None and secret in body:
            body = body.replace(secret, mask(secret))
    if message is not error.message:
        error.message = message
        error.args = (message,)
    error.body = body
    return error


def _header_credentials(headers: Mapping[str, str]) -> list[str]:
    """The values of ``headers`` named like a credential, without an auth scheme such as ``Bearer``."""
    return [
        value.split()[-1] if value.strip() else value for name, value in headers.items() if _credential(name)
    ]


def _credential(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in CREDENTIAL_WORDS)

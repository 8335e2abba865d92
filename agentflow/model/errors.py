"""Typed model errors: every failure of a model call is a ``ModelError`` carrying what is known.

Messages never include credentials: they are built from the status, the server's error message and
the request URL (without query or user info), never from request headers; the HTTP client masks in them any
credential of its own that a server echoes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

import orjson

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ContentFilterError",
    "IncompleteResponseError",
    "ModelConnectionError",
    "ModelError",
    "ModelTimeoutError",
    "NotFoundError",
    "ProtocolError",
    "RateLimitError",
    "RedirectError",
    "ResponseNotFinishedError",
    "ServerError",
    "StreamCutOffError",
    "TimeoutLimit",
    "error_from_payload",
    "error_from_status",
    "extend_message",
    "page_summary",
]


class ModelError(Exception):
    """A model call failed.

    ``status`` is the HTTP status (``None`` for network failures and in-band stream errors without one),
    ``body`` the raw response body text (an error body: its first 64 KiB), ``error_type`` / ``code`` /
    ``param`` come from the server's error object when it sent one, and ``retryable`` says whether a retry
    could succeed.

    ``partial`` is what the call had produced when it failed, or ``None``: the response aggregated so far
    of a stream whose body failed once it had begun (cut off, connection lost, read or total timeout, or an
    error the server reported in the stream after part of the answer), and the response an incomplete or
    unfinished Responses answer carries. Every error carries it the same
    way, so one ``error.partial`` check serves them all.
    """

    retryable_by_default: bool = False
    partial: Any

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        error_type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        retryable: bool | None = None,
        headers: Mapping[str, str] | None = None,
        partial: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body
        self.error_type = error_type
        self.code = code
        self.param = param
        self.retryable = self.retryable_by_default if retryable is None else retryable
        self.headers: Mapping[str, str] = headers or {}
        self.partial = partial

    @property
    def request_id(self) -> str | None:
        """The id the server gave the request (``x-request-id``: OpenAI, Groq, vLLM…; Azure's
        ``apim-request-id``), for a support ticket or the logs; ``None`` when it sent none. Also set for a
        stream that failed after it began: the headers are the stream's."""
        headers = self.headers
        if not headers:
            return None
        for name in _REQUEST_ID_HEADERS:
            value = header(headers, name)
            if value:
                return value
        return None

    @property
    def retry_after(self) -> float | None:
        """The seconds the server asked to wait before trying again (``retry-after-ms``, ``Retry-After``),
        or ``None``: what a service passes on in its own ``Retry-After`` when it gives up (a 429 it may not
        retry itself). The client's own retries already honour it (``RetryPolicy``).

        >>> RateLimitError("slow down", status=429, headers={"Retry-After": "20"}).retry_after
        20.0
        """
        if not self.headers:
            return None
        from ..http.retry import retry_after_seconds  # the HTTP layer builds on this module

        return retry_after_seconds(self.headers)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r})"


_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "apim-request-id", "x-ms-request-id")


class BadRequestError(ModelError):
    """The server rejected the request (400, 422…): fix the request, do not retry."""


class AuthenticationError(ModelError):
    """Missing or wrong credentials, or no permission (401, 403)."""


class NotFoundError(BadRequestError):
    """Unknown model or endpoint (404)."""


class RateLimitError(ModelError):
    """Too many requests or quota exhausted (429). ``retryable`` is false for ``insufficient_quota``."""

    retryable_by_default = True


class ServerError(ModelError):
    """The server failed (5xx, 408, 409): usually worth a retry."""

    retryable_by_default = True


TimeoutLimit = Literal["connect", "read", "idle", "total"]
"""Which ``Timeout`` limit a ``ModelTimeoutError`` exceeded."""


class ModelTimeoutError(ModelError):
    """A call exceeded one of its ``Timeout`` limits; ``limit`` says which (``None`` when a transport of
    your own did not say).

    - ``"connect"``: opening the connection. The request was not sent: retryable.
    - ``"read"``: the answer did not come (or begin, for a stream) in time. The request was sent, and the
      server may still be working on it, and billing it: not retryable unless the ``RetryPolicy`` says
      ``retry_read_timeouts=True``.
    - ``"idle"``: a stream whose answer had begun stalled. Never retried (its answer began), but marked
      retryable: the same request could well succeed.
    - ``"total"``: the whole call, retries included, ran out of time.
    """

    retryable_by_default = True

    def __init__(self, message: str, *, limit: TimeoutLimit | None = None, **kwargs: Any) -> None:
        if limit == "read":
            kwargs.setdefault("retryable", False)
        super().__init__(message, **kwargs)
        self.limit = limit


class ModelConnectionError(ModelError):
    """The connection could not be made or was lost; ``__cause__`` holds the network error (without the
    request's headers, and its URL without query or user info).

    Retryable, except for a server whose TLS certificate failed verification (it would fail again).

    ``keepalive_race`` is true for a keep-alive race: a pooled connection, idle long enough for the server to
    close it (its keep-alive timeout), that failed at once as the request went out on it, before any byte of
    an answer. The server most likely never read that request, so ``RetryPolicy`` retries it without waiting
    (when it retries at all: it is a retry like any other, announced and counted).
    """

    retryable_by_default = True

    def __init__(self, message: str, *, keepalive_race: bool = False, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.keepalive_race = keepalive_race


class ProtocolError(ModelError):
    """The server answered something that is not the protocol (malformed JSON, missing choices…)."""


class StreamCutOffError(ProtocolError):
    """The stream ended before its terminal marker; ``partial`` holds what was aggregated so far.

    Retryable, like a dropped connection: a stream cut before any event was emitted is tried again (a
    stream is never retried once something was emitted).
    """

    retryable_by_default = True


class RedirectError(ModelError):
    """The server answered with a redirect (3xx), which is not followed: ``location`` is where it points.

    Following it would turn the POST into a GET (301, 302, 303) or send the request, without its
    ``Authorization`` header, to another host (307, 308). Not retryable: point ``base_url`` at the new
    address instead.
    """

    def __init__(self, message: str, *, location: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.location = location


class ContentFilterError(ModelError):
    """The provider's content filter blocked the request or the answer."""


class IncompleteResponseError(ModelError):
    """The response ended incomplete (e.g. ``max_output_tokens``); ``partial`` holds what was produced."""

    def __init__(self, message: str, *, reason: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.reason = reason


class ResponseNotFinishedError(ModelError):
    """A blocking call got back a response that is still ``queued`` or ``in_progress`` (a ``background``
    response): there is no answer yet. ``response_id`` and ``response_status`` say which and where it stands;
    ``partial`` holds the decoded response. Not retryable: sending again would start another response.
    """

    def __init__(
        self,
        message: str,
        *,
        response_id: str | None = None,
        response_status: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.response_id = response_id
        self.response_status = response_status


_EXCERPT_CHARS = 200  # of a body, in an error message
# An HTML page (a proxy's, a web server's error page) is shown by its title, not as markup.
# Patterns, not compiled: only an error body is matched against them (``re`` caches what it compiles), and
# compiling them at import cost ``import agentflow`` ~0.3 ms.
_HTML_START = r"\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|title)\b"
_HTML_TITLE = r"<title[^>]*>(.*?)</title\s*>"
_HTML_HIDDEN = r"<(head|script|style)\b.*?</\1\s*>"
_HTML_TAG = r"<[^>]*>"
# What a server says when the route itself is unknown (nginx, Go's mux as in Ollama, FastAPI as in vLLM):
# the base URL is wrong, not the model.
_NO_SUCH_ROUTE = frozenset({"not found", "404 page not found", "404 not found", "404: not found"})
_ENDPOINTS = ("/chat/completions", "/responses")
_DETAIL_ITEMS = 5  # validation errors named in a message; the rest are counted


def body_excerpt(text: str) -> str:
    """The start of a body for an error message: whitespace collapsed, at most 200 characters.

    >>> body_excerpt("<html>\\n  <title>502 Bad Gateway</title>")
    '<html> <title>502 Bad Gateway</title>'
    """
    excerpt = " ".join(text.split())
    return excerpt if len(excerpt) <= _EXCERPT_CHARS else excerpt[:_EXCERPT_CHARS] + "…"


def page_summary(text: str) -> str:
    """A body as an error message shows it: an HTML page by its ``<title>`` (else its text, tags dropped),
    anything else by its start; at most 200 characters. The body itself stays whole in ``ModelError.body``.

    >>> page_summary("<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>…</body></html>")
    "an HTML page titled '404 Not Found'"
    >>> page_summary("<html><body><h1>Welcome to nginx!</h1></body></html>")
    'an HTML page: Welcome to nginx!'
    >>> page_summary("404 page not found")
    '404 page not found'
    """
    if not re.match(_HTML_START, text, re.I | re.S):
        return body_excerpt(text)
    import html  # an HTML error page only: html.entities costs ~5 ms to import

    title = re.search(_HTML_TITLE, text, re.I | re.S)
    if title is not None and title.group(1).strip():
        return f"an HTML page titled {body_excerpt(html.unescape(title.group(1)))!r}"
    visible = re.sub(_HTML_HIDDEN, " ", text, flags=re.I | re.S)
    words = body_excerpt(html.unescape(re.sub(_HTML_TAG, " ", visible)))
    return f"an HTML page: {words}" if words else "an HTML page"


def extend_message(error: ModelError, detail: str) -> ModelError:
    """Append ``detail`` (a hint, the attempts made) to ``error``'s message, in place; return ``error``.

    >>> extend_message(ModelError("HTTP 500: boom"), "gave up after 3 attempts").message
    'HTTP 500: boom; gave up after 3 attempts'
    """
    error.message = f"{error.message}; {detail}"
    error.args = (error.message,)
    return error


def redact_url(url: str) -> str:
    """A URL as errors and logs show it: no user info, no query (either may carry a credential).

    >>> redact_url("https://user:pw@gw.example/v1/chat/completions?key=secret")
    'https://gw.example/v1/chat/completions'
    """
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _is_status(value: Any) -> bool:
    # Only 100..599 is an HTTP status: Zhipu's "1301", Baidu's "336003" are business codes, not 5xx.
    return type(value) is int and 100 <= value <= 599


def _is_number(code: str) -> bool:
    return code.isascii() and code.isdigit()  # ``"²".isdigit()`` too, but ``int("²")`` fails


def _describe(value: Any) -> str:
    """Readable text of an error message that is not a plain string: a list of messages, or FastAPI /
    pydantic validation errors (``[{"loc": [...], "msg": ..., "type": ...}]``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        shown = [_describe(item) for item in value[:_DETAIL_ITEMS]]
        more = len(value) - len(shown)
        return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")
    if isinstance(value, Mapping):
        text = value.get("msg", value.get("message"))
        if isinstance(text, str):
            loc = value.get("loc")
            if isinstance(loc, list | tuple) and loc:
                return f"{'.'.join(map(str, loc))}: {text}"
            return text
    return body_excerpt(orjson.dumps(value, default=str).decode())


def is_error_payload(payload: Any) -> bool:
    """Whether a JSON body that should have been an answer (a completion, an event stream) is a server's
    error report: an ``error``, a ``detail`` (FastAPI) or a ``message``, or ``"object": "error"`` (vLLM).

    >>> is_error_payload({"object": "error", "message": "context too long"}), is_error_payload({"id": "x"})
    (True, False)
    """
    if not isinstance(payload, Mapping):
        return False
    get = payload.get
    return bool(get("object") == "error" or get("error") or get("detail") or get("message"))


def _error_object(payload: Any) -> Mapping[str, Any]:
    """The error object of a payload: ``{"error": {…}}``, or the payload itself when it is flat.

    Also the shapes of servers that are not OpenAI's: ``{"error": "…"}`` (some compatible servers and
    proxies), ``{"detail": …}`` (FastAPI: a string, or a list of validation errors) and a flat
    ``{"message": …}`` (vLLM's ``{"object": "error", …}``, NestJS, gateways).
    """
    if isinstance(payload, Mapping):
        inner = payload.get("error")
        if isinstance(inner, Mapping):
            return inner
        if payload.get("message"):
            return payload  # flat; a string ``error`` beside it is only a status phrase ("Bad Request")
        if isinstance(inner, str) and inner:
            return {"message": inner}
        detail = payload.get("detail")
        if detail:
            return {**payload, "message": _describe(detail)}
        return payload
    return {}


def error_from_payload(
    payload: Any,
    *,
    status: int | None = None,
    body: str | None = None,
    default_message: str = "model error",
    headers: Mapping[str, str] | None = None,
    url: str | None = None,
) -> ModelError:
    """A typed error from a decoded error object, in-band or from a non-2xx body.

    Accepts OpenAI's ``{"error": {"message", "type", "code", "param"}}``, the flat shape of some stream
    events and of vLLM (``{"object": "error", "message", …}``), ``{"error": "…"}``, FastAPI's
    ``{"detail": …}``, and OpenRouter's numeric ``code`` with no ``type`` (read as the HTTP status when it
    is one, 100 to 599; any other number stays the ``code``). ``url`` (the request's, shown redacted) is
    named in the message.

    >>> error = error_from_payload({"error": {"message": "unsafe", "code": "1301"}})
    >>> type(error).__name__, error.status, error.code, error.retryable
    ('ModelError', None, '1301', False)
    """
    err = _error_object(payload)
    text = err.get("message")
    message = (text if isinstance(text, str) else _describe(text)) if text else default_message
    error_type = _str_or_none(err.get("type"))
    code = _str_or_none(err.get("code"))
    param = _str_or_none(err.get("param"))
    if status is None:
        for key in ("status_code", "status"):
            candidate = err.get(key)
            if _is_status(candidate):
                status = candidate
                break
        else:
            # OpenRouter's numeric codes are HTTP statuses; longer or other numbers are the server's own
            # codes (Zhipu "1301" content safety, Baidu "336003"): kept as ``code``, typed from markers.
            if code is not None and _is_number(code) and _is_status(number := int(code)):
                status = number
    kwargs: dict[str, Any] = {
        "status": status,
        "body": body,
        "error_type": error_type,
        "code": code,
        "param": param,
        "headers": headers,
    }
    if status is not None:
        label = f"HTTP {status}: {message}"
    elif code is not None and _is_number(code):
        label = f"{message} (code {code})"  # a server's own number (Zhipu's 1301…), the one thing to look up
    else:
        label = message
    if url is not None:
        label = f"{label} (POST {redact_url(url)})"
    markers = {error_type or "", code or ""}
    if markers & {"insufficient_quota"}:
        return RateLimitError(label, retryable=False, **kwargs)
    if markers & {"content_filter", "content_policy_violation"}:
        return ContentFilterError(label, **kwargs)
    if status is None:
        return _class_for_markers(error_type, code)(label, **kwargs)
    return _class_for_status(status)(label, **kwargs)


# An error without an HTTP status (an in-band stream error, a ``failed`` response) is typed from its error
# code, else its error type, so ``context_length_exceeded`` in an ``error`` event is the ``BadRequestError``
# it is as an HTTP 400, with the same retry rules. The code goes first: it refines the type
# (``invalid_request_error`` with ``model_not_found`` is a ``NotFoundError``).
_CLASS_BY_MARKER: dict[str, type[ModelError]] = {
    # error types
    "invalid_request_error": BadRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "not_found_error": NotFoundError,
    "rate_limit_error": RateLimitError,
    "server_error": ServerError,
    "api_error": ServerError,
    "overloaded_error": ServerError,
    # error codes
    "context_length_exceeded": BadRequestError,
    "invalid_prompt": BadRequestError,
    "invalid_api_key": AuthenticationError,
    "insufficient_permissions": AuthenticationError,
    "model_not_found": NotFoundError,
    "rate_limit_exceeded": RateLimitError,
    "internal_error": ServerError,
    "service_unavailable": ServerError,
}


def _class_for_markers(error_type: str | None, code: str | None) -> type[ModelError]:
    for marker in (code, error_type):
        cls = _CLASS_BY_MARKER.get(marker or "")
        if cls is not None:
            return cls
    return ModelError


def _class_for_status(status: int) -> type[ModelError]:
    if status in (401, 403):
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if status in (408, 409) or 500 <= status <= 599:
        return ServerError
    if 400 <= status < 500:
        return BadRequestError
    return ModelError


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by case-insensitive ``name`` (lower case; aiohttp's headers already are case-insensitive,
    plain dicts may not be)."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def _redirect_error(status: int, text: str, headers: Mapping[str, str], url: str | None) -> RedirectError:
    where = header(headers, "location")
    kwargs: dict[str, Any] = {"status": status, "body": text, "headers": headers}
    if not where:
        return RedirectError(
            f"HTTP {status}: the server answered with a redirect that names no Location", **kwargs
        )
    # Resolved against the request (a Location may be relative), without user info or query: either may
    # carry a credential, and the base URL's own query is added to every request anyway.
    location = redact_url(urljoin(url, where) if url else where)
    return RedirectError(
        f"HTTP {status}: the server redirected the request to {location}, and redirects are not followed "
        "(the POST would turn into a GET, or lose its Authorization header): set base_url to the address "
        "it names",
        location=location,
        **kwargs,
    )


def error_from_status(
    status: int, body: bytes | str, headers: Mapping[str, str] | None = None, *, url: str | None = None
) -> ModelError:
    """A typed error for a non-2xx HTTP response, with the body kept verbatim.

    The message is the server's: its error object's message (any shape ``error_from_payload`` reads), else
    the start of the body (plain text; an HTML error page by its title: ``page_summary``), and names ``url``
    (the request's, redacted), so a wrong ``base_url`` shows in it. A 404 that names no model (a bare
    "Not Found", a page) means the path is unknown: the message then says how to fix ``base_url``. A
    redirect (3xx) is a ``RedirectError`` naming its ``Location``, resolved against ``url``. A 407 (a
    proxy's) says how to give the proxy credentials. An ``x-should-retry: true`` or ``false`` header sets
    ``retryable``, whatever the status.

    >>> error_from_status(404, b"404 page not found", url="http://localhost:11434/v1/v1/chat/completions")
    ... # doctest: +NORMALIZE_WHITESPACE
    NotFoundError('HTTP 404: 404 page not found (POST http://localhost:11434/v1/v1/chat/completions); the
    server has no /v1/v1/chat/completions: check base_url', status=404)
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    if 300 <= status < 400:
        return _redirect_error(status, text, headers or {}, url)
    try:
        payload: Any = orjson.loads(text) if text.strip() else None
    except orjson.JSONDecodeError:
        payload = None
    # A body with no message the error shapes name (plain text, HTML, unknown JSON) is its own best message.
    default = page_summary(text) or f"request failed with HTTP {status}"
    error = error_from_payload(
        payload, status=status, body=text, default_message=default, headers=headers, url=url
    )
    if status == 404 and url is not None and _no_such_route(payload):
        extend_message(error, _endpoint_hint(url))
    elif status == 407:
        extend_message(
            error,
            "HTTP 407 is a proxy's answer: the proxy between this client and the server wants credentials; "
            "give them in its URL (HTTP_PROXY=http://user:password@proxy:port)",
        )
    if headers:
        should_retry = header(headers, "x-should-retry")
        if should_retry is not None:
            # The server's word on retrying (OpenAI's header) wins over the status, as in the openai SDK;
            # read whatever its case, as some gateways send "False".
            should_retry = should_retry.strip().lower()
            if should_retry in ("true", "false"):
                error.retryable = should_retry == "true"
    return error


def _no_such_route(payload: Any) -> bool:
    """Whether a 404's body says the path is unknown (no error object, or a bare "Not Found"), rather than
    naming what was not found (a model: OpenAI's ``model_not_found``, vLLM's, Ollama's messages)."""
    message = _error_object(payload).get("message")
    return not message or (isinstance(message, str) and message.strip(" .").lower() in _NO_SUCH_ROUTE)


def _endpoint_hint(url: str) -> str:
    """What to do about a 404 for an unknown path: the base URL is wrong."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for endpoint in _ENDPOINTS:
        if path.endswith(endpoint + endpoint):
            return (
                f"base_url already ends with {endpoint}: drop it (base_url is the part before the endpoint, "
                f"such as {parts.scheme}://{parts.netloc.rpartition('@')[2]}/v1)"
            )
    hint = f"the server has no {path or '/'}: check base_url"
    if "v1" not in path.split("/"):
        root = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
        hint += f" (OpenAI-compatible servers usually serve under /v1: base_url='{root}/v1')"
    elif path.endswith("/responses"):
        hint += ", or the server lacks the Responses API (OpenAIChatModel speaks Chat Completions)"
    return hint

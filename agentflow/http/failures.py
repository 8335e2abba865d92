"""The typed errors ``AiohttpTransport`` raises for what went wrong on the network, and their wording.

Each error names where the request went (the URL without user info or query: either may carry a
credential), what happened, and what to check. aiohttp's own exception goes along as ``__cause__``, first
scrubbed of what aiohttp puts in it that must not leave the process: the full request URL (in the text of
``ClientResponseError``, of a failed body write…) and the request's headers, API key included (in
``ClientResponseError.request_info``). Nothing here does I/O, and nothing runs unless a call failed.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from ..model.errors import (
    ModelConnectionError,
    ModelTimeoutError,
    ProtocolError,
    TimeoutLimit,
    redact_url,
)

__all__ = [
    "body_too_large",
    "certificate_failure",
    "closed",
    "describe",
    "foreign_session",
    "keepalive_race",
    "lost",
    "no_answer",
    "not_sent",
    "scrubbed",
    "slow_body",
    "stalled",
    "where",
]

# A URL in an exception's text: its query and user info (either may carry a credential) are dropped. A
# pattern, not compiled: only a failure's text is matched (``re`` caches what it compiles).
_URL_IN_TEXT = r"([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^\s/?#@'\"<>]*@)?([^\s?#'\"<>]*)(?:\?[^\s#'\"<>]*)?"
# What aiohttp says of a body compressed in a way it cannot decode (a codec that is not installed).
_UNDECODABLE = "Can not decode content-encoding"


def where(url: str) -> str:
    """``scheme://host:port`` of a URL: enough to say where a failure happened, nothing more.

    >>> where("https://user:pw@gw.example:8443/v1/chat/completions?key=secret")
    'https://gw.example:8443'
    """
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def scrub(text: str) -> str:
    """``text`` with every URL in it stripped of its query and user info.

    >>> scrub("400, url='http://u:pw@h:1/v1/chat/completions?subscription-key=s3cret'")
    "400, url='http://h:1/v1/chat/completions'"
    """
    return re.sub(_URL_IN_TEXT, r"\1\2", text) if "://" in text else text


def describe(exc: BaseException) -> str:
    """aiohttp's failure as an error message shows it: its type and text, without the request URL.

    A ``ClientResponseError`` (an answer that is not valid HTTP, a proxy's refusal) is told by its message
    alone: its text adds the full URL, and the ``400`` that aiohttp gives a malformed answer is no status of
    the server's.
    """
    text = " ".join(exc.message.split()) if isinstance(exc, aiohttp.ClientResponseError) else scrub(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def scrubbed(exc: BaseException) -> BaseException:
    """``exc`` (aiohttp's, about to become a ``__cause__``) cleared, in place, of the request URL's query and
    user info and of the request headers it holds. Returns ``exc``."""
    if isinstance(exc, aiohttp.ClientResponseError):
        info = exc.request_info
        exc.request_info = aiohttp.RequestInfo(
            URL(redact_url(str(info.url))),
            info.method,
            CIMultiDictProxy(CIMultiDict()),
            URL(redact_url(str(info.real_url))),
        )
        exc.args = (exc.request_info, exc.history)
        return exc
    if isinstance(exc, OSError) and isinstance(exc.strerror, str):
        exc.strerror = scrub(exc.strerror)
    exc.args = tuple(scrub(arg) if isinstance(arg, str) else arg for arg in exc.args)
    return exc


def stalled(url: str, seconds: float, limit: TimeoutLimit) -> ModelTimeoutError:
    """The error of a stream that sent nothing for ``seconds`` once its answer had begun (``idle``), or whose
    answer did not begin within ``seconds`` of its headers (``read``)."""
    at = redact_url(url)
    if limit == "idle":
        return ModelTimeoutError(
            f"the stream from {at} stalled: no data for {seconds:g} s once the answer had begun (the "
            "idle timeout; Timeout(idle=...) sets it)",
            limit="idle",
        )
    return ModelTimeoutError(
        f"no answer from {at} within the read timeout of {seconds:g} s: the stream began but its answer "
        "did not (keep-alive comments such as ': ping' do not count; a reasoning model may think for minutes "
        "first); raise read_timeout= (or Timeout(read=...))",
        limit="read",
    )


def slow_body(url: str, seconds: float) -> ModelTimeoutError:
    """The error of a blocking call whose body kept coming, and was not complete ``seconds`` after its
    headers (a gateway's keep-alive whitespace while the answer is generated, a server that trickles)."""
    return ModelTimeoutError(
        f"the answer from {redact_url(url)} was not complete within the read timeout of {seconds:g} s of "
        "its headers (data kept coming, but not the end of it: a gateway's keep-alive bytes while the model "
        "works?); raise read_timeout= (or Timeout(read=...)), or stream the call",
        limit="read",
    )


def lost(
    url: str, exc: BaseException, read_timeout: float | None
) -> ModelConnectionError | ModelTimeoutError:
    """The error of a body that failed while being read."""
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return ModelTimeoutError(
            f"no data from {redact_url(url)} within the read timeout of {read_timeout} s", limit="read"
        )
    return ModelConnectionError(
        f"connection to {where(url)} lost while reading the response: {describe(exc)}"
    )


def not_sent(url: str, exc: BaseException) -> ModelConnectionError | ProtocolError:
    """The error of a request that failed on the network: it names the URL and says what to check."""
    target = redact_url(url)
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return ModelConnectionError(
            f"could not connect to the proxy {exc.host}:{exc.port} for {target} ({describe(exc)}): is the "
            "proxy running, and is its address right (HTTP_PROXY / HTTPS_PROXY, read with "
            "AiohttpTransport(trust_env=True))?"
        )
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return _proxy_refused(target, exc)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        host = urlsplit(url).hostname
        return ModelConnectionError(
            f"could not reach {target}: the host name {host!r} does not resolve ({describe(exc)}); check "
            "base_url's host, or your network (or proxy: AiohttpTransport(trust_env=True) uses HTTPS_PROXY)"
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ModelConnectionError(
            f"could not connect to {target} ({describe(exc)}): is the server running, and is base_url's "
            "host and port right?"
        )
    if isinstance(exc, aiohttp.ClientResponseError):
        if exc.message.startswith(_UNDECODABLE):
            return _undecodable(target, exc)
        return ModelConnectionError(
            f"request to {target} failed: the answer is not valid HTTP ({describe(exc)})"
        )
    return ModelConnectionError(f"request to {target} failed: {describe(exc)}")


def _proxy_refused(target: str, exc: aiohttp.ClientHttpProxyError) -> ModelConnectionError:
    """The error of a proxy that would not open a tunnel (``CONNECT``) to the server."""
    message = f"the proxy refused to open a tunnel to {where(target)}: HTTP {exc.status} {exc.message}"
    if exc.status == 407:
        return ModelConnectionError(
            f"{message}: the proxy wants credentials; give them in its URL (HTTPS_PROXY="
            "http://user:password@proxy:port)",
            retryable=False,
        )
    return ModelConnectionError(message, retryable=exc.status >= 500)


def _undecodable(target: str, exc: aiohttp.ClientResponseError) -> ProtocolError:
    """The error of an answer compressed with a codec that is not installed (``br``, ``zstd``): not retried,
    every answer would come the same way."""
    return ProtocolError(
        f"the response from {target} is compressed in a way this client cannot decode, although the request "
        f"did not offer it ({' '.join(exc.message.split())}): install that package (aiohttp then decodes "
        "it), or have the server or proxy send it uncompressed or gzip-compressed",
        retryable=False,
    )


def keepalive_race(url: str, exc: BaseException) -> ModelConnectionError:
    """The error of a request whose pooled connection the server closed as the request went out on it."""
    return ModelConnectionError(
        f"the server closed the pooled connection to {where(url)} just as the request went out on it, "
        f"before answering ({describe(exc)}): most likely its keep-alive timeout for idle connections, so "
        "the request was most likely never read; a retry goes out at once on another connection",
        keepalive_race=True,
    )


def no_answer(url: str, read: float, stream: bool) -> ModelTimeoutError:
    """The error of a request that got no answer within the read timeout (aiohttp's ``sock_read``)."""
    at = redact_url(url)
    if stream:
        return ModelTimeoutError(
            f"no response headers from {at} within the read timeout of {read:g} s; raise read_timeout= "
            "(or Timeout(read=...)) if the server answers that slowly",
            limit="read",
        )
    return ModelTimeoutError(
        f"no answer from {at} within the read timeout of {read:g} s: a call that is not streamed gets its "
        "answer only once all of it is generated, which can take minutes (a reasoning model, a long output); "
        "raise read_timeout= (or Timeout(read=...)), or stream the call (model.stream(), agent.stream()): "
        "once a stream's answer begins only the gaps between its chunks are limited (Timeout.idle)",
        limit="read",
    )


def body_too_large(url: str, limit: int) -> ProtocolError:
    """The error of a 2xx body larger than the transport accepts."""
    return ProtocolError(
        f"the response from {redact_url(url)} is larger than {limit} bytes, the most a call that is not "
        "streamed accepts: a misbehaving server? AiohttpTransport(max_body_bytes=...) raises the limit",
        retryable=False,
    )


def closed(url: str, doing: str) -> ModelConnectionError:
    """The error of a call whose HTTP session was closed under it (by ``aclose``, from another task)."""
    # Not retryable: the close was deliberate, and retrying would open a new session nobody closes (and
    # send again a request the server may already be working on).
    return ModelConnectionError(
        f"the HTTP session was closed while {doing} {where(url)} (another task called aclose() on the "
        "model or its transport, or closed the session it was given)",
        retryable=False,
    )


def foreign_session() -> ModelConnectionError:
    """The error of a call from another event loop than the one the session given to the transport was
    made in: aiohttp would fail it with a bare ``RuntimeError`` about futures and loops."""
    return ModelConnectionError(
        "the aiohttp session given to AiohttpTransport(session=...) belongs to another event loop (the one "
        "it was created in), and an aiohttp session works in its own loop only (asyncio.run starts a new "
        "loop each time): create the session in the loop that makes the calls, or leave session= out (the "
        "transport then opens a pool in each loop)",
        retryable=False,
    )


def certificate_failure(url: str, exc: BaseException) -> ModelConnectionError:
    """The error of a server whose TLS certificate failed verification: not retried, it will fail again."""
    cause = exc.certificate_error if isinstance(exc, aiohttp.ClientConnectorCertificateError) else exc
    reason = getattr(cause, "verify_message", None) or str(cause)
    return ModelConnectionError(
        f"the TLS certificate of {where(url)} could not be verified ({reason}). If the server uses a "
        "private or corporate CA, give its certificate: AiohttpTransport(ssl=ssl.create_default_context("
        "cafile=...)) or the SSL_CERT_FILE environment variable",
        retryable=False,
    )

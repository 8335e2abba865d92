"""The HTTP options of both models (and of their shared ``OpenAIHttpClient``) are checked at construction: a
value of the wrong type — often an openai SDK habit such as ``timeout=30`` or ``retry=3`` — fails there with a
message that says what to pass, instead of an ``AttributeError`` inside the first call."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.client import OpenAIHttpClient
from agentflow.providers.openai.responses_model import OpenAIResponsesModel


def chat_model(**options: Any) -> object:
    return OpenAIChatModel(model="m", **options)


def responses_model(**options: Any) -> object:
    return OpenAIResponsesModel(model="m", **options)


def http_client(**options: Any) -> object:
    if "custom_headers" in options:
        options["headers"] = options.pop("custom_headers")
    return OpenAIHttpClient(**options)


BUILDERS = pytest.mark.parametrize(
    "build", [chat_model, responses_model, http_client], ids=["chat", "responses", "client"]
)
Build = Callable[..., object]


async def _nap(_seconds: float) -> None:
    pass


@BUILDERS
def test_timeout_in_seconds_says_which_timeout_to_use(build: Build) -> None:
    expected = (
        "timeout must be a Timeout, got int 30 (for seconds use Timeout(total=30) for the whole call, "
        "or read_timeout=30)"
    )
    with pytest.raises(TypeError) as caught:
        build(timeout=30)
    assert str(caught.value) == expected
    with pytest.raises(TypeError, match=r"got float 2\.5 \(for seconds use Timeout\(total=2\.5\)"):
        build(timeout=2.5)
    with pytest.raises(TypeError, match=r"^timeout must be a Timeout, got dict \{'read': 5\}$"):
        build(timeout={"read": 5})


@BUILDERS
def test_retry_as_a_count_says_how_to_make_a_policy(build: Build) -> None:
    with pytest.raises(TypeError) as caught:
        build(retry=3)
    assert str(caught.value) == "retry must be a RetryPolicy, got int 3 (e.g. RetryPolicy(max_retries=3))"
    with pytest.raises(TypeError, match=r"got bool False \(RetryPolicy\.none\(\) for no retries"):
        build(retry=False)


@BUILDERS
def test_base_url_and_api_key_must_be_text(build: Build) -> None:
    with pytest.raises(
        TypeError,
        match=r"^base_url must be a str such as 'https://api\.openai\.com/v1' \(or None: \$OPENAI_BASE_URL, "
        r"else OpenAI's\), got int 1$",
    ):
        build(base_url=1)
    with pytest.raises(TypeError) as caught:
        build(api_key=b"sk-very-secret")
    assert str(caught.value) == "api_key must be a str or None, got bytes"  # the key itself is never shown


@BUILDERS
@pytest.mark.parametrize(
    ("option", "value", "error", "message"),
    [
        ("connect_timeout", "5", TypeError, "connect_timeout must be seconds (an int or float > 0) or None"),
        ("read_timeout", True, TypeError, "read_timeout must be seconds (an int or float > 0) or None"),
        ("read_timeout", 0, ValueError, "read_timeout must be seconds > 0 or None (no limit), not 0"),
        ("connect_timeout", -1, ValueError, "connect_timeout must be seconds > 0 or None (no limit), not -1"),
        ("read_timeout", float("nan"), ValueError, "read_timeout must be seconds > 0 or None"),
    ],
)
def test_connect_and_read_timeouts_take_what_timeout_takes(
    build: Build, option: str, value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}"):
        build(**{option: value})
    field = option.removesuffix("_timeout")
    with pytest.raises(error, match=f"^{re.escape(message.replace(option, f'Timeout.{field}'))}"):
        Timeout(**{field: value})  # the same check, under the name the user wrote


@BUILDERS
def test_custom_headers_must_map_text_to_text(build: Build) -> None:
    with pytest.raises(TypeError, match=r"^custom headers must be a mapping of str to str, got list$"):
        build(custom_headers=[("X-Team", "a")])
    with pytest.raises(TypeError, match=r"^custom header names must be str, got int 1$"):
        build(custom_headers={1: "a"})
    with pytest.raises(TypeError) as caught:
        build(custom_headers={"X-Api-Version": 2024})
    assert str(caught.value) == "custom header 'X-Api-Version' must have a str value, got int"  # no value


@BUILDERS
async def test_transport_must_be_an_http_transport(build: Build) -> None:
    with pytest.raises(
        TypeError, match=r"^transport must be an HttpTransport, got str \(e\.g\. AiohttpTransport"
    ):
        build(transport="aiohttp")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(TypeError, match=r"pass transport=AiohttpTransport\(session=session\)"):
            build(transport=session)


@BUILDERS
def test_sleep_and_on_retry_must_be_callable(build: Build) -> None:
    with pytest.raises(TypeError, match=r"^sleep must be an async function of seconds .*, got float 0\.0$"):
        build(sleep=0.0)
    with pytest.raises(TypeError, match=r"^on_retry must be a function taking a ModelRetry, got list \[\]$"):
        build(on_retry=[])


@BUILDERS
def test_well_typed_options_are_accepted(build: Build) -> None:
    build(
        base_url="http://127.0.0.1:8000",
        api_key="sk-x",
        custom_headers={"X-Team": "a"},
        transport=AiohttpTransport(),
        timeout=Timeout(total=30),
        connect_timeout=2,
        read_timeout=2.5,
        retry=RetryPolicy.none(),
        sleep=_nap,
        on_retry=print,
    )
    build(api_key=None, custom_headers=None, transport=None, timeout=None, retry=None, sleep=None)


@pytest.mark.parametrize(
    ("build", "owner"), [(chat_model, "OpenAIChatModel"), (responses_model, "OpenAIResponsesModel")]
)
def test_openai_sdk_client_options_name_their_agentflow_spelling(build: Build, owner: str) -> None:
    with pytest.raises(TypeError) as caught:
        build(max_retries=3)
    expected = f"{owner} takes no max_retries= (an openai SDK option): use retry=RetryPolicy(max_retries=3)"
    assert str(caught.value) == expected
    with pytest.raises(TypeError, match=r"takes no default_headers= .*: use custom_headers=$"):
        build(default_headers={"X": "y"})

"""Chat Completions wire encoding of a scripted reply: a JSON body, or the list of SSE frames.

Pure functions, no I/O. The shapes follow the recordings in ``shared/wire`` (OpenAI, 2025–2026):

- JSON: ``chat.completion`` with one choice, ``refusal`` and ``annotations`` on the message,
  ``reasoning_content`` when there is reasoning (as DeepSeek sends it), full ``usage``; pretty-printed.
- SSE: a role chunk, ``reasoning_content`` deltas, ``content`` deltas, ``refusal`` deltas, tool-call
  fragments by ``index`` (the first with ``id``/``type``/``name`` and empty arguments, then argument
  fragments), a finish chunk with an empty delta, then — when the request sets
  ``stream_options.include_usage`` — a ``choices: []`` usage chunk, then ``data: [DONE]``.

Each SSE frame is complete (``data: …\\n\\n``) so the server can cut a stream between any two frames.
Delta frames are built from pre-encoded halves: the per-delta cost is one ``orjson.dumps`` of the delta.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..model.response import TokenUsage
from .context import ReplyContext
from .script import Reply, pretty_json, split_deltas

__all__ = [
    "DONE",
    "MALFORMED_BODY",
    "MALFORMED_FRAME",
    "encode_json",
    "encode_stream",
    "encode_stream_error",
    "usage_json",
]

FINGERPRINT = "fp_scripted"
DONE = b"data: [DONE]\n\n"
MALFORMED_FRAME = b'data: {"id": "chatcmpl_scripted", "choices": [ this is not JSON\n\n'
"""The frame sent by ``Fault.malformed_chunk``: a ``data:`` line that does not parse."""
MALFORMED_BODY = b'{"id": "chatcmpl_scripted", "object": "chat.completion", this is not JSON\n'
"""The non-streaming body sent by ``Fault.malformed_chunk``."""
ARGUMENT_FRAGMENT = 4
"""Default size of streamed tool-argument fragments (real servers send a few characters at a time)."""


def usage_json(usage: TokenUsage) -> dict[str, Any]:
    """The Chat ``usage`` object (``prompt_tokens`` …, with both details objects)."""
    prompt_details: dict[str, int] = {"cached_tokens": usage.cached_input_tokens, "audio_tokens": 0}
    if usage.cache_write_tokens:
        prompt_details["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def encode_json(reply: Reply, ctx: ReplyContext) -> bytes:
    """The non-streaming ``chat.completion`` body.

    >>> ctx = ReplyContext.for_request(Reply(text="Hi"), {}, serial=1, created=0, request_size=4)
    >>> orjson.loads(encode_json(Reply(text="Hi"), ctx))["choices"][0]["message"]["content"]
    'Hi'
    """
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": ctx.call_id(call, index),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    message["refusal"] = reply.refusal
    message["annotations"] = []
    body = {
        "id": ctx.ids("chatcmpl"),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.wire_finish_reason}
        ],
        "usage": usage_json(ctx.usage),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
    return pretty_json(body)


def _include_usage(request: Mapping[str, Any]) -> bool:
    options = request.get("stream_options")
    return isinstance(options, Mapping) and options.get("include_usage") is True


def encode_stream(reply: Reply, ctx: ReplyContext) -> list[bytes]:
    """The SSE frames of a streamed reply, ``[DONE]`` included.

    >>> ctx = ReplyContext.for_request(Reply(text="a b"), {}, serial=1, created=0, request_size=4)
    >>> len(encode_stream(Reply(text="a b"), ctx))  # role, 2 deltas, finish, [DONE]
    5
    """
    include_usage = _include_usage(ctx.request)
    envelope = {
        "id": ctx.ids("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
    # A chunk is head + delta + finish + chunk_end; only the delta is encoded per frame.
    head = b"data: " + orjson.dumps(envelope)[:-1] + b',"choices":[{"index":0,"delta":'
    finish_prefix = b',"logprobs":null,"finish_reason":'
    chunk_end = b"}]" + (b',"usage":null' if include_usage else b"") + b"}\n\n"
    tail = finish_prefix + b"null" + chunk_end
    dumps = orjson.dumps

    frames = [
        head
        + dumps({"role": "assistant", "content": None if reply.text is None else "", "refusal": None})
        + tail
    ]
    if reply.reasoning:
        frames.extend(
            head + dumps({"content": None, "reasoning_content": piece}) + tail
            for piece in split_deltas(reply.reasoning, reply.chunk_size)
        )
    if reply.text:
        frames.extend(
            head + dumps({"content": piece}) + tail for piece in split_deltas(reply.text, reply.chunk_size)
        )
    if reply.refusal:
        frames.extend(
            head + dumps({"refusal": piece}) + tail for piece in split_deltas(reply.refusal, reply.chunk_size)
        )
    for index, call in enumerate(reply.tool_calls):
        start = {"index": index, "id": ctx.call_id(call, index), "type": "function"}
        start["function"] = {"name": call.name, "arguments": ""}
        frames.append(head + dumps({"tool_calls": [start]}) + tail)
        frames.extend(
            head + dumps({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}) + tail
            for piece in split_deltas(call.arguments, reply.chunk_size, default_size=ARGUMENT_FRAGMENT)
        )
    frames.append(head + b"{}" + finish_prefix + dumps(reply.wire_finish_reason) + chunk_end)
    if include_usage:
        frames.append(
            b"data: " + dumps({**envelope, "choices": [], "usage": usage_json(ctx.usage)}) + b"\n\n"
        )
    frames.append(DONE)
    return frames


def encode_stream_error(error: Mapping[str, Any], *, as_event: bool) -> list[bytes]:
    """The frames of an in-band error: ``data: {"error": …}`` then ``[DONE]``, or one ``event: error``.

    >>> encode_stream_error({"message": "boom"}, as_event=True)
    [b'event: error\\ndata: {"error":{"message":"boom"}}\\n\\n']
    """
    payload = orjson.dumps({"error": dict(error)})
    if as_event:
        return [b"event: error\ndata: " + payload + b"\n\n"]
    return [b"data: " + payload + b"\n\n", DONE]

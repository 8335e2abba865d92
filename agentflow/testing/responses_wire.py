"""Responses API wire encoding of a scripted reply: a JSON body, or the list of SSE frames.

Pure functions, no I/O. The shapes follow the recordings in ``shared/wire`` (OpenAI, 2025–2026):
the full ``response`` envelope (request fields echoed back), output items in the order reasoning,
message, function calls, and the streaming lifecycle

``response.created`` → ``response.in_progress`` → for each item ``response.output_item.added`` →
(reasoning: ``reasoning_summary_part.added`` → ``reasoning_summary_text.delta``… → ``.done`` →
``reasoning_summary_part.done``; message: ``content_part.added`` → ``output_text.delta``… or
``refusal.delta``… → ``.done`` → ``content_part.done``; function call: ``function_call_arguments.delta``…
→ ``.done``) → ``response.output_item.done`` → ``response.completed`` (or ``response.incomplete``).

Every frame is ``event: <type>\\ndata: <json>\\n\\n`` with a ``sequence_number``; payload keys are
``type`` first, then alphabetical, as OpenAI sends them. There is no ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..model.response import TokenUsage
from .chat_wire import ARGUMENT_FRAGMENT
from .context import ReplyContext
from .script import Reply, pretty_json, split_deltas

__all__ = [
    "MALFORMED_BODY",
    "MALFORMED_FRAME",
    "encode_json",
    "encode_stream",
    "encode_stream_error",
    "usage_json",
]

MALFORMED_FRAME = (
    b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", this is not JSON\n\n'
)
"""The frame sent by ``Fault.malformed_chunk``: a known event type whose data does not parse."""
MALFORMED_BODY = b'{"id": "resp_scripted", "object": "response", this is not JSON\n'
"""The non-streaming body sent by ``Fault.malformed_chunk``."""

_INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def usage_json(usage: TokenUsage) -> dict[str, Any]:
    """The Responses ``usage`` object (``input_tokens`` …, with both details objects)."""
    input_details: dict[str, int] = {"cached_tokens": usage.cached_input_tokens}
    if usage.cache_write_tokens:
        input_details["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": input_details,
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _requested(request: Mapping[str, Any], key: str, default: Any) -> Any:
    value = request.get(key)
    return default if value is None else value


def _envelope(
    ctx: ReplyContext,
    *,
    status: str,
    output: list[dict[str, Any]],
    usage: TokenUsage | None = None,
    error: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
    billing: bool = False,
) -> dict[str, Any]:
    """The ``response`` object, echoing the request's settings as OpenAI does."""
    req = ctx.request
    reasoning = req.get("reasoning")
    reasoning = reasoning if isinstance(reasoning, Mapping) else {}
    text = req.get("text")
    envelope: dict[str, Any] = {
        "id": ctx.ids("resp"),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "background": False,
    }
    if billing:
        envelope["billing"] = {"payer": "developer"}
    envelope.update(
        {
            "completed_at": ctx.created if status == "completed" else None,
            "error": error,
            "frequency_penalty": 0.0,
            "incomplete_details": None if incomplete_reason is None else {"reason": incomplete_reason},
            "instructions": req.get("instructions"),
            "max_output_tokens": req.get("max_output_tokens"),
            "max_tool_calls": req.get("max_tool_calls"),
            "model": ctx.model,
            "moderation": None,
            "output": output,
            "parallel_tool_calls": _requested(req, "parallel_tool_calls", True),
            "presence_penalty": 0.0,
            "previous_response_id": req.get("previous_response_id"),
            "prompt_cache_key": req.get("prompt_cache_key"),
            "prompt_cache_retention": None,
            "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
            "safety_identifier": None,
            "service_tier": "default",
            "store": _requested(req, "store", True),
            "temperature": _requested(req, "temperature", 1.0),
            "text": {
                "format": {"type": "text"},
                "verbosity": "medium",
                **(text if isinstance(text, Mapping) else {}),
            },
            "tool_choice": _requested(req, "tool_choice", "auto"),
            "tools": _requested(req, "tools", []),
            "top_logprobs": 0,
            "top_p": _requested(req, "top_p", 1.0),
            "truncation": "disabled",
            "usage": None if usage is None else usage_json(usage),
            "user": req.get("user"),
            "metadata": _requested(req, "metadata", {}),
        }
    )
    return envelope


def _outcome(reply: Reply) -> tuple[str, str | None]:
    """``(status, incomplete reason)`` of the response for the reply's finish reason."""
    reason = _INCOMPLETE_REASONS.get(reply.finish_reason or "")
    return ("completed", None) if reason is None else ("incomplete", reason)


def _wants_encrypted_reasoning(request: Mapping[str, Any]) -> bool:
    include = request.get("include")
    return isinstance(include, list) and "reasoning.encrypted_content" in include


def _output_items(reply: Reply, ctx: ReplyContext, status: str) -> list[dict[str, Any]]:
    """The final output items: reasoning, message, function calls (ids by output index)."""
    items: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        item: dict[str, Any] = {"id": ctx.ids("rs", len(items)), "type": "reasoning"}
        if _wants_encrypted_reasoning(ctx.request):
            item["encrypted_content"] = ctx.ids("enc", len(items))
        item["summary"] = [{"type": "summary_text", "text": reply.reasoning}] if reply.reasoning else []
        items.append(item)
    content: list[dict[str, Any]] = []
    if reply.text is not None:
        content.append({"type": "output_text", "annotations": [], "logprobs": [], "text": reply.text})
    if reply.refusal is not None:
        content.append({"type": "refusal", "refusal": reply.refusal})
    if content:
        items.append(
            {
                "id": ctx.ids("msg", len(items)),
                "type": "message",
                "status": status,
                "content": content,
                "phase": "commentary" if reply.tool_calls else "final_answer",
                "role": "assistant",
            }
        )
    for index, call in enumerate(reply.tool_calls):
        items.append(
            {
                "id": ctx.ids("fc", len(items)),
                "type": "function_call",
                "status": "completed",
                "arguments": call.arguments,
                "call_id": ctx.call_id(call, index),
                "name": call.name,
            }
        )
    return items


def encode_json(reply: Reply, ctx: ReplyContext) -> bytes:
    """The non-streaming ``response`` body.

    >>> ctx = ReplyContext.for_request(Reply(text="pong"), {}, serial=1, created=0, request_size=4)
    >>> orjson.loads(encode_json(Reply(text="pong"), ctx))["output"][0]["content"][0]["text"]
    'pong'
    """
    status, reason = _outcome(reply)
    output = _output_items(reply, ctx, status)
    body = _envelope(
        ctx, status=status, output=output, usage=ctx.usage, incomplete_reason=reason, billing=True
    )
    return pretty_json(body)


class _Frames:
    """Accumulates SSE frames with consecutive ``sequence_number``s."""

    def __init__(self, first_sequence_number: int = 0) -> None:
        self.frames: list[bytes] = []
        self.sequence_number = first_sequence_number

    def add(self, event_type: str, **fields: Any) -> None:
        fields["sequence_number"] = self.sequence_number
        self.sequence_number += 1
        payload = {"type": event_type}
        payload.update(sorted(fields.items()))
        self.frames.append(b"event: " + event_type.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n")

    def deltas(self, event_type: str, pieces: Iterable[str], **fields: Any) -> None:
        """One frame per piece; the constant parts are encoded once (keys before/after ``delta``)."""
        before = {k: fields[k] for k in sorted(fields) if k < "delta"}
        middle = {k: fields[k] for k in sorted(fields) if "delta" < k < "sequence_number"}
        after = {k: fields[k] for k in sorted(fields) if k > "sequence_number"}
        head = b"event: " + event_type.encode() + b"\ndata: "
        head += orjson.dumps({"type": event_type, **before})[:-1] + b',"delta":'
        mid = (b"," + orjson.dumps(middle)[1:-1] if middle else b"") + b',"sequence_number":'
        tail = (b"," + orjson.dumps(after)[1:-1] if after else b"") + b"}\n\n"
        dumps = orjson.dumps
        for piece in pieces:
            self.frames.append(head + dumps(piece) + mid + str(self.sequence_number).encode() + tail)
            self.sequence_number += 1


def _stream_reasoning(frames: _Frames, reply: Reply, item: dict[str, Any], index: int) -> None:
    ids = {"item_id": item["id"], "output_index": index}
    frames.add("response.output_item.added", item={**item, "summary": []}, output_index=index)
    for summary_index, part in enumerate(item["summary"]):
        frames.add(
            "response.reasoning_summary_part.added",
            **ids,
            part={"type": "summary_text", "text": ""},
            summary_index=summary_index,
        )
        pieces = split_deltas(part["text"], reply.chunk_size)
        frames.deltas("response.reasoning_summary_text.delta", pieces, **ids, summary_index=summary_index)
        frames.add(
            "response.reasoning_summary_text.done", **ids, summary_index=summary_index, text=part["text"]
        )
        frames.add("response.reasoning_summary_part.done", **ids, part=part, summary_index=summary_index)
    frames.add("response.output_item.done", item=item, output_index=index)


def _stream_message(frames: _Frames, reply: Reply, item: dict[str, Any], index: int) -> None:
    added = {**item, "status": "in_progress", "content": []}
    frames.add("response.output_item.added", item=added, output_index=index)
    for content_index, part in enumerate(item["content"]):
        ids = {"content_index": content_index, "item_id": item["id"], "output_index": index}
        if part["type"] == "output_text":
            frames.add("response.content_part.added", **ids, part={**part, "text": ""})
            pieces = split_deltas(part["text"], reply.chunk_size)
            frames.deltas("response.output_text.delta", pieces, **ids, logprobs=[])
            frames.add("response.output_text.done", **ids, logprobs=[], text=part["text"])
        else:
            frames.add("response.content_part.added", **ids, part={**part, "refusal": ""})
            frames.deltas("response.refusal.delta", split_deltas(part["refusal"], reply.chunk_size), **ids)
            frames.add("response.refusal.done", **ids, refusal=part["refusal"])
        frames.add("response.content_part.done", **ids, part=part)
    frames.add("response.output_item.done", item=item, output_index=index)


def _stream_function_call(frames: _Frames, reply: Reply, item: dict[str, Any], index: int) -> None:
    ids = {"item_id": item["id"], "output_index": index}
    added = {**item, "status": "in_progress", "arguments": ""}
    frames.add("response.output_item.added", item=added, output_index=index)
    pieces = split_deltas(item["arguments"], reply.chunk_size, default_size=ARGUMENT_FRAGMENT)
    frames.deltas("response.function_call_arguments.delta", pieces, **ids)
    frames.add("response.function_call_arguments.done", **ids, arguments=item["arguments"])
    frames.add("response.output_item.done", item=item, output_index=index)


_STREAMERS = {
    "reasoning": _stream_reasoning,
    "message": _stream_message,
    "function_call": _stream_function_call,
}


def encode_stream(reply: Reply, ctx: ReplyContext) -> list[bytes]:
    """The SSE frames of a streamed reply, from ``response.created`` to ``response.completed``.

    >>> ctx = ReplyContext.for_request(Reply(text="pong"), {}, serial=1, created=0, request_size=4)
    >>> [f.split(b"\\n", 1)[0].decode() for f in encode_stream(Reply(text="pong"), ctx)][-3:]
    ['event: response.content_part.done', 'event: response.output_item.done', 'event: response.completed']
    """
    status, reason = _outcome(reply)
    frames = _Frames()
    started = _envelope(ctx, status="in_progress", output=[])
    frames.add("response.created", response=started)
    frames.add("response.in_progress", response=started)
    output = _output_items(reply, ctx, status)
    for index, item in enumerate(output):
        _STREAMERS[item["type"]](frames, reply, item, index)
    final = _envelope(ctx, status=status, output=output, usage=ctx.usage, incomplete_reason=reason)
    frames.add("response.completed" if status == "completed" else "response.incomplete", response=final)
    return frames.frames


def encode_stream_error(ctx: ReplyContext, error: Mapping[str, Any], *, sequence_number: int) -> list[bytes]:
    """An ``error`` event (fields nested under ``error``, as recorded) followed by ``response.failed``.

    >>> ctx = ReplyContext.for_request(Reply(text="x"), {}, serial=1, created=0, request_size=4)
    >>> [f.split(b"\\n", 1)[0] for f in encode_stream_error(ctx, {"message": "m"}, sequence_number=2)]
    [b'event: error', b'event: response.failed']
    """
    frames = _Frames(sequence_number)
    frames.add("error", error=dict(error))
    code = error.get("code") if error.get("code") is not None else error.get("type")
    failed = _envelope(ctx, status="failed", output=[], error={"code": code, "message": error.get("message")})
    frames.add("response.failed", response=failed)
    return frames.frames

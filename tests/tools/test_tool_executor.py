"""``ToolExecutor``: outputs, TOOL_ERROR texts, events, concurrency, limits, timeouts, threads, cancel."""

from __future__ import annotations

import asyncio
import enum
import functools
import threading
from typing import Any

import anyio
import attrs
import pytest

from agentflow.bus import EventBus, Subscription
from agentflow.events import ToolFailed, ToolProgress, ToolStarted, ToolSucceeded
from agentflow.model.events import Event
from agentflow.model.messages import ToolCall
from agentflow.result import ToolResult
from agentflow.tools import ToolContext, ToolExecutor, ToolRegistry, cancelled_result, output_text, tool


class Recorder:
    """An ``emit`` that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[tuple[str, str]]:
        return [(type(e).__name__, (getattr(e, "call", None) and e.call.id) or "") for e in self.events]  # type: ignore[attr-defined]

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


class Color(enum.Enum):
    RED = "red"


@attrs.frozen
class Weather:
    city: str
    color: Color


def call(call_id: str, name: str, arguments: str = "") -> ToolCall:
    return ToolCall(call_id, name, arguments)


def executor(*tools: Any, **options: Any) -> tuple[ToolExecutor, Recorder]:
    recorder = Recorder()
    return ToolExecutor(list(tools), emit=recorder, **options), recorder


# -- outputs and errors ----------------------------------------------------------------------------------


async def test_return_values_become_output_text_and_the_raw_value_is_kept() -> None:
    @tool
    async def text() -> str:
        return "sunny"

    @tool
    def nothing() -> None:
        return None

    @tool
    async def mapping() -> dict[str, Any]:
        return {"temp": 21.5, "tags": ["a"]}

    @tool
    async def value() -> list[Weather]:
        return [Weather("Oslo", Color.RED)]

    ex, _ = executor(text, nothing, mapping, value)
    results = await ex.run_calls(
        [call("1", "text"), call("2", "nothing"), call("3", "mapping"), call("4", "value")],
        run_id="r",
        step=0,
    )
    assert [r.output for r in results] == [
        "sunny",
        "",
        '{"temp":21.5,"tags":["a"]}',
        '[{"city":"Oslo","color":"red"}]',
    ]
    assert all(r.ok and r.error_type is None for r in results)
    assert results[3].value == [Weather("Oslo", Color.RED)]
    assert [(r.call_id, r.name) for r in results] == [
        ("1", "text"),
        ("2", "nothing"),
        ("3", "mapping"),
        ("4", "value"),
    ]


async def test_unknown_tool_is_a_tool_error_listing_the_tools() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    ex, rec = executor(add)
    result = await ex.run_call(call("c1", "nope", "{}"), run_id="r", step=0)
    assert result.output == (
        'TOOL_ERROR: {"errorType":"unknown_tool","error":"unknown tool \'nope\'; available tools: add",'
        '"tool":"nope","callId":"c1"}'
    )
    assert (result.ok, result.error_type, result.error) == (
        False,
        "unknown_tool",
        "unknown tool 'nope'; available tools: add",
    )
    assert rec.kinds() == [("ToolStarted", "c1"), ("ToolFailed", "c1")]


async def test_invalid_arguments_are_a_tool_error_and_the_tool_does_not_run() -> None:
    ran = False

    @tool
    def add(a: int, b: int) -> int:
        nonlocal ran
        ran = True
        return a + b

    ex, _ = executor(add)
    result = await ex.run_call(call("c2", "add", '{"a": 1, "b": "2"}'), run_id="r", step=0)
    assert result.output == (
        'TOOL_ERROR: {"errorType":"invalid_arguments",'
        '"error":"arguments.b must be integer, got the string \\"2\\"","tool":"add","callId":"c2"}'
    )
    bad_json = await ex.run_call(call("c3", "add", "{"), run_id="r", step=0)
    assert bad_json.error_type == "invalid_arguments"
    assert bad_json.error is not None
    assert bad_json.error.startswith("add arguments are not valid JSON")
    assert not ran


async def test_an_exception_is_a_tool_error_with_its_class_and_message() -> None:
    @tool
    async def boom(city: str) -> str:
        raise ValueError(f"no weather for {city} ")

    @tool
    def silent() -> str:
        raise KeyError()

    ex, rec = executor(boom, silent)
    first, second = await ex.run_calls(
        [call("c4", "boom", '{"city": "Atlantis"}'), call("c5", "silent")], run_id="r", step=1
    )
    assert first.output == (
        'TOOL_ERROR: {"errorType":"exception","error":"ValueError: no weather for Atlantis",'
        '"tool":"boom","callId":"c4"}'
    )
    assert second.error == "KeyError"
    assert [e.result for e in rec.of(ToolFailed)] in ([first, second], [second, first])


class Opaque:
    def __str__(self) -> str:
        return "an opaque thing"


class Model:
    """Stands for a pydantic model: anything with ``model_dump(mode="json")``."""

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        return {"temp": 21.5, "mode": mode}


@attrs.frozen
class Quote:
    _price: float
    when: Any = None


async def test_a_return_value_without_a_json_form_is_shown_as_text_not_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The tool has run (sent the invoice): a failure would make the model call it again.
    sent: list[str] = []

    @tool
    def send_invoice(customer: str) -> Any:
        sent.append(customer)
        return Opaque()

    ex, _ = executor(send_invoice)
    with caplog.at_level("WARNING", logger="agentflow.tools"):
        result = await ex.run_call(call("c6", "send_invoice", '{"customer": "ACME"}'), run_id="r", step=0)
    assert (result.ok, result.output, sent) == (True, "an opaque thing", ["ACME"])
    assert isinstance(result.value, Opaque)
    assert "has no JSON form" in caplog.text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (b"%PDF-1.7", '"%PDF-1.7"'),
        ({"file": b"\x89PNG\x00"}, '{"file":"<5 bytes of binary data>"}'),
        (Model(), '{"temp":21.5,"mode":"json"}'),
        (Quote(12.5), '{"price":12.5,"when":null}'),  # by init name, as the parameters are
        (Quote(1.0, Opaque()), '{"price":1.0,"when":"an opaque thing"}'),  # only the part without JSON
        ([1, Opaque()], '[1,"an opaque thing"]'),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (float("nan"), "NaN"),
        ({"ratio": float("nan")}, '{"ratio":null}'),
    ],
)
def test_return_values_become_text_the_model_can_read(value: Any, text: str) -> None:
    assert output_text(value) == text


async def test_a_tool_exception_is_logged_with_its_traceback_and_cut_for_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def fetch(url: str) -> str:
        raise RuntimeError("GET failed: " + "x" * 5000)

    ex, _ = executor(fetch)
    with caplog.at_level("INFO", logger="agentflow.tools"):
        result = await ex.run_call(call("c9", "fetch", '{"url": "u"}'), run_id="r", step=0)
    assert result.error_type == "exception"
    assert result.error == "RuntimeError: GET failed: " + "x" * (2000 - 26) + "… [3026 more characters]"
    assert len(result.output) < 2200
    [record] = [r for r in caplog.records if r.name == "agentflow.tools"]
    assert record.levelname == "INFO"
    assert "'fetch'" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)
    assert "x" * 5000 in caplog.text  # the developer gets the whole message, and the traceback


async def test_a_tool_that_never_finishes_times_out() -> None:
    never = anyio.Event()

    @tool(timeout=0.01)
    async def hang() -> str:
        await never.wait()
        return "unreachable"

    ex, rec = executor(hang, default_timeout=None)
    result = await ex.run_call(call("c7", "hang"), run_id="r", step=0)
    assert result.output == (
        'TOOL_ERROR: {"errorType":"timeout","error":"tool \'hang\' timed out after 0.01 s",'
        '"tool":"hang","callId":"c7"}'
    )
    assert rec.kinds() == [("ToolStarted", "c7"), ("ToolFailed", "c7")]


async def test_the_executor_default_timeout_applies_to_tools_without_one() -> None:
    @tool
    async def hang() -> None:
        await anyio.Event().wait()

    ex, _ = executor(hang, default_timeout=0.01)
    assert (await ex.run_call(call("c8", "hang"), run_id="r", step=0)).error_type == "timeout"


async def test_a_tool_raising_timeout_error_itself_is_an_exception_not_a_timeout() -> None:
    @tool
    async def upstream() -> None:
        raise TimeoutError("upstream API timed out")

    ex, _ = executor(upstream)
    result = await ex.run_call(call("c9", "upstream"), run_id="r", step=0)
    assert (result.error_type, result.error) == ("exception", "TimeoutError: upstream API timed out")


def test_cancelled_result_keeps_the_tool_error_format() -> None:
    result = cancelled_result(call("c10", "search"))
    assert result.output == (
        'TOOL_ERROR: {"errorType":"cancelled","error":"the run was cancelled before this tool call finished",'
        '"tool":"search","callId":"c10"}'
    )
    assert (result.ok, result.error_type) == (False, "cancelled")


async def test_a_decorated_name_from_the_model_resolves_to_the_tool() -> None:
    @tool
    def ping() -> str:
        return "pong"

    ex, _ = executor(ping)
    result = await ex.run_call(call("c11", " functions.ping "), run_id="r", step=0)
    assert (result.ok, result.name, result.output) == (True, "ping", "pong")


# -- concurrency ---------------------------------------------------------------------------------------


async def test_tools_of_one_batch_run_concurrently() -> None:
    a_started, b_started = anyio.Event(), anyio.Event()

    @tool
    async def a() -> str:
        a_started.set()
        await b_started.wait()  # would deadlock if the calls ran one after another
        return "a"

    @tool
    async def b() -> str:
        b_started.set()
        await a_started.wait()
        return "b"

    ex, _ = executor(a, b)
    with anyio.fail_after(5):
        results = await ex.run_calls([call("1", "a"), call("2", "b")], run_id="r", step=0)
    assert [r.output for r in results] == ["a", "b"]


async def test_every_waiting_call_runs_beside_the_others_whatever_the_mix() -> None:
    # Calls 0, 2 and 4 wait until all of them have started; 1 and 3 finish at once.
    waiting = [0, 2, 4]
    started = {i: anyio.Event() for i in waiting}

    @tool
    async def work(i: int) -> int:
        if i in started:
            started[i].set()
            for event in started.values():
                await event.wait()
        return i

    ex, rec = executor(work)
    with anyio.fail_after(5):
        results = await ex.run_calls(
            [call(str(i), "work", f'{{"i": {i}}}') for i in range(5)], run_id="r", step=0
        )
    assert [r.output for r in results] == ["0", "1", "2", "3", "4"]
    assert [e.call.id for e in rec.of(ToolStarted)] == ["0", "1", "2", "3", "4"]


async def test_calls_that_never_wait_need_no_task_of_their_own() -> None:
    tasks: list[int] = []
    running: list[int] = []

    @tool
    async def quick() -> str:
        tasks.append(anyio.get_current_task().id)
        running.append(len(asyncio.all_tasks()))
        return "ok"

    ex, _ = executor(quick)
    before = len(asyncio.all_tasks())
    results = await ex.run_calls([call(str(i), "quick") for i in range(6)], run_id="r", step=0)
    assert [r.output for r in results] == ["ok"] * 6
    assert tasks == [anyio.get_current_task().id] * 6  # one after another, in the calling task
    assert running == [before] * 6  # and no task was started for them


async def test_results_come_in_call_order_and_completion_events_in_completion_order() -> None:
    second_done = anyio.Event()

    @tool
    async def slow() -> str:
        await second_done.wait()
        return "slow"

    @tool
    async def fast() -> str:
        second_done.set()
        return "fast"

    ex, rec = executor(slow, fast)
    completed: list[tuple[int, str]] = []
    results = await ex.run_calls(
        [call("1", "slow"), call("2", "fast")],
        run_id="r",
        step=4,
        on_result=lambda index, result: completed.append((index, result.output)),
    )
    assert [r.output for r in results] == ["slow", "fast"]
    assert [e.result.output for e in rec.of(ToolSucceeded)] == ["fast", "slow"]
    assert completed == [(1, "fast"), (0, "slow")]
    assert {e.step for e in rec.events} == {4}
    assert {e.run_id for e in rec.events} == {"r"}


async def test_the_capacity_limiter_caps_running_tools() -> None:
    release = anyio.Event()
    running = 0
    peak = 0

    @tool
    async def work(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return n

    ex, rec = executor(work, max_concurrency=2)
    results: list[ToolResult] = []

    async def run() -> None:
        results.extend(
            await ex.run_calls([call(str(i), "work", f'{{"n": {i}}}') for i in range(5)], run_id="r", step=0)
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert running == 2
        assert len(rec.of(ToolStarted)) == 2  # a call "starts" when it gets a slot
        release.set()
    assert peak == 2
    assert [r.output for r in results] == ["0", "1", "2", "3", "4"]


async def test_a_tool_may_run_another_tool_through_the_same_executor() -> None:
    @tool
    async def inner() -> str:
        return "inner"

    holder: list[ToolExecutor] = []

    @tool
    async def outer() -> str:
        nested = await holder[0].run_call(call("n1", "inner"), run_id="r", step=0)
        return "outer+" + nested.output

    ex, _ = executor(inner, outer, max_concurrency=2)
    holder.append(ex)
    assert (await ex.run_call(call("o1", "outer"), run_id="r", step=0)).output == "outer+inner"


async def test_sequential_mode_runs_one_call_after_another() -> None:
    @tool
    async def step(n: int) -> int:
        return n

    ex, rec = executor(step)
    await ex.run_calls(
        [call("1", "step", '{"n": 1}'), call("2", "step", '{"n": 2}')], run_id="r", step=0, parallel=False
    )
    assert rec.kinds() == [
        ("ToolStarted", "1"),
        ("ToolSucceeded", "1"),
        ("ToolStarted", "2"),
        ("ToolSucceeded", "2"),
    ]


# -- one deadline per batch -------------------------------------------------------------------------------
# When every call of a concurrent batch has the same time limit, all get a slot at once and nobody listens
# to the events, the batch's task group carries that limit as one deadline instead of a scope per call.


def _count_scopes(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the per-call timeout scopes the executor opens."""
    opened: list[float] = []
    real = anyio.move_on_after

    def spy(delay: float | None, shield: bool = False) -> anyio.CancelScope:
        opened.append(delay if delay is not None else -1.0)
        return real(delay, shield=shield)

    monkeypatch.setattr(anyio, "move_on_after", spy)
    return opened


async def test_a_shared_deadline_times_out_only_the_calls_still_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    never = anyio.Event()

    @tool
    async def hang() -> str:
        await never.wait()
        return "unreachable"

    @tool
    async def quick(n: int) -> int:
        return n

    opened = _count_scopes(monkeypatch)
    recorder = Recorder()
    ex = ToolExecutor([hang, quick], emit=recorder, default_timeout=0.05, emit_may_wait=lambda: False)
    completed: list[int] = []
    calls = [call("1", "hang"), call("2", "quick", '{"n": 2}'), call("3", "nope"), call("4", "hang")]
    results = await ex.run_calls(calls, run_id="r", step=0, on_result=lambda i, _: completed.append(i))
    assert opened == []  # no scope per call: the batch's deadline timed them out
    assert [(r.call_id, r.error_type) for r in results] == [
        ("1", "timeout"),
        ("2", None),
        ("3", "unknown_tool"),
        ("4", "timeout"),
    ]
    assert results[0].output == (
        'TOOL_ERROR: {"errorType":"timeout","error":"tool \'hang\' timed out after 0.05 s",'
        '"tool":"hang","callId":"1"}'
    )
    assert results[0].duration >= 0.05
    assert sorted(completed) == [0, 1, 2, 3]
    assert completed[2:] == [0, 3]  # the cut calls complete last, in call order
    for call_id in "1234":
        assert [kind for kind, cid in recorder.kinds() if cid == call_id][:1] == ["ToolStarted"]
        assert sum(cid == call_id for _, cid in recorder.kinds()) == 2  # started, then one completion
    assert recorder.kinds()[-2:] == [("ToolFailed", "1"), ("ToolFailed", "4")]


async def test_each_call_has_its_own_scope_when_anyone_listens_or_limits_differ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @tool(timeout=0.01)
    async def hang() -> None:
        await anyio.Event().wait()

    @tool
    async def quick() -> str:
        return "ok"

    opened = _count_scopes(monkeypatch)
    listening = ToolExecutor([quick], emit=Recorder(), default_timeout=5, emit_may_wait=lambda: True)
    await listening.run_calls([call("1", "quick"), call("2", "quick")], run_id="r", step=0)
    assert opened == [5, 5]
    opened.clear()
    mixed = ToolExecutor([hang, quick], emit=Recorder(), default_timeout=5, emit_may_wait=lambda: False)
    results = await mixed.run_calls([call("1", "hang"), call("2", "quick")], run_id="r", step=0)
    assert sorted(opened) == [0.01, 5]
    assert [r.error_type for r in results] == ["timeout", None]


async def test_calls_waiting_for_a_slot_keep_their_own_time_limit() -> None:
    @tool
    async def nap() -> str:
        await anyio.sleep(0.05)
        return "rested"

    # One slot, five calls: 0.25 s in all, each well inside its 0.2 s; one shared deadline would cut the last.
    ex, _ = executor(nap, max_concurrency=1, default_timeout=0.2, emit_may_wait=lambda: False)
    results = await ex.run_calls([call(str(i), "nap") for i in range(5)], run_id="r", step=0)
    assert [r.output for r in results] == ["rested"] * 5


async def test_a_completion_event_cut_by_the_shared_deadline_is_delivered_once_after_it() -> None:
    # Nobody listens when the batch starts, so it shares one deadline; then a subscriber with no buffer
    # arrives and does not read until the deadline has passed, which cuts the publish waiting for it.
    bus = EventBus("r")
    subscribed = anyio.Event()
    subscription: list[Any] = []

    @tool
    async def quick() -> str:
        subscription.append(bus.subscribe(buffer=0))
        subscribed.set()
        return "done"

    @tool
    async def hang() -> None:
        await anyio.Event().wait()

    ex = ToolExecutor([quick, hang], emit=bus.publish, default_timeout=0.05, emit_may_wait=bus.has_listeners)
    seen: list[tuple[str, str]] = []

    async def read() -> None:
        await subscribed.wait()
        await anyio.sleep(0.1)  # past the deadline
        async for event in subscription[0]:
            seen.append((type(event).__name__, event.call.id))  # type: ignore[attr-defined]
            if len(seen) == 3:
                break

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        results = await ex.run_calls([call("1", "quick"), call("2", "hang")], run_id="r", step=0)
    assert [r.error_type for r in results] == [None, "timeout"]
    assert seen == [("ToolSucceeded", "1"), ("ToolStarted", "2"), ("ToolFailed", "2")]


# -- sync tools ----------------------------------------------------------------------------------------


async def test_sync_tools_run_in_worker_threads_concurrently() -> None:
    loop_thread = threading.get_ident()
    barrier = threading.Barrier(2, timeout=5)  # both threads must be inside their tool at once

    @tool
    def blocking(name: str) -> int:
        barrier.wait()
        return threading.get_ident()

    ex, _ = executor(blocking)
    results = await ex.run_calls(
        [call("1", "blocking", '{"name": "a"}'), call("2", "blocking", '{"name": "b"}')], run_id="r", step=0
    )
    threads = {r.value for r in results}
    assert len(threads) == 2
    assert loop_thread not in threads


async def test_inline_sync_tools_run_on_the_event_loop() -> None:
    @tool(inline=True)
    def quick() -> int:
        return threading.get_ident()

    ex, _ = executor(quick)
    assert (await ex.run_call(call("1", "quick"), run_id="r", step=0)).value == threading.get_ident()


async def test_a_timed_out_sync_tool_is_abandoned_promptly() -> None:
    release = threading.Event()
    finished = threading.Event()

    @tool(timeout=0.01)
    def stuck() -> str:
        release.wait(5)
        finished.set()
        return "late"

    ex, _ = executor(stuck)
    result = await ex.run_call(call("1", "stuck"), run_id="r", step=0)
    assert result.error_type == "timeout"
    assert not finished.is_set()  # the thread still runs; its result is discarded
    release.set()
    await anyio.to_thread.run_sync(finished.wait, 5)


# -- progress --------------------------------------------------------------------------------------------


async def test_tools_report_progress_through_their_context() -> None:
    @tool
    async def crawl(pages: int, ctx: ToolContext) -> str:
        for page in range(pages):
            await ctx.emit_progress(f"page {page + 1}/{pages}", {"page": page + 1})
        return ctx.call_id

    @tool
    def index(ctx: ToolContext) -> str:
        ctx.emit_progress_sync("indexing")
        return ctx.tool_name

    ex, rec = executor(crawl, index)
    results = await ex.run_calls(
        [call("c1", "crawl", '{"pages": 2}'), call("c2", "index")], run_id="run-7", step=3
    )
    assert [r.output for r in results] == ["c1", "index"]
    progress = rec.of(ToolProgress)
    assert sorted((p.call_id, p.tool, p.message, p.data) for p in progress) == [
        ("c1", "crawl", "page 1/2", {"page": 1}),
        ("c1", "crawl", "page 2/2", {"page": 2}),
        ("c2", "index", "indexing", None),
    ]
    assert {(p.run_id, p.step) for p in progress} == {("run-7", 3)}
    for p in progress:  # progress comes between the call's start and its completion
        kinds = [(type(e), getattr(e, "call", None)) for e in rec.events]
        started = kinds.index(
            (ToolStarted, call(p.call_id, p.tool, '{"pages": 2}' if p.tool == "crawl" else ""))
        )
        assert started < rec.events.index(p)


async def test_progress_after_the_call_finished_is_refused() -> None:
    kept: list[ToolContext] = []

    @tool
    async def remember(ctx: ToolContext) -> None:
        kept.append(ctx)

    ex, _ = executor(remember)
    await ex.run_call(call("1", "remember"), run_id="r", step=0)
    with pytest.raises(RuntimeError, match="has finished"):
        await kept[0].emit_progress("too late")


async def test_emit_progress_sync_outside_a_worker_thread_explains_itself() -> None:
    ctx = ToolContext(run_id="r", step=0, call_id="c", tool_name="t", emit=Recorder())
    with pytest.raises(RuntimeError):
        ctx.emit_progress_sync("x")


async def test_an_inline_sync_tool_s_progress_is_published_when_it_returns_before_its_result() -> None:
    @tool(inline=True)
    def quick(ctx: ToolContext) -> str:
        ctx.emit_progress_sync("parsed", {"rows": 3})
        ctx.emit_progress_sync("checked")
        return "ok"

    @tool(inline=True)
    def broken(ctx: ToolContext) -> str:
        ctx.emit_progress_sync("parsed")
        raise ValueError("row 2 is malformed")

    ex, rec = executor(quick, broken)
    results = await ex.run_calls([call("1", "quick"), call("2", "broken")], run_id="r", step=0)
    assert results[0].output == "ok"
    assert results[1].error == "ValueError: row 2 is malformed"
    seen = [(type(e).__name__, getattr(e, "message", None)) for e in rec.events if type(e) is not ToolStarted]
    assert seen == [
        ("ToolProgress", "parsed"),
        ("ToolProgress", "checked"),
        ("ToolSucceeded", None),
        ("ToolProgress", "parsed"),  # a failing tool's progress is not lost either
        ("ToolFailed", None),
    ]
    assert rec.of(ToolProgress)[0].data == {"rows": 3}


async def test_an_async_tool_calling_emit_progress_sync_is_told_to_await_emit_progress() -> None:
    @tool
    async def crawl(ctx: ToolContext) -> None:
        ctx.emit_progress_sync("x")

    ex, rec = executor(crawl)
    result = await ex.run_call(call("1", "crawl"), run_id="r", step=0)
    assert result.error is not None
    assert "async tools use 'await ctx.emit_progress(...)'" in result.error
    assert rec.of(ToolProgress) == []


async def test_events_go_through_the_run_bus_stamped() -> None:
    @tool
    async def hello(ctx: ToolContext) -> str:
        await ctx.emit_progress("working")
        return "hi"

    bus = EventBus("run-1")
    seen: list[Event] = []
    bus.on(None, seen.append)
    ex = ToolExecutor(ToolRegistry([hello]), emit=bus.publish)
    await ex.run_call(call("c1", "hello"), run_id="run-1", step=0)
    assert [(type(e), e.seq) for e in seen] == [(ToolStarted, 1), (ToolProgress, 2), (ToolSucceeded, 3)]


# -- cancellation and fatal errors --------------------------------------------------------------------------


async def test_cancelling_a_batch_cancels_every_running_tool_and_leaves_nothing_running() -> None:
    started: list[str] = []
    cleaned: list[str] = []
    all_started = anyio.Event()

    @tool
    async def wait_forever(name: str) -> None:
        started.append(name)
        if len(started) == 3:
            all_started.set()
        try:
            await anyio.Event().wait()
        finally:
            cleaned.append(name)

    @tool
    async def quick() -> str:
        return "done"

    ex, rec = executor(wait_forever, quick)
    finished: list[int] = []
    calls = [call("q", "quick")] + [call(n, "wait_forever", f'{{"name": "{n}"}}') for n in "abc"]
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def run() -> None:
                await ex.run_calls(calls, run_id="r", step=0, on_result=lambda i, _: finished.append(i))

            group.start_soon(run)
            await all_started.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert sorted(cleaned) == ["a", "b", "c"]
    assert finished == [0]  # only the quick call completed; the runtime writes synthetic results for the rest
    assert [e.call.id for e in rec.of(ToolSucceeded)] == ["q"]
    assert not rec.of(ToolFailed)
    assert not [t for t in anyio.get_running_tasks() if (t.name or "").startswith("tool ")]


async def test_a_base_exception_from_a_tool_propagates_and_cancels_its_siblings() -> None:
    class Fatal(BaseException):
        pass

    sibling_started = anyio.Event()
    sibling_cancelled = False

    @tool
    async def sibling() -> None:
        nonlocal sibling_cancelled
        sibling_started.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            sibling_cancelled = True
            raise

    @tool
    async def fatal() -> None:
        await sibling_started.wait()
        raise Fatal("stop everything")

    ex, _ = executor(sibling, fatal)
    with pytest.raises(Fatal, match="stop everything"):
        await ex.run_calls([call("1", "sibling"), call("2", "fatal")], run_id="r", step=0)
    assert sibling_cancelled


def test_executor_options_are_checked() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        ToolExecutor([], max_concurrency=0, emit=Recorder())
    with pytest.raises(ValueError, match="default_timeout"):
        ToolExecutor([], default_timeout=0, emit=Recorder())


async def test_an_event_the_shared_deadline_cut_mid_delivery_is_not_published_twice() -> None:
    # Nobody listens when the batch starts, so it takes one shared deadline. A subscriber that arrives
    # mid-batch and reads nothing makes the quick call's ToolSucceeded wait; the deadline cuts that publish.
    # The bus hands the cut event over later; the executor must not publish it again.
    bus = EventBus("run")
    late: list[Subscription[Event]] = []

    @tool
    async def quick() -> str:
        late.append(bus.subscribe(buffer=0))
        return "ok"

    @tool
    async def slow() -> str:
        await anyio.sleep(10)
        return "late"

    ex = ToolExecutor(
        [quick, slow],
        default_timeout=0.2,
        emit=functools.partial(bus.publish, owned=True),
        emit_may_wait=bus.has_listeners,
    )
    seen: list[tuple[str, str]] = []

    async def read_late() -> None:
        await anyio.sleep(0.4)  # after the deadline
        with anyio.move_on_after(0.5):  # whatever comes, duplicates included
            async for event in late[0]:
                if isinstance(event, ToolSucceeded | ToolFailed):
                    seen.append((type(event).__name__, event.call.id))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(read_late)
            results = await ex.run_calls([call("1", "slow"), call("2", "quick")], run_id="run", step=0)
    assert [r.ok for r in results] == [False, True]
    assert seen == [("ToolSucceeded", "2"), ("ToolFailed", "1")]

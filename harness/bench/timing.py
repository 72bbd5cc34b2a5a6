"""The one timing helper of the benchmark and of benchmarks/: how long one call of a kernel
takes, measured so that the figure does not depend on what was timed before it.

One *entry* is one callable timed on one set of inputs. Each repeat of an entry is a
measurement of its own, in isolation:

- its inputs are built afresh (``make_inputs()``, the caller seeds it) and copied into a
  work set that every timed call gets refreshed (a kernel may overwrite its inputs, and a
  reused, overwritten input can turn denormal and slow);
- its own warm-up calls (compilation, autotuning, scratch held per stream);
- under ``graph``, its own CUDA graph, captured on its own side stream, one replay's output
  validated (when the caller gives a check), and destroyed afterwards;
- the L2 is flushed (a scratch write larger than the L2) before every timed call;
- at the end every tensor of the entry is released and the caching allocator emptied, so
  the next entry meets the same allocator and no graph pool of this one.

Timed on a GPU by device events. Graph replays are enqueued while the GPU is held by a
sleep kernel, so the host is ahead and no host submission gap falls between two events:
the figure is device time only. An eager call is timed from an idle GPU (synchronised
after its refresh), so it includes the host's launch cost, as an eager decode step pays
it. On a CPU: wall time. A repeat's figure is the median over its calls; an entry's
spread is the min and max of its repeats' figures.
"""

from __future__ import annotations

import gc
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch

WARM_CALLS = 3           # eager calls before timing (compilation, autotuning, held scratch)
GRAPH_BATCH = 16         # replays enqueued behind one sleep kernel


@dataclass(frozen=True)
class Spread:
    """The figures of the repeats of one entry (milliseconds): median, min and max."""

    repeats: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.repeats)

    @property
    def low(self) -> float:
        return min(self.repeats)

    @property
    def high(self) -> float:
        return max(self.repeats)


class NotCapturable(Exception):
    """A call that cannot be timed as a CUDA graph; the message is the reason."""


def _first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:160] if lines else ""


def capture_reason(error: BaseException | None, caught: list) -> str | None:
    """Why a capture failed, or None when it succeeded. In order: the exception the capture
    raised, traced back to the first one where it names "a previous error" (ending a broken
    capture raises again; the first error is the cause), with its type and first line, and
    a note when it is a synchronisation (an aborted capture also leaves torch's empty-graph
    warning: the error is the cause); torch's warning that the graph is empty (the call
    launched no device work while captured: it ran on the host); our own NotCapturable (a
    replay whose output fails validation); any other warning about the graph. Pure: fed
    the outcome of a capture, for testing."""
    if error is not None and not isinstance(error, NotCapturable):
        while (isinstance(error.__context__, Exception)
               and "previous error" in _first_line(error).lower()):
            error = error.__context__
        first = _first_line(error)
        sync = ("; the call synchronises with the host (.item(), .tolist(), .cpu(), a "
                "pageable copy)" if "capturing" in first.lower() else "")
        return f"capture raised {type(error).__name__}" + (f": {first}" if first else "") + sync
    lines = [_first_line(getattr(w, "message", w)) for w in caught]
    if any("graph" in line.lower() and "empty" in line.lower() for line in lines):
        return ("the captured graph is empty: the call launched no device work while "
                "captured (it runs on the host)")
    if error is not None:
        return str(error)
    for line in lines:
        if "graph" in line.lower():
            return f"capture warned: {line}"
    return None


def classify_capture(capture: Callable[[], object]) -> object:
    """Run ``capture()`` recording warnings; return its result, or raise NotCapturable with
    ``capture_reason``'s sentence."""
    error, result = None, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = capture()
        except Exception as exc:      # noqa: BLE001 - any failure to capture is a reason
            error = exc
    reason = capture_reason(error, caught)
    if reason is not None:
        raise NotCapturable(reason)
    return result


def same_output(a, b) -> bool:
    """Whether two outputs of one call agree: tensors of integers exactly, floating tensors
    bit for bit or within float32 rounding of a reordered sum (rtol 1e-5), tuples and lists
    element by element, anything else by ``==``."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_output(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
        return bool(torch.equal(a, b))
    return a == b


def release(device: torch.device) -> None:
    """Free what an entry left on a GPU: Python garbage (graphs, tensors in cycles), then
    the caching allocator's blocks. Nothing on a CPU."""
    if device.type == "cuda":
        gc.collect()
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def flush_buffer(device: torch.device) -> torch.Tensor:
    """Scratch whose write evicts the L2: four times the L2 (at least 256 MiB) on a GPU."""
    if device.type != "cuda":
        return torch.empty(1 << 20, dtype=torch.int8, device=device)
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (64 << 20)
    return torch.empty(max(4 * l2, 256 << 20), dtype=torch.int8, device=device)


class _Work:
    """A call's work set: a copy of ``inputs`` refreshed from them before each timed call."""

    def __init__(self, inputs: dict):
        self.inputs = inputs
        self.work = {k: v.clone() if isinstance(v, torch.Tensor) else v
                     for k, v in inputs.items()}

    def refresh(self) -> None:
        for name, value in self.inputs.items():
            if isinstance(value, torch.Tensor):
                self.work[name].copy_(value)


def _capture(call, work: _Work, seed: int, check: Callable | None):
    """A CUDA graph of ``call(work, seed)`` on a fresh side stream, after two eager warm-up
    calls on that stream (scratch a kernel holds per stream then exists outside the graph's
    pool); with ``check``, one replay's output must pass ``check(output, inputs)`` (the
    family's exact validation: a graph that replays a value computed on the host at capture
    time fails it). A replay is not compared with an eager call: a graphed sampler may draw
    fresh noise on every replay (torch's generator under capture), as an engine's does."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            work.refresh()
            call(work.work, seed)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    work.refresh()
    torch.cuda.synchronize()
    main = torch.cuda.current_stream()
    try:
        with torch.cuda.graph(graph, stream=side):
            out = call(work.work, seed)
    finally:                   # a capture_end that raises leaves the side stream current
        torch.cuda.set_stream(main)
    work.refresh()
    graph.replay()
    torch.cuda.synchronize()
    if check is not None:
        try:
            check(out, work.inputs)
        except Exception as exc:   # noqa: BLE001 - whatever the validation raises
            raise NotCapturable(f"a replay's output fails the family's validation: "
                                f"{_first_line(exc)}") from None
    return graph


def _sleep_cycles(device: torch.device) -> float:
    """GPU clock cycles of ``torch.cuda._sleep`` per millisecond (measured once)."""
    global _CYCLES_PER_MS
    if _CYCLES_PER_MS is None:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        begin.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        torch.cuda.synchronize(device)
        _CYCLES_PER_MS = 10_000_000 / max(begin.elapsed_time(end), 1e-3)
    return _CYCLES_PER_MS


_CYCLES_PER_MS: float | None = None


def _graph_ms(graph, work: _Work, flush: torch.Tensor, calls: int) -> list[float]:
    """Device milliseconds of ``calls`` replays, each after a refresh and an L2 flush,
    enqueued in batches behind a sleep kernel long enough to cover the host's enqueueing."""
    device = flush.device
    times: list[float] = []
    host_ms = 0.5                 # per replay, first guess; measured on each batch
    while len(times) < calls:
        batch = min(GRAPH_BATCH, calls - len(times))
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(int(2 * host_ms * batch * _sleep_cycles(device)))
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(batch)]
        started = time.perf_counter()
        for begin, end in events:
            work.refresh()
            flush.zero_()
            begin.record()
            graph.replay()
            end.record()
        host_ms = max(host_ms, (time.perf_counter() - started) * 1e3 / batch)
        torch.cuda.synchronize(device)
        times += [begin.elapsed_time(end) for begin, end in events]
    return times


def _eager_ms(call, work: _Work, flush: torch.Tensor, calls: int) -> list[float]:
    """Milliseconds of ``calls`` eager calls, each from an idle device after a refresh and
    an L2 flush: device events on a GPU (the host's launch cost included), wall time on a
    CPU."""
    cuda = flush.device.type == "cuda"
    times = []
    for i in range(calls):
        work.refresh()
        flush.zero_()
        if cuda:
            torch.cuda.synchronize(flush.device)
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            call(work.work, 1000 + i)
            end.record()
            torch.cuda.synchronize(flush.device)
            times.append(begin.elapsed_time(end))
        else:
            started = time.perf_counter()
            call(work.work, 1000 + i)
            times.append((time.perf_counter() - started) * 1e3)
    return times


def time_entry(call: Callable[[dict, int], object], make_inputs: Callable[[], dict],
               device: torch.device, calls: int, graph: bool = False,
               check: Callable[[object, dict], object] | None = None
               ) -> tuple[float, float | str]:
    """One isolated repeat of one entry: (eager median ms, graph median ms or the reason
    the call cannot be captured; the eager median again when ``graph`` is False).
    ``call(work, seed)`` runs the kernel on the work set; ``check(output, inputs)`` raises
    when a graph replay's output is wrong. Everything the repeat allocated is released
    before it returns, whether it returns or raises."""
    try:
        return _repeat(call, _Work(make_inputs()), flush_buffer(device), calls, graph, check)
    finally:
        release(device)


def _repeat(call, work: _Work, flush: torch.Tensor, calls: int, graph: bool, check):
    """The eager figure first, then (``graph``) the capture and its replays: a call that
    cannot be captured, or whose graph cannot be replayed, keeps its eager figure and gets
    the reason, and what the failed capture left behind is undone (``after_failed_capture``)."""
    for i in range(WARM_CALLS):
        work.refresh()
        call(work.work, 1000 + i)
    eager = statistics.median(_eager_ms(call, work, flush, calls))
    if not graph:
        return eager, eager
    try:
        captured = classify_capture(lambda: _capture(call, work, 1000, check))
        return eager, statistics.median(_graph_ms(captured, work, flush, calls))
    except NotCapturable as exc:
        reason = str(exc)
    except Exception as exc:    # noqa: BLE001 - a graph that cannot be replayed: a reason
        reason = f"graph replay raised {type(exc).__name__}: {_first_line(exc)}"
    after_failed_capture(flush.device)
    return eager, reason


def after_failed_capture(device: torch.device) -> None:
    """Undo what a failed capture leaves behind, so that the eager calls after it (this
    entry's next repeats, the next entries) run as before it: the error it may have left
    on the device (``_capture`` already restored the current stream) and the capture state
    of torch's CUDA generators. A capture that ends in an error never reaches the
    generators' capture epilogue: each default generator stays "capturing", and every later
    draw from it outside a capture raises "Offset increment outside graph capture
    encountered unexpectedly". Each is given a fresh copy of its state (same seed and
    offset, not capturing). Nothing on a CPU."""
    if device.type != "cuda":
        return
    try:
        torch.cuda.synchronize(device)
    except Exception:   # noqa: BLE001 - a failed capture may leave an error behind
        pass
    for generator in torch.cuda.default_generators:
        if hasattr(generator, "graphsafe_set_state"):
            generator.graphsafe_set_state(generator.clone_state())


def host_us(fn: Callable[[], object], reps: int = 300) -> float:
    """Host microseconds per call of ``fn`` (mean of ``reps`` back-to-back calls after ten
    warm-up calls; the device is not waited for inside the loop)."""
    for _ in range(10):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(reps):
        fn()
    elapsed = time.perf_counter() - started
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return elapsed / reps * 1e6


def profile_table(call: Callable[[dict, int], object], make_inputs: Callable[[], dict],
                  device: torch.device, calls: int = 5, rows: int = 14) -> str:
    """torch.profiler's table of ``calls`` eager calls after the warm-up, sorted by device
    time on a GPU (host time on a CPU): where one call's time goes, launch by launch. The
    inputs' refresh before each call shows as copy rows."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    try:
        work = _Work(make_inputs())
        for i in range(WARM_CALLS):
            work.refresh()
            call(work.work, 1000 + i)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities) as prof:
            for i in range(calls):
                work.refresh()
                call(work.work, 1000 + i)
            if cuda:
                torch.cuda.synchronize(device)
        del work
        return prof.key_averages().table(
            sort_by="cuda_time_total" if cuda else "cpu_time_total", row_limit=rows)
    finally:
        release(device)

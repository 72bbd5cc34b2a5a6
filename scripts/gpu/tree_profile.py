"""One-off GPU diagnostic of triton-tree-rejection at 64x16x151936 (removed after its run,
cited in docs/measurements/bench.md): device time of the kernel under launch variants and
input variants, and a phase profile of each program (%globaltimer stamps in a copy of
_tree_kernel): greedy root argmax, walk, race run, ticket, finish."""

import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor

import torch
import triton
import triton.language as tl

from sampling_harness.kernels.tree_rejection import triton_tree_rejection as T
from sampling_harness.kernels.tree_rejection.tree_race import residual_run
from sampling_harness.kernels.tree_rejection.tree_walk import argmax_run, last_nodes, partials
from sampling_harness.suites.tree_rejection.bench import bench_batch

finish = T.finish


@triton.jit
def now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                     is_pure=False, pack=1)


@triton.jit
def stamp(prof_ptr, k):
    tl.store(prof_ptr + tl.program_id(0) * 8 + k, now())


@triton.jit(do_not_specialize=["seed", "B", "N", "V", "n_chunks", "per_split", "splits"])
def _timed_kernel(prof_ptr, out_ptr, tickets_ptr, scratch_ptr, tokens_ptr, parents_ptr,
                  target_ptr, draft_ptr, greedy_ptr, seed, B, N, V, n_chunks, per_split, splits,
                  BLOCK_B: tl.constexpr, Q: tl.constexpr, K: tl.constexpr, S: tl.constexpr,
                  DRAFT: tl.constexpr, STAGES: tl.constexpr):
    stamp(prof_ptr, 0)
    block = tl.program_id(0) // splits
    split = tl.program_id(0) - block * splits
    requests = block * BLOCK_B + tl.arange(0, BLOCK_B)
    ok = requests < B
    base = requests.to(tl.int64) * N
    greedy = ok & (tl.load(greedy_ptr + requests, mask=ok, other=0) != 0)
    drawing = ok & ~greedy
    first = split * per_split
    last = tl.minimum(first + per_split, n_chunks)
    best = tl.full([BLOCK_B], -2.0, tl.float32)
    winner = tl.zeros([BLOCK_B], tl.int32) + first
    if tl.max(greedy.to(tl.int32), axis=0) > 0:
        top, column = argmax_run(target_ptr, requests.to(tl.int64) * (N + 1), greedy, V,
                                 first, last, BLOCK_B, Q, STAGES)
        best = tl.where(greedy, top, best)
        winner = tl.where(greedy, column, winner)
    stamp(prof_ptr, 1)
    scores, indices, sums = partials(scratch_ptr, B, splits)
    blocks = tl.num_programs(0) // splits
    current, depth, spent, kids, count = last_nodes(
        out_ptr, sums, tickets_ptr + blocks + block, tokens_ptr, parents_ptr, target_ptr,
        draft_ptr, seed, requests, ok, drawing, split, B, N, V, n_chunks, first, last, splits,
        BLOCK_B, Q, K, S, DRAFT, STAGES)
    stamp(prof_ptr, 2)
    if tl.max(drawing.to(tl.int32), axis=0) > 0:
        rows = requests.to(tl.int64) * (N + 1) + current + 1
        top, chunk = residual_run(target_ptr, draft_ptr, tokens_ptr, parents_ptr, seed,
                                  requests, base, drawing, rows, drawing, current, spent,
                                  kids, N, V, n_chunks, first, last, BLOCK_B, Q, K, DRAFT,
                                  False, STAGES)
        best = tl.where(drawing, top, best)
        winner = tl.where(drawing, chunk, winner)
    stamp(prof_ptr, 3)
    tl.store(scores + split * B + requests, best, mask=ok)
    tl.store(indices + split * B + requests, winner, mask=ok)
    tl.debug_barrier()
    ticket = tl.atomic_add(tickets_ptr + block, 1)
    stamp(prof_ptr, 4)
    kind = tl.max(greedy.to(tl.int64), axis=0) + (ticket == splits - 1).to(tl.int64) * 2
    tl.store(prof_ptr + tl.program_id(0) * 8 + 6, kind)
    tl.store(prof_ptr + tl.program_id(0) * 8 + 7, tl.max(depth, axis=0))
    if ticket == splits - 1:
        tl.atomic_xchg(tickets_ptr + block, 0)
        tl.atomic_xchg(tickets_ptr + blocks + block, 0)
        finish(out_ptr, tokens_ptr, parents_ptr, target_ptr, draft_ptr, scores, indices, seed,
               requests, ok, greedy, current, depth, spent, kids, count, B, N, V, n_chunks,
               splits, BLOCK_B, Q, K, S, DRAFT, STAGES)
        stamp(prof_ptr, 5)


def device_ms(fn, calls=40):
    flush = torch.empty(64 * 2**20, device="cuda")
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(calls)]
    for b, e in ev:
        flush.zero_()
        b.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(b.elapsed_time(e) for b, e in ev) * 1e3


def kernel_args(inputs):
    return (inputs["draft_token_ids"], inputs["parent_ids"], inputs["draft_probs"],
            inputs["target_probs"], inputs["greedy"])


def warm(job):
    """Compile one variant in its own process (fills the Triton cache)."""
    mode, stages, timed = job
    torch.manual_seed(0)
    inputs = bench_batch(f"4x16x151936:{mode}", torch.device("cuda"))
    if timed:
        profile(inputs, stages)
    else:
        T.tree_rejection_triton(*kernel_args(inputs), 5, stages=stages)
    torch.cuda.synchronize()
    return job


def profile(inputs, stages=T.GPU_STAGES):
    device = inputs["target_probs"].device
    args = kernel_args(inputs)
    drawn = args[2] is not None
    plan = T._Plan(args[3].shape[0], args[0].shape[1], args[3].shape[2], device, drawn,
                   T.GPU_WARPS, stages, T.KIDS, T.GPU_PROGRAMS_PER_SM, T.GPU_RESIDENT_PER_SM)
    prof = torch.zeros((plan.grid[0], 8), dtype=torch.int64, device=device)
    out = torch.empty((plan.batch, plan.nodes + 1), dtype=torch.int64, device=device)
    target = args[3]
    draft = target if args[2] is None else args[2]
    launch = lambda: _timed_kernel[plan.grid](prof, out, plan.tickets, plan.scratch, args[0],
                                             args[1], target, draft, args[4], 7, *plan.args,
                                             **plan.consts)
    launch()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.empty(64 * 2**20, device=device).zero_()
        launch()
        torch.cuda.synchronize()
    return prof.cpu(), out.cpu(), plan


def phase_table(prof, splits):
    t = prof.double()
    t0 = t[:, 0].min()
    rows = []
    kind = prof[:, 6]
    names = ["start", "greedy argmax", "walk", "race run", "ticket", "finish (last)"]
    for label, mask in (("random", (kind & 1) == 0), ("greedy", (kind & 1) == 1)):
        if not mask.any():
            continue
        sel = t[mask]
        line = [label, f"n={int(mask.sum())}"]
        line.append(f"start {float((sel[:, 0] - t0).median()) / 1e3:.1f}/"
                    f"{float((sel[:, 0] - t0).max()) / 1e3:.1f}")
        for k in range(1, 5):
            d = (sel[:, k] - sel[:, k - 1]) / 1e3
            line.append(f"{names[k]} {float(d.median()):.1f}/{float(d.max()):.1f}")
        lastm = (prof[mask][:, 6] & 2) == 2
        d = (sel[lastm][:, 5] - sel[lastm][:, 4]) / 1e3
        line.append(f"finish {float(d.median()):.1f}/{float(d.max()):.1f}")
        line.append(f"end {float((sel[lastm][:, 5] - t0).median()) / 1e3:.1f}/"
                    f"{float((sel[lastm][:, 5] - t0).max()) / 1e3:.1f}")
        line.append(f"depth {float(prof[mask][:, 7].double().mean()):.2f}")
        rows.append("  ".join(line))
    return rows


@triton.jit
def empty1(x_ptr):
    pass


@triton.jit(do_not_specialize=["i0", "i1", "i2", "i3", "i4", "i5", "i6"])
def empty16(a0, a1, a2, a3, a4, a5, a6, a7, a8, i0, i1, i2, i3, i4, i5, i6,
            C0: tl.constexpr, C1: tl.constexpr, C2: tl.constexpr, C3: tl.constexpr,
            C4: tl.constexpr, C5: tl.constexpr):
    pass


def eager_floor(cuda):
    """(eager, graph) medians in us of the bench's own timing (harness/bench/timing.py):
    an empty Triton kernel of 1 and of 16 arguments (the tree kernel's count), a torch op,
    and the tree wrapper (listed, drawn) at stages 5 and 3."""
    from sampling_harness.bench.timing import time_entry
    make = lambda: {"x": torch.zeros(1024, device=cuda)}
    ptrs = lambda w: [w["x"]] * 9
    entries = {
        "empty Triton kernel, 1 arg": lambda w, s: empty1[(1,)](w["x"]),
        "empty Triton kernel, 16 args": lambda w, s: empty16[(320,)](
            *ptrs(w), 64, 16, 151936, 75, 15, 5, s, C0=1, C1=512, C2=16, C3=32, C4=False,
            C5=3),
        "torch x.add_(1)": lambda w, s: w["x"].add_(1),
    }
    for name, call in entries.items():
        eager, graph = time_entry(call, make, cuda, 30, graph=True)
        print(f"  {name}: eager {eager * 1e3:.1f} us, graph {graph * 1e3:.1f} us", flush=True)
    for mode in ("listed", "drawn"):
        for stages in (5, 3):
            def make_tree(mode=mode):
                torch.manual_seed(1)
                return bench_batch(f"64x16x151936:{mode}", cuda)
            call = lambda w, s, st=stages: T.tree_rejection_triton(*kernel_args(w), s, stages=st)
            eager, graph = time_entry(call, make_tree, cuda, 30, graph=True)
            print(f"  tree {mode} stages={stages}: eager {eager * 1e3:.1f} us, graph "
                  f"{graph * 1e3:.1f} us, eager/graph {eager / graph:.2f}", flush=True)
    x = torch.zeros(1024, device=cuda)
    for name, launch in (("empty1", lambda: empty1[(1,)](x)),
                         ("empty16", lambda: empty16[(320,)](*[x] * 9, 64, 16, 151936, 75, 15,
                                                             5, 7, C0=1, C1=512, C2=16, C3=32,
                                                             C4=False, C5=3))):
        for _ in range(10):
            launch()
        torch.cuda.synchronize()
        import time
        t = time.perf_counter()
        for _ in range(2000):
            launch()
        host = (time.perf_counter() - t) / 2000 * 1e6
        torch.cuda.synchronize()
        print(f"  host us per launch, {name}: {host:.1f}", flush=True)


def main():
    cuda = torch.device("cuda")
    jobs = [(m, s, False) for m in ("listed", "drawn") for s in (5, 3)]
    jobs += [("listed", 3, True), ("drawn", 3, True)]
    with ProcessPoolExecutor(len(jobs), mp_context=__import__("multiprocessing")
                             .get_context("spawn")) as pool:
        for job in pool.map(warm, jobs):
            print("warm", job, flush=True)
    print("sms", torch.cuda.get_device_properties(0).multi_processor_count,
          torch.cuda.get_device_name(0), "triton", triton.__version__)
    if os.environ.get("EAGER_FLOOR"):
        print("eager floor (bench timing, 30 calls):", flush=True)
        eager_floor(cuda)
    for mode in ("listed", "drawn"):
        torch.manual_seed(1)
        inputs = bench_batch(f"64x16x151936:{mode}", cuda)
        args = kernel_args(inputs)
        sweep = [dict(stages=5), dict(stages=3)]
        if mode == "drawn":
            sweep += [dict(stages=3, resident_per_sm=r) for r in (5, 6, 8)]
        else:
            sweep += [dict(stages=3, programs_per_sm=r) for r in (3, 4)]
        for launch in sweep:
            ms = device_ms(lambda: T.tree_rejection_triton(*args, 5, **launch))  # noqa: B023
            print(f"{mode} {launch}: {ms:.1f} us", flush=True)
        prof, out, plan = profile(inputs, 3)
        print(f"{mode} profile at stages 3, grid {plan.grid}, args {plan.args}: "
              "median/max us", flush=True)
        for row in phase_table(prof, plan.args[-1]):
            print("   ", row, flush=True)
        ref = T.tree_rejection_triton(*args, 7, stages=3).cpu()
        print("    same output as the kernel:", bool(torch.equal(ref, out)), flush=True)


if __name__ == "__main__":
    sys.exit(main())

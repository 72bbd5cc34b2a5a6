"""Where the sparse half of triton-logits-processors spends its time (issue 39's last
percent): CUDA-graph medians at the bench's 256x151936x2048:all batch of

- the whole call, the dense kernel alone, the sparse kernel alone;
- the sparse kernel alone under a VARIANT: its warps (4, 8, 16, 32), Triton's own tl.sort
  in place of the project's bitonic network, the sort or the run counts' work space left
  out (timing only: the values are wrong; ``no-mask``, the bitmask gathers left out, ran
  at c984b93, before the sparse kernel stopped reading the bitmask), penalties only (no bias,
  no stop ids), R rows a program (rows=R), registers
  capped (maxnreg=N); ``once``: two eager calls and nothing else (what ncu profiles).

One variant a process (a swapped jit helper must be the one compiled):
    python3 scripts/gpu/lp_sparse_probe.py VARIANT     (VARIANT: base, warps=N, tl-sort,
    no-sort, no-runs, penalties-only, rows=R, maxnreg=N, once)
prints one line a timing: ``variant what ms``.
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

import sampling_harness.kernels.logits_processors.triton_logits_processors as lp
import sampling_harness.kernels.logits_processors.triton_sparse as sparse
from sampling_harness.suites.logits_processors.contract import bench_batch


@triton.jit
def builtin_sort(keys, DIMS: tl.constexpr, LOG: tl.constexpr):
    return tl.sort(keys, dim=1)


@triton.jit
def no_sort(keys, DIMS: tl.constexpr, LOG: tl.constexpr):
    return keys


@triton.jit
def no_runs(keys, work, LP: tl.constexpr):               # timing only: no work space
    return keys >> 1, keys & 1, keys != 1073741823    # BIG


def graph_ms(fn) -> float:
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")


def main(variant: str) -> None:
    inputs = bench_batch("256x151936x2048:all", torch.device("cuda"))
    gpu = lp.GPU
    launch = None
    if variant.startswith("warps="):
        gpu = lp.Launch(block=gpu.block, warps=gpu.warps, sparse_warps=int(variant[6:]))
    elif variant.startswith("rows="):                   # rows a program, 16 warps
        launch = lp.Launch(block=gpu.block, warps=gpu.warps, rows=int(variant[5:]),
                           sparse_warps=16)
    elif variant.startswith("maxnreg="):                # registers a thread, 16 warps
        real, most = lp.sparse_kernel, int(variant[8:])

        class Capped:
            def __getitem__(self, grid):
                return lambda *a, **k: real[grid](*a, **k, maxnreg=most)
        lp.sparse_kernel = Capped()
    elif variant == "once":                             # one eager call (for ncu)
        lp.logits_processors_launch(**inputs)
        torch.cuda.synchronize()
        lp.logits_processors_launch(**inputs)
        torch.cuda.synchronize()
        return
    elif variant == "tl-sort":
        sparse.bitonic_sort = builtin_sort
    elif variant == "no-sort":
        sparse.bitonic_sort = no_sort
    elif variant == "no-runs":
        sparse.run_counts = no_runs
    elif variant == "penalties-only":
        for name in ("logit_bias_ids", "logit_bias_values", "stop_token_ids", "min_tokens"):
            inputs[name] = None
    elif variant != "base":
        raise SystemExit(f"unknown variant {variant}")

    def call():
        return lp.logits_processors_launch(**inputs, gpu=gpu, launch=launch)

    rows = [("whole", graph_ms(call))]
    if variant == "base":
        out = torch.empty_like(inputs["logits"])
        rows.append(("copy (ceiling)", graph_ms(lambda: out.copy_(inputs["logits"]))))
    dense = lp.launch_dense
    lp.launch_dense = lambda *a, **k: None          # the sparse kernel alone
    rows.append(("sparse alone", graph_ms(call)))
    lp.launch_dense = dense
    if variant == "base":
        class Skipped:
            def __getitem__(self, grid):
                return lambda *a, **k: None
        lp.sparse_kernel = Skipped()
        rows.append(("dense alone", graph_ms(call)))
    for what, ms in rows:
        print(f"{variant} {what} {ms:.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

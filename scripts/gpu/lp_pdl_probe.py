"""Issue 39: the sparse kernel of triton-logits-processors beside the dense one. With PDL
the sparse programs may start once every dense program has started, where an SM has
registers left (a persistent dense kernel, narrower and fewer programs an SM, was tried at
6f0317d and lost: docs/measurements/bench.md).

For each launch given (``with_launch`` keywords), at the bench's 256x151936x2048:all batch,
CUDA-graph medians (ms) of the whole call and of the dense kernel alone, and the registers,
spills and shared memory of every compiled variant:

    python3 scripts/gpu/lp_pdl_probe.py "pdl=False" "pdl=True" "pdl=True sparse_regs=48"
"""

from __future__ import annotations

import sys

import torch
import triton

import sampling_harness.kernels.logits_processors.triton_logits_processors as lp
from sampling_harness.bench.launch import parse_value
from sampling_harness.kernels.logits_processors.triton_dense import dense_kernel
from sampling_harness.kernels.logits_processors.triton_sparse import sparse_kernel
from sampling_harness.suites.logits_processors.contract import bench_batch


def graph_ms(fn) -> float:
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")


def compiled(fn) -> list[str]:
    """registers/spills/shared of each compiled variant of a jit function (best effort)."""
    found = []
    for cache in getattr(fn, "device_caches", {}).values():
        table = cache[0] if isinstance(cache, tuple) else cache
        for kernel in getattr(table, "values", lambda: [])():
            regs = getattr(kernel, "n_regs", None)
            if regs is not None:
                found.append(f"regs={regs} spills={getattr(kernel, 'n_spills', '?')} "
                             f"shared={getattr(kernel.metadata, 'shared', '?')} "
                             f"warps={getattr(kernel.metadata, 'num_warps', '?')}")
    return found


def main(settings: list[str]) -> None:
    inputs = bench_batch("256x151936x2048:all", torch.device("cuda"))
    for text in settings:
        kw = {k: parse_value(v) for k, v in (item.split("=") for item in text.split())}
        fn = lp.with_launch(**kw)
        whole = graph_ms(lambda fn=fn: fn(**inputs))
        real = lp.sparse_kernel

        class Skipped:
            def __getitem__(self, grid):
                return lambda *a, **k: None
        lp.sparse_kernel = Skipped()
        dense = graph_ms(lambda fn=fn: fn(**inputs))
        lp.sparse_kernel = real
        print(f"{text!r}: whole {whole:.4f} dense alone {dense:.4f}", flush=True)
    print("dense variants:", *compiled(dense_kernel), sep="\n  ")
    print("sparse variants:", *compiled(sparse_kernel), sep="\n  ")


if __name__ == "__main__":
    main(sys.argv[1:])

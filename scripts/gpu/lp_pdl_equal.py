"""Issue 39: the sparse kernel as a programmatic dependent of the dense one (PDL) must give
exactly the output of the launch in plain stream order (pdl=False). For each launch given,
eager and in a replayed CUDA graph, at the bench's batches (every processor, the bitmask
alone) and at small odd shapes, prints ``launch shape mode equal|DIFFERS n``.

    python3 scripts/gpu/lp_pdl_equal.py "pdl=True" "pdl=True sparse_warps=8"
"""

from __future__ import annotations

import sys

import torch

import sampling_harness.kernels.logits_processors.triton_logits_processors as lp
from sampling_harness.bench.launch import parse_value
from sampling_harness.suites.logits_processors.contract import bench_batch

SHAPES = ("256x151936x2048:all", "256x151936x2048:dense", "7x1000x33:all", "64x32000x512:all",
          "3x129x4096:all", "5x1000x1:all", "5x1000x31:all", "4x3000x200:all", "4x5000x1000:all",
          "2x4000x5000:all")   # every history bucket from 32 to 2^13 (2^14 compiles > 60 s)


def fresh(inputs: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def graphed(fn, inputs: dict) -> torch.Tensor:
    fn(**fresh(inputs))                                  # compile outside the capture
    static = fresh(inputs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(**static)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    return out.clone()


def main(settings: list[str]) -> None:
    torch.manual_seed(0)
    for text in settings:
        kw = {k: parse_value(v) for k, v in (item.split("=") for item in text.split())}
        fn = lp.with_launch(**kw)
        for shape in SHAPES:
            inputs = bench_batch(shape, torch.device("cuda"))
            want = lp.with_launch(pdl=False)(**fresh(inputs))
            for mode, got in (("eager", fn(**fresh(inputs))), ("graph", graphed(fn, inputs))):
                verdict = ("equal" if torch.equal(got, want)
                           else f"DIFFERS {int((got != want).sum())}")
                print(f"{text!r} {shape} {mode} {verdict}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Issue 38: where triton-sample-logits spends its time after the one read of the rows.
CUDA-graph medians (do_bench_cudagraph, no L2 flush) of the whole call, the call with the
fallback's launch left out, and with the select's too (``_group_max`` alone), at the
bench's batches:

    python3 scripts/gpu/sl_tail_probe.py 256x151936 256x151936:greedy 32x128256

prints ``shape what ms``. Timing only: the ids of the cut calls are not drawn.
"""

from __future__ import annotations

import sys

import torch
import triton

import sampling_harness.kernels.sample_logits.triton_filtered_race as race
from sampling_harness.suites.sample_logits.contract import bench_batch


def graph_ms(fn) -> float:
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")


def main(shapes: list[str]) -> None:
    select, fallback = race.select.select_race, race.fallback_race
    for shape in shapes:
        inputs = bench_batch(shape, torch.device("cuda"))

        def call(inputs=inputs):
            return race.sample_logits_triton(**inputs, seed=123)

        rows = [("whole", graph_ms(call))]
        race.fallback_race = lambda *a, **k: None
        rows.append(("without the fallback", graph_ms(call)))
        race.select.select_race = lambda *a, **k: None
        rows.append(("group max alone", graph_ms(call)))
        race.select.select_race, race.fallback_race = select, fallback
        out = torch.empty_like(inputs["logits"][:, :1])
        rows.append(("row sum (a read)", graph_ms(
            lambda inputs=inputs, out=out: torch.sum(inputs["logits"], 1, keepdim=True,
                                                     out=out))))
        for what, ms in rows:
            print(f"{shape} {what} {ms:.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Issue 38: a few eager calls of one kernel at the bench's batch, for Nsight Compute to
profile (`ncu -k regex:NAME --launch-skip 2 --launch-count 1 python3 THIS WHICH`):

    python3 scripts/gpu/diag38_calls.py logprobs-random | logprobs-top | sample-logits |
        flat-top-p

logprobs at 256x151936x21 (random or top ids), sample-logits at 256x151936 (T 0.8, top-k
50, top-p 0.9; or flat-top-p: top-p 0.99 alone on flat rows, the whole-row fallback's
case). Prints nothing but the device's name."""

from __future__ import annotations

import sys

import torch

from sampling_harness.kernels.logprobs.triton_logprobs import logprobs_triton
from sampling_harness.kernels.sample_logits.triton_filtered_race import sample_logits_triton
from sampling_harness.suites.logprobs.contract import bench_batch as logprobs_batch
from sampling_harness.suites.sample_logits.contract import bench_batch as sample_batch


def main(which: str) -> None:
    device = torch.device("cuda")
    torch.manual_seed(0)
    if which.startswith("logprobs"):
        inputs = logprobs_batch("256x151936x21:" + which.split("-")[1], device)
        call = lambda: logprobs_triton(**inputs)                        # noqa: E731
    else:
        inputs = sample_batch("256x151936" + (":flat-top-p" if which == "flat-top-p" else ""),
                              device)
        call = lambda: sample_logits_triton(**inputs, seed=123)        # noqa: E731
    for _ in range(4):
        call()
    torch.cuda.synchronize()
    print(torch.cuda.get_device_name())


if __name__ == "__main__":
    main(sys.argv[1])

"""Which (B, V) triton-inverse-cdf fails to compile on the GPU at (the tail's short rows, V
1024, raised "PassManager::run failed" on an H100 with Triton 3.6 at 1ba2e9c). One line a
shape, ``B V ok|FAIL message``; Triton's own diagnostics go to stderr, one shape a process
(``python3 scripts/gpu/inverse_cdf_probe.py B V``)."""

import sys

import torch

from sampling_harness.kernels.sample.triton_inverse_cdf import inverse_cdf

batch, vocab = int(sys.argv[1]), int(sys.argv[2])
probs = torch.rand(batch, vocab, device="cuda")
try:
    ids = inverse_cdf(probs, 7)
    torch.cuda.synchronize()
    print(batch, vocab, "ok", int(ids.max()), flush=True)
except Exception as exc:  # the probe reports every failure and goes on
    print(batch, vocab, "FAIL", type(exc).__name__, str(exc)[:200], flush=True)

"""Profile triton-sample-logits on the GPU: where one call's time goes, per path.

Usage (CUDA): python scripts/profile_sample_logits.py
"""

import time

import torch

from kernels.sample_logits.triton_filtered_race import sample_logits_triton


def timed(name, fn, reps=20):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    print(f"{name}: {(time.perf_counter() - start) / reps * 1e3:.3f} ms")


def main():
    dev = torch.device("cuda")
    for batch, vocab, k, p in ((256, 151936, 50, 0.9), (1, 32000, 50, 0.9),
                               (256, 151936, 0, 1.0), (256, 151936, 0, 0.9)):
        x = torch.randn(batch, vocab, device=dev) * 2
        t = torch.full((batch,), 0.8, device=dev)
        kk = torch.full((batch,), k, dtype=torch.int64, device=dev)
        pp = torch.full((batch,), p, device=dev)
        timed(f"{batch}x{vocab} k={k} p={p}",
              lambda x=x, t=t, kk=kk, pp=pp: sample_logits_triton(x, t, kk, pp, 1))
        timed("  topk 51", lambda x=x: torch.topk(x, 51, dim=1))
    x = torch.randn(256, 151936, device=dev) * 2
    t = torch.full((256,), 0.8, device=dev)
    kk = torch.full((256,), 50, dtype=torch.int64, device=dev)
    pp = torch.full((256,), 0.9, device=dev)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            sample_logits_triton(x, t, kk, pp, 1)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14))


if __name__ == "__main__":
    main()

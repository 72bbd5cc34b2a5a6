"""Where the time of one kernel call goes: host launch overhead, back-to-back device time
(do_bench), and CUDA-graph replay. Usage: python3 scripts/overhead.py"""

import time

import torch
import triton

from harness.loader import load

probs = torch.rand(256, 151936, device="cuda").pow_(4)
probs /= probs.sum(dim=1, keepdim=True)
for name in ("torch-fp32", "torch-fp64", "triton-exact"):
    fn = load(name, "sample").fn
    work = probs.clone()
    for _ in range(5):
        fn(work, 1)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for i in range(200):
        fn(work, i)
    host = (time.perf_counter() - t) / 200 * 1e3
    torch.cuda.synchronize()
    eager = triton.testing.do_bench(lambda fn=fn, work=work: fn(work, 7), warmup=50, rep=300,
                                   return_mode="median")
    graph_ms = "-"
    try:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            fn(work, 7)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(work, 7)
        replay = triton.testing.do_bench(g.replay, warmup=50, rep=300, return_mode="median")
        graph_ms = f"{replay:.4f}"
    except Exception as exc:
        graph_ms = f"{type(exc).__name__}"
    print(f"{name:14s} host {host:.4f} ms/call  do_bench {eager:.4f} ms  graph {graph_ms}")

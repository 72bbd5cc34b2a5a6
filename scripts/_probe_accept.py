import time, sys, torch
from harness.loader import load
from harness.runner import Runner
from suites.rejection.test_acceptance_tail import ratio_batch
dev = torch.device("cuda")
for name in ("torch-rejection", "triton-rejection", "accept-fp32-uniform"):
    k = load(name, "rejection")
    runner = Runner(k, dev, 600.0)
    for rows in (2**20, 2**24):
        inputs = ratio_batch(1e-9, rows, dev)
        fn = k.fn
        args = [inputs[p] for p in ("draft_token_ids", "num_draft_tokens", "draft_probs", "target_probs", "bonus_token_ids", "greedy")]
        fn(*args, 1); torch.cuda.synchronize()
        t = time.perf_counter(); out = fn(*args, 2); torch.cuda.synchronize(); bare = time.perf_counter() - t
        t = time.perf_counter(); out = runner.call(inputs, 3); full = time.perf_counter() - t
        acc = int((out[:, 0] == inputs["draft_token_ids"]).sum())
        print(f"{name} rows {rows}: kernel {bare:.3f} s, runner.call {full:.3f} s, "
              f"{rows/full/1e6:.1f} M requests/s, accepted {acc}", flush=True)

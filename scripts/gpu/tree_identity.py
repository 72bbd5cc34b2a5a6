"""triton-tree-rejection against the one-program kernel of 4fbd46e
(scripts/gpu/tree_rejection_4fbd46e.py), bit for bit, on the device given (default cuda).

Bench inputs (suites/tree_rejection/bench.py: EAGLE-like trees, every fourth request greedy)
at the shapes given, 5 int seeds and 2 per-request seed vectors each, listed and drawn; then
random trees (padding, wide nodes of more than 16 children, greedy mixed, emptied rows) at
small and odd shapes, whose drawn calls take G = 1 .. 64 programs per request. Prints one
line per shape and mode, the split G the kernel took, and the total; exit 1 on a mismatch.

    python scripts/gpu/tree_identity.py [--device cuda] [--shape 64x16x151936 ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import torch

from sampling_harness.kernels.tree_rejection import triton_tree_rejection as new
from sampling_harness.suites.tree_rejection.bench import bench_batch

spec = importlib.util.spec_from_file_location(
    "tree_rejection_4fbd46e", Path(__file__).with_name("tree_rejection_4fbd46e.py"))
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)


def random_case(batch, nodes, vocab, drawn, rng, device, wide=False, empty=False):
    """Random trees: ragged (padding), greedy mixed; wide: all but two nodes children of
    the root; empty: half of every row zero (drawn: request 0 has p = q, empty residuals)."""
    rows = nodes + 1
    q = torch.rand((batch, rows, vocab), generator=rng).pow(3) + 1e-4
    q /= q.sum(2, keepdim=True)
    p = q * torch.exp(0.7 * torch.randn((batch, rows, vocab), generator=rng))
    if empty:
        p[:, :, : vocab // 2] = 0.0
        if drawn:
            p[0] = q[0]
    p /= p.sum(2, keepdim=True).clamp_min(1e-30)
    tokens = torch.full((batch, nodes), -1, dtype=torch.int64)
    parents = torch.full((batch, nodes), -1, dtype=torch.int64)
    for b in range(batch):
        n = nodes if b == 0 else int(torch.randint(0, nodes + 1, (1,), generator=rng))
        for i in range(n):
            if wide:
                a = -1 if i < n - 2 else int(torch.randint(-1, i, (1,), generator=rng))
            else:
                a = int(torch.randint(-1, i, (1,), generator=rng)) if i else -1
            parents[b, i] = a
            w = q[b, a + 1].clone()
            if not drawn:
                w[[int(tokens[b, j]) for j in range(i) if parents[b, j] == a]] = 0
                if w.sum() <= 0:
                    w = torch.ones(vocab)
            tokens[b, i] = torch.multinomial(w, 1, generator=rng)
    greedy = torch.rand(batch, generator=rng) < 0.3
    return {"draft_token_ids": tokens.to(device), "parent_ids": parents.to(device),
            "draft_probs": q.contiguous().to(device) if drawn else None,
            "target_probs": p.contiguous().to(device), "greedy": greedy.to(device)}


def splits_of(inputs) -> int:
    """The G the new kernel's plan took for these inputs (its last plan)."""
    return list(new._PLANS.values())[-1].args[-1]


def compare(label, inputs, seeds) -> tuple[int, int]:
    bad = 0
    for seed in seeds:
        a = new.tree_rejection_triton(**inputs, seed=seed)
        b = old.tree_rejection_triton(**inputs, seed=seed)
        if not torch.equal(a, b):
            bad += 1
            rows = (a != b).any(1).nonzero().flatten().tolist()
            print(f"  MISMATCH {label} seed {'per-request' if torch.is_tensor(seed) else seed}:"
                  f" {len(rows)} rows, first {rows[:5]}")
            print(f"    new {a[rows[0]].tolist()}\n    old {b[rows[0]].tolist()}")
    return len(seeds), bad


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--shape", action="append",
                        default=None, help="BxNxV of bench inputs (repeatable)")
    parser.add_argument("--random", type=int, default=1, help="random-tree rounds (0: none)")
    args = parser.parse_args()
    device = torch.device(args.device)
    shapes = args.shape or ["64x16x151936", "256x8x32000", "1x16x151936"]
    calls = bad = 0
    start = time.time()
    for shape in shapes:
        for mode in ("listed", "drawn"):
            torch.manual_seed(sum(map(ord, shape)) + (mode == "drawn"))
            inputs = bench_batch(f"{shape}:{mode}", device)
            batch = inputs["greedy"].shape[0]
            gen = torch.Generator().manual_seed(batch)
            seeds = [1, 7, 12345, 2**30 + 3, 2**31 - 1] + [
                torch.randint(0, 2**31 - 1, (batch,), generator=gen).to(device) for _ in range(2)]
            t0 = time.time()
            n, b = compare(f"{shape}:{mode}", inputs, seeds)
            print(f"{shape}:{mode:6s} G = {splits_of(inputs):2d}: {n - b}/{n} identical "
                  f"({time.time() - t0:.1f} s)", flush=True)
            calls, bad = calls + n, bad + b
    rng = torch.Generator().manual_seed(11)
    for _ in range(args.random):
        for batch, nodes, vocab in ((3, 40, 5000), (2, 24, 2048), (7, 12, 1031), (1, 20, 65536),
                                    (5, 30, 4099), (33, 9, 50000)):
            for drawn in (False, True):
                for wide, empty in ((False, False), (True, False), (False, True)):
                    inputs = random_case(batch, nodes, vocab, drawn, rng, device, wide, empty)
                    seeds = [int(torch.randint(0, 2**31 - 1, (1,), generator=rng)),
                             torch.randint(0, 2**31 - 1, (batch,), generator=rng).to(device)]
                    label = (f"random {batch}x{nodes}x{vocab}:{'drawn' if drawn else 'listed'}"
                             f"{' wide' if wide else ''}{' emptied' if empty else ''}")
                    n, b = compare(label, inputs, seeds)
                    calls, bad = calls + n, bad + b
            print(f"random {batch}x{nodes}x{vocab}: G = {splits_of(inputs)} (drawn)", flush=True)
    print(f"identity: {calls - bad}/{calls} calls identical, {bad} mismatches "
          f"({time.time() - start:.1f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

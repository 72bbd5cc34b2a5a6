"""``sampling-harness simulate``: run the speculative-decoding engine on one configuration.

Requests with random prompts (seeded) run to max_tokens or max_model_len; any part of the
engine may be replaced by a TARGET (registered name, pkg.module:attr or file.py:attr).
Prints TME against its float32 bound, the acceptance rate measured and expected, and the
lengths; writes them to simulate.json in the report directory.
"""

from __future__ import annotations

import json
from pathlib import Path

# The engine's replaceable parts: part -> (family, default kernel). The engine's own table,
# ``sampling_harness.suites.spec_decode.engine.DEFAULT_PARTS``, spelt here too so that
# ``simulate --help`` does not import the engine: importing it runs the spec-decode suite's
# __init__ (its checks, torch). tests/test_help_imports.py keeps the two equal.
PARTS = {"proposer": ("spec-decode", "torch-proposer"),
         "handover": ("draft-probs", "torch-draft-probs"),
         "rejection": ("rejection", "torch-rejection"),
         "sampler": ("sample-logits", "torch-sample-logits"),
         "logprobs": ("logprobs", "torch-logprobs-gather")}


def add_arguments(sim) -> None:
    sim.add_argument("--requests", type=int, default=64)
    sim.add_argument("--prompt-len", type=int, default=3)
    sim.add_argument("--max-tokens", type=int, default=10**6,
                     help="per request (default: run into max_model_len)")
    sim.add_argument("--num-spec-tokens", type=int, default=3)
    sim.add_argument("--max-model-len", type=int, default=16)
    sim.add_argument("--scheduling", default="sync", choices=("sync", "async"))
    sim.add_argument("--vocab", type=int, default=8)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    sim.add_argument("--report-dir", default=None)
    for part, (family, default) in PARTS.items():
        sim.add_argument(f"--{part}", default=None, metavar="TARGET",
                         help=f"a {family} kernel (default {default})")


def run_simulate(args, report_dir: Path) -> int:
    import numpy as np

    from sampling_harness.device import resolve_device
    from sampling_harness.report.writers import atomic_write
    from sampling_harness.suites.spec_decode.engine import (
        DEFAULT_PARTS,
        Engine,
        EngineConfig,
        Request,
        parts,
        toy_models,
    )
    from sampling_harness.suites.spec_decode.engine.metrics import tme_and_bound

    device = resolve_device(args.device)
    target, draft = toy_models(args.vocab, 2, args.seed)
    config = EngineConfig(args.num_spec_tokens, args.max_model_len, args.scheduling, args.seed)
    chosen = parts(**{part: getattr(args, part) for part in DEFAULT_PARTS})
    rng = np.random.default_rng(args.seed)
    requests = [Request(f"req-{i}", [int(t) for t in rng.integers(args.vocab,
                                                                  size=args.prompt_len)],
                        args.max_tokens) for i in range(args.requests)]
    run = Engine(target, draft, config, chosen, device).run(requests)
    tme, bound, tokens = tme_and_bound(target, run.requests)
    lengths = [len(r.tokens) for r in run.requests]
    result = {"config": vars(args) | {"device": str(device)}, "tme": tme, "tme_bound": bound,
              "tokens": tokens, "steps": run.steps, "acceptance_measured": run.acceptance_rate,
              "acceptance_expected": run.expected_acceptance, "verified_drafts": len(run.alphas),
              "longest": max(lengths), "mean_length": float(np.mean(lengths)),
              "over_max_model_len": sum(n > args.max_model_len for n in lengths)}
    print(f"TME {tme:.9g} (float32 bound {bound:.9g}) over {tokens} generated tokens")
    print(f"acceptance rate {run.acceptance_rate:.4f} measured, "
          f"{run.expected_acceptance:.4f} expected over {len(run.alphas)} verified drafts")
    print(f"lengths: longest {max(lengths)}, mean {np.mean(lengths):.2f}, "
          f"{result['over_max_model_len']} past max_model_len {args.max_model_len}; "
          f"{run.steps} steps")
    report_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(report_dir / "simulate.json", json.dumps(result, indent=2, default=str))
    print(f"report: {report_dir}/simulate.json")
    return 0

"""triton-sample-logits' three paths against each other on Hypothesis rows: for each
generated table (the strategy of the `fit_generated` check: ties, -inf, huge ranges, three
dtypes, temperatures including 0, top-k, top-p and min-p at and around their boundaries) the ids
drawn on the candidates (KMAX = 1024, NUCLEUS_GROUPS = 256: greedy, top-k and top-p-alone
rows selected and raced in ``_select_race``) must equal those of the whole-row fallback
(KMAX = 0, NUCLEUS_GROUPS = 1: x_(k) and the top-p threshold by bisection over the row) and
those of ``sorted_race`` (torch's sorted kept set, then the race in torch, min-p folded into
top-k as the kernel folds it), seed by seed: the noise is keyed by (row, column), so equal
kept sets give equal ids; and every sampled id must lie in the reference's possibly kept set
(min-p included). Prints each mismatching
row (dtype, V, T, k, p, the ids and their logits) and the count.
Usage: python3 scripts/fuzz_sample_logits.py [--examples N] [--seed S] [--max-vocab V]"""

import argparse

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

import kernels.sample_logits.triton_filtered_race as race
import kernels.sample_logits.triton_top_k_select as select
from harness.strategies.logits import sampling_tables
from kernels.sample_logits.race_noise import sorted_race
from reference.processed import process

parser = argparse.ArgumentParser()
parser.add_argument("--examples", type=int, default=100)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--max-vocab", type=int, default=4099)
args = parser.parse_args()
device = "cuda" if torch.cuda.is_available() else "cpu"
mismatches = []


@seed(args.seed)
@settings(max_examples=args.examples, phases=[Phase.generate], database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(table=sampling_tables(args.max_vocab, 4))
def compare(table):
    x = torch.as_tensor(table["logits"]).to(table["dtype"]).to(device)
    t, k, p, mp = (torch.as_tensor(table[key]).to(device) for key in (
        "temperature", "top_k", "top_p", "min_p"))
    possible = process(table["logits"], table["temperature"], table["top_k"], table["top_p"],
                       min_p=table["min_p"]).possible
    for s in range(4):
        race.KMAX, select.NUCLEUS_GROUPS = 1024, 256
        fast = race.sample_logits_triton(x, t, k, p, s, min_p=mp)
        race.KMAX, select.NUCLEUS_GROUPS = 0, 1
        whole_row = race.sample_logits_triton(x, t, k, p, s, min_p=mp)
        race.KMAX, select.NUCLEUS_GROUPS = 1024, 256
        sampled = torch.as_tensor(table["temperature"] > 0)
        outside = sampled & ~torch.as_tensor(possible[range(len(fast)), fast.cpu().numpy()])
        for row in outside.nonzero()[:, 0].tolist():
            mismatches.append(row)
            print(f"row {row}: {x.dtype} V={x.shape[1]} T={float(t[row])} k={int(k[row])} "
                  f"p={float(p[row])} min_p={float(mp[row])} seed {s}: drew {int(fast[row])}, "
                  f"outside the reference's possibly kept set", flush=True)
        oracle = sorted_race(x, t, race.fold_min_p(x, t, k, mp), p, s)
        for name, other in (("whole row", whole_row), ("sorted", oracle)):
            for row in (fast != other).nonzero()[:, 0].tolist():
                a, b = int(fast[row]), int(other[row])
                mismatches.append(row)
                print(f"row {row}: {x.dtype} V={x.shape[1]} T={float(t[row])} k={int(k[row])} "
                      f"p={float(p[row])} seed {s}: candidates {a} (x={float(x[row, a])}), "
                      f"{name} {b} (x={float(x[row, b])}), row max "
                      f"{float(x[row].float().max())}", flush=True)

compare()
print(f"{len(mismatches)} mismatching rows over {args.examples} tables x 4 seeds on {device}")

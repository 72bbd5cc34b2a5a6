"""triton-sample-logits' paths against each other on Hypothesis tables.

For each generated table (the strategy of the ``fit_generated`` check: ties, -inf, huge
ranges, three dtypes, temperatures including 0, top-k and top-p at and around their
boundaries, min-p) the ids drawn on the candidates (KMAX = 1024, NUCLEUS_GROUPS = 256:
greedy, top-k and top-p-alone rows selected and raced in ``_select_race``) must equal, seed
by seed, those of the whole-row fallback (KMAX = 0, NUCLEUS_GROUPS = 1: x_(k) and the top-p
threshold by bisection over the row) and those of ``sorted_race`` (torch's sorted kept set,
min-p folded into top-k as the kernel folds it, then the race in torch): the noise is keyed
by (row, column), so equal kept sets give equal ids. Every sampled id must also lie in the
float64 reference's possibly kept set (min-p included), which checks the fold itself.

Cheap on the CPU interpreter: vocabularies up to 1100 (two groups' widths), four rows, few
tables; a GPU takes more tables (Triton compiles each new shape, so still few).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings

import sampling_harness.kernels.sample_logits.triton_filtered_race as race
import sampling_harness.kernels.sample_logits.triton_top_k_select as select
from sampling_harness.device import default_device
from sampling_harness.kernels.sample_logits.race_noise import sorted_race
from sampling_harness.reference.processed import process
from sampling_harness.strategies.logits import sampling_tables

DEVICE = default_device()
EXAMPLES = 12 if DEVICE == "cuda" else 4
SEEDS = (0, 1)
WHOLE_ROW = {(race, "KMAX"): 0, (select, "NUCLEUS_GROUPS"): 1}


def tensors(table: dict):
    """logits, temperature, top_k, top_p, min_p of a table, on the device."""
    x = torch.as_tensor(table["logits"]).to(table["dtype"]).to(DEVICE)
    return (x, *(torch.as_tensor(table[key]).to(DEVICE)
                 for key in ("temperature", "top_k", "top_p", "min_p")))


def draw_ids(table: dict, seed: int, patches: dict) -> torch.Tensor:
    """The ids of one call with module settings ``patches`` in force."""
    x, t, k, p, min_p = tensors(table)
    with pytest.MonkeyPatch.context() as patch:
        for (module, name), value in patches.items():
            patch.setattr(module, name, value)
        return race.sample_logits_triton(x, t, k, p, seed, min_p=min_p)


def sorted_ids(table: dict, seed: int) -> torch.Tensor:
    """``sorted_race``'s ids, min-p folded into top-k as the kernel folds it."""
    x, t, k, p, min_p = tensors(table)
    return sorted_race(x, t, race.fold_min_p(x, t, k, min_p), p, seed)


PATHS = {"whole row": lambda table, seed: draw_ids(table, seed, WHOLE_ROW),
         "sorted": sorted_ids}


def mismatches(table: dict, fast: torch.Tensor, other: torch.Tensor, path: str,
               seed: int) -> list[str]:
    """One line per row where the two paths drew different ids."""
    x = torch.as_tensor(table["logits"])
    return [f"row {row}: {table['dtype']} V={x.shape[1]} T={table['temperature'][row]} "
            f"k={table['top_k'][row]} p={table['top_p'][row]} seed {seed}: candidates "
            f"{int(fast[row])} (x={float(x[row, int(fast[row])])}), {path} {int(other[row])} "
            f"(x={float(x[row, int(other[row])])}), row max {float(x[row].max())}"
            for row in (fast != other).nonzero()[:, 0].tolist()]


def outside_the_kept_set(table: dict, ids: torch.Tensor, seed: int) -> list[str]:
    """One line per sampled row whose id the float64 reference cannot keep."""
    possible = process(table["logits"], table["temperature"], table["top_k"], table["top_p"],
                       min_p=table["min_p"]).possible
    return [f"row {row}: {table['dtype']} T={table['temperature'][row]} k={table['top_k'][row]} "
            f"p={table['top_p'][row]} min_p={table['min_p'][row]} seed {seed}: drew "
            f"{int(ids[row])}, outside the reference's possibly kept set"
            for row in range(len(ids))
            if table["temperature"][row] > 0 and not possible[row, int(ids[row])]]


@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_draws_the_ids_of_the_candidates(path):
    @settings(max_examples=EXAMPLES, phases=[Phase.generate], database=None, deadline=None,
              derandomize=True, suppress_health_check=list(HealthCheck))
    @given(table=sampling_tables(1100, 4))
    def compare(table):
        found = []
        for seed in SEEDS:
            fast = draw_ids(table, seed, {})
            found += mismatches(table, fast, PATHS[path](table, seed), path, seed)
            found += outside_the_kept_set(table, fast, seed)
        assert not found, "\n".join(found)

    compare()

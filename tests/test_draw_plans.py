"""How the suites split their draws into calls: per-row counts, replicas cut from one tiling."""

from types import SimpleNamespace

import numpy as np
import torch

from sampling_harness.families.registry import load
from sampling_harness.reference.rejection import RejectionLaws
from sampling_harness.run.runner import Runner
from sampling_harness.seeds import derive_seed, seed_stream
from sampling_harness.suites.rejection.draws import batch_inputs, first_replicas
from sampling_harness.suites.sample_logits.draws import count_tokens
from sampling_harness.suites.sample_logits.rows import Rows


def _ctx(kernel: str, family: str, max_call_elements: int):
    seed = derive_seed(11, family, "plans")
    runner = Runner(load(kernel, family), torch.device("cpu"), 60.0)
    return SimpleNamespace(device=torch.device("cpu"), max_call_elements=max_call_elements,
                           runner=runner, seeds=lambda: seed_stream(seed)), runner


def test_each_row_gets_its_own_count_of_draws():
    rows = Rows.of({"flat": ([0.0] * 8, 1.0, 0, 1.0), "peaked": ([4.0] + [0.0] * 7, 1.0, 0, 1.0),
                    "greedy": ([0.0, 2.0] + [0.0] * 6, 0.0, 0, 1.0)})
    ctx, runner = _ctx("torch-sample-logits", "sample-logits", max_call_elements=8 * 10)
    counts = count_tokens(ctx, rows, [25, 7, 40])
    assert counts.sum(axis=1).tolist() == [25, 7, 40]
    assert counts[2].tolist() == [0, 40] + [0] * 6
    # phases: 7 of each (21 rows: calls of 9, 9, 3, multiples of 3), then 18 more of rows
    # 0 and 2 (36 rows: 10, 10, 10, 6), then 15 more of row 2 (10, 5)
    assert runner.calls == 3 + 4 + 2


def test_replicas_are_a_prefix_of_one_tiling():
    target = np.full((3, 5), 0.2, dtype=np.float32)
    laws = RejectionLaws(target, target.copy(), (2, 1), np.array([1, 2]),
                         np.array([False, True]))
    tiled = batch_inputs(laws, None, 4, torch.device("cpu"))
    cut = first_replicas(tiled, laws, 3)
    fresh = batch_inputs(laws, None, 3, torch.device("cpu"))
    for name, value in fresh.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(cut[name], value), name
        else:
            assert cut[name] == value, name

"""The speculative-decoding engine, its measures, and ``sampling-harness simulate``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sampling_harness.kernels.mutants.spec_decode_mutants import stale_drafts
from sampling_harness.suites.spec_decode.engine import (
    Engine,
    EngineConfig,
    Request,
    parts,
    toy_models,
)
from sampling_harness.suites.spec_decode.engine.metrics import (
    acceptance_test,
    continuation_law,
    tme_and_bound,
)
from tests.helpers import cli


def requests(count=24, seed=0):
    rng = np.random.default_rng(seed)
    return [Request(f"r{i}", [int(t) for t in rng.integers(8, size=3)], 10**6)
            for i in range(count)]


def run(scheduling="sync", seed=0, **targets):
    target, draft = toy_models(8, 2, seed)
    engine = Engine(target, draft, EngineConfig(3, 16, scheduling, seed), parts(**targets))
    return target, engine.run(requests(seed=seed))


@pytest.mark.parametrize("scheduling", ["sync", "async"])
def test_a_correct_engine_stays_in_bounds_and_is_reproducible(scheduling):
    target, first = run(scheduling)
    tme, bound, tokens = tme_and_bound(target, first.requests)
    assert tokens > 0 and 1.0 <= tme <= bound < 1.0 + 1e-5
    assert max(len(r.tokens) for r in first.requests) == 16
    _, second = run(scheduling)
    assert [r.output for r in first.requests] == [r.output for r in second.requests]


def test_stale_drafts_run_past_the_limit_into_garbage():
    target, result = run("sync", proposer=stale_drafts)
    tme, bound, _ = tme_and_bound(target, result.requests)
    assert max(len(r.tokens) for r in result.requests) > 16 and tme > 1e6


def test_acceptance_test_holds_its_level_and_sees_a_halved_rate():
    rng = np.random.default_rng(1)
    alphas = rng.uniform(0.3, 0.9, 4000)
    p_values = [acceptance_test(rng.random(alphas.size) < alphas, alphas, 0.01, 0.99)["p_value"]
                for _ in range(200)]
    assert np.mean(np.array(p_values) <= 0.01) <= 0.03
    halved = acceptance_test(rng.random(alphas.size) < alphas / 2, alphas, 1e-6, 0.99)
    assert halved["p_value"] < 1e-6 and halved["min_detectable_shift"] < 0.1


def test_continuation_law_is_a_law():
    target, _ = toy_models(8, 2, 3)
    law = continuation_law(target, [1, 2], 2)
    assert law.shape == (64,) and abs(law.sum() - 1) < 1e-12


def test_simulate_prints_and_writes_tme_acceptance_and_lengths(tmp_path):
    code, output, _ = cli("simulate", "--requests", "8", "--proposer", "stale-drafts",
                          report_dir=tmp_path)
    assert code == 0 and "TME" in output and "acceptance rate" in output, output
    result = json.loads((tmp_path / "simulate.json").read_text())
    assert result["over_max_model_len"] > 0 and result["tme"] > result["tme_bound"]

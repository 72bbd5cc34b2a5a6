"""Family ``draft-probs``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks
that must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.suites.draft_probs import curated, generated
from sampling_harness.suites.draft_probs.contract import BUDGETS, bench_batch, validate_output

CHECKS = (
    Check("curated", curated.curated, sanitize=True, detects=(
        "a hand-over that differs from the reference on one batch per contract rule (order, "
        "zero drafts, missing requests, empty batch, no cache)")),
    Check("generated", generated.generated, detects=(
        "a hand-over that differs from the reference on Hypothesis-generated caches and "
        "batches")),
)


MUTANTS = (
    Mutant("cached-order", "sampling_harness.kernels.mutants.draft_probs_mutants:cached_order",
           caught_by=("curated", "generated"), budget="quick",
           bug=("draft probabilities handed over in the cache's order, not the batch's (vLLM PR "
                "40269)")),
    Mutant("stops-at-zero-drafts",
                "sampling_harness.kernels.mutants.draft_probs_mutants:stops_at_zero_drafts",
           caught_by=("curated", "generated"), budget="quick",
           bug="the hand-over stops at the first request with no drafts"),
    Mutant("zeros-for-missing",
                "sampling_harness.kernels.mutants.draft_probs_mutants:zeros_for_missing",
           caught_by=("curated", "generated"), budget="quick",
           bug="a request missing from the cache gets rows of zeros instead of the None fallback"),
    Mutant("slices-all-slots",
                "sampling_harness.kernels.mutants.draft_probs_mutants:slices_all_slots",
           caught_by=("curated", "generated"), budget="quick",
           bug="K cached rows handed over per request, not its n drafts"),
    Mutant("empty-not-none",
                "sampling_harness.kernels.mutants.draft_probs_mutants:empty_not_none",
           caught_by=("curated", "generated"), budget="quick",
           bug="an empty [0, V] tensor instead of None when no request has drafts"),
)


FAMILY = Family(
    name="draft-probs",
    parameters=("cached_probs", "cached_req_ids", "batch_req_ids", "num_draft_tokens"),
    doc=("fn(cached_probs: float32 [R, K, V] | None, cached_req_ids: list[str], "
         "batch_req_ids: list[str], num_draft_tokens: list[int]) -> float32 [T, V] in batch "
         "order | None (no cache, a request with drafts missing, or T = 0)"),
    validate=validate_output,
    output_bytes=lambda inputs: 4 * sum(inputs["num_draft_tokens"]) * (
        inputs["cached_probs"].shape[2] if inputs["cached_probs"] is not None else 1),
    draws=lambda inputs: sum(inputs["num_draft_tokens"]),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    bench=BenchSpec(
        gpu_shapes=("256x4x151936",), cpu_shapes=("8x4x4099",), shape_help="BxKxV",
        make_inputs=bench_batch,
        floor_bytes=lambda inputs: 8 * inputs["cached_probs"].numel(),
        baselines=("torch-draft-probs",)),
)

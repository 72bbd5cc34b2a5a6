"""Family ``spec-decode``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks
that must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import Check, Family, Mutant
from sampling_harness.suites.spec_decode import acceptance, law, length, tail, tme
from sampling_harness.suites.spec_decode.contract import BUDGETS, validate_output

CHECKS = (
    Check("length", length.length, sanitize=True, detects=(
        "a sequence longer than max_model_len, under synchronous or asynchronous "
        "scheduling")),
    Check("tme", tme.tme, detects=(
        "returned logprobs off the target's float64 log-softmax beyond float32 (tokens scored "
        "from rows past the limit)")),
    Check("law", law.law, statistical=True, detects=(
        "an output law of the engine that is not the target model's alone: total variation "
        "over law_tv")),
    Check("acceptance", acceptance.acceptance, statistical=True, detects=(
        "a measured acceptance rate off its exact expectation (draft probs dropped or "
        "misordered)")),
    Check("tail", tail.tail, statistical=True, detects=(
        "rare draft tokens proposed too seldom or too often (a noise floor in the "
        "proposer)")),
)


MUTANTS = (
    Mutant("stale-drafts", "sampling_harness.kernels.mutants.spec_decode_mutants:stale_drafts",
           caught_by=("tme", "length"), budget="quick",
           bug=("a request too close to max_model_len to draft keeps its stale drafts, which are "
                "verified past the limit: garbage logprobs (vLLM PR 38711, TME ~1.4e11)")),
    Mutant("probs-dropped", "sampling_harness.kernels.mutants.spec_decode_mutants:probs_dropped",
           caught_by=("acceptance",), budget="quick",
           bug=("draft probabilities never handed to the rejection sampler: q taken one-hot, "
                "acceptance p(d) instead of min(1, p/q) (vLLM PR 40269)")),
    Mutant("cached-order", "sampling_harness.kernels.mutants.spec_decode_mutants:cached_order",
           caught_by=("law", "acceptance"), budget="quick",
           bug=("draft probabilities cached in another order than the drafts: the rejection "
                "sampler verifies each draft against another request's law")),
    Mutant("proposer-fp32-noise",
                "sampling_harness.kernels.mutants.spec_decode_mutants:proposer_fp32_noise",
           caught_by=("tail",), budget="standard", devices=("cuda",),
           bug=("the proposer samples its drafts by a race on float32 exponential noise: CUDA's "
                "exponential_ never goes below 2^-24, so draft tokens below about 1e-8 x the head "
                "are never proposed (vLLM's compute_probs_and_sample_next_token before PR 43150)")),
    Mutant("draft-probs-before-top-k",
                "sampling_harness.kernels.mutants.spec_decode_mutants:draft_probs_before_top_k",
           caught_by=("law",), budget="quick",
           bug=("the drafter samples under top-k 2 but hands over the unfiltered softmax as its "
                "draft probabilities: the rejection sampler corrects against the wrong q "
                "(transformers issue 47932: TV from the target up to 0.31, acceptance still "
                "high)")),
)


FAMILY = Family(
    name="spec-decode",
    parameters=("draft_table", "context", "token_ids", "previous_drafts", "num_spec_tokens",
                "max_model_len", "lookahead", "seed"),
    doc=("fn(draft_table: float32 [V^C, V], context: C, token_ids: list[list[int]], "
         "previous_drafts: list[list[int]], num_spec_tokens: K, max_model_len, lookahead, "
         "seed) -> (drafts: R lists of K or 0 ids, draft_probs: float32 [R, K, V] | None): "
         "the proposer step, K drafts only where L + lookahead + K + 1 <= max_model_len"),
    validate=validate_output,
    output_bytes=lambda inputs: 4 * max(1, len(inputs["token_ids"]) * inputs[
        "num_spec_tokens"] * inputs["draft_table"].shape[1]),
    draws=lambda inputs: len(inputs["token_ids"]) * inputs["num_spec_tokens"],
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
)

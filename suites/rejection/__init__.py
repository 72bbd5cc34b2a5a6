"""Family ``rejection``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks
that must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.families.peers import flashinfer
from sampling_harness.suites.rejection import (
    acceptance,
    acceptance_tail,
    batch_invariance,
    greedy,
    independence,
    laws,
    marginal,
    tail,
    validity,
)
from sampling_harness.suites.rejection.contract import (
    BUDGETS,
    bench_batch,
    output_bytes,
    validate_output,
)
from sampling_harness.suites.rejection.floor import rejection_floor_bytes

CHECKS = (
    Check("validity", validity.validity, sanitize=True, many_shapes=True, detects=(
        "a broken output layout (ids, then -1), a draft of target probability 0 accepted, a "
        "draft with p >= q rejected, a token off the residual's support, unwritten slots")),
    Check("greedy", greedy.greedy, many_shapes=True, detects=(
        "a greedy request that differs from the float64 greedy output (lowest-index argmax "
        "on ties, the bonus after all matches)")),
    Check("acceptance_length", acceptance.acceptance_length, statistical=True, detects=(
        "an accepted-length law off prod alpha_i: acceptance dropped by accept_shift or more "
        "(draft probs mishandled)")),
    Check("acceptance_tail", acceptance_tail.acceptance_tail, statistical=True, detects=(
        "drafts of tiny p/q accepted at the wrong rate (a coarse or zero-inclusive "
        "acceptance uniform)")),
    Check("joint", laws.joint, statistical=True, detects=(
        "a wrong joint law of (accepted length, emitted token) on curated requests")),
    Check("fixed_drafts", laws.fixed_drafts, statistical=True, detects=(
        "a wrong law given fixed adversarial drafts (target probability 0, the argmax, "
        "tiny), with and without draft probs")),
    Check("law_generated", laws.law_generated, statistical=True, detects=(
        "a wrong joint law on Hypothesis-generated batches (ragged counts, greedy mixes, "
        "zeros, ties, p = q)")),
    Check("marginal", marginal.marginal, statistical=True, detects=(
        "an emitted token whose marginal is not p in a large vocabulary (the recovered "
        "token drawn from p, not max(p - q, 0))")),
    Check("independence", independence.independence, statistical=True, detects=(
        "outcomes that depend on each other across requests of a call or calls with "
        "adjacent seeds")),
    Check("tail", tail.tail, statistical=True, many_shapes=True, detects=(
        "rare residual tokens recovered too seldom or too often (a noise floor in the "
        "recovered-token race)")),
    Check("batch_invariance", batch_invariance.batch_invariance, many_shapes=True, detects=(
        "a request's accepted drafts or emitted token moving with its batch (size, "
        "batch-mates' drafts, counts and rows; with per-request seeds its position, "
        "batch-mates' seeds or unseeded batch-mates)")),
)


MUTANTS = (
    Mutant("draft-probs-dropped",
                "sampling_harness.kernels.mutants.rejection_mutants:draft_probs_dropped",
           caught_by=("validity", "acceptance_length"), budget="quick",
           bug=("draft probs never passed to the rejection sampler, q taken one-hot at the draft: "
                "d accepted with probability p(d), not min(1, p/q) (vLLM PR 40269: acceptance "
                "fell from ~0.45 to ~0.22)")),
    Mutant("shared-uniform", "sampling_harness.kernels.mutants.rejection_mutants:shared_uniform",
           caught_by=("joint", "fixed_drafts"), budget="quick",
           bug=("one uniform serves the accept test and the residual draw: the recovered token is "
                "the residual's inverse CDF at the very u that rejected (u >= p/q), so only the "
                "upper part of the residual is reached (vllm-ascend issue 16370)")),
    Mutant("greedy-unwritten",
                "sampling_harness.kernels.mutants.rejection_mutants:greedy_unwritten",
           caught_by=("validity", "greedy"), budget="quick",
           bug=("the greedy path allocates its output with torch.empty and writes only the "
                "accepted drafts and the emitted token: later slots hold allocator garbage, not "
                "-1 (vLLM PR 37238, new_empty -> new_zeros)")),
    Mutant("accept-all", "sampling_harness.kernels.mutants.rejection_mutants:accept_all",
           caught_by=("validity", "acceptance_length"), budget="quick",
           bug="every draft accepted whatever its target probability, p(d) = 0 included"),
    Mutant("residual-from-target",
                "sampling_harness.kernels.mutants.rejection_mutants:residual_from_target",
           caught_by=("validity", "marginal"), budget="quick",
           bug=("at a rejection the token is drawn from p, not from max(p - q, 0): tokens with p "
                "<= q (the rejected draft among them) are emitted")),
    Mutant("ratio-inverted", "sampling_harness.kernels.mutants.rejection_mutants:ratio_inverted",
           caught_by=("validity", "acceptance_length"), budget="quick",
           bug=("accept with probability min(1, q/p) instead of min(1, p/q): drafts of target "
                "probability 0 always accepted")),
    Mutant("zero-draft-shift",
                "sampling_harness.kernels.mutants.rejection_mutants:zero_draft_shift",
           caught_by=("validity", "greedy"), budget="quick",
           bug=("an off-by-one in the offsets of zero-draft requests (counted as one row): every "
                "later request reads its drafts and probabilities one row too far")),
    Mutant("greedy-tie-random",
                "sampling_harness.kernels.mutants.rejection_mutants:greedy_tie_random",
           caught_by=("greedy",), budget="quick",
           bug=("greedy verify keeps every token tied at the maximum and picks one at random, not "
                "the lowest index (vllm-project/tpu-inference PR 3580: top_k=1 by threshold keeps "
                "all tied maxima and samples among them; SGLang issue 31071: EAGLE greedy "
                "verify's argmax over tied logits accepts different drafts per rank)")),
    Mutant("noise-never-drawn",
                "sampling_harness.kernels.mutants.rejection_mutants:noise_never_drawn",
           caught_by=("independence", "joint", "fixed_drafts", "marginal", "law_generated"),
           budget="quick",
           bug=("the recovered-token noise is drawn into a copy (exponential_ in place on "
                "q[indices], an advanced-indexing copy), so the race runs on a buffer never "
                "filled, the same for every request and seed (vLLM PR 10863, unseeded requests in "
                "a seeded batch)")),
    Mutant("recovered-fp32-noise",
                "sampling_harness.kernels.mutants.rejection_mutants:recovered_fp32_noise",
           caught_by=("tail",), budget="standard", devices=("cuda",),
           bug=("the recovered-token race on float32 exponential noise: CUDA's exponential_ never "
                "goes below 2^-24, so residual tokens below about 1e-8 x the head are never "
                "recovered (vLLM's sample_recovered_tokens before PR 43150 moved it to float64)")),
    Mutant("accept-half-uniform",
                "sampling_harness.kernels.mutants.rejection_mutants:accept_half_uniform",
           caught_by=("acceptance_tail",), budget="quick",
           bug=("the acceptance uniform drawn in the probs' half precision (torch.rand_like on "
                "float16 probs): u = 0 with probability about 2^-12, so drafts of p/q below 1e-4 "
                "are accepted several times too often")),
    Mutant("accept-uniform-floor",
                "sampling_harness.kernels.mutants.rejection_mutants:accept_uniform_floor",
           caught_by=("acceptance_tail",), budget="quick",
           bug=("the acceptance uniform from a 16-bit counter in (0, 1], (k + 1) 2^-16 (a (0, 1] "
                "uniform to keep log(u) finite): never below 1.5e-5, so drafts of smaller p/q are "
                "never accepted")),
    Mutant("accept-u-fp32", "sampling_harness.kernels.mutants.rejection_mutants:accept_u_fp32",
           caught_by=("acceptance_tail",), budget="standard", devices=("cuda",),
           bug=("the acceptance uniform a float32 torch.rand (24 random bits): u = 0 with "
                "probability 2^-24, so a draft of p/q = 1e-12 is accepted about 2^-24 of the "
                "time; seen by acceptance_tail's float32 floor (2^29 or more requests, a GPU "
                "budget)")),
    Mutant("one-hot-quarter-missed",
           "sampling_harness.kernels.mutants.rejection_mutants:one_hot_quarter_missed",
           caught_by=("validity",), budget="quick",
           bug=("without draft probs, q's one-hot misses the drafts in one quarter of each "
                "chunk (triton-rejection with j - Q == d for j + Q == d, found by mutate), so "
                "a rejected draft can be recovered as itself; seen by validity's column "
                "sweep")),
    Mutant("last-slot-next-row",
                "sampling_harness.kernels.mutants.memory_mutants:last_slot_next_row",
           caught_by=("validity",), budget="quick", tool="memcheck",
           bug=("the assembly kernel writes each request's last slot one row too far: the last "
                "request writes past the output's end")),
    Mutant("shared-generator", "sampling_harness.kernels.mutants.batch_mutants:shared_generator",
           caught_by=("batch_invariance",), budget="quick",
           bug=("one generator for the whole batch: a request's acceptance uniforms follow its "
                "batch-mates' draft counts and its residual noise follows every uniform of the "
                "batch (vLLM PR 1637 review: batching changes each request's samples even with a "
                "fixed seed; PR 2514 added per-request generators)")),
)


FAMILY = Family(
    name="rejection",
    parameters=("draft_token_ids", "num_draft_tokens", "draft_probs", "target_probs",
                "bonus_token_ids", "greedy", "seed"),
    doc=("fn(draft_token_ids: int64 [T], num_draft_tokens: list[int] (B, sum T), "
         "draft_probs: float32 [T, V] | None, target_probs: float32 [T, V], "
         "bonus_token_ids: int64 [B], greedy: bool [B], seed: int in [0, 2^31) | int64 [B] "
         "per-request seeds, -1 unseeded) -> "
         "int32/int64 [B, max(num_draft_tokens) + 1]: accepted drafts, one recovered or bonus "
         "token, then -1"),
    validate=validate_output,
    output_bytes=output_bytes,
    draws=lambda inputs: inputs["target_probs"].numel(),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    peers=(flashinfer("flashinfer-chain", "flashinfer_rejection"),),
    bench=BenchSpec(
        gpu_shapes=("256x4x151936", "32x4x32000"), cpu_shapes=("8x4x4099",),
        shape_help="BxKxV", make_inputs=bench_batch,
        floor_bytes=rejection_floor_bytes,
        baselines=("torch-rejection",)),
)

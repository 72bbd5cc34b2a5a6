"""Family ``tree-rejection``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks that
must catch them (entry point ``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.suites.tree_rejection import (
    acceptance,
    batch_invariance,
    greedy,
    independence,
    law,
    tail,
    validity,
)
from sampling_harness.suites.tree_rejection.bench import bench_batch, floor_bytes
from sampling_harness.suites.tree_rejection.contract import BUDGETS, validate_output

MUTANTS_AT = "sampling_harness.kernels.mutants.tree_rejection_mutants"

CHECKS = (
    Check("validity", validity.validity, sanitize=True, many_shapes=True, detects=(
        "a broken output layout (a width outside [D + 1, N + 1], tokens, then -1), a path "
        "that leaves the parent links, a child of target probability 0 accepted, a last "
        "token of probability 0 or a child's token, a residual wrong at some columns "
        "(quarter sweeps) or where it comes out empty, unwritten slots")),
    Check("law", law.law, statistical=True, detects=(
        "a returned sequence whose law is not the target's, per tree shape (chain, star, "
        "EAGLE-like, random, wide, emptied residuals) and draft mode (listed, drawn)")),
    Check("acceptance", acceptance.acceptance, statistical=True, detects=(
        "an accepted-length law off its exact law (too much or too little accepted); "
        "reports the mean accepted length beside the chain's")),
    Check("greedy", greedy.greedy, many_shapes=True, detects=(
        "a greedy tree whose row differs from the float64 greedy walk (lowest-index argmax, "
        "the first matching child, the argmax emitted where no child holds it)")),
    Check("tail", tail.tail, statistical=True, detects=(
        "rare residual tokens drawn too seldom or too often (a noise floor in the race of "
        "the last token)")),
    Check("independence", independence.independence, statistical=True, detects=(
        "returned sequences that depend on each other across requests of a call or calls "
        "with adjacent seeds")),
    Check("batch_invariance", batch_invariance.batch_invariance, many_shapes=True, detects=(
        "a request's returned sequence moving with its batch (size, batch-mates' trees and "
        "rows; with per-request seeds its position and batch-mates' seeds)")),
)


MUTANTS = (
    Mutant("coin-fp32-inclusive", f"{MUTANTS_AT}:coin_fp32_inclusive",
           caught_by=("validity",), budget="standard", devices=("cuda",),
           bug=("the acceptance coin a float32 torch.rand (0 with probability 2^-24) compared "
                "with <=: a child of target probability 0 is accepted when the coin is 0 "
                "(SGLang issue 35771, tree_speculative_sampling_target_only: coin <= "
                "prob_acc / threshold_acc); about 7.7e7 coins to see it, a GPU budget")),
    Mutant("argmax-verify-sampled", f"{MUTANTS_AT}:argmax_verify_sampled",
           caught_by=("law", "acceptance"), budget="quick",
           bug=("verification takes the argmax at every node even for sampled requests, the "
                "last token then sampled from the target: greedy and stochastic decoding "
                "mixed (ROCm ATOM PR 2318)")),
    Mutant("no-residual-update", f"{MUTANTS_AT}:no_residual_update",
           caught_by=("acceptance",), budget="quick",
           bug=("multi-draft verification tests every sibling against the target row, "
                "never against the residual its rejected elder siblings left")),
    Mutant("shared-sibling-coin", f"{MUTANTS_AT}:shared_sibling_coin",
           caught_by=("law",), budget="quick",
           bug=("one coin per node shared by drawn siblings, each tested independently "
                "against the residual: a rejection makes the next sibling's coin large")),
    Mutant("thresholds-below-one", f"{MUTANTS_AT}:thresholds_below_one",
           caught_by=("law",), budget="quick",
           bug=("SGLang's threshold_single and threshold_acc set below 1 (0.8): accepted "
                "when coin <= P / threshold_acc or p(x) >= threshold_single, trading "
                "losslessness for acceptance")),
    Mutant("residual-fp32-noise", f"{MUTANTS_AT}:residual_fp32_noise",
           caught_by=("tail",), budget="standard", devices=("cuda",),
           bug=("the last token raced on float32 exponential noise (CUDA's exponential_: "
                "never below 2^-24): residual tokens below about 1e-8 x the head are never "
                "drawn (the float32 race floor of vLLM's sampler before PR 43150)")),
    Mutant("parent-off-by-one", f"{MUTANTS_AT}:parent_off_by_one",
           caught_by=("validity", "greedy"), budget="quick",
           bug=("a node's parent read one slot off (parent_ids[b, i + 1]): the walk "
                "follows links the tree does not have")),
    Mutant("shared-generator", f"{MUTANTS_AT}:shared_generator",
           caught_by=("batch_invariance",), budget="quick",
           bug=("one generator for the whole batch: a request's coins follow its "
                "batch-mates' node counts and its noise the batch size (vLLM PR 1637 review; "
                "PR 2514 added per-request generators)")),
    Mutant("drawn-residual-as-listed", f"{MUTANTS_AT}:drawn_residual_as_listed",
           caught_by=("independence", "law"), budget="quick",
           bug=("after drawn children are rejected, the last token drawn from p without "
                "the drawn tokens (the listed children's rule) instead of max(p - C q, 0): a "
                "token the draft covered but did not draw comes back, a sequence of "
                "probability 0 that validation lets through")),
    Mutant("noise-never-drawn", f"{MUTANTS_AT}:noise_never_drawn",
           caught_by=("independence",), budget="quick",
           bug=("the last token's noise drawn into a copy, so the race runs on a buffer "
                "never filled, the same for every request and seed (vLLM PR 10863)")),
    Mutant("children-quarter-missed", f"{MUTANTS_AT}:children_quarter_missed",
           caught_by=("validity", "law"), budget="quick",
           bug=("at a node with more listed children than a program holds (the slot loop "
                "of triton-tree-rejection), the children in the second quarter of each "
                "chunk are left in the residual (``j`` for ``j + Q``, found by mutate): a "
                "rejected child comes back as the last token")),
    Mutant("empty-residual-token-0", f"{MUTANTS_AT}:empty_residual_token_0",
           caught_by=("validity", "law"), budget="quick",
           bug=("no fallback where the residual comes out empty (the children hold all of "
                "p, or p <= C q after a rejection): the race over an all-zero residual "
                "returns token 0 instead of a draw from p")),
)


FAMILY = Family(
    name="tree-rejection",
    parameters=("draft_token_ids", "parent_ids", "draft_probs", "target_probs", "greedy",
                "seed"),
    doc=("fn(draft_token_ids: int64 [B, N] (-1 after the last node), parent_ids: int64 "
         "[B, N] (-1: a child of the root; parents first, siblings in draft order), "
         "draft_probs: float32 [B, N + 1, V] | None (children drawn from their parent's "
         "row, or listed), target_probs: float32 [B, N + 1, V] (row 0 the root's, row i + 1 "
         "after node i), greedy: bool [B], seed: int in [0, 2^31) | int64 [B] per-request "
         "seeds) -> int64 [B, W], D + 1 <= W <= N + 1 (D the deepest path): the accepted "
         "path's tokens, one token drawn at the last node, then -1 to the row's end"),
    validate=validate_output,
    output_bytes=lambda inputs: 8 * inputs["draft_token_ids"].shape[0]
    * (inputs["draft_token_ids"].shape[1] + 1),
    draws=lambda inputs: inputs["target_probs"].numel(),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    bench=BenchSpec(
        gpu_shapes=tuple(f"{shape}:{mode}" for shape in ("64x16x151936", "256x8x32000")
                         for mode in ("listed", "drawn")),
        cpu_shapes=("8x8x4099:listed", "8x8x4099:drawn"),
        shape_help="BxNxV:mode", make_inputs=bench_batch, floor_bytes=floor_bytes,
        baselines=("torch-tree-rejection",)),
)

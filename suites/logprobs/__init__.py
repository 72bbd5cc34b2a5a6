"""Family ``logprobs``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks
that must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.suites.logprobs import curated, generated, validity
from sampling_harness.suites.logprobs.contract import (
    BENCH_IDS,
    BUDGETS,
    bench_batch,
    validate_output,
)

CHECKS = (
    Check("validity", validity.validity, sanitize=True, many_shapes=True, detects=(
        "a broken output (shape, dtype, -inf exactly at padding, NaN or +inf, ranks off "
        "[1, V]), padding that changes other slots, outputs that change between calls")),
    Check("values", curated.values, many_shapes=True, detects=(
        "a value off the float64 reference beyond its float32-derived tolerance, in any mode "
        "and dtype, on curated rows")),
    Check("tme", curated.tme_check, many_shapes=True, detects=(
        "a TME over the bound its tolerances give: a systematic error (wrong tensor "
        "gathered, low precision)")),
    Check("ranks", curated.ranks, many_shapes=True, detects=(
        "a rank off its exact range (the token and its ties counted with >=)")),
    Check("generated", generated.generated, many_shapes=True, detects=(
        "values, ranks or TME off on Hypothesis-generated batches (ties, -inf, bf16, fp16, "
        "padding anywhere)")),
)


MUTANTS = (
    Mutant("gathered-from-logits",
                "sampling_harness.kernels.mutants.logprobs_mutants:gathered_from_logits",
           caught_by=("values", "tme", "ranks", "generated"), budget="quick",
           bug=("requested token ids gathered from the logits instead of the logprobs in "
                "raw_logprobs mode: they disagree with the top-k logprobs of the same request "
                "(vLLM PR 43125)")),
    Mutant("processed-in-raw-mode",
                "sampling_harness.kernels.mutants.logprobs_mutants:processed_in_raw_mode",
           caught_by=("values", "tme", "ranks", "generated"), budget="quick",
           bug="the processed values (temperature, top-k, top-p applied) returned in a raw mode"),
    Mutant("padding-as-last-entry",
                "sampling_harness.kernels.mutants.logprobs_mutants:padding_as_last_entry",
           caught_by=("validity",), budget="quick",
           bug=("a padded id -1 read as the last vocabulary entry (Python negative indexing): its "
                "value returned instead of -inf")),
    Mutant("bf16-log-softmax",
                "sampling_harness.kernels.mutants.logprobs_mutants:bf16_log_softmax",
           caught_by=("values", "tme", "generated"), budget="quick",
           bug="log-softmax computed in bfloat16: about 3 significant digits"),
    Mutant("ranks-strict", "sampling_harness.kernels.mutants.logprobs_mutants:ranks_strict",
           caught_by=("validity", "ranks"), budget="quick",
           bug="ranks counted with > instead of >=: the token itself and its ties not counted"),
    Mutant("temperature-twice",
                "sampling_harness.kernels.mutants.logprobs_mutants:temperature_twice",
           caught_by=("values", "tme", "generated"), budget="quick",
           bug="the processed modes divide the logits by the temperature twice"),
    Mutant("topk-drops-ties", "sampling_harness.kernels.mutants.logprobs_mutants:topk_drops_ties",
           caught_by=("values", "tme", "ranks"), budget="quick",
           bug=("top-k keeps exactly k entries: tokens tied with the k-th largest are dropped by "
                "index")),
    Mutant("topp-before-topk",
                "sampling_harness.kernels.mutants.logprobs_mutants:topp_before_topk",
           caught_by=("values", "tme"), budget="quick",
           bug=("top-p applied to the full distribution before top-k, not to the renormalised "
                "top-k result")),
    Mutant("topp-excludes-crossing",
                "sampling_harness.kernels.mutants.logprobs_mutants:topp_excludes_crossing",
           caught_by=("values", "tme", "generated"), budget="quick",
           bug=("top-p keeps tokens whose inclusive cumulative probability is below top_p: the "
                "token that crosses the threshold is dropped")),
    Mutant("logits-in-place", "sampling_harness.kernels.mutants.memory_mutants:logits_in_place",
           caught_by=("validity",), budget="quick",
           bug=("log-softmax taken in place in the logits to save a copy: the logprobs are right, "
                "and the engine then samples from logprobs it takes for logits")),
)


FAMILY = Family(
    name="logprobs",
    parameters=("logits", "token_ids", "mode", "temperature", "top_k", "top_p"),
    doc=("fn(logits: float32|bf16|fp16 [B, V], token_ids: int64 [B, K] (-1 padding), mode: "
         "raw_logprobs|raw_logits|processed_logprobs|processed_logits, temperature: float32 "
         "[B], top_k: int64 [B], top_p: float32 [B]) -> values float32 [B, K] (-inf at "
         "padding) | (values, ranks int64 [B, K])"),
    validate=validate_output,
    output_bytes=lambda inputs: 12 * inputs["token_ids"].numel(),
    draws=lambda inputs: inputs["logits"].numel(),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    bench=BenchSpec(
        gpu_shapes=tuple(f"{shape}:{ids}" for shape in ("256x151936x21", "32x128256x21")
                         for ids in BENCH_IDS),
        cpu_shapes=tuple(f"8x4099x21:{ids}" for ids in BENCH_IDS),
        shape_help="BxVxK:ids", make_inputs=bench_batch,
        floor_bytes=lambda inputs: inputs["logits"].numel() * inputs["logits"].element_size()
        + 12 * inputs["token_ids"].numel(),
        baselines=("torch-logprobs-gather", "torch-logprobs")),
)

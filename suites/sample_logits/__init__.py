"""Family ``sample-logits``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks
that must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.families.peers import flashinfer
from sampling_harness.suites.sample_logits import (
    batch_invariance,
    boundaries,
    fit,
    greedy,
    independence,
    non_finite,
    tail,
    validity,
)
from sampling_harness.suites.sample_logits.contract import BUDGETS, bench_batch, validate_ids

CHECKS = (
    Check("validity", validity.validity, sanitize=True, many_shapes=True, detects=(
        "a broken contract, a masked token (-inf, outside top-k or top-p) drawn, greedy rows "
        "off the argmax, ids that change between two calls with one seed, a raise, a hang")),
    Check("fit_curated", fit.fit_curated, statistical=True, detects=(
        "a wrong processed law on curated rows (temperature, top-k with ties, top-p on the "
        "renormalised top-k set): total variation over fit_tv")),
    Check("fit_generated", fit.fit_generated, statistical=True, detects=(
        "a wrong processed law on Hypothesis-generated rows (ties, -inf, huge ranges, three "
        "dtypes)")),
    Check("fit_large_vocab", fit.fit_large_vocab, statistical=True, gpu=True, many_shapes=True,
          detects=(
        "a wrong processed law at V = 151936: total variation over large_tv")),
    Check("boundaries", boundaries.boundaries, statistical=True, detects=(
        "a wrong top-k or top-p boundary decision carrying real mass (ties at the k-th "
        "dropped, the crossing token dropped, top-p before top-k)")),
    Check("greedy", greedy.greedy, many_shapes=True, detects=(
        "a temperature-0 row that is not the lowest-index argmax of its logits, in any dtype, "
        "mixed with sampled rows")),
    Check("independence", independence.independence, statistical=True, detects=(
        "draws that depend on each other across rows of a call or calls with adjacent "
        "seeds")),
    Check("tail", tail.tail, statistical=True, detects=(
        "rare tokens of the processed law winning too seldom or too often (a noise floor)")),
    Check("batch_invariance", batch_invariance.batch_invariance, many_shapes=True, detects=(
        "a request's token moving with its batch (size, batch-mates' rows with their own "
        "temperature, top-k, top-p; with per-request seeds its position, batch-mates' seeds "
        "or unseeded batch-mates)")),
    Check("non_finite", non_finite.non_finite, many_shapes=True, detects=(
        "rows of NaN, all -inf or +inf logits not given the sentinel id 0; a poisoned row "
        "moving a batch-mate; ids outside [0, V) at vocabularies off every block size "
        "(padding that wins a tie)")),
)


MUTANTS = (
    Mutant("greedy-at-temperature-one",
                "sampling_harness.kernels.mutants.sample_logits_mutants:greedy_at_temperature_one",
           caught_by=("greedy",), budget="quick",
           bug=("rows with temperature 0 sampled at temperature 1: the guard t = 0 -> 1 kept, the "
                "argmax branch lost")),
    Mutant("topk-off-by-one",
                "sampling_harness.kernels.mutants.sample_logits_mutants:topk_off_by_one",
           caught_by=("validity",), budget="quick",
           bug=("the top-k boundary read one position too far: k + 1 tokens kept, a masked token "
                "sampled")),
    Mutant("topk-drops-ties",
                "sampling_harness.kernels.mutants.sample_logits_mutants:topk_drops_ties",
           caught_by=("boundaries",), budget="quick",
           bug="top-k keeps exactly k tokens: tokens tied with the k-th largest dropped by index"),
    Mutant("topp-excludes-crossing",
                "sampling_harness.kernels.mutants.sample_logits_mutants:topp_excludes_crossing",
           caught_by=("boundaries",), budget="quick",
           bug=("top-p keeps tokens whose inclusive cumulative probability is below top_p: the "
                "token that crosses the threshold is never sampled")),
    Mutant("topp-before-topk",
                "sampling_harness.kernels.mutants.sample_logits_mutants:topp_before_topk",
           caught_by=("boundaries",), budget="quick",
           bug=("top-p applied to the full distribution before top-k, not to the renormalised "
                "top-k result")),
    Mutant("temperature-twice",
                "sampling_harness.kernels.mutants.sample_logits_mutants:temperature_twice",
           caught_by=("fit_curated",), budget="quick",
           bug="logits divided by the temperature twice (by the model runner and the sampler)"),
    Mutant("row-shift", "sampling_harness.kernels.mutants.sample_logits_mutants:row_shift",
           caught_by=("fit_curated", "fit_generated", "fit_large_vocab"), budget="quick",
           bug=("row i sampled from row i-1's logits with row i's settings (an off-by-one row "
                "pointer)")),
    Mutant("fp32-noise-floor",
                "sampling_harness.kernels.mutants.sample_logits_mutants:fp32_noise_floor",
           caught_by=("tail",), budget="standard",
           bug=("float32 exponential noise floored at 2^-24: tokens below ~1e-8 of the head never "
                "win")),
    Mutant("shared-noise", "sampling_harness.kernels.mutants.sample_logits_mutants:shared_noise",
           caught_by=("independence",), budget="quick",
           bug="one noise row broadcast to every row: identical rows always agree"),
    Mutant("min-p-unscaled",
                "sampling_harness.kernels.mutants.sample_logits_mutants:min_p_unscaled",
           caught_by=("boundaries",), budget="quick",
           bug=("min-p computed on softmax of the unscaled logits, before the temperature "
                "(llama.cpp's default sampler chain applies temperature last; vLLM applies it "
                "first)")),
    Mutant("min-p-after-top-p",
                "sampling_harness.kernels.mutants.sample_logits_mutants:min_p_after_top_p",
           caught_by=("boundaries",), budget="quick",
           bug=("min-p applied after top-k and top-p (vLLM v0's sampler order), so top-p's "
                "cumulative sum runs over tokens min-p then drops")),
    Mutant("nan-reaches-argmax",
                "sampling_harness.kernels.mutants.sample_logits_mutants:nan_reaches_argmax",
           caught_by=("non_finite",), budget="quick",
           bug=("a NaN row reaches the race's argmax: its index stays at the reduction's initial "
                "-1 (FlashInfer issue 2402: garbage index, a later kernel crashed)")),
    Mutant("padding-wins", "sampling_harness.kernels.mutants.sample_logits_mutants:padding_wins",
           caught_by=("non_finite",), budget="quick",
           bug=("rows padded to a multiple of 128 columns with 0.0 (a zeroed buffer) instead of "
                "-inf: the padding wins where the logits lie below 0 and ids >= V come out (the "
                "vLLM advisory at V = 151936)")),
    Mutant("topp-bf16-cumsum",
                "sampling_harness.kernels.mutants.sample_logits_mutants:topp_bf16_cumsum",
           caught_by=("fit_curated",), budget="quick",
           bug=("top-p on a bfloat16 cumulative sum: past 1/2 the small terms round away, the sum "
                "stalls below top_p and the tail is kept (Megatron-LM issue 7182)")),
    Mutant("topp-threshold-stale-count",
                "sampling_harness.kernels.mutants.sample_logits_mutants:topp_threshold_stale_count",
           caught_by=("boundaries", "fit_curated"), budget="quick",
           bug=("the top-p threshold and its boundary count come from different search "
                "iterations: a lower logit kept, a higher one masked (vllm-ascend issue 13847)")),
    Mutant("unseeded-fast-path",
                "sampling_harness.kernels.mutants.batch_mutants:unseeded_fast_path_logits",
           caught_by=("batch_invariance",), budget="quick",
           bug=("one unseeded request sends the whole batch down the unseeded fast path: the "
                "seeded requests' generators are discarded (vLLM issue 51226 in "
                "TopKTopPSampler.forward_cpu, fixed by PR 51866)")),
    Mutant("top-k-sorted-rows",
                "sampling_harness.kernels.mutants.batch_mutants:top_k_sorted_rows",
           caught_by=("batch_invariance",), budget="quick",
           bug=("rows grouped by their top-k (a stable sort, as kernels that batch rows of one k) "
                "and drawn with the noise of their sorted position: a request's token depends on "
                "its batch-mates' settings (vLLM issue 17524: batch order changed seeded "
                "results)")),
)


FAMILY = Family(
    name="sample-logits",
    parameters=("logits", "temperature", "top_k", "top_p", "seed"),
    doc=("fn(logits: float32|bf16|fp16 [B, V], temperature: float32 [B] (0 = greedy), top_k: "
         "int64 [B], top_p: float32 [B], seed: int in [0, 2^31) | int64 [B] per-request seeds, "
         "-1 unseeded, *, min_p: float32 [B] in [0, 1] (optional; passed only when some row "
         "uses it)) -> int32/int64 [B] token ids: one draw from softmax(processed logits), the "
         "argmax where temperature is 0; id 0 at a row holding a NaN or +inf or nothing "
         "finite, its batch-mates unaffected"),
    validate=validate_ids,
    output_bytes=lambda inputs: 8 * inputs["logits"].shape[0],
    draws=lambda inputs: inputs["logits"].numel(),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    peers=(flashinfer("flashinfer-top-k-top-p", "flashinfer_sample_logits"),),
    writable=("logits",),
    options=("min_p",),
    bench=BenchSpec(
        gpu_shapes=("256x151936", "32x128256", "1x32000"), cpu_shapes=("8x4099",),
        shape_help="BxV[:filter] (default T 0.8, top-k 50, top-p 0.9)", make_inputs=bench_batch,
        floor_bytes=lambda inputs: inputs["logits"].numel() * inputs["logits"].element_size()
        + 8 * inputs["logits"].shape[0],
        baselines=("torch-sample-logits",)),
)

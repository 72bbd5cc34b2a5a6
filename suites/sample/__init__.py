"""Family ``sample``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks
that must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.families.peers import flashinfer
from sampling_harness.suites.sample import batch_invariance, fit, independence, tail, validity
from sampling_harness.suites.sample.contract import BUDGETS, bench_probs, validate_ids

CHECKS = (
    Check("validity", validity.validity, sanitize=True, detects=(
        "a broken contract (shape, dtype, device, id range, a width it cannot build for), "
        "a zero-probability token drawn, "
        "ids that change between two calls with one seed, a raise, a hang, a stray write")),
    Check("fit_curated", fit.fit_curated, statistical=True, detects=(
        "a wrong distribution on curated rows: total variation over fit_tv on pooled bins, "
        "or a few wrong tokens")),
    Check("fit_generated", fit.fit_generated, statistical=True, detects=(
        "a wrong distribution on Hypothesis-generated rows (zeros, ties, odd vocabularies)")),
    Check("fit_large_vocab", fit.fit_large_vocab, statistical=True, gpu=True, detects=(
        "a wrong distribution at V = 151936: total variation over large_tv")),
    Check("independence", independence.independence, statistical=True, detects=(
        "draws that depend on each other across rows of a call or calls with adjacent "
        "seeds (shared noise, streams keyed by seed + row)")),
    Check("tail", tail.tail, statistical=True, detects=(
        "rare tokens winning too seldom or too often for their mass (a noise floor, a "
        "truncated candidate set; on a GPU, in short rows of one chunk, wrong token-level "
        "noise in a two-level race)")),
    Check("batch_invariance", batch_invariance.batch_invariance, many_shapes=True, detects=(
        "a request's token moving with its batch: the batch size, its batch-mates' rows, "
        "and with per-request seeds its position, batch-mates' seeds or unseeded "
        "batch-mates; per-request seeds that never reach the draws")),
)


MUTANTS = (
    Mutant("fp32-noise-floor", "sampling_harness.kernels.mutants.sample_mutants:noise_floor",
           caught_by=("tail",), budget="standard", gpu_budget="quick",
           bug=("float32 exponential noise floored at 2^-24: rare tokens far below the head never "
                "win")),
    Mutant("chunked-fp32-noise",
           "sampling_harness.kernels.mutants.sample_mutants:chunked_fp32_noise",
           caught_by=("tail",), budget="quick", devices=("cuda",),
           bug=("a two-level race (chunks of 2048, then the winner's tokens) with float32 token "
                "noise: only the rare tokens sharing the head's chunk are lost, about 2 % of a "
                "long row's; seen by the tail's short rows at 1e-8, drawn on a GPU only")),
    Mutant("aligned-width-fails",
           "sampling_harness.kernels.mutants.sample_mutants:aligned_width_fails",
           caught_by=("validity",), budget="quick",
           bug=("the kernel fails to build for V a multiple of 16 in one or two chunks "
                "(triton-inverse-cdf on Triton 3.6, V 512-4096): every edge case of odd width "
                "passes")),
    Mutant("topk-truncated", "sampling_harness.kernels.mutants.sample_mutants:topk_truncated",
           caught_by=("tail",), budget="quick",
           bug="a fast path races only the top 1024 tokens: the long tail is never sampled"),
    Mutant("gumbel-u-one", "sampling_harness.kernels.mutants.sample_mutants:gumbel_u_one",
           caught_by=("validity",), budget="quick",
           bug=("uniform drawn in (0, 1]: u = 1 gives infinite Gumbel noise, -inf + inf = NaN "
                "wins the argmax on a masked token")),
    Mutant("clamped-probs", "sampling_harness.kernels.mutants.sample_mutants:clamped_probs",
           caught_by=("validity",), budget="quick",
           bug=("probs clamped to float32 eps 'to avoid log(0)': zero-probability tokens get "
                "sampled")),
    Mutant("unseeded", "sampling_harness.kernels.mutants.sample_mutants:unseeded",
           caught_by=("validity",), budget="quick",
           bug=("the seed is ignored and the global generator used: the same (probs, seed) gives "
                "different ids")),
    Mutant("keepdim-ids", "sampling_harness.kernels.mutants.sample_mutants:keepdim_ids",
           caught_by=("validity",), budget="quick",
           bug="argmax(keepdim=True): ids of shape [B, 1]"),
    Mutant("shared-noise", "sampling_harness.kernels.mutants.sample_mutants:shared_noise",
           caught_by=("independence",), budget="quick",
           bug="one noise vector broadcast to every row: identical rows always agree"),
    Mutant("seed-row-overlap", "sampling_harness.kernels.mutants.sample_mutants:seed_row_overlap",
           caught_by=("independence",), budget="quick",
           bug="Philox stream chosen as seed + row: row i+1 of seed s repeats row i of seed s+1"),
    Mutant("double-softmax", "sampling_harness.kernels.mutants.sample_mutants:double_softmax",
           caught_by=("fit_curated", "fit_generated", "fit_large_vocab"), budget="quick",
           bug="softmax applied to probs as if they were logits"),
    Mutant("row-shift", "sampling_harness.kernels.mutants.sample_mutants:row_shift",
           caught_by=("fit_curated",), budget="quick",
           bug="row i sampled from row i-1's probs (an off-by-one row pointer)"),
    Mutant("raises", "sampling_harness.kernels.mutants.sample_mutants:raises",
           caught_by=("validity",), budget="quick",
           bug="the kernel raises (an illegal memory access)"),
    Mutant("hangs", "sampling_harness.kernels.mutants.sample_mutants:hangs",
           caught_by=("validity",), budget="quick", call_timeout=2.0,
           bug="the kernel never returns"),
    Mutant("native-segfault", "sampling_harness.kernels.mutants.sample_mutants:native_segfault",
           caught_by=("fit_curated",), budget="quick",
           bug=("a native extension's large-batch path reads through a null pointer: SIGSEGV "
                "kills the process running the kernel (its check fails with the signal; the "
                "run goes on in a fresh worker)")),
    Mutant("store-past-probs", "sampling_harness.kernels.mutants.memory_mutants:store_past_probs",
           caught_by=("validity",), budget="quick",
           bug=("a Triton store mask off by one (cols <= V) while overwriting probs in place: "
                "each row writes into the next, the last one past the end of probs")),
    Mutant("ids-past-end", "sampling_harness.kernels.mutants.memory_mutants:ids_past_end",
           caught_by=("validity",), budget="quick", tool="memcheck",
           bug=("a Triton store mask off by one writes one id past the output's end, into the "
                "allocation's padding: the ids are right")),
    Mutant("reads-uninitialised",
                "sampling_harness.kernels.mutants.memory_mutants:reads_uninitialised",
           caught_by=("validity",), budget="quick", tool="initcheck",
           bug=("uninitialised memory read and copied into the output before the right ids "
                "overwrite it (vLLM PR 37238 read uninitialised slots)")),
    Mutant("batch-size-stream",
                "sampling_harness.kernels.mutants.batch_mutants:batch_size_stream",
           caught_by=("batch_invariance",), budget="quick",
           bug=("the noise stream keyed by the batch size (its seed offset by B, as a Philox "
                "offset sized by the batch): every request's token changes when a request joins "
                "or leaves (the batch-invariant inference measurement: 80 distinct completions in "
                "1,000 runs)")),
    Mutant("content-sorted-rows",
                "sampling_harness.kernels.mutants.batch_mutants:content_sorted_rows",
           caught_by=("batch_invariance",), budget="quick",
           bug=("rows drawn in the order of a content sort (by their top probability, as engines "
                "group rows by their settings) with the noise, or the seeds, left in batch order: "
                "a request's draw depends on its rank among its batch-mates (vLLM issue 17524: "
                "batch order changed seeded results)")),
    Mutant("unseeded-fast-path",
                "sampling_harness.kernels.mutants.batch_mutants:unseeded_fast_path",
           caught_by=("batch_invariance",), budget="quick",
           bug=("one unseeded request sends the whole batch down the unseeded fast path: the "
                "seeded requests' generators are discarded (vLLM issue 51226, fixed by PR 51866: "
                "the fast path was taken when len(generators) != batch size)")),
    Mutant("request-seeds-dropped",
                "sampling_harness.kernels.mutants.batch_mutants:request_seeds_dropped",
           caught_by=("batch_invariance",), budget="quick",
           bug=("per-request seeds accepted and dropped: every request draws the stream of seed 0 "
                "as its own, so requests of one prompt all draw the same token whatever their "
                "seeds (vLLM issue 51226: a request's seed ignored)")),
)


FAMILY = Family(
    name="sample",
    parameters=("probs", "seed"),
    doc=("fn(probs: float32 [B, V] contiguous, rows >= 0 summing to 1, seed: int in [0, 2^31)"
         " | int64 [B] per-request seeds, -1 unseeded) -> int32/int64 [B] token ids on "
         "probs.device; row r's id depends only on (seed, r, probs[r]), or (seed[r], probs[r])"),
    validate=lambda ids, inputs: validate_ids(ids, inputs["probs"]),
    output_bytes=lambda inputs: 8 * inputs["probs"].shape[0],
    draws=lambda inputs: inputs["probs"].numel(),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    peers=(flashinfer("flashinfer-sampling", "flashinfer_sample"),),
    writable=("probs",),
    bench=BenchSpec(
        gpu_shapes=("256x151936", "32x128256", "1x32000"), cpu_shapes=("16x4099",),
        shape_help="BxV", make_inputs=bench_probs,
        floor_bytes=lambda inputs: inputs["probs"].numel() * 4 + inputs["probs"].shape[0] * 8,
        baselines=("torch-fp32", "torch-fp64")),
)

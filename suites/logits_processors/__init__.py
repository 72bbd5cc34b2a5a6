"""Family ``logits-processors``, declared: its contract (contract.py), its checks (each a
function of a module beside this one), its budgets and its mutants with the checks that
must catch them. The plugin makes the test items, the self-test its runs, and
``sampling-harness list`` its listing from ``FAMILY`` alone (entry point
``sampling_harness.families``)."""

from sampling_harness.families import BenchSpec, Check, Family, Mutant
from sampling_harness.suites.logits_processors import (
    batch_invariance,
    curated,
    generated,
    large_vocab,
    validity,
)
from sampling_harness.suites.logits_processors.contract import (
    BENCH_VARIANTS,
    BUDGETS,
    OPTIONS,
    bench_batch,
    floor_bytes,
    validate_output,
)

BOUND = "within 2^-21 of the terms' magnitudes of the float64 reference"

CHECKS = (
    Check("validity", validity.validity, sanitize=True, many_shapes=True, detects=(
        "a broken output (dtype, shape, device, NaN, +inf), a changed read-only input, "
        "unwritten values (two poisons), or a value off the reference on edge batches (V = 1, "
        "empty batch, zero-width tables, padding-only histories, -inf logits)")),
    Check("penalties", curated.penalties, detects=(
        f"a repetition, frequency or presence penalty not {BOUND}: negative logits divided, "
        "prompt tokens counted, presence per occurrence, padding counted, low precision")),
    Check("logit_bias", curated.logit_bias, detects=(
        f"a logit bias not {BOUND}, alone or before the penalties (a bias flipping a seen "
        "logit's sign, ids 0 and V - 1, cancellation)")),
    Check("bitmask", curated.bitmask, detects=(
        "an allowed token masked or a forbidden one kept: bits read in the wrong order, the "
        "tail past a narrow bitmask left open, unconstrained rows blocked in a mixed batch")),
    Check("min_tokens", curated.min_tokens, detects=(
        "stop tokens masked one step too long or too short, or min_tokens counted over the "
        "prompt")),
    Check("combined", curated.combined, many_shapes=True, detects=(
        f"any processor not {BOUND} when all six act together on every curated row")),
    Check("generated", generated.generated, many_shapes=True, detects=(
        f"a value not {BOUND} on Hypothesis batches (every dtype and processor subset, V off "
        "powers of two, histories up to 4096, narrow and wide bitmasks)")),
    Check("large_vocab", large_vocab.large_vocab, gpu=True, many_shapes=True, detects=(
        f"a value not {BOUND} at 256 x 151936 with histories of 2048 (Qwen's bitmask 256 ids "
        "narrower than its logits)")),
    Check("batch_invariance", batch_invariance.batch_invariance, many_shapes=True, detects=(
        "a row's result moving with its batch (alone, shuffled, batch-mates appended, "
        "replaced or removed)")),
)


MUTANTS = (
    Mutant("repetition-divides-negative",
           "sampling_harness.kernels.mutants.logits_processors_mutants:"
           "repetition_divides_negative",
           caught_by=("penalties", "logit_bias", "combined", "generated", "large_vocab"),
           budget="quick",
           bug=("the repetition penalty divides every seen logit, negative ones too, so a "
                "penalised token with a negative logit becomes more likely (transformers issue "
                "2302; NeMo issue 8194)")),
    Mutant("frequency-over-prompt",
           "sampling_harness.kernels.mutants.logits_processors_mutants:frequency_over_prompt",
           caught_by=("penalties", "combined", "generated"), budget="quick",
           bug=("frequency and presence counted over the prompt and the output, where they "
                "count the output alone (vLLM)")),
    Mutant("presence-per-occurrence",
           "sampling_harness.kernels.mutants.logits_processors_mutants:presence_per_occurrence",
           caught_by=("penalties", "combined", "generated"), budget="quick",
           bug="the presence penalty subtracted once per occurrence, not once per token"),
    Mutant("padding-counted",
           "sampling_harness.kernels.mutants.logits_processors_mutants:padding_counted",
           caught_by=("validity", "penalties", "combined"), budget="quick",
           bug=("the padding id -1 of the histories counted as token V - 1 (Python negative "
                "indexing) by the penalties' count tables (vLLM issue 28220's class)")),
    Mutant("bitmask-tail-unmasked",
           "sampling_harness.kernels.mutants.logits_processors_mutants:bitmask_tail_unmasked",
           caught_by=("bitmask", "combined", "large_vocab"), budget="quick",
           bug=("a bitmask narrower than the padded logits leaves the tail allowed, so reserved "
                "ids are sampled (xgrammar PR 694: Qwen3's bitmask sized for 151669 tokens, "
                "logits 151936 wide; tenstorrent's vLLM PRs 328/333, mlx-vlm PR 1805)")),
    Mutant("unconstrained-zero-bitmask",
           "sampling_harness.kernels.mutants.logits_processors_mutants:"
           "unconstrained_zero_bitmask",
           caught_by=("bitmask", "batch_invariance"), budget="quick",
           bug=("in a batch mixing structured and plain requests, the plain rows' bitmask "
                "initialised to zeros blocks every token (vllm-gaudi PR 1200)")),
    Mutant("bitmask-msb-first",
           "sampling_harness.kernels.mutants.logits_processors_mutants:bitmask_msb_first",
           caught_by=("bitmask", "combined", "generated"), budget="quick",
           bug="the bitmask's bits read most significant first: token t reads bit 31 - t mod 32"),
    Mutant("min-tokens-off-by-one",
           "sampling_harness.kernels.mutants.logits_processors_mutants:min_tokens_off_by_one",
           caught_by=("min_tokens", "combined"), budget="quick",
           bug=("stop tokens masked while the output is at most min_tokens long (<=, not <): "
                "one token too many")),
    Mutant("stop-list-cut",
           "sampling_harness.kernels.mutants.logits_processors_mutants:stop_list_cut",
           caught_by=("min_tokens",), budget="quick",
           bug=("only the first 16 stop ids of a row masked while the output is shorter than "
                "min_tokens: the loop over the rest of a long stop list missing (found by "
                "mutate in triton-logits-processors)")),
    Mutant("penalties-in-bf16",
           "sampling_harness.kernels.mutants.logits_processors_mutants:"
           "penalties_in_logits_dtype",
           caught_by=("penalties", "logit_bias", "combined", "generated"), budget="quick",
           bug=("the processors computed in the logits' own dtype (bfloat16 or float16), not "
                "float32: 3 significant digits")),
)


FAMILY = Family(
    name="logits-processors",
    parameters=("logits", "token_ids", "num_prompt_tokens"),
    doc=("fn(logits: float32|bf16|fp16 [B, V], token_ids: int64 [B, L] (-1 after the end), "
         "num_prompt_tokens: int64 [B], *, repetition_penalty, frequency_penalty, "
         "presence_penalty: float32 [B] | None, logit_bias_ids: int64 [B, NB] (-1 padded) "
         "with logit_bias_values: float32 [B, NB], allowed_bitmask: int32 [B, W] | None, "
         "stop_token_ids: int64 [B, S] (-1 padded) with min_tokens: int64 [B]) -> float32 "
         "[B, V]: masked, biased, then penalised logits, within 2^-21 of the terms' "
         "magnitudes of the float64 reference"),
    validate=validate_output,
    output_bytes=lambda inputs: 4 * inputs["logits"].numel(),
    draws=lambda inputs: inputs["logits"].numel(),
    budgets=BUDGETS,
    checks=CHECKS,
    mutants=MUTANTS,
    writable=("logits",),
    options=OPTIONS,
    bench=BenchSpec(
        gpu_shapes=tuple(f"{shape}:{variant}" for shape in ("256x151936x2048", "32x128256x1024")
                         for variant in BENCH_VARIANTS),
        cpu_shapes=tuple(f"8x4099x256:{variant}" for variant in BENCH_VARIANTS),
        shape_help="BxVxL:variant", make_inputs=bench_batch, floor_bytes=floor_bytes,
        baselines=("torch-logits-processors",)),
)

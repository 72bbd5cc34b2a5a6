"""Deliberately wrong kernels, each re-creating a bug seen in the field. Each must FAIL the
check named in its entry, at the budget named there (the self-test in tests/ runs them)."""

from kernels import Mutant

_S = "kernels.mutants.sample_mutants:"
_R = "kernels.mutants.rejection_mutants:"
_L = "kernels.mutants.logprobs_mutants:"
_G = "kernels.mutants.sample_logits_mutants:"
_D = "kernels.mutants.draft_probs_mutants:"
_P = "kernels.mutants.spec_decode_mutants:"
_M = "kernels.mutants.memory_mutants:"

MUTANTS: dict[str, dict[str, Mutant]] = {
    "sample": {
        "fp32-noise-floor": Mutant(_S + "noise_floor", ("tail",), "standard",
                                   "float32 exponential noise floored at 2^-24: rare tokens "
                                   "far below the head never win"),
        "topk-truncated": Mutant(_S + "topk_truncated", ("tail",), "quick",
                                 "a fast path races only the top 1024 tokens: the long tail "
                                 "is never sampled"),
        "gumbel-u-one": Mutant(_S + "gumbel_u_one", ("validity",), "quick",
                               "uniform drawn in (0, 1]: u = 1 gives infinite Gumbel noise, "
                               "-inf + inf = NaN wins the argmax on a masked token"),
        "clamped-probs": Mutant(_S + "clamped_probs", ("validity",), "quick",
                                "probs clamped to float32 eps 'to avoid log(0)': "
                                "zero-probability tokens get sampled"),
        "unseeded": Mutant(_S + "unseeded", ("validity",), "quick",
                           "the seed is ignored and the global generator used: the same "
                           "(probs, seed) gives different ids"),
        "keepdim-ids": Mutant(_S + "keepdim_ids", ("validity",), "quick",
                              "argmax(keepdim=True): ids of shape [B, 1]"),
        "shared-noise": Mutant(_S + "shared_noise", ("independence",), "quick",
                               "one noise vector broadcast to every row: identical rows "
                               "always agree"),
        "seed-row-overlap": Mutant(_S + "seed_row_overlap", ("independence",), "quick",
                                   "Philox stream chosen as seed + row: row i+1 of seed s "
                                   "repeats row i of seed s+1"),
        "double-softmax": Mutant(_S + "double_softmax",
                                 ("fit_curated", "fit_generated", "fit_large_vocab"), "quick",
                                 "softmax applied to probs as if they were logits"),
        "row-shift": Mutant(_S + "row_shift", ("fit_curated",), "quick",
                            "row i sampled from row i-1's probs (an off-by-one row pointer)"),
        "raises": Mutant(_S + "raises", ("validity",), "quick",
                         "the kernel raises (an illegal memory access)"),
        "hangs": Mutant(_S + "hangs", ("validity",), "quick", "the kernel never returns"),
        "store-past-probs": Mutant(
            _M + "store_past_probs", ("validity",), "quick",
            "a Triton store mask off by one (cols <= V) while overwriting probs in place: "
            "each row writes into the next, the last one past the end of probs"),
        "ids-past-end": Mutant(
            _M + "ids_past_end", ("validity",), "quick",
            "a Triton store mask off by one writes one id past the output's end, into the "
            "allocation's padding: the ids are right", tool="memcheck"),
        "reads-uninitialised": Mutant(
            _M + "reads_uninitialised", ("validity",), "quick",
            "uninitialised memory read and copied into the output before the right ids "
            "overwrite it (vLLM PR 37238 read uninitialised slots)", tool="initcheck"),
    },
    "rejection": {
        "draft-probs-dropped": Mutant(
            _R + "draft_probs_dropped", ("validity", "acceptance_length"), "quick",
            "draft probs never passed to the rejection sampler, q taken one-hot at the "
            "draft: d accepted with probability p(d), not min(1, p/q) (vLLM PR 40269: "
            "acceptance fell from ~0.45 to ~0.22)"),
        "shared-uniform": Mutant(
            _R + "shared_uniform", ("joint", "fixed_drafts"),
            "quick",
            "one uniform serves the accept test and the residual draw: the recovered token "
            "is the residual's inverse CDF at the very u that rejected (u >= p/q), so only "
            "the upper part of the residual is reached"),
        "greedy-unwritten": Mutant(
            _R + "greedy_unwritten", ("validity", "greedy"), "quick",
            "the greedy path allocates its output with torch.empty and writes only the "
            "accepted drafts and the emitted token: later slots hold allocator garbage, "
            "not -1 (vLLM PR 37238, new_empty -> new_zeros)"),
        "accept-all": Mutant(
            _R + "accept_all", ("validity", "acceptance_length"), "quick",
            "every draft accepted whatever its target probability, p(d) = 0 included"),
        "residual-from-target": Mutant(
            _R + "residual_from_target", ("validity", "marginal"), "quick",
            "at a rejection the token is drawn from p, not from max(p - q, 0): tokens with "
            "p <= q (the rejected draft among them) are emitted"),
        "ratio-inverted": Mutant(
            _R + "ratio_inverted", ("validity", "acceptance_length"), "quick",
            "accept with probability min(1, q/p) instead of min(1, p/q): drafts of target "
            "probability 0 always accepted"),
        "zero-draft-shift": Mutant(
            _R + "zero_draft_shift", ("validity", "greedy"), "quick",
            "an off-by-one in the offsets of zero-draft requests (counted as one row): every "
            "later request reads its drafts and probabilities one row too far"),
        "greedy-tie-random": Mutant(
            _R + "greedy_tie_random", ("greedy",), "quick",
            "greedy verify keeps every token tied at the maximum and picks one at random, "
            "not the lowest index (vllm-project/tpu-inference PR 3580: top_k=1 by threshold "
            "keeps all tied maxima and samples among them; SGLang issue 31071: EAGLE greedy "
            "verify's argmax over tied logits accepts different drafts per rank)"),
        "noise-never-drawn": Mutant(
            _R + "noise_never_drawn",
            ("independence", "joint", "fixed_drafts", "marginal", "law_generated"),
            "quick",
            "the recovered-token noise is drawn into a copy (exponential_ in place on "
            "q[indices], an advanced-indexing copy), so the race runs on a buffer never "
            "filled, the same for every request and seed (vLLM PR 10863, unseeded requests "
            "in a seeded batch)"),
        "last-slot-next-row": Mutant(
            _M + "last_slot_next_row", ("validity",), "quick",
            "the assembly kernel writes each request's last slot one row too far: the last "
            "request writes past the output's end", tool="memcheck"),
    },
    "logprobs": {
        "gathered-from-logits": Mutant(
            _L + "gathered_from_logits", ("values", "tme", "ranks", "generated"), "quick",
            "requested token ids gathered from the logits instead of the logprobs in "
            "raw_logprobs mode: they disagree with the top-k logprobs of the same request "
            "(vLLM PR 43125)"),
        "processed-in-raw-mode": Mutant(
            _L + "processed_in_raw_mode", ("values", "tme", "ranks", "generated"), "quick",
            "the processed values (temperature, top-k, top-p applied) returned in a raw mode"),
        "padding-as-last-entry": Mutant(
            _L + "padding_as_last_entry", ("validity",), "quick",
            "a padded id -1 read as the last vocabulary entry (Python negative indexing): "
            "its value returned instead of -inf"),
        "bf16-log-softmax": Mutant(
            _L + "bf16_log_softmax", ("values", "tme", "generated"), "quick",
            "log-softmax computed in bfloat16: about 3 significant digits"),
        "ranks-strict": Mutant(
            _L + "ranks_strict", ("validity", "ranks"), "quick",
            "ranks counted with > instead of >=: the token itself and its ties not counted"),
        "temperature-twice": Mutant(
            _L + "temperature_twice", ("values", "tme", "generated"), "quick",
            "the processed modes divide the logits by the temperature twice"),
        "topk-drops-ties": Mutant(
            _L + "topk_drops_ties", ("values", "tme", "ranks"), "quick",
            "top-k keeps exactly k entries: tokens tied with the k-th largest are dropped "
            "by index"),
        "topp-before-topk": Mutant(
            _L + "topp_before_topk", ("values", "tme"), "quick",
            "top-p applied to the full distribution before top-k, not to the renormalised "
            "top-k result"),
        "topp-excludes-crossing": Mutant(
            _L + "topp_excludes_crossing", ("values", "tme", "generated"), "quick",
            "top-p keeps tokens whose inclusive cumulative probability is below top_p: the "
            "token that crosses the threshold is dropped"),
        "logits-in-place": Mutant(
            _M + "logits_in_place", ("validity",), "quick",
            "log-softmax taken in place in the logits to save a copy: the logprobs are "
            "right, and the engine then samples from logprobs it takes for logits"),
    },
    "sample-logits": {
        "greedy-at-temperature-one": Mutant(
            _G + "greedy_at_temperature_one", ("greedy",), "quick",
            "rows with temperature 0 sampled at temperature 1: the guard t = 0 -> 1 kept, "
            "the argmax branch lost"),
        "topk-off-by-one": Mutant(
            _G + "topk_off_by_one", ("validity",), "quick",
            "the top-k boundary read one position too far: k + 1 tokens kept, a masked token "
            "sampled"),
        "topk-drops-ties": Mutant(
            _G + "topk_drops_ties", ("boundaries",), "quick",
            "top-k keeps exactly k tokens: tokens tied with the k-th largest dropped by "
            "index"),
        "topp-excludes-crossing": Mutant(
            _G + "topp_excludes_crossing", ("boundaries",), "quick",
            "top-p keeps tokens whose inclusive cumulative probability is below top_p: the "
            "token that crosses the threshold is never sampled"),
        "topp-before-topk": Mutant(
            _G + "topp_before_topk", ("boundaries",), "quick",
            "top-p applied to the full distribution before top-k, not to the renormalised "
            "top-k result"),
        "temperature-twice": Mutant(
            _G + "temperature_twice", ("fit_curated",), "quick",
            "logits divided by the temperature twice (by the model runner and the sampler)"),
        "row-shift": Mutant(
            _G + "row_shift", ("fit_curated", "fit_generated", "fit_large_vocab"), "quick",
            "row i sampled from row i-1's logits with row i's settings (an off-by-one row "
            "pointer)"),
        "fp32-noise-floor": Mutant(
            _G + "fp32_noise_floor", ("tail",), "standard",
            "float32 exponential noise floored at 2^-24: tokens below ~1e-8 of the head "
            "never win"),
        "shared-noise": Mutant(
            _G + "shared_noise", ("independence",), "quick",
            "one noise row broadcast to every row: identical rows always agree"),
    },
    "draft-probs": {
        "cached-order": Mutant(
            _D + "cached_order", ("curated", "generated"), "quick",
            "draft probabilities handed over in the cache's order, not the batch's "
            "(vLLM PR 40269)"),
        "stops-at-zero-drafts": Mutant(
            _D + "stops_at_zero_drafts", ("curated", "generated"), "quick",
            "the hand-over stops at the first request with no drafts"),
        "zeros-for-missing": Mutant(
            _D + "zeros_for_missing", ("curated", "generated"), "quick",
            "a request missing from the cache gets rows of zeros instead of the None "
            "fallback"),
        "slices-all-slots": Mutant(
            _D + "slices_all_slots", ("curated", "generated"), "quick",
            "K cached rows handed over per request, not its n drafts"),
        "empty-not-none": Mutant(
            _D + "empty_not_none", ("curated", "generated"), "quick",
            "an empty [0, V] tensor instead of None when no request has drafts"),
    },
    "spec-decode": {
        "stale-drafts": Mutant(
            _P + "stale_drafts", ("tme", "length"), "quick",
            "a request too close to max_model_len to draft keeps its stale drafts, which are "
            "verified past the limit: garbage logprobs (vLLM PR 38711, TME ~1.4e11)"),
        "probs-dropped": Mutant(
            _P + "probs_dropped", ("acceptance",), "quick",
            "draft probabilities never handed to the rejection sampler: q taken one-hot, "
            "acceptance p(d) instead of min(1, p/q) (vLLM PR 40269)"),
        "cached-order": Mutant(
            _P + "cached_order", ("law", "acceptance"), "quick",
            "draft probabilities cached in another order than the drafts: the rejection "
            "sampler verifies each draft against another request's law"),
    },
}

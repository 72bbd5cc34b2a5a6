"""The sparse half of triton-logits-processors: the value of every token the sparse
processors touch (history, bias and stop ids), computed from the ORIGINAL logits and
written over the dense result (``sparse_kernel``, launched after the dense kernel in stream
order).

Output counts without a [B, V] table: the row's history as keys 2 t + o (o = 1 at output
positions; padding and ids >= V get BIG, after every token), sorted by a bitonic network on
the keys' hypercube view (as ``tl.sort`` does, each compare-exchange partner taken as the
pair's sum minus the element: a plain reduction, which the Triton interpreter runs
vectorised, where ``tl.sort``'s xor reduction runs element by element). A token's keys are
then one run, its prompt keys first; its output count is C(end) - C(end of the previous
run), C the running count of output keys; the key after each key (is it a run's end?) and
the compacted ends' counts pass through a work space of 2 LP int32 words a row (LP the
history bucket). The last key of each run writes its token's value: x, the repetition
penalty, minus phi c and pi [c > 0], -inf where the bitmask forbids it. A biased token's
value, x + b then the penalties, takes its count and whether it was seen by comparison with
every key. All arithmetic in float32.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_wait

BIG = tl.constexpr(2**30 - 1)          # the key of padding, after every token's (V < 2^29)


@triton.jit
def allowed_by_bitmask(mask_ptr, rows, tokens, W, ok, HAS_MASK: tl.constexpr):
    """bool, the shape of ``tokens``: the bitmask's bit for each (row, token), the least
    significant bit first; False past 32 W. Without a bitmask, ``ok``."""
    if HAS_MASK:
        word_index = tokens >> 5
        inside = ok & (word_index < W)
        word = tl.load(mask_ptr + rows * W + word_index, mask=inside, other=0)
        ok = inside & (((word >> (tokens & 31)) & 1) != 0)
    return ok


@triton.jit
def indicator(DIMS: tl.constexpr, j: tl.constexpr):
    """[1, .., 2, .., 1]: 0 and 1 along hypercube dimension j (counted from the innermost)."""
    return tl.reshape(tl.arange(0, 2), [1] * (DIMS - j - 1) + [2] + [1] * j)


@triton.jit
def compare_exchange(h, flip, j: tl.constexpr, DIMS: tl.constexpr):
    """One bitonic step across hypercube dimension j: each pair ordered ascending, or
    descending where ``flip`` is 1; the partner is the pair's sum minus the element."""
    partner = tl.sum(h, DIMS - 1 - j, keep_dims=True) - h
    right = indicator(DIMS, j)
    return tl.where((h > partner) != (flip ^ right).to(tl.int1), partner, h)


@triton.jit
def bitonic_sort(keys, DIMS: tl.constexpr, LOG: tl.constexpr):
    """Each row of ``keys`` [R, 2^LOG] (2^(DIMS - LOG) rows, values below 2^30) in
    ascending order: the LOG (LOG + 1) / 2 steps of a bitonic network on its hypercube
    view [2] * DIMS."""
    h = tl.reshape(keys, [2] * DIMS)
    for stage in tl.static_range(1, LOG + 1):
        flip = indicator(DIMS, stage) if stage < LOG else 0
        for j in tl.static_range(stage):
            h = compare_exchange(h, flip, stage - 1 - j, DIMS)
    return tl.reshape(h, keys.shape)


@triton.jit
def run_counts(keys, work, LP: tl.constexpr):
    """For sorted keys [R, LP]: (token, its output count, whether the key ends its token's
    run); ``work`` [R, 1] pointers to 2 LP int32 words each."""
    at = tl.arange(0, LP)[None, :]
    tl.store(work + at, keys)
    tl.debug_barrier()
    following = tl.load(work + at + 1, mask=at + 1 < LP, other=BIG)
    token = keys >> 1
    last = (keys != BIG) & ((following >> 1) != token)
    running = tl.cumsum(tl.where(keys != BIG, keys & 1, 0), axis=1)
    run = tl.cumsum(last.to(tl.int32), axis=1)
    tl.store(work + LP + run - 1, running, mask=last)
    tl.debug_barrier()
    before = tl.load(work + LP + run - 2, mask=last & (run > 1), other=0)
    return token, running - before, last


@triton.jit
def penalised(v, seen, count, rep, freq, pres):
    """Repetition where ``seen`` (v / rep if v > 0, else v * rep), then - freq count and
    - pres where count > 0; rep, freq, pres [R, 1] float32 (1, 0, 0 change nothing)."""
    v = tl.where(seen, tl.where(v > 0, v / rep, v * rep), v)
    return v - freq * count.to(tl.float32) - tl.where(count > 0, pres, 0.0)


@triton.jit
def history_values(logits_ptr, ids_ptr, mask_ptr, work, rows64, row_ok, prompt, V,
                  L, W, stride, rep, freq, pres, HAS_MASK: tl.constexpr, DIMS: tl.constexpr,
                  LOG_LP: tl.constexpr):
    """The history's values (no bias): (sorted keys [R, LP], output length [R, 1], and at
    each key its token, the token's value and whether the key is the one to write it)."""
    LP: tl.constexpr = 1 << LOG_LP
    at = tl.arange(0, LP)[None, :]
    ids = tl.load(ids_ptr + rows64 * L + at, mask=row_ok[:, None] & (at < L), other=-1)
    output_length = tl.sum((ids >= 0).to(tl.int32), axis=1)[:, None] - prompt
    real = (ids >= 0) & (ids < V)
    keys = tl.where(real, ids.to(tl.int32) * 2 + (at >= prompt).to(tl.int32), BIG)
    keys = bitonic_sort(keys, DIMS, LOG_LP)
    token, count, last = run_counts(keys, work, LP)
    x = tl.load(logits_ptr + rows64 * stride + token, mask=last, other=0.0)
    v = penalised(x.to(tl.float32), last, count, rep, freq, pres)
    allowed = allowed_by_bitmask(mask_ptr, rows64, token, W, last, HAS_MASK)
    return keys, output_length, token, tl.where(allowed, v, float("-inf")), last


@triton.jit
def bias_inputs(logits_ptr, bias_ids_ptr, bias_ptr, mask_ptr, rows64, row_ok, first, V, NB,
                W, stride, HAS_MASK: tl.constexpr, SLOTS: tl.constexpr):
    """Bias slots [first, first + SLOTS): (token, x + b, whether the slot holds a token,
    whether the bitmask allows it): every load a biased token needs."""
    slot = first + tl.arange(0, SLOTS)[None, :]
    inside = row_ok[:, None] & (slot < NB)
    token = tl.load(bias_ids_ptr + rows64 * NB + slot, mask=inside, other=-1).to(tl.int32)
    live = (token >= 0) & (token < V)
    bias = tl.load(bias_ptr + rows64 * NB + slot, mask=live, other=0.0)
    x = tl.load(logits_ptr + rows64 * stride + token, mask=live, other=0.0)
    allowed = allowed_by_bitmask(mask_ptr, rows64, token, W, live, HAS_MASK)
    return token, x.to(tl.float32) + bias, live, allowed


@triton.jit
def bias_values(v, token, allowed, keys, rep, freq, pres, PENALTIES: tl.constexpr):
    """A biased token's whole value: ``v`` = x + b, then the penalties (its count and
    whether it was seen, by comparison with every key); -inf where not ``allowed``."""
    if PENALTIES:
        same = (keys[:, None, :] >> 1) == token[:, :, None]
        count = tl.sum((same & ((keys[:, None, :] & 1) == 1)).to(tl.int32), axis=2)
        seen = tl.sum(same.to(tl.int32), axis=2) > 0
        v = penalised(v, seen, count, rep, freq, pres)
    return tl.where(allowed, v, float("-inf"))


@triton.jit
def write_bias(logits_ptr, bias_ids_ptr, bias_ptr, mask_ptr, keys, out_rows, rows64, row_ok,
               first, V, NB, W, stride, rep, freq, pres, PENALTIES: tl.constexpr,
               HAS_MASK: tl.constexpr, SLOTS: tl.constexpr):
    """Bias slots [first, first + SLOTS): each biased token's whole value, written."""
    token, v, live, allowed = bias_inputs(logits_ptr, bias_ids_ptr, bias_ptr, mask_ptr, rows64,
                                          row_ok, first, V, NB, W, stride, HAS_MASK, SLOTS)
    tl.store(out_rows + token, bias_values(v, token, allowed, keys, rep, freq, pres, PENALTIES),
             mask=live)


@triton.jit
def stop_ids(stop_ptr, rows64, row_ok, first, V, S, SLOTS: tl.constexpr):
    """Stop slots [first, first + SLOTS): (token, whether the slot holds one)."""
    slot = first + tl.arange(0, SLOTS)[None, :]
    inside = row_ok[:, None] & (slot < S)
    token = tl.load(stop_ptr + rows64 * S + slot, mask=inside, other=-1)
    return token, (token >= 0) & (token < V)


@triton.jit
def write_stop(out_rows, token, hit):
    """-inf at each stop ``token`` where ``hit`` (its row's output shorter than min_tokens)."""
    tl.store(out_rows + token, tl.full(token.shape, float("-inf"), tl.float32), mask=hit)


@triton.jit
def history_length(ids_ptr, rows64, row_ok, L, counted, R: tl.constexpr,
                   SLOTS: tl.constexpr):
    """int32 [R, 1]: the ids >= 0 among the first ``counted`` of each row's L, SLOTS a step
    (the history bucket: one step)."""
    length = tl.zeros([R, 1], tl.int32)
    for first in range(0, counted, SLOTS):
        at = first + tl.arange(0, SLOTS)[None, :]
        ids = tl.load(ids_ptr + rows64 * L + at, mask=row_ok[:, None] & (at < L), other=-1)
        length += tl.sum((ids >= 0).to(tl.int32), axis=1)[:, None]
    return length


@triton.jit
def write_sparse(logits_ptr, out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr,
                 bias_ids_ptr, bias_ptr, mask_ptr, stop_ptr, min_ptr, work, rows, B, V, L, NB,
                 W, S, stride, has_rep, has_freq, has_pres, counted, PENALTIES: tl.constexpr,
                 HAS_MASK: tl.constexpr, R: tl.constexpr, DIMS: tl.constexpr,
                 LOG_LP: tl.constexpr, SLOTS: tl.constexpr, BIAS_SLOTS: tl.constexpr,
                 PDL: tl.constexpr):
    """The rows' touched tokens written into ``out``: history, then bias, then stop ids
    (a barrier between the phases: a later one overwrites an earlier one's tokens);
    ``work`` [R, 1] pointers to each row's work space. The first slots of bias and stop
    ids are read before the history's sort; with PDL all that and the history's values are
    computed while the dense kernel still runs, the stores wait for its end (``gdc_wait``)."""
    LP: tl.constexpr = 1 << LOG_LP
    row_ok = rows < B
    rows64 = rows.to(tl.int64)[:, None]
    out_rows = out_ptr + rows64 * V
    none = rows * 0          # flags as row vectors: the penalties absent stay neutral
    rep = tl.load(rep_ptr + rows, mask=row_ok & (none + has_rep != 0), other=1.0)[:, None]
    freq = tl.load(freq_ptr + rows, mask=row_ok & (none + has_freq != 0), other=0.0)[:, None]
    pres = tl.load(pres_ptr + rows, mask=row_ok & (none + has_pres != 0), other=0.0)[:, None]
    prompt = tl.load(prompt_ptr + rows, mask=row_ok, other=0).to(tl.int32)[:, None]
    # the first slots of bias and stop ids read before the history's sort: their loads off
    # the critical path
    bias_token, bias_x, biased, bias_allowed = bias_inputs(
        logits_ptr, bias_ids_ptr, bias_ptr, mask_ptr, rows64, row_ok, 0, V, NB, W, stride,
        HAS_MASK, BIAS_SLOTS)
    stop_token, stop_live = stop_ids(stop_ptr, rows64, row_ok, 0, V, S, SLOTS)
    least = tl.load(min_ptr + rows, mask=row_ok & (none + S > 0), other=0)[:, None]
    if PENALTIES:
        keys, output_length, token, value, last = history_values(
            logits_ptr, ids_ptr, mask_ptr, work, rows64, row_ok, prompt, V, L, W, stride, rep,
            freq, pres, HAS_MASK, DIMS, LOG_LP)
        if PDL:
            gdc_wait()                                 # the dense kernel's writes first
        tl.store(out_rows + token, value, mask=last)
    else:
        keys = tl.full([R, 1], BIG, tl.int32)          # no history to compare with
        output_length = history_length(ids_ptr, rows64, row_ok, L, counted, R, LP) - prompt
        if PDL:
            gdc_wait()
    tl.debug_barrier()                                 # the history's stores land first
    bias_value = bias_values(bias_x, bias_token, bias_allowed, keys, rep, freq, pres, PENALTIES)
    tl.store(out_rows + bias_token, bias_value, mask=biased)
    for first in range(BIAS_SLOTS, NB, BIAS_SLOTS):
        write_bias(logits_ptr, bias_ids_ptr, bias_ptr, mask_ptr, keys, out_rows, rows64,
                   row_ok, first, V, NB, W, stride, rep, freq, pres, PENALTIES, HAS_MASK,
                   BIAS_SLOTS)
    tl.debug_barrier()                                 # then the biased tokens'
    early = output_length < least
    write_stop(out_rows, stop_token, early & stop_live)
    for first in range(SLOTS, S, SLOTS):
        stop_token, stop_live = stop_ids(stop_ptr, rows64, row_ok, first, V, S, SLOTS)
        write_stop(out_rows, stop_token, early & stop_live)


# sizes and flags are not specialised: a batch's shapes and processors must not each cost a
# compile (the gathers a row makes gain nothing from knowing them)
@triton.jit(do_not_specialize=["B", "V", "L", "NB", "W", "S", "stride", "has_rep", "has_freq",
                               "has_pres", "counted"])
def sparse_kernel(logits_ptr, out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr,
                  bias_ids_ptr, bias_ptr, mask_ptr, stop_ptr, min_ptr, work_ptr, B, V, L, NB,
                  W, S, stride, has_rep, has_freq, has_pres, counted,
                  PENALTIES: tl.constexpr, HAS_MASK: tl.constexpr, R: tl.constexpr,
                  DIMS: tl.constexpr, LOG_LP: tl.constexpr, SLOTS: tl.constexpr,
                  BIAS_SLOTS: tl.constexpr, PDL: tl.constexpr):
    """R rows a program, launched after the dense kernel: ``write_sparse`` from the
    ORIGINAL logits, the final values written into ``out`` over the dense ones.

    Memory traffic a row: the history (8 L bytes), the logits and bitmask words at the
    touched ids (gathers: L + NB of 32-byte sectors), the per-row inputs and bias and stop
    ids; 8 LP bytes of work space written and read back (L2); one float32 store per
    distinct touched token. Latency bound, ~8 dependent global round trips (ids, sort work
    space twice, logits and bitmask gathers, bias ids then their logits, stop ids) after
    the bitonic sort's 66 compare-exchange steps. Measured alone on an H100 at L 2048, one
    row a program, 256 programs (the bench's batch): 76 us at 8 warps, 64 us at 16; with
    the sort left out, 50 us; without bias and stop ids, 72 us (where a round-trip count
    predicted 10-15 us: what holds the other ~45 us is not known yet)."""
    rows = tl.program_id(0) * R + tl.arange(0, R)
    work = work_ptr + rows.to(tl.int64)[:, None] * (2 << LOG_LP)
    write_sparse(logits_ptr, out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr,
                 bias_ids_ptr, bias_ptr, mask_ptr, stop_ptr, min_ptr, work, rows, B, V, L, NB,
                 W, S, stride, has_rep, has_freq, has_pres, counted, PENALTIES, HAS_MASK, R,
                 DIMS, LOG_LP, SLOTS, BIAS_SLOTS, PDL)

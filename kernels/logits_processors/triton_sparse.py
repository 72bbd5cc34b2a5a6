"""The sparse half of triton-logits-processors: the value of every token the sparse
processors touch (history, bias and stop ids), rewritten in the dense result from its
dense value (``sparse_kernel``, after the dense kernel in stream order or as its
programmatic dependent).

The dense value y of a token is its logit where the bitmask allows it, else -inf, so the
final value needs neither the logits nor the bitmask again: y + b, the repetition penalty,
minus phi c and pi [c > 0], and -inf wherever y is -inf. Reading y from the result, not the
logits, makes each touched 32-byte sector one DRAM read and one whole write-back (the
rewrite hits the sector in L2) where a logits gather and a partial store cost more.

Output counts without a [B, V] table: the row's history as keys 2 t + o (o = 1 at output
positions; padding and ids >= V get BIG, after every token), sorted by a bitonic network on
the keys' hypercube view (as ``tl.sort`` does, each compare-exchange partner taken as the
pair's sum minus the element: a plain reduction, which the Triton interpreter runs
vectorised, where ``tl.sort``'s xor reduction runs element by element). A token's keys are
then one run, its prompt keys first; its output count is C(end) - C(end of the previous
run), C the running count of output keys; the key after each key (is it a run's end?) and
the compacted ends' counts pass through a work space of 2 LP int32 words a row (LP the
history bucket). The last key of each run writes its token's value. A biased token's
value takes its count and whether it was seen by comparison with every key; its dense
value is read before the history's stores (which may change it), past the first slots
into a stash of NB float32 words a row. All arithmetic in float32.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_wait

BIG = tl.constexpr(2**30 - 1)          # the key of padding, after every token's (V < 2^29)


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
def penalised(y, bias, seen, count, rep, freq, pres):
    """From the dense value y (x, or -inf where not allowed): v = y + bias, repetition where
    ``seen`` (v / rep if v > 0, else v * rep), then - freq count and - pres where count > 0;
    -inf stays -inf whatever the penalties. rep, freq, pres [R, 1] float32 (1, 0, 0 change
    nothing)."""
    v = y + bias
    v = tl.where(seen, tl.where(v > 0, v / rep, v * rep), v)
    v = v - freq * count.to(tl.float32) - tl.where(count > 0, pres, 0.0)
    return tl.where(y == float("-inf"), y, v)


@triton.jit
def history_runs(ids_ptr, work, rows64, row_ok, prompt, V, L, DIMS: tl.constexpr,
                 LOG_LP: tl.constexpr):
    """The history sorted and counted: (sorted keys [R, LP], output length [R, 1], and at
    each key its token, the token's output count and whether the key ends its run, the one
    to write the token)."""
    LP: tl.constexpr = 1 << LOG_LP
    at = tl.arange(0, LP)[None, :]
    ids = tl.load(ids_ptr + rows64 * L + at, mask=row_ok[:, None] & (at < L), other=-1)
    output_length = tl.sum((ids >= 0).to(tl.int32), axis=1)[:, None] - prompt
    real = (ids >= 0) & (ids < V)
    keys = tl.where(real, ids.to(tl.int32) * 2 + (at >= prompt).to(tl.int32), BIG)
    keys = bitonic_sort(keys, DIMS, LOG_LP)
    token, count, last = run_counts(keys, work, LP)
    return keys, output_length, token, count, last


@triton.jit
def bias_slots(bias_ids_ptr, bias_ptr, rows64, row_ok, first, V, NB, SLOTS: tl.constexpr):
    """Bias slots [first, first + SLOTS): (token, b, whether the slot holds a token)."""
    slot = first + tl.arange(0, SLOTS)[None, :]
    inside = row_ok[:, None] & (slot < NB)
    token = tl.load(bias_ids_ptr + rows64 * NB + slot, mask=inside, other=-1).to(tl.int32)
    live = (token >= 0) & (token < V)
    return token, tl.load(bias_ptr + rows64 * NB + slot, mask=live, other=0.0), live


@triton.jit
def bias_values(y, bias, token, keys, rep, freq, pres, PENALTIES: tl.constexpr):
    """Biased tokens' whole values from their dense values ``y``: y + b, then the penalties
    (a token's count and whether it was seen, by comparison with every key)."""
    if PENALTIES:
        same = (keys[:, None, :] >> 1) == token[:, :, None]
        count = tl.sum((same & ((keys[:, None, :] & 1) == 1)).to(tl.int32), axis=2)
        seen = tl.sum(same.to(tl.int32), axis=2) > 0
    else:
        count = tl.zeros(token.shape, tl.int32)
        seen = count > 0
    return penalised(y, bias, seen, count, rep, freq, pres)


@triton.jit
def stash_dense(out_rows, stash_rows, bias_ids_ptr, bias_ptr, rows64, row_ok, first, V, NB,
                SLOTS: tl.constexpr):
    """Bias slots [first, first + SLOTS): their tokens' dense values copied to the stash
    (read before any store of the history's can change them)."""
    token, _, live = bias_slots(bias_ids_ptr, bias_ptr, rows64, row_ok, first, V, NB, SLOTS)
    tl.store(stash_rows + first + tl.arange(0, SLOTS)[None, :],
             tl.load(out_rows + token, mask=live, other=0.0), mask=live)


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
def write_sparse(out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                 bias_ptr, stop_ptr, min_ptr, work, stash_ptr, rows, B, V, L, NB, S, has_rep,
                 has_freq, has_pres, counted, PENALTIES: tl.constexpr, R: tl.constexpr,
                 DIMS: tl.constexpr, LOG_LP: tl.constexpr, SLOTS: tl.constexpr,
                 BIAS_SLOTS: tl.constexpr, PDL: tl.constexpr):
    """The rows' touched tokens rewritten in ``out`` from their dense values: history, then
    bias, then stop ids (a barrier between the phases: a later one overwrites an earlier
    one's tokens); ``work`` [R, 1] pointers to each row's work space. Every dense value a
    phase needs is read before the first store: the first bias slots' into registers, the
    others' into the stash (NB float32 words a row). The history's sort and counts and the
    first bias and stop slots come first, with PDL while the dense kernel still runs;
    ``gdc_wait`` holds the rest until its end."""
    LP: tl.constexpr = 1 << LOG_LP
    row_ok = rows < B
    rows64 = rows.to(tl.int64)[:, None]
    out_rows = out_ptr + rows64 * V
    stash_rows = stash_ptr + rows64 * NB
    none = rows * 0          # flags as row vectors: the penalties absent stay neutral
    rep = tl.load(rep_ptr + rows, mask=row_ok & (none + has_rep != 0), other=1.0)[:, None]
    freq = tl.load(freq_ptr + rows, mask=row_ok & (none + has_freq != 0), other=0.0)[:, None]
    pres = tl.load(pres_ptr + rows, mask=row_ok & (none + has_pres != 0), other=0.0)[:, None]
    prompt = tl.load(prompt_ptr + rows, mask=row_ok, other=0).to(tl.int32)[:, None]
    bias_token, bias, biased = bias_slots(bias_ids_ptr, bias_ptr, rows64, row_ok, 0, V, NB,
                                          BIAS_SLOTS)
    stop_token, stop_live = stop_ids(stop_ptr, rows64, row_ok, 0, V, S, SLOTS)
    least = tl.load(min_ptr + rows, mask=row_ok & (none + S > 0), other=0)[:, None]
    if PENALTIES:
        keys, output_length, token, count, last = history_runs(
            ids_ptr, work, rows64, row_ok, prompt, V, L, DIMS, LOG_LP)
        if PDL:
            gdc_wait()                                 # the dense values first
        y = tl.load(out_rows + token, mask=last, other=0.0)
    else:
        keys = tl.full([R, 1], BIG, tl.int32)          # no history to compare with
        output_length = history_length(ids_ptr, rows64, row_ok, L, counted, R, LP) - prompt
        if PDL:
            gdc_wait()
    bias_y = tl.load(out_rows + bias_token, mask=biased, other=0.0)
    for first in range(BIAS_SLOTS, NB, BIAS_SLOTS):    # past the first slots: rare
        stash_dense(out_rows, stash_rows, bias_ids_ptr, bias_ptr, rows64, row_ok, first, V,
                    NB, BIAS_SLOTS)
    if PENALTIES:
        value = penalised(y, 0.0, last, count, rep, freq, pres)
        tl.debug_barrier()                             # every dense value read
        tl.store(out_rows + token, value, mask=last)
    tl.debug_barrier()                                 # the history's stores land first
    tl.store(out_rows + bias_token, bias_values(bias_y, bias, bias_token, keys, rep, freq,
                                                pres, PENALTIES), mask=biased)
    for first in range(BIAS_SLOTS, NB, BIAS_SLOTS):
        more_token, more_bias, more = bias_slots(bias_ids_ptr, bias_ptr, rows64, row_ok,
                                                 first, V, NB, BIAS_SLOTS)
        more_y = tl.load(stash_rows + first + tl.arange(0, BIAS_SLOTS)[None, :], mask=more,
                         other=0.0)
        tl.store(out_rows + more_token, bias_values(more_y, more_bias, more_token, keys, rep,
                                                    freq, pres, PENALTIES), mask=more)
    tl.debug_barrier()                                 # then the biased tokens'
    early = output_length < least
    write_stop(out_rows, stop_token, early & stop_live)
    for first in range(SLOTS, S, SLOTS):
        stop_token, stop_live = stop_ids(stop_ptr, rows64, row_ok, first, V, S, SLOTS)
        write_stop(out_rows, stop_token, early & stop_live)


# sizes and flags are not specialised: a batch's shapes and processors must not each cost a
# compile (the gathers a row makes gain nothing from knowing them)
@triton.jit(do_not_specialize=["B", "V", "L", "NB", "S", "has_rep", "has_freq", "has_pres",
                               "counted"])
def sparse_kernel(out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                  bias_ptr, stop_ptr, min_ptr, work_ptr, stash_ptr, B, V, L, NB, S, has_rep,
                  has_freq, has_pres, counted, PENALTIES: tl.constexpr, R: tl.constexpr,
                  DIMS: tl.constexpr, LOG_LP: tl.constexpr, SLOTS: tl.constexpr,
                  BIAS_SLOTS: tl.constexpr, PDL: tl.constexpr):
    """R rows a program, after the dense kernel (in stream order, or as its programmatic
    dependent): ``write_sparse``, each touched token's final value from its dense value.

    Memory traffic a row: the history (8 L bytes); the dense values at the touched tokens
    read (gathers: one 32-byte sector per distinct token, mostly from DRAM), rewritten in
    the same sectors (L2 hits, written back whole); the per-row inputs and bias and stop
    ids; 8 LP bytes of work space written and read back (L2). No logits and no bitmask: the
    dense value is the logit where the bitmask allows the token, else -inf. The random
    sectors bound it: on an H100 at L 2048 (256 programs, 64 registers, 16 warps, two an
    SM), leaving the sort out changed nothing (47.8 against 47.5 us alone)."""
    rows = tl.program_id(0) * R + tl.arange(0, R)
    work = work_ptr + rows.to(tl.int64)[:, None] * (2 << LOG_LP)
    write_sparse(out_ptr, ids_ptr, prompt_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                 bias_ptr, stop_ptr, min_ptr, work, stash_ptr, rows, B, V, L, NB, S, has_rep,
                 has_freq, has_pres, counted, PENALTIES, R, DIMS, LOG_LP, SLOTS, BIAS_SLOTS,
                 PDL)

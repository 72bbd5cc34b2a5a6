"""The dense half of triton-logits-processors: every entry's value before the sparse
processors, y = x (float32) where the bitmask allows the token, else -inf. Nothing else
happens here, so that it streams like Triton's vector-add tutorial: many short programs,
each a tile of R rows x BLOCK columns (on a GPU one row and 2048-8192 columns), one load
and one store an entry, no loop, no scratch, no atomics.

Memory traffic: the logits read once (4 or 2 bytes an entry), the float32 result written
once (4 bytes), the bitmask's words read beside their columns (4 bytes per 32 columns, from
L1/L2 after the first touch). At 256 x 151936 float32 logits: 155.6 MB read, 155.6 MB
written, 311 MB in all, 128.6 us at an H100's 2.42 TB/s copy ceiling.

Expected GPU time (H100, 256 x 151936, BLOCK 4096, 8 warps): 9728 programs of 16 KB
read + 16 KB written each; a program holds 16 entries a thread in registers (four 128-bit
loads in flight a thread), 40 registers, so 6 programs (48 warps, 96 KB of loads in
flight) per SM where Little's law asks for about 20 KB; about 12 waves of ~1.5 us
programs, a tail under one of them. Like the tutorial, about 90 % of the copy ceiling:
~140-145 us (float32), ~105 us (bfloat16: 3/4 of the bytes; its 8-wide loads meet the
4-wide stores through 8 KB of shared memory).
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents


# V and the row stride stay specialised (V % 16 == 0 lets the loads and stores go as
# vectors); the batch, the bitmask's width and the grid's shape do not
@triton.jit(do_not_specialize=["B", "W", "column_blocks"])
def dense_kernel(logits_ptr, out_ptr, mask_ptr, B, V, W, stride, column_blocks,
                 HAS_MASK: tl.constexpr, R: tl.constexpr, BLOCK: tl.constexpr,
                 PDL: tl.constexpr):
    """Program p: rows [R (p // column_blocks), + R), columns [BLOCK (p % column_blocks),
    + BLOCK); a flat grid, consecutive programs on consecutive memory. The tile is viewed
    as [R, BLOCK / 32, 32] (row, bitmask word, bit): one word load per 32 columns, its bits
    by a shift in registers (bit t mod 32 of word t // 32, least significant first; False
    past 32 W). Compiled for sm_90 (Triton 3.6, float32, BLOCK 4096, 8 warps): 34
    registers (as read on an H100), 4 128-bit loads and stores and 4 word loads a thread,
    no shared memory.
    With PDL the kernel that follows (the sparse one, a programmatic dependent) may launch
    once every program has started; it waits for this grid's end before its first store."""
    if PDL:
        gdc_launch_dependents()
    row_block = tl.program_id(0) // column_blocks
    first_word = (tl.program_id(0) - row_block * column_blocks) * (BLOCK // 32)
    rows = row_block * R + tl.arange(0, R)
    rows64 = rows.to(tl.int64)[:, None, None]
    row_ok = (rows < B)[:, None, None]
    words = first_word + tl.arange(0, BLOCK // 32)[None, :, None]
    bit = tl.arange(0, 32)[None, None, :]
    cols = words * 32 + bit
    ok = row_ok & (cols < V)
    x = tl.load(logits_ptr + rows64 * stride + cols, mask=ok, other=0.0,
                eviction_policy="evict_first")                   # read once, never again
    allowed = ok
    if HAS_MASK:
        word = tl.load(mask_ptr + rows64 * W + words, mask=row_ok & (words < W), other=0)
        allowed = ok & (((word >> bit) & 1) != 0)
    tl.store(out_ptr + rows64 * V + cols, tl.where(allowed, x.to(tl.float32), float("-inf")),
             mask=ok)


def launch_dense(logits, out, bitmask, words: int, rows: int, block: int, warps: int,
                 pdl: bool = False) -> None:
    """``dense_kernel`` over all of ``out`` [B, V] (``bitmask`` None: no bitmask; a stand-in
    pointer is passed, never read); ``block`` a power of two, at least 32 (raised to it);
    ``pdl``: the next kernel is a programmatic dependent, to be let start early."""
    batch, vocab = out.shape
    block = max(32, block)
    column_blocks = -(-vocab // block)
    grid = (-(-batch // rows) * column_blocks,)
    dense_kernel[grid](logits, out, bitmask if bitmask is not None else out, batch, vocab,
                       words, logits.stride(0), column_blocks, HAS_MASK=bitmask is not None,
                       R=rows, BLOCK=block, PDL=pdl, num_warps=warps)

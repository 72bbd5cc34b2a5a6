"""triton-sample-logits reads and writes nothing outside its buffers, on rows whose
candidates overflow the select's scratch (more than CMAX entries >= tau: the rows of the
independence check, 8 tokens over V = 4099 at top-k 8 with every other logit 4 below them,
whose tau takes every group). The select's race once read such a row's candidates up to its
count, past its CMAX scratch entries: into the next row's, and past the buffer's end at the
last row (an illegal memory access on a GPU, whenever the page after the buffer was unmapped).

Every buffer sits between guard regions of a sentinel: the kernels' held scratch is replaced
by exactly sized buffers, and the logits are a slice of a larger tensor. Each load and store
of the Triton interpreter is checked against the guards' addresses (a read leaves no trace
in memory), and the guards must keep their sentinel (a write)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter tests")

GUARD = 4096                      # entries of each guard region


class Guards:
    """Buffers between guard regions, and the masked-in accesses that reach a guard."""

    def __init__(self):
        self.regions = []         # (first byte, end byte, name, the guard tensor)
        self.hits = set()
        self.accesses = 0

    def buffer(self, entries: int, dtype: torch.dtype, name: str) -> torch.Tensor:
        big = torch.empty(entries + 2 * GUARD, dtype=dtype)
        big.view(torch.uint8).fill_(0x5A)          # a sentinel in every byte
        size, base = big.element_size(), big.data_ptr()
        for lo, part in ((0, "before"), (GUARD + entries, "after")):
            self.regions.append((base + lo * size, base + (lo + GUARD) * size,
                                 f"{name} {part}", big[lo:lo + GUARD]))
        return big[GUARD:GUARD + entries]

    def scratch(self, kernel, device, tickets, partials, dtypes) -> tuple[torch.Tensor, ...]:
        """``split_scratch`` of exactly the size asked for (tickets zeroed, as held)."""
        return (self.buffer(max(tickets, 1), torch.int32, f"{kernel} tickets").zero_(),
                *(self.buffer(partials, dtype, f"{kernel} {dtype}") for dtype in dtypes))

    def check(self, kind: str, ptrs, mask) -> None:
        addresses = np.asarray(ptrs)[np.asarray(mask, dtype=bool)]
        self.accesses += addresses.size
        for lo, hi, name, _ in self.regions:
            inside = (addresses >= lo) & (addresses < hi)
            if inside.any():
                self.hits.add(f"{kind} {name}: {int(inside.sum())} entries")

    def written(self) -> list[str]:
        return [name for _, _, name, guard in self.regions
                if not bool((guard.view(torch.uint8) == 0x5A).all())]


@pytest.fixture
def guards(monkeypatch) -> Guards:
    from triton.runtime.interpreter import InterpreterBuilder

    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_row_fallback as fallback
    import sampling_harness.kernels.sample_logits.triton_top_k_select as select
    found = Guards()
    load, store = InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store

    def checked_load(self, ptrs, mask, other, *args):
        found.check("load", ptrs.data, mask.data)
        return load(self, ptrs, mask, other, *args)

    def checked_store(self, ptrs, value, mask, *args):
        found.check("store", ptrs.data, mask.data)
        return store(self, ptrs, value, mask, *args)

    monkeypatch.setattr(InterpreterBuilder, "create_masked_load", checked_load)
    monkeypatch.setattr(InterpreterBuilder, "create_masked_store", checked_store)
    for module in (race, select, fallback):
        monkeypatch.setattr(module, "split_scratch", found.scratch)
    return found


def overflow_rows(guards: Guards, vocab: int) -> tuple[dict, np.ndarray]:
    """The independence check's row (8 tokens at 0 among -4, top-k 8) three times, and a
    flat greedy row: every row's candidates overflow the scratch (V > CMAX, all >= tau)."""
    spread = sorted({0, 1, vocab // 4, vocab // 4 + 1, vocab // 2, vocab // 2 + 1,
                     vocab - 2, vocab - 1})
    x = torch.full((4, vocab), -4.0)
    x[:3, spread] = 0.0
    logits = guards.buffer(x.numel(), torch.float32, "logits").view(x.shape)
    logits.copy_(x)
    return {"logits": logits, "temperature": torch.tensor([1.0, 1.0, 1.0, 0.0]),
            "top_k": torch.tensor([8, 8, 8, 8]), "top_p": torch.ones(4)}, np.array(spread)


@pytest.mark.parametrize("gpu_tiers", [False, True])
def test_rows_overflowing_the_select_scratch_stay_inside_every_buffer(monkeypatch, guards,
                                                                     gpu_tiers):
    """Rows gathering more candidates than the select's scratch holds (left to the
    fallback) touch no guard, at the interpreter's tiles and at a GPU's (one row a program,
    the race read 128 candidates at a time); their ids are the kept tokens'."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_top_k_select as select
    vocab = select.CMAX.value + 52
    if gpu_tiers:
        tiers = select.tiers
        monkeypatch.setattr(select, "tiers", lambda v, groups, width, device, block_r, *launch:
                            tiers(v, groups, width, torch.device("cuda"), block_r, *launch))
        monkeypatch.setattr(race, "select_rows", lambda batch, v, device, warps, *groups:
                            (1, 4))
    inputs, kept = overflow_rows(guards, vocab)
    ids = race.sample_logits_triton(**inputs, seed=7).numpy()
    assert guards.accesses > 4 * vocab, "the interpreter's accesses were not seen"
    assert not guards.hits, sorted(guards.hits)
    assert not guards.written(), guards.written()
    assert np.isin(ids[:3], kept).all() and ids[3] == 0, ids

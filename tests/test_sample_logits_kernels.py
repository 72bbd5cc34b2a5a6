"""Family ``sample-logits``: the kernels against the float64 reference of the processed law,
on small batches (the harness's own checks measure them statistically)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings

from sampling_harness.device import default_device
from sampling_harness.errors import KernelFailure
from sampling_harness.kernels.logprobs.torch_logprobs import kept_entries, upcast
from sampling_harness.kernels.sample_logits.race_noise import sorted_race
from sampling_harness.kernels.sample_logits.torch_sample_logits import (
    Pieces,
    sample_logits_torch,
    with_min_p,
)
from sampling_harness.kernels.sample_logits.triton_filtered_race import sample_logits_triton
from sampling_harness.reference.processed import process, processed_probs
from sampling_harness.strategies.logits import sampling_tables
from sampling_harness.suites.sample_logits.contract import validate_ids

DEVICE = default_device()
KERNELS = {"torch": sample_logits_torch}
KERNELS["triton"] = sample_logits_triton


def batch(x, t, k, p, dtype=torch.float32) -> dict:
    return {"logits": torch.as_tensor(np.asarray(x, np.float64)).to(dtype).to(DEVICE),
            "temperature": torch.as_tensor(t, dtype=torch.float32, device=DEVICE),
            "top_k": torch.as_tensor(k, dtype=torch.int64, device=DEVICE),
            "top_p": torch.as_tensor(p, dtype=torch.float32, device=DEVICE)}


def drawn_tokens(kernel, inputs: dict, proc, repeat: int = 64, seeds: int = 4) -> np.ndarray:
    """bool [rows, V]: the tokens ``kernel`` drew for each row of ``inputs``, tiled ``repeat``
    times and drawn under ``seeds`` seeds; every draw must lie in the reference's possibly
    kept set ``proc.possible``."""
    tiled = {key: value.repeat(repeat, *([1] * (value.dim() - 1)))
             for key, value in inputs.items()}
    seen = np.zeros(proc.kept.shape, bool)
    for seed in range(seeds):
        ids = validate_ids(kernel(**tiled, seed=seed), tiled).cpu().numpy()
        rows = np.arange(ids.size) % proc.kept.shape[0]
        assert proc.possible[rows, ids].all(), "a masked token was drawn"
        seen[rows, ids] = True
    return seen


def boundary_batch() -> dict:
    """Ties at the top-k boundary, the top-p crossing token, -inf entries, a greedy row with
    a tie at the maximum, k = V, k = V - 1, top_p just under 1."""
    v = 12
    ties = [3.0, 2.0, 1.0, 1.0, 1.0] + [-1.0] * (v - 5)
    crossing = list(np.log([0.5, 0.3, 0.15, 0.05])) + [-20.0] * (v - 4)
    masked = [0.0, -np.inf] * (v // 2)
    greedy = [1.0, 5.0, 2.0, 5.0] + [0.0] * (v - 4)
    rows = [ties, crossing, masked, greedy, ties, crossing]
    return batch(rows, [1.0, 1.0, 0.7, 0.0, 1.3, 1.0], [3, 0, v, 2, v - 1, 0],
                 [1.0, 0.7, 0.9, 0.1, 1.0, 1.0 - 2.0**-20])


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_draws_stay_in_the_kept_set_and_reach_every_surely_kept_token(name, dtype):
    inputs = batch(boundary_batch()["logits"].cpu().double().numpy(), *(
        boundary_batch()[key].cpu() for key in ("temperature", "top_k", "top_p")), dtype=dtype)
    proc = process(inputs["logits"].cpu(), inputs["temperature"].cpu(), inputs["top_k"].cpu(),
                   inputs["top_p"].cpu())
    seen = drawn_tokens(KERNELS[name], inputs, proc)
    sampled = ~proc.greedy
    assert (seen[sampled] >= proc.certain[sampled]).all(), "a surely kept token never drawn"
    assert seen[3].sum() == 1 and seen[3, 1], "greedy row: the lowest tied argmax"


@pytest.mark.parametrize("name", list(KERNELS))
def test_same_seed_same_ids_other_seed_other_ids(name):
    inputs = batch(np.zeros((256, 40)), np.ones(256), np.zeros(256), np.ones(256))
    fn = KERNELS[name]
    first = fn(**inputs, seed=7)
    assert torch.equal(first, fn(**inputs, seed=7))
    assert not torch.equal(first, fn(**inputs, seed=8))


def test_the_validator_names_a_greedy_row_that_is_not_the_argmax():
    inputs = boundary_batch()
    ids = torch.zeros(6, dtype=torch.int64, device=DEVICE)
    with pytest.raises(KernelFailure, match="greedy row 3"):
        validate_ids(ids, inputs)
    ids[2] = 1  # a -inf logit
    with pytest.raises(KernelFailure, match="-inf"):
        validate_ids(ids, inputs)


def flag_counter(monkeypatch) -> list:
    """Wrap ``fallback_race`` to record how many rows each call leaves to it (the test
    synchronises; the kernel never does)."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    counts, inner = [], race.fallback_race

    def counted(logits, t, k, p, unresolved, ids, seed, **launch):
        counts.append(int(unresolved.sum()))
        inner(logits, t, k, p, unresolved, ids, seed, **launch)
    monkeypatch.setattr(race, "fallback_race", counted)
    return counts


def test_triton_candidate_and_full_row_races_draw_the_same_ids(monkeypatch):
    """The noise is keyed by (row, column): with top-k resolved among the candidates, or
    forced through the whole-row fallback (KMAX = 0: x_(k) and the top-p threshold by
    bisection over the row), the same kept set gives the same winner."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 300, generator=g) * 2
    inputs = batch(x.double().numpy(), [0.8] * 8 + [1.3] * 8, [5, 20, 1, 50] * 4,
                   [1.0, 0.9, 0.5, 0.95] * 4)
    flagged = flag_counter(monkeypatch)
    fast = race.sample_logits_triton(**inputs, seed=3)
    monkeypatch.setattr(race, "KMAX", 0)
    slow = race.sample_logits_triton(**inputs, seed=3)
    assert flagged == [0, 16]
    assert torch.equal(fast, slow)


@pytest.mark.parametrize("rows_per_program", [1, 32] if DEVICE == "cpu" else [1])
def test_triton_device_selection_agrees_with_the_sorted_race_on_hard_rows(monkeypatch,
                                                                         rows_per_program):
    """The device path (group maxima, candidates >= the k-th largest group max, bisections for
    x_(k) and the top-p threshold) against the whole-row fallback (KMAX = 0: bisections over
    the row) and ``sorted_race`` (torch-logprobs' sorted kept set, then the race in torch on
    the kernel's noise) on rows built to break it: bf16 ties at and across
    the top-k boundary, ties straddling top-p, -inf groups, fewer finite entries than k,
    greedy rows with tied maxima in different groups, k = 1 and k = V - 1, top_p 0 and just
    under 1, and rows of equal logits whose candidates overflow the scratch. Same noise, so
    the same kept set must give the same ids, row by row. One row per program: each row
    takes its own tier (ranks up to SMALL candidates, bisection above); 32: one program, whose
    rows all take the bisection (interpreter only: a GPU program holds one row, and the N x N
    tile of 32 rows does not compile in reasonable time)."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    monkeypatch.setattr(race, "select_rows",
                        lambda batch, vocab, device, warps, *groups: (rows_per_program, 4))
    g = torch.Generator().manual_seed(11)
    vocab, rows = 5000, 24
    x = (torch.randn(rows, vocab, generator=g) * 2).to(torch.bfloat16).double()
    x[1] = torch.randint(0, 4, (vocab,), generator=g).double()     # four values, many ties
    x[2, ::2] = -np.inf                                              # every other entry masked
    x[3, 7:] = -np.inf                                               # 7 finite entries, k = 20
    x[4] = 0.0                                                       # all equal: overflow
    x[5, [100, 4000]] = 50.0                                         # greedy tie, two groups
    x[6, :64] = -np.inf                                              # whole groups masked
    x[13, 10], x[13, 3000] = 40.0, 60.0            # greedy: a large entry before the max
    t = [0.8, 1.0, 0.7, 1.0, 1.0, 0.0, 1.3, 0.5] * 3
    k = [50, 3, 10, 20, 5, 7, 1, vocab - 1] * 3
    p = [0.9, 0.6, 1.0, 0.5, 0.9, 0.9, 0.0, 1.0 - 2.0**-20] * 3
    inputs = batch(x.numpy(), t, k, p, dtype=torch.bfloat16)
    flagged = flag_counter(monkeypatch)
    for seed in range(3):
        fast = race.sample_logits_triton(**inputs, seed=seed)
        # to the fallback: only the overflowing row 4 and k = V - 1 > KMAX (rows 7, 15, 23)
        assert flagged[-1] == 4
        monkeypatch.setattr(race, "KMAX", 0)
        slow = race.sample_logits_triton(**inputs, seed=seed)
        monkeypatch.setattr(race, "KMAX", 1024)
        assert torch.equal(fast, slow), (fast != slow).nonzero()[:, 0].tolist()
        want = sorted_race(**inputs, seed=seed)
        assert torch.equal(fast, want), (fast != want).nonzero()[:, 0].tolist()
        greedy = inputs["temperature"] == 0          # on the device either way: the argmax
        expected = inputs["logits"].float().argmax(dim=1)
        assert torch.equal(fast[greedy], expected[greedy])


@pytest.mark.parametrize("vocab", [131, 700])
def test_triton_gpu_tiers_on_small_vocabularies_draw_the_sorted_race_ids(monkeypatch, vocab):
    """On a GPU the select kernel's tensors are GROUPS groups and CMAX candidates wide for
    every V (one compiled kernel for all V <= GROUPS): those tiers, run here on V far below
    them (most of each tensor masked), draw ``sorted_race``'s ids on ties, -inf entries,
    greedy rows and top-p alone."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_top_k_select as select
    tiers = select.tiers
    monkeypatch.setattr(select, "tiers", lambda v, groups, width, device, block_r, *launch:
                        tiers(v, groups, width, torch.device("cuda"), block_r, *launch))
    monkeypatch.setattr(race, "select_rows", lambda batch, v, device, warps, *groups: (1, 4))
    assert select.tiers(vocab, vocab, 1, torch.device("cpu"), 1)[1:] == (select.GROUPS, 1024,
                                                                         select.CMAX.value)
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(6, vocab, generator=g) * 2).to(torch.bfloat16).double()
    x[1] = torch.randint(0, 3, (vocab,), generator=g).double()
    x[2, ::3] = -np.inf
    inputs = batch(x.numpy(), [0.8, 1.0, 0.7, 0.0, 1.2, 0.9], [50, 3, 10, 0, 0, 0],
                   [0.9, 0.6, 1.0, 1.0, 0.8, 1.0], dtype=torch.bfloat16)
    for seed in range(2):
        fast = race.sample_logits_triton(**inputs, seed=seed)
        want = sorted_race(**inputs, seed=seed)
        assert torch.equal(fast, want), (fast != want).nonzero()[:, 0].tolist()


@pytest.mark.parametrize("rows_per_program", [1, 2] if DEVICE == "cpu" else [1])
def test_triton_device_path_in_several_launches_draws_the_ids_of_one(monkeypatch,
                                                                    rows_per_program):
    """A scratch for 3 rows (rounded to the rows a program holds) splits the batch's
    ``_select_race`` into launches on one scratch. Each launch must read its own rows, write
    its own ids and key the noise by the batch row: the ids equal one launch's, row by row
    (a launch keyed by its own row 0 would repeat the draws of the first rows)."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_top_k_select as select
    monkeypatch.setattr(race, "select_rows",
                        lambda batch, vocab, device, warps, *groups: (rows_per_program, 4))
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(1, 600, generator=g) * 0.5).repeat(11, 1)    # one row, eleven times
    inputs = batch(x.double().numpy(), [1.0] * 10 + [0.0], [40] * 11, [0.95] * 11)
    one = race.sample_logits_triton(**inputs, seed=8)
    monkeypatch.setattr(select, "SCRATCH_BYTES", 3 * 12 * select.CMAX.value)
    assert select.scratch_rows(rows_per_program, 11) in (2, 3)
    assert torch.equal(race.sample_logits_triton(**inputs, seed=8), one)
    assert one[:10].unique().numel() > 3            # the same row, independent draws


def test_triton_held_scratch_is_never_read_before_it_is_written():
    """The select scratch and, for small batches, the group maxima, masses, flags and
    unresolved flags are held between calls (kernels/split_scratch.py), so the harness's
    allocator poison no longer reaches them. Poison it by hand between two calls with the
    same seed: a kernel that read a candidate or group slot before writing it would change
    its ids."""
    from sampling_harness.kernels import split_scratch
    g = torch.Generator().manual_seed(9)
    x = (torch.randn(6, 3000, generator=g) * 2).double().numpy()
    inputs = batch(x, [0.9, 0.0, 1.2, 0.7, 1.0, 0.5], [30, 5, 200, 1, 64, 12],
                   [0.8, 1.0, 0.95, 1.0, 0.5, 0.99])
    first = sample_logits_triton(**inputs, seed=4)
    held = [t for key, ts in split_scratch._HELD.items()
            if key[0].startswith("triton-sample-logits") for t in ts[1:]]
    assert held, "the select scratch is not held where this test looks for it"
    for poison in (float("nan"), 1e30, -1e30):
        for t in held:
            t.fill_(poison) if t.dtype.is_floating_point else t.fill_(torch.iinfo(t.dtype).max)
        assert torch.equal(sample_logits_triton(**inputs, seed=4), first)


@pytest.mark.parametrize("settings", [{"groups": 64}, {"groups": 64, "select_prefetch": True},
                                      {"groups": 2048, "select_prefetch": True},
                                      {"groups": 1024, "select_prefetch": False}])
def test_triton_select_settings_draw_the_ids_of_the_defaults(settings):
    """The select's launch settings change how it gathers, never what: 64 groups a row (64
    columns a group, the gather in steps of 16 groups, read a step ahead with
    ``select_prefetch``), 2048 (2 columns a group) and 1024 without the read ahead draw the
    default's ids, and ``sorted_race``'s, on ties across groups, -inf entries, greedy ties
    and top-p alone."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    g = torch.Generator().manual_seed(9)
    vocab = 4000
    x = (torch.randn(8, vocab, generator=g) * 2).to(torch.bfloat16).double()
    x[1] = torch.randint(0, 4, (vocab,), generator=g).double()
    x[2, ::2] = -np.inf
    x[3, [70, 3900]] = 30.0
    inputs = batch(x.numpy(), [0.8, 1.0, 0.7, 0.0, 1.2, 0.9, 1.0, 0.6],
                   [50, 60, 10, 0, 0, 1, 200, 0], [0.9, 0.95, 1.0, 1.0, 0.8, 1.0, 0.7, 0.9],
                   dtype=torch.bfloat16)
    for seed in range(2):
        default = race.sample_logits_triton(**inputs, seed=seed)
        assert torch.equal(race.sample_logits_triton(**inputs, seed=seed, **settings), default)
        assert torch.equal(default, sorted_race(**inputs, seed=seed))


def test_group_count_must_be_at_most_2048():
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    inputs = batch(np.zeros((1, 64)), [1.0], [0], [1.0])
    with pytest.raises(ValueError, match=r"groups must be in \[1, 2048\]"):
        race.sample_logits_triton(**inputs, seed=0, groups=3000)


def nucleus_rows(vocab: int = 4000) -> dict:
    """Rows with top-p alone (top-k 0 or V): peaked rows, whose top-p set lies among the
    candidates of the largest group maxima, and flat rows at top_p 0.99, whose set does not
    (they go to the whole-row fallback); ties straddling top_p; a -inf half; top_p 0."""
    g = torch.Generator().manual_seed(21)
    x = torch.randn(8, vocab, generator=g)
    x[0] *= 4                                           # peaked
    x[1] *= 0.1                                         # flat
    x[2] = torch.randint(0, 3, (vocab,), generator=g).double()   # three values, many ties
    x[3, vocab // 2:] = -np.inf
    x[4, :10] = 9.0                                     # ten tied heads
    return batch(x.double().numpy(), [0.7, 1.0, 1.0, 1.5, 1.0, 0.9, 2.0, 1.0],
                 [0, vocab, 0, 0, 0, vocab, 0, 0], [0.9, 0.99, 0.5, 0.95, 0.35, 0.0, 0.99, 0.6])


def test_triton_race_in_tiles_draws_the_ids_of_one_tile(monkeypatch):
    """The select's race reads its candidates a tile at a time (128 on a GPU; all at once
    on a CPU, where a loop trip costs the interpreter): with 16-candidate tiles, rows of
    many candidates, ties across tiles, greedy rows and top-p alone draw ``sorted_race``'s
    ids, the ids of one tile."""
    import functools

    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_top_k_select as select
    g = torch.Generator().manual_seed(13)
    x = (torch.randn(6, 2000, generator=g) * 0.3).double()
    x[1, ::50] = 4.0                          # 40 tied heads of a greedy row, in many tiles
    x[2] = torch.randint(0, 4, (2000,), generator=g).double()
    many = batch(x.numpy(), [1.0, 0.0, 1.3, 0.8, 0.7, 1.0], [200, 100, 0, 0, 120, 0],
                 [1.0, 0.9, 0.5, 1.0, 0.95, 0.3])
    for inputs in (many, nucleus_rows()):
        one = race.sample_logits_triton(**inputs, seed=5)
        monkeypatch.setattr(select, "select_race", functools.partial(select.select_race,
                                                                     race_tile=16))
        tiled = race.sample_logits_triton(**inputs, seed=5)
        monkeypatch.undo()
        assert torch.equal(tiled, one), (tiled != one).nonzero()[:, 0].tolist()
        assert torch.equal(one, sorted_race(**inputs, seed=5))


def test_triton_top_p_alone_on_the_candidates_the_fallback_and_a_sort_agree(monkeypatch):
    """Top-p alone, three ways, the same ids row by row: the candidates of the NUCLEUS_GROUPS
    largest group maxima with the row's mass from the group masses (when they reach top_p),
    the whole-row fallback (NUCLEUS_GROUPS = 1: one group's candidates with their ties hold
    only the sets of rows 2, 4 and 5), and ``sorted_race`` (a sort, then torch's race).
    Flat rows must reach the fallback from the candidates too."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_top_k_select as select
    inputs = nucleus_rows()
    flagged = flag_counter(monkeypatch)
    for seed in range(2):
        fast = race.sample_logits_triton(**inputs, seed=seed)
        assert flagged[-1] == 4, flagged         # rows 1, 3, 6, 7: sets wider than 256 groups
        with monkeypatch.context() as patch:
            patch.setattr(select, "NUCLEUS_GROUPS", 1)
            slow = race.sample_logits_triton(**inputs, seed=seed)
        assert flagged[-1] == 5, flagged         # and row 0 (rows 2, 4, 5: all ties or top_p 0)
        want = sorted_race(**inputs, seed=seed)
        assert torch.equal(fast, slow), (fast != slow).nonzero()[:, 0].tolist()
        assert torch.equal(fast, want), (fast != want).nonzero()[:, 0].tolist()


def test_triton_fallback_split_across_programs_draws_the_ids_of_one(monkeypatch):
    """The fallback with the columns split across three programs per row, merged by the
    row's last program through a ticket, draws the ids of one program per row (a merge
    that kept the last split's partial, or a ticket left unreset for the next call, would
    not)."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_row_fallback as fallback
    inputs = nucleus_rows(vocab=1500)
    inputs["top_p"][:] = 1.0                                # no filter: all to the fallback
    inputs["top_k"][4:] = 1100                              # k > KMAX: all to the fallback
    inputs["temperature"][7] = 0.0                          # and a greedy row with no filter
    seeds = range(6, 9)          # three calls in a row: a ticket left unreset shows twice
    one = [race.sample_logits_triton(**inputs, seed=seed) for seed in seeds]
    monkeypatch.setattr(fallback, "fallback_launch", lambda *args: (2, 256, 128, 3, 4, 1))
    for seed, ids in zip(seeds, one, strict=True):
        assert torch.equal(race.sample_logits_triton(**inputs, seed=seed), ids)
    splits_won = {int(ids[row]) // 512 for ids in one for row in range(4)}
    assert len(splits_won) >= 2, "the no-filter rows' winners lie in one split: weak data"
    assert all(ids[7] == inputs["logits"][7].argmax() for ids in one)


@pytest.mark.long(40)
def test_triton_fallback_searches_reading_tiles_ahead_draw_the_ids_of_one(monkeypatch):
    """The fallback's searches (x_(k) and the top-p threshold over whole rows, every row
    sent there: KMAX = 0) reading 4 and 8 search tiles at once, the last of a row past V,
    draw the ids of one tile at a time: the same counts, the same float64 masses added in
    the same order."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    import sampling_harness.kernels.sample_logits.triton_row_fallback as fallback
    inputs = nucleus_rows(vocab=1500)
    inputs["top_k"][5:] = torch.tensor([7, 300, 1])          # top-k, with and without top-p
    monkeypatch.setattr(race, "KMAX", 0)
    seeds = range(1)             # one call a reading: the searches' reads, not the draws

    def ids_at(tiles):
        monkeypatch.setattr(fallback, "fallback_launch",
                            lambda *args: (2, 256, 128, 1, 4, tiles))
        return [race.sample_logits_triton(**inputs, seed=seed) for seed in seeds]

    one = ids_at(1)
    for unroll in (4, 8):
        for ahead, ids in zip(ids_at(unroll), one, strict=True):
            assert torch.equal(ahead, ids), (unroll, (ahead != ids).nonzero()[:, 0].tolist())
    assert torch.equal(one[0], sorted_race(**inputs, seed=0))


def test_fallback_unroll_must_be_one_four_or_eight():
    import sampling_harness.kernels.sample_logits.triton_row_fallback as fallback
    with pytest.raises(ValueError, match="unroll must be one of"):
        fallback.fallback_launch(4, 1000, torch.device("cpu"), 2048, 512, 8, 4, 3)


@pytest.mark.skipif(DEVICE != "cuda", reason="needs a CUDA device")
def test_triton_call_never_synchronises_and_replays_in_a_cuda_graph():
    """Every path (greedy, top-k, top-p alone on the candidates and in the fallback, no
    filter, k > KMAX) in one batch: the call raises under torch's sync debug mode "error"
    if anything synchronises, and a CUDA graph of it replays the eager ids."""
    from sampling_harness.kernels.sample_logits.triton_filtered_race import (
        sample_logits_triton as fn,
    )
    inputs = nucleus_rows()
    inputs["top_k"][[5, 6]] = torch.tensor([50, 2000], device=DEVICE)
    inputs["temperature"][3] = 0.0
    eager = fn(**inputs, seed=9)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        again = fn(**inputs, seed=9)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.equal(again, eager)           # (torch.equal synchronises: outside the mode)
    graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(**inputs, seed=9)                   # the side stream's held scratch, outside the graph
        with torch.cuda.graph(graph, stream=side):
            captured = fn(**inputs, seed=9)
    torch.cuda.current_stream().wait_stream(side)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)


@pytest.mark.parametrize("name", list(KERNELS))
def test_min_p_draws_stay_in_the_kept_set_and_reach_every_surely_kept_token(name):
    """min-p rows (ties above the threshold, min_p 1, a scaled row, top-p after min-p, a
    top-k tighter than min-p) and a row without it, against the reference's masks."""
    v = 12
    tied = list(np.log([0.4, 0.2, 0.2, 0.2])) + [-9.0] * (v - 4)
    maxima = [2.0, 2.0, 1.0, 0.5] + [-9.0] * (v - 4)
    scaled = list(0.7 * np.array([0.0, -1.0, -2.0, -2.2])) + [-9.0] * (v - 4)
    mixed = list(np.log([0.5, 0.3, 0.1, 0.1])) + [-9.0] * (v - 4)
    rows = [tied, maxima, scaled, mixed, tied, mixed]
    inputs = batch(rows, [1.0, 1.0, 0.7, 1.0, 1.0, 0.5], [0, 0, 0, 0, 2, 0],
                   [1.0, 1.0, 1.0, 0.6, 1.0, 1.0])
    inputs["min_p"] = torch.tensor([0.45, 1.0, 0.15, 0.25, 0.1, 0.0], device=DEVICE)
    proc = process(inputs["logits"].cpu(), inputs["temperature"].cpu(), inputs["top_k"].cpu(),
                   inputs["top_p"].cpu(), min_p=inputs["min_p"].cpu())
    assert not proc.ambiguous.any()
    seen = drawn_tokens(KERNELS[name], inputs, proc)
    likely = proc.certain & (processed_probs(
        inputs["logits"].cpu(), inputs["temperature"].cpu(), inputs["top_k"].cpu(),
        inputs["top_p"].cpu(), inputs["min_p"].cpu()).probs > 0.02)
    assert (seen >= likely).all(), "a surely kept token never drawn"


@pytest.mark.parametrize("name", list(KERNELS))
def test_invalid_rows_get_the_sentinel_and_leave_their_batch_mates_alone(name):
    v = 131
    rng = np.random.default_rng(3)
    clean = batch(np.log(rng.dirichlet(np.ones(v), 6)), [0.0, 1.0, 0.7, 1.0, 1.3, 1.0],
                  [0, 0, 5, 0, 0, 0], [1.0, 1.0, 1.0, 0.8, 1.0, 1.0])
    ids = KERNELS[name](**clean, seed=11)
    poisoned = dict(clean, logits=clean["logits"].clone())
    poisoned["logits"][1] = float("nan")
    poisoned["logits"][2, 7] = float("nan")
    poisoned["logits"][3] = float("-inf")
    poisoned["logits"][4, [9, 30]] = float("inf")
    got = validate_ids(KERNELS[name](**poisoned, seed=11), poisoned)
    assert got[1:5].tolist() == [0, 0, 0, 0]
    assert got[0] == ids[0] and got[5] == ids[5]


def test_the_validator_demands_the_sentinel_at_invalid_rows():
    inputs = batch(np.zeros((2, 5)), [1.0, 0.0], [0, 0], [1.0, 1.0])
    inputs["logits"][1, 3] = float("nan")   # a greedy row too: no argmax demanded
    validate_ids(torch.tensor([4, 0], device=DEVICE), inputs)
    with pytest.raises(KernelFailure, match="sentinel"):
        validate_ids(torch.tensor([4, 3], device=DEVICE), inputs)


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(table=sampling_tables(300, 4))
def test_torch_kept_set_lies_between_the_references_certain_and_possible(table):
    """The float32 filters (min-p included) of torch-sample-logits decide within the
    reference's ambiguity margins: surely kept tokens kept, surely masked ones masked."""
    x = torch.as_tensor(table["logits"]).to(table["dtype"])
    t, k, p, mp = (torch.as_tensor(table[c]) for c in ("temperature", "top_k", "top_p", "min_p"))
    _, keep = kept_entries(upcast(x), t, k, p, with_min_p(Pieces(), mp))
    proc = process(x, t, k, p, min_p=mp)
    keep = keep.numpy() & np.isfinite(table["logits"])
    sampled = ~proc.greedy[:, None]
    assert not (proc.certain & ~keep & sampled).any()
    assert not (keep & ~proc.possible & sampled).any()


def test_min_p_goes_by_keyword_only_where_given_and_only_to_kernels_that_take_it():
    from sampling_harness.families import FAMILIES, accepts
    family, seen = FAMILIES["sample-logits"], []

    def old(logits, temperature, top_k, top_p, seed):
        seen.append("old")

    def new(logits, temperature, top_k, top_p, seed, *, min_p=None):
        seen.append(min_p)

    inputs = batch(np.zeros((2, 3)), [1.0, 1.0], [0, 0], [1.0, 1.0])
    family.call(old, inputs, 1)
    family.call(new, inputs, 1)
    family.call(new, {**inputs, "min_p": "mp"}, 1)
    assert seen == ["old", None, "mp"]
    assert not accepts(old, "min_p") and accepts(new, "min_p")
    assert accepts(lambda *a, **kw: None, "min_p") and not accepts(len, "min_p")


def test_plain_int_launch_arithmetic_equals_tritons():
    """The wrappers' cdiv and next_power_of_2 (plain ints, for host time) equal Triton's."""
    import triton

    from sampling_harness.kernels.split_scratch import cdiv, next_power_of_2
    for n in [*range(1, 2100), 151936, 2**20 + 1]:
        assert next_power_of_2(n) == triton.next_power_of_2(n)
        for d in (1, 3, 16, 1024):
            assert cdiv(n, d) == triton.cdiv(n, d)


def test_group_buffers_are_held_for_engine_batches_and_fresh_for_large_ones(monkeypatch):
    """Up to HELD_GROUP_ENTRIES the group buffers are one held set (the same storage on the
    next call); above it each call allocates its own, so a check's batch of many short rows
    holds nothing once it returns."""
    import sampling_harness.kernels.sample_logits.triton_filtered_race as race
    cpu = torch.device("cpu")
    held = race.group_buffers(1000, cpu)
    assert [b.data_ptr() for b in race.group_buffers(900, cpu)] == [b.data_ptr() for b in held]
    assert [b.dtype for b in held] == [torch.float32, torch.float32, torch.int8, torch.int8]
    monkeypatch.setattr(race, "HELD_GROUP_ENTRIES", 100)
    fresh = race.group_buffers(1000, cpu)
    assert all(b.numel() == 1000 for b in fresh)
    assert {b.data_ptr() for b in fresh}.isdisjoint(b.data_ptr() for b in held)

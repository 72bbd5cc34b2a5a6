"""Family ``tree-rejection``: the reference law, the kernels against it, the exact validator,
the mutants' mechanisms that only a GPU budget shows, the bench floor. Small and fast: the
checks themselves run in tests/test_selftest.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling_harness.errors import KernelFailure
from sampling_harness.kernels.mutants import tree_rejection_mutants
from sampling_harness.kernels.tree_rejection.torch_tree_rejection import (
    Draws,
    Pieces,
    counter_draws,
    deepest,
    tree_rejection_torch,
    tree_verify,
)
from sampling_harness.kernels.tree_rejection.triton_tree_rejection import tree_rejection_triton
from sampling_harness.reference.tree_rejection import (
    cell_offsets,
    children,
    drawn_steps,
    first_token_law,
    flat_law,
    greedy_output,
    listed_steps,
    sequence_law,
)
from sampling_harness.stats.fit import law_fit
from sampling_harness.suites.tree_rejection.batches import CaseSampler, TreeCase, cells, stack
from sampling_harness.suites.tree_rejection.bench import bench_batch, floor_bytes
from sampling_harness.suites.tree_rejection.contract import validate_output
from sampling_harness.suites.tree_rejection.models import build_model, listed_tokens

CPU = torch.device("cpu")
NAMES = ("draft_token_ids", "parent_ids", "draft_probs", "target_probs", "greedy")
TREE = (-1, -1, 0, 0, 2)                  # two root children, the first with two, one deeper
MODEL = build_model(3, 3, 7, ("typical", "weak-draft"))


def call(kernel, inputs, seed):
    return kernel(*(inputs[name] for name in NAMES), seed)


def conditional_ok(model, law_by_length) -> None:
    """Losslessness: given y_1 .. y_j and that the sequence goes on, y_(j+1) follows the
    target row of the path y_1 .. y_j (the sequences of every longer length summed)."""
    vocab = model.vocab
    for j in range(len(law_by_length)):
        nxt = sum(law.reshape(vocab ** j, vocab, -1).sum(2) for law in law_by_length[j:])
        for code in np.flatnonzero(nxt.sum(1) > 1e-12):
            path = tuple(int(t) for t in np.base_repr(code, vocab).zfill(j)) if j else ()
            p = model.rows(path)[0].astype(np.float64)
            np.testing.assert_allclose(nxt[code] / nxt[code].sum(), p / p.sum(), atol=1e-6)


@pytest.mark.parametrize("mode", ["listed", "drawn"])
def test_the_reference_law_sums_to_one_and_is_lossless(mode):
    tokens = listed_tokens(MODEL, TREE, "draft top-k", 3) if mode == "listed" else None
    law = sequence_law(MODEL, TREE, tokens)
    assert [a.size for a in law] == [3, 9, 27, 81]
    assert abs(flat_law(law).sum() - 1.0) < 1e-6 and (flat_law(law) >= 0).all()
    conditional_ok(MODEL, law)


def simulate(model, parents, tokens, rng) -> tuple[int, ...]:
    """The contract's procedure literally, one request at a time (drawn children drawn
    here, coins uniform): the brute-force counterpart of ``sequence_law``."""
    kids, node, path, out = children(parents), -1, (), []
    while True:
        p, q = (r.astype(np.float64) for r in model.rows(path))
        moved, spent, norm, before, u = None, 0.0, 1.0, 0.0, rng.random()
        for child in kids[node]:
            if tokens is None:
                x = int(rng.choice(q.size, p=q / q.sum()))
                w = max(p[x] - spent * q[x], 0.0)
                if w > 0 and rng.random() * q[x] * norm < w:
                    moved = child, x
                    break
                spent += norm
                norm = np.maximum(p - spent * q, 0.0).sum()
            else:
                x = int(tokens[child])
                before += p[x]
                if u < before:
                    moved = child, x
                    break
        if moved is None:
            w = np.maximum(p - spent * q, 0.0) if tokens is None else p.copy()
            if tokens is not None:
                w[[int(tokens[c]) for c in kids[node]]] = 0.0
            w = w if w.sum() > 0 else p                  # an empty residual: p itself
            out.append(int(rng.choice(w.size, p=w / w.sum())))
            return tuple(out)
        node, x = moved
        out.append(x)
        path += (x,)


@pytest.mark.parametrize("mode", ["listed", "drawn"])
def test_the_reference_matches_a_brute_force_simulation(mode):
    rng = np.random.default_rng(5)
    tokens = listed_tokens(MODEL, TREE, "random distinct", 4) if mode == "listed" else None
    law = flat_law(sequence_law(MODEL, TREE, tokens))
    offsets = np.concatenate([[0, 0], np.cumsum(3 ** np.arange(1, 5))])
    counts = np.zeros(law.size)
    for _ in range(20000):
        seq = simulate(MODEL, TREE, tokens, rng)
        counts[offsets[len(seq)] + int("".join(map(str, seq)), 3)] += 1
    assert law_fit(counts, law, 1e-6, 0.99).p_value > 1e-6


def test_the_step_laws_are_the_multi_draft_rules():
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.5, 0.3])
    take, stop, final = drawn_steps(p, q, 2)
    np.testing.assert_allclose(take[0], np.minimum(p, q))        # min(1, p/q) q
    residual = np.maximum(p - q, 0) / np.maximum(p - q, 0).sum()    # (1, 0, 0)
    np.testing.assert_allclose(take[1], (1 - np.minimum(p, q).sum()) * np.minimum(q, residual))
    np.testing.assert_allclose(first_token_law(p, q, k=2), p, atol=1e-12)
    take, stop, final = listed_steps(p, [1, 0])
    np.testing.assert_allclose(take, [0.3, 0.6])
    assert stop == pytest.approx(0.1) and final.tolist() == [0, 0, 1]


def sampled_law(kernel, case, trees, seed):
    sampler = CaseSampler(case, CPU)
    out = call(kernel, sampler.inputs(trees, torch.Generator().manual_seed(seed)), seed)
    inputs = sampler.inputs(trees, torch.Generator().manual_seed(seed))
    validate_output(out, inputs)
    return np.bincount(cells(out, case.vocab).numpy(),
                       minlength=int(cell_offsets(case.vocab, case.depth + 1)[-1]))


@pytest.mark.parametrize("kernel", [tree_rejection_torch, tree_rejection_triton],
                         ids=["torch", "triton"])
@pytest.mark.parametrize("mode", ["listed", "drawn"])
def test_the_kernels_follow_the_reference(kernel, mode):
    tokens = listed_tokens(MODEL, TREE, "adversarial", 2) if mode == "listed" else None
    case = TreeCase("t", TREE, MODEL, tokens)
    law = flat_law(sequence_law(MODEL, TREE, tokens))
    counts = sampled_law(kernel, case, 3000, 11)
    assert law_fit(counts, law, 1e-6, 0.99).p_value > 1e-6


@pytest.mark.parametrize("kernel", [tree_rejection_torch, tree_rejection_triton],
                         ids=["torch", "triton"])
def test_greedy_rows_equal_the_reference(kernel):
    rng = np.random.default_rng(3)
    requests = []
    for b in range(6):
        target = rng.random((len(TREE) + 1, 7)).astype(np.float32)
        target[:, 2] = target.max(1) if b % 2 else target[:, 2]     # ties at the maximum
        target /= target.sum(1, keepdims=True)
        best = target.argmax(1)
        tokens = np.array([best[0], (best[0] + 1) % 7, best[1], (best[1] + 3) % 7, best[3]])
        requests.append({"parents": np.array(TREE), "tokens": tokens, "target": target,
                         "draft": target.copy(), "greedy": True})
    inputs = stack(requests, 7, CPU, drawn=True)
    out = validate_output(call(kernel, inputs, 1), inputs)
    for b, r in enumerate(requests):
        expected = greedy_output(r["target"], r["parents"], r["tokens"], out.shape[1])
        assert out[b].tolist() == expected.tolist()


def test_the_validator_fails_what_the_contract_forbids():
    target = torch.tensor([[[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.5, 0.5, 0.0]]])
    inputs = {"draft_token_ids": torch.tensor([[0, 1]]), "parent_ids": torch.tensor([[-1, 0]]),
              "draft_probs": None, "target_probs": target, "greedy": torch.tensor([False])}
    validate_output(torch.tensor([[2, -1, -1]]), inputs)             # drawn at the root
    for bad, reason in (([[0, 1, 2]], "probability 0"),             # p(0) = 0 at the root
                        ([[2, 1, -1]], "no child"),
                        ([[2, -1]], "shape"),
                        ([[-1, 2, -1]], "placeholders")):
        with pytest.raises(KernelFailure, match=reason):
            validate_output(torch.tensor(bad), inputs)
    target = torch.tensor([[[0.1, 0.5, 0.4], [0.2, 0.3, 0.5], [0.5, 0.5, 0.0]]])
    inputs = {**inputs, "target_probs": target, "draft_token_ids": torch.tensor([[1, 0]])}
    with pytest.raises(KernelFailure, match="child's token"):       # 1 is the root's child
        validate_output(torch.tensor([[1, -1, -1]]), inputs)
    with pytest.raises(KernelFailure, match="probability 0"):       # p(2) = 0 at node 1
        validate_output(torch.tensor([[1, 0, 2]]), inputs)
    greedy = {**inputs, "greedy": torch.tensor([True])}
    validate_output(torch.tensor([[1, 2, -1]]), greedy)             # argmax 1, then 2 at node 0
    with pytest.raises(KernelFailure, match="argmax"):
        validate_output(torch.tensor([[2, -1, -1]]), greedy)


def never_batch(drawn: bool, trees: int = 16) -> dict:
    from sampling_harness.suites.tree_rejection.validity import never_inputs
    return never_inputs(trees, drawn, CPU)


@pytest.mark.parametrize("drawn", [False, True])
def test_an_inclusive_float32_coin_of_zero_accepts_a_child_of_probability_0(drawn):
    """The self-test sees coin-fp32-inclusive on a GPU only (2^27 coins); its mechanism,
    with the coin forced to 0, fails validity on any device, and the clean test does not."""
    inputs = never_batch(drawn)

    def zero_coins(seed, batch, nodes, vocab, device):
        draws = counter_draws(seed, batch, nodes, vocab, device)
        return Draws(lambda index: torch.zeros(batch, dtype=torch.float64), draws.noise)

    bug = Pieces(draws=zero_coins, accept_listed=tree_rejection_mutants._inclusive_listed,
                 accept_drawn=tree_rejection_mutants._inclusive_drawn)
    with pytest.raises(KernelFailure, match="probability 0"):
        validate_output(tree_verify(*(inputs[n] for n in NAMES), 3, bug), inputs)
    clean = Pieces(draws=zero_coins)
    validate_output(tree_verify(*(inputs[n] for n in NAMES), 3, clean), inputs)
    coins = tree_rejection_mutants._float32_coins(3, 2**16, 1, 2, CPU).coin
    assert bool((coins(torch.arange(2**16) % 2**19) * 2**24).frac().eq(0).all())


def test_float32_noise_never_goes_below_its_floor():
    draws = tree_rejection_mutants._float32_noise(5, 4096, 0, 64, CPU)
    noise = draws.noise(torch.arange(4096), torch.ones(4096, 64, dtype=torch.float64))
    assert float(noise.min()) >= 2.0**-24
    exact = counter_draws(5, 4096, 0, 64, CPU).noise(torch.arange(4096),
                                                     torch.ones(4096, 64, dtype=torch.float64))
    assert float(exact.min()) < 2.0**-12


def test_the_bench_floor_counts_one_row_per_listed_request_and_more_when_drawn():
    torch.manual_seed(0)
    listed = bench_batch("8x8x257:listed", CPU)
    listed["greedy"][:] = False
    rows = 8 * 257 * 4
    assert floor_bytes(listed) == pytest.approx(rows, rel=0.05, abs=8 * (16 * 8 + 8 * 5 + 1)
                                                + 4 * 8 * 8)
    drawn = bench_batch("8x8x257:drawn", CPU)
    drawn["greedy"][:] = False
    assert floor_bytes(drawn) > floor_bytes(listed)
    assert floor_bytes(drawn) < 8 * 257 * 4 * 2 * 9


@st.composite
def ragged_batches(draw) -> tuple[dict, int]:
    """(inputs, seed): 0 to 5 requests of 0 to 12 nodes (parents any earlier node or the
    root), -1 padding after each request's last node and up to two slots more, listed
    (distinct siblings) or drawn (siblings may repeat), greedy and random mixed."""
    drawn = draw(st.booleans())
    vocab = draw(st.sampled_from([16, 2100]))
    sizes = draw(st.lists(st.integers(0, 12), max_size=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    requests = []
    for n in sizes:
        parents = [int(rng.integers(-1, i)) for i in range(n)]
        tokens = np.zeros(n, np.int64)
        for i, parent in enumerate(parents):
            taken = {int(tokens[j]) for j in range(i) if parents[j] == parent}
            tokens[i] = rng.choice([t for t in range(vocab) if drawn or t not in taken])
        target = rng.dirichlet(np.ones(vocab), size=n + 1).astype(np.float32) + 1e-6
        requests.append({"parents": np.array(parents, np.int64), "tokens": tokens,
                         "target": target / target.sum(1, keepdims=True),
                         "draft": rng.dirichlet(np.ones(vocab), size=n + 1).astype(np.float32),
                         "greedy": bool(rng.random() < 0.3)})
    inputs = stack(requests, vocab, CPU, drawn)
    pad = draw(st.integers(0, 2))
    for name, fill in (("draft_token_ids", -1), ("parent_ids", -1)):
        inputs[name] = torch.nn.functional.pad(inputs[name], (0, pad), value=fill)
    for name in ("target_probs", "draft_probs"):
        if inputs[name] is not None:
            inputs[name] = torch.cat([inputs[name], inputs[name][:, -1:].expand(
                -1, pad, -1)], dim=1).contiguous()
    return inputs, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(ragged_batches())
def test_the_triton_kernel_returns_every_node_slot_plus_one(case):
    """Width N + 1 whatever the trees (no read of D): each path written as it is accepted,
    then the last token and -1 to the row's end, also with requests of no nodes and -1
    padding; the rows match the torch kernel's D + 1 columns in layout; the slow path (more
    children than the program holds: ``kids=1``) gives the same rows."""
    inputs, seed = case
    out = call(tree_rejection_triton, inputs, seed)
    batch, nodes = inputs["draft_token_ids"].shape
    assert out.shape == (batch, nodes + 1) and out.is_contiguous()
    if out.shape[0]:
        validate_output(out, inputs)
        width = deepest(inputs["parent_ids"], inputs["draft_token_ids"]) + 1
        assert (out[:, width:] == -1).all()
    slow = tree_rejection_triton(*(inputs[name] for name in NAMES), seed, kids=1)
    assert torch.equal(out, slow)


@pytest.mark.parametrize("mode", ["listed", "drawn"])
def test_the_children_held_in_registers_mask_what_the_slot_loop_masks(mode):
    """Listed: the last node's children gathered across blocks of slots (N = 40, V = 6000,
    three chunks) and masked in the chunks that hold them give the rows of the slot loop
    (kids=1), with 2, 16 or 64 held; drawn ignores them."""
    torch.manual_seed(1)
    inputs = bench_batch(f"12x40x6000:{mode}", CPU)
    inputs["greedy"][::5] = True
    rows = [tree_rejection_triton(*(inputs[name] for name in NAMES), 7, kids=kids)
            for kids in (1, 2, 16, 64)]
    validate_output(rows[0], inputs)
    assert all(torch.equal(rows[0], other) for other in rows[1:])
    star = {**inputs, "parent_ids": torch.full_like(inputs["parent_ids"], -1),
            "draft_token_ids": torch.randperm(6000)[:40].expand(12, 40).contiguous()}
    rows = [tree_rejection_triton(*(star[name] for name in NAMES), 7, kids=kids)
            for kids in (16, 64)]                           # 40 children: slow, then held
    validate_output(rows[0], star)
    assert torch.equal(rows[0], rows[1])


@pytest.mark.parametrize("chunk", [0, 2])
def test_the_children_are_masked_in_every_quarter_of_a_chunk(chunk):
    """Listed: three children of the root holding 0.6 of its row, in one quarter of one
    chunk (V = 6000: chunks of 2048 columns); where all are rejected, the last token is
    drawn without them (the validator fails a child's token), as the slot loop draws it."""
    vocab, quarter = 6000, 512
    for k in range(4):
        first = chunk * 4 * quarter + k * quarter + 7
        target = torch.full((vocab,), 0.4 / (vocab - 3))
        target[first:first + 3] = 0.2
        inputs = {"draft_token_ids": torch.arange(first, first + 3).expand(16, 3).contiguous(),
                  "parent_ids": torch.full((16, 3), -1, dtype=torch.int64), "draft_probs": None,
                  "target_probs": target.expand(16, 4, vocab).contiguous(),
                  "greedy": torch.zeros(16, dtype=torch.bool)}
        out = validate_output(call(tree_rejection_triton, inputs, k), inputs)
        assert (out[:, 0] < first).any() or (out[:, 0] >= first + 3).any()
        slow = tree_rejection_triton(*(inputs[name] for name in NAMES), k, kids=1)
        assert torch.equal(out, slow)


def test_the_children_are_gathered_across_blocks_of_slots():
    """Listed, N = 40: six children of the root at slots 0, 15, 16, 31, 32 and 39 (across
    the blocks of 16 slots the kernel gathers them in), the others under slot 0, whose
    token has probability 0; the children hold 0.6 of the root's row, so most rows that
    stop at the root would draw one, were one of them left unmasked."""
    vocab, slots = 300, (0, 15, 16, 31, 32, 39)
    parents = torch.zeros(40, dtype=torch.int64)
    parents[list(slots)] = -1
    parents[0] = -1
    tokens = torch.randperm(vocab, generator=torch.Generator().manual_seed(2))[:40]
    target = torch.full((41, vocab), 1.0 / vocab)
    target[0] = 0.4 / (vocab - 6)
    target[0, tokens[list(slots[1:])]] = 0.12
    target[0, tokens[0]] = 0.0
    inputs = {"draft_token_ids": tokens.expand(32, 40).contiguous(),
              "parent_ids": parents.expand(32, 40).contiguous(), "draft_probs": None,
              "target_probs": target.expand(32, 41, vocab).contiguous(),
              "greedy": torch.zeros(32, dtype=torch.bool)}
    rows = [tree_rejection_triton(*(inputs[name] for name in NAMES), 5, kids=kids)
            for kids in (16, 8, 4)]                          # 6 children: held, held, slow
    validate_output(rows[0], inputs)
    assert all(torch.equal(rows[0], other) for other in rows[1:])


@pytest.mark.parametrize("drawn", [False, True])
def test_no_requests_or_no_nodes_give_n_plus_one_columns(drawn):
    empty = {"draft_token_ids": torch.zeros((0, 3), dtype=torch.int64),
             "parent_ids": torch.zeros((0, 3), dtype=torch.int64),
             "draft_probs": torch.full((0, 4, 5), 0.2) if drawn else None,
             "target_probs": torch.full((0, 4, 5), 0.2),
             "greedy": torch.zeros(0, dtype=torch.bool)}
    assert call(tree_rejection_triton, empty, 1).shape == (0, 4)
    rootless = {**empty, "draft_token_ids": torch.zeros((3, 0), dtype=torch.int64),
                "parent_ids": torch.zeros((3, 0), dtype=torch.int64),
                "draft_probs": torch.full((3, 1, 5), 0.2) if drawn else None,
                "target_probs": torch.full((3, 1, 5), 0.2),
                "greedy": torch.tensor([False, True, False])}
    out = validate_output(call(tree_rejection_triton, rootless, 1), rootless)
    assert out.shape == (3, 1) and out[1].item() == 0           # greedy: the first maximum


@pytest.mark.parametrize("kernel", [tree_rejection_torch, tree_rejection_triton],
                         ids=["torch", "triton"])
@pytest.mark.parametrize("drawn", [False, True])
def test_the_width_is_the_batchs_deepest_tree_whatever_is_accepted(kernel, drawn):
    """At least D + 1 columns, D the deepest node of any tree in the batch (docs/families/
    tree-rejection.md; here D = N, so exactly), even when every request accepts nothing: a
    chain of 3 whose first child has target probability 0, beside a request without
    nodes."""
    target = torch.full((2, 4, 3), 1 / 3)
    target[0, 0] = torch.tensor([0.0, 0.5, 0.5])
    inputs = {"draft_token_ids": torch.tensor([[0, 1, 2], [-1, -1, -1]]),
              "parent_ids": torch.tensor([[-1, 0, 1], [-1, -1, -1]]),
              "draft_probs": torch.tensor([1.0, 0.0, 0.0]).expand(2, 4, 3).clone()
              if drawn else None,
              "target_probs": target, "greedy": torch.tensor([False, False])}
    out = validate_output(call(kernel, inputs, 5), inputs)
    assert out.shape == (2, 4) and out[0, 0].item() in (1, 2)
    assert (out[:, 1:] == -1).all()


def test_a_greedy_row_takes_the_first_maximum_across_chunks():
    """The greedy pass keeps a running maximum per column position and takes the least
    column holding the row's maximum: ties within and across chunks (V = 5001, three
    chunks), an all-zero row (column 0)."""
    gen = torch.Generator().manual_seed(4)
    target = torch.rand((8, 1, 5001), generator=gen)
    for b in range(7):
        target[b, 0, torch.randint(0, 5001, (b % 3 + 1,), generator=gen)] = 2.0
    target[3, 0, [4097, 2060, 12]] = 3.0                # 2060 and 12: one position
    target[7] = 0.0
    empty = torch.zeros((8, 0), dtype=torch.int64)
    inputs = {"draft_token_ids": empty, "parent_ids": empty, "draft_probs": None,
              "target_probs": target, "greedy": torch.ones(8, dtype=torch.bool)}
    out = call(tree_rejection_triton, inputs, 0)
    assert out[:, 0].tolist() == target[:, 0].argmax(dim=1).tolist()
    assert out[3, 0] == 12 and out[7, 0] == 0


def test_the_triton_kernel_keeps_its_one_line_errors():
    tokens = torch.zeros((2, 3), dtype=torch.int64)
    target = torch.full((2, 4, 5), 0.2)
    greedy = torch.zeros(2, dtype=torch.bool)
    with pytest.raises(ValueError, match="int64 \\[B, N\\]"):
        tree_rejection_triton(tokens.int(), tokens, None, target, greedy, 0)
    with pytest.raises(ValueError, match="N\\+1=4"):
        tree_rejection_triton(tokens, tokens, None, target[:, :3], greedy, 0)
    with pytest.raises(ValueError, match="greedy must be bool"):
        tree_rejection_triton(tokens, tokens, None, target, greedy.int(), 0)

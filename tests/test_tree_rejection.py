"""Family ``tree-rejection``: the reference law, the kernels against it, the exact validator,
the mutants' mechanisms that only a GPU budget shows, the bench floor. Small and fast: the
checks themselves run in tests/test_selftest.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sampling_harness.errors import KernelFailure
from sampling_harness.kernels.mutants import tree_rejection_mutants
from sampling_harness.kernels.tree_rejection.torch_tree_rejection import (
    Draws,
    Pieces,
    counter_draws,
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

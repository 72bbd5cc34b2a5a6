"""Family ``tree-rejection``: the paths mutation testing found unseen, and the output width.

* A node with more listed children than triton-tree-rejection holds in registers (its loop
  over every node slot) and children in every quarter of a chunk: validity's quarter sweeps
  reach them, and hand-made mutants of that loop (the wrong token removed, one quarter
  compared with another's columns) fail them.
* Empty residuals (suites/tree_rejection/models.py ``emptied``): the reference's fallback
  (p / sum p) equals a literal simulation, both kernels follow it, the validator lets a
  child's token through there only, and mutants of the re-draw fail validity's batches.
* The width W, D + 1 <= W <= N + 1: the Triton wrapper returns N + 1 without reading the
  device (checked here from its source; on a GPU, sync-debug mode and a CUDA graph capture
  are the real test), and outputs padded with anything but -1, or cut below D + 1, fail
  validation.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch

from sampling_harness.errors import KernelFailure
from sampling_harness.kernels.mutants import tree_rejection_mutants
from sampling_harness.kernels.tree_rejection import tree_race, triton_tree_rejection
from sampling_harness.kernels.tree_rejection.torch_tree_rejection import tree_rejection_torch
from sampling_harness.reference.tree_rejection import (
    drawn_steps,
    first_token_law,
    flat_law,
    listed_steps,
    sequence_law,
)
from sampling_harness.stats.fit import law_fit
from sampling_harness.suites.tree_rejection.batches import TreeCase, stack
from sampling_harness.suites.tree_rejection.contract import validate_output
from sampling_harness.suites.tree_rejection.models import emptied, listed_tokens
from sampling_harness.suites.tree_rejection.validity import (
    SWEEP,
    edge_batches,
    emptied_requests,
    path_batches,
    quarter_sweep,
)
from tests.test_tree_rejection import MODEL, NAMES, TREE, call, sampled_law, simulate

CPU = torch.device("cpu")
triton_kernel = triton_tree_rejection.tree_rejection_triton
SWEEPS = {"17 children": (64, 17), "8 children": (64, 8), "V = 4099": (4099, 17)}


def sweep_inputs(name: str, requests: int = SWEEP) -> dict:
    vocab, k = SWEEPS[name]
    return stack(quarter_sweep(vocab, k, 3, requests), vocab, CPU, drawn=False)


def emptied_inputs(drawn: bool) -> dict:
    vocab = 5 if drawn else 9
    return stack(emptied_requests(vocab, 4, drawn), vocab, CPU, drawn)


@cache
def batches() -> dict:
    return {**edge_batches(7), **path_batches(7)}


def test_an_empty_residual_draws_from_p():
    """Listed children holding all of p (mass 0.75) are all rejected with probability 1/4,
    then the token is p / sum p; drawn children from q = (0.5, 0.5, 0.5) >= p: the first
    rejection (1/3) leaves max(p - q, 0) = 0, the later siblings are rejected and p drawn.
    Either way the first token follows p normalised."""
    p = np.array([0.5, 0.25, 0.0, 0.0])
    take, stop, final = listed_steps(p, [0, 1])
    np.testing.assert_allclose(take, [0.5, 0.25])
    assert stop == pytest.approx(0.25)
    np.testing.assert_allclose(final, p / 0.75)
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.5, 0.5, 0.5])
    take, stop, final = drawn_steps(p, q, 3)
    np.testing.assert_allclose(take[0], p / 1.5)
    assert not take[1:].any() and stop == pytest.approx(1 / 3)
    np.testing.assert_allclose(final, p)
    np.testing.assert_allclose(first_token_law(p, q, k=3), p)


@pytest.mark.parametrize("mode", ["listed", "drawn"])
def test_emptied_models_match_a_literal_simulation(mode):
    rng = np.random.default_rng(6)
    tokens = listed_tokens(MODEL, TREE, "random distinct", 4) if mode == "listed" else None
    model = emptied(MODEL, TREE, tokens, 5)
    law = flat_law(sequence_law(model, TREE, tokens))
    assert abs(law.sum() - 1.0) < 1e-6
    offsets = np.concatenate([[0, 0], np.cumsum(3 ** np.arange(1, 5))])
    counts = np.zeros(law.size)
    for _ in range(10000):
        seq = simulate(model, TREE, tokens, rng)
        counts[offsets[len(seq)] + int("".join(map(str, seq)), 3)] += 1
    assert law_fit(counts, law, 1e-6, 0.99).p_value > 1e-6


@pytest.mark.parametrize("kernel", [tree_rejection_torch, triton_kernel], ids=["torch", "triton"])
@pytest.mark.parametrize("mode", ["listed", "drawn"])
def test_the_kernels_follow_the_reference_where_residuals_are_empty(kernel, mode):
    tokens = listed_tokens(MODEL, TREE, "random distinct", 2) if mode == "listed" else None
    case = TreeCase("emptied", TREE, emptied(MODEL, TREE, tokens, 8), tokens)
    law = flat_law(sequence_law(case.model, TREE, tokens))
    counts = sampled_law(kernel, case, 3000, 13)
    assert law_fit(counts, law, 1e-6, 0.99).p_value > 1e-6


@pytest.mark.parametrize("kernel", [tree_rejection_torch, triton_kernel], ids=["torch", "triton"])
@pytest.mark.parametrize("drawn", [False, True])
def test_the_re_draw_runs_on_emptied_batches_and_is_valid(kernel, drawn):
    """validity's emptied requests (drawn ones too): every row valid, and some end on a
    child's token of their last node, which only the re-draw from p returns."""
    inputs = emptied_inputs(drawn)
    out = validate_output(call(kernel, inputs, 3), inputs)
    last = out.gather(1, ((out >= 0).sum(1, keepdim=True) - 1))
    tokens, parents = inputs["draft_token_ids"], inputs["parent_ids"]
    path = (out >= 0).sum(1) - 1
    node = torch.full_like(path, -1)                   # the last node (first match per depth)
    for j in range(out.shape[1] - 1):
        going = j < path
        match = (parents == node[:, None]) & (tokens == out[:, j:j + 1]) & going[:, None]
        node = torch.where(going, match.long().argmax(1), node)
    child = ((parents == node[:, None]) & (tokens == last)).any(1) & ~inputs["greedy"]
    assert int(child.sum()) >= 4


def test_the_validator_lets_a_childs_token_through_only_where_the_residual_is_empty():
    def inputs(p, q=None, tokens=(0, 1)):
        rows = torch.tensor([p] * 3, dtype=torch.float32)[None]
        return {"draft_token_ids": torch.tensor([tokens]),
                "parent_ids": torch.tensor([[-1, -1]]),
                "draft_probs": None if q is None else torch.tensor([q] * 3)[None].float(),
                "target_probs": rows, "greedy": torch.tensor([False])}

    alone = torch.tensor([[0, -1]])                      # the last token 0 at the root
    validate_output(alone, inputs([0.5, 0.25, 0.0]))     # the children hold all of p
    with pytest.raises(KernelFailure, match="child's token at its node, whose residual"):
        validate_output(alone, inputs([0.5, 0.25, 0.25]))
    validate_output(alone, inputs([0.5, 0.3, 0.2], [0.5, 0.5, 0.5], (0, 0)))   # p <= q
    with pytest.raises(KernelFailure, match="child's token"):
        validate_output(alone, inputs([0.5, 0.3, 0.2], [0.2, 0.5, 0.3], (0, 0)))


@pytest.mark.parametrize("name", list(SWEEPS))
def test_the_slot_loop_masks_what_the_registers_mask_in_every_quarter(name):
    """The quarter sweeps: children at every quarter (and over the requests every column),
    half the requests drawing their last token without them; the slot loop (kids=16 with
    17 children, kids=1 with 8) gives the rows of the children held in registers
    (kids=32), and every row is valid."""
    inputs = sweep_inputs(name, 64 if "4099" in name else 256)   # kids=32: B 32^2 <= 2^20
    slow = triton_kernel(*(inputs[n] for n in NAMES), 9, kids=1 if "8" in name else 16)
    held = triton_kernel(*(inputs[n] for n in NAMES), 9, kids=32)
    validate_output(slow, inputs)
    assert torch.equal(slow, held)
    assert (slow.max(dim=1).values >= 0).all()


SOURCE = Path(inspect.getsourcefile(tree_race)).read_text()        # the mutated lines' module
KERNEL_SOURCE = Path(inspect.getsourcefile(triton_tree_rejection)).read_text()
HAND_MUTANTS = {
    "token + 1 removed": ("hit = hit | ((cols == token[:, None]) & child[:, None])",
                          "hit = hit | ((cols == token[:, None] + 1) & child[:, None])"),
    "quarter 2 as quarter 1": ("w1 = without_children(p1, j + Q,", "w1 = without_children(p1, j,"),
    "quarter 4 as quarter 3": ("w3 = without_children(p3, j + 3 * Q,",
                               "w3 = without_children(p3, j + 2 * Q,"),
    "quarter 2 removed": ("w1 = without_children(p1, j + Q,", "w1 = without_children(p1, j - Q,"),
    "column 0 removed": ("""    hit = cols < 0
    for n in range(0, N):""", """    hit = cols <= 0
    for n in range(0, N):"""),
    "re-draw from the root's row": ("requests, base, drawing, rows, empty,",
                                    "requests, base, drawing, rows - current - 1, empty,"),
    "re-draw returns token 0": ("token = tl.where(empty, again, token)",
                                "token = tl.where(empty, 0, token)"),
}


def hand_mutant(tmp_path, name: str):
    """triton-tree-rejection with one line of its race (tree_race.py) changed, both modules
    loaded from their own files (the interpreter reads a @triton.jit function's source from
    there), the kernel's module importing the changed race."""
    old, new = HAND_MUTANTS[name]
    assert SOURCE.count(old) == 1, f"the kernel changed: update HAND_MUTANTS[{name!r}]"
    race_name = f"hand_mutant_race_{abs(hash(name))}"
    imported = "sampling_harness.kernels.tree_rejection.tree_race"
    assert KERNEL_SOURCE.count(imported) == 1
    modules = []
    for module_name, text in ((race_name, SOURCE.replace(old, new)),
                              (f"hand_mutant_{abs(hash(name))}",
                               KERNEL_SOURCE.replace(imported, race_name))):
        path = tmp_path / f"{module_name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        modules.append(module)
    return modules[-1].tree_rejection_triton


@pytest.mark.parametrize("name", list(HAND_MUTANTS))
def test_hand_mutants_of_the_slot_loop_and_the_re_draw_fail_validity(tmp_path, name):
    """The mutants mutation testing found unseen (docs/families/tree-rejection.md), and
    their like: a child left in the slot loop's residual, or a token that is no child
    removed from it (the residual left empty, the re-draw from p returns a child's token);
    the re-draw wrong. A quarter sweep of 17 children, or the emptied listed batch, fails
    validation."""
    kernel = hand_mutant(tmp_path, name)
    inputs = emptied_inputs(False) if "re-draw" in name else sweep_inputs("17 children")
    with pytest.raises(KernelFailure, match="child's token|probability 0"):
        validate_output(call(kernel, inputs, 11), inputs)
    validate_output(call(triton_kernel, inputs, 11), inputs)


@pytest.mark.parametrize("mutant", ["children_quarter_missed", "empty_residual_token_0"])
def test_the_registered_mutants_of_these_paths_fail_validity(mutant):
    kernel = getattr(tree_rejection_mutants, mutant)
    inputs = sweep_inputs("17 children") if "quarter" in mutant else emptied_inputs(False)
    with pytest.raises(KernelFailure, match="child's token|probability 0"):
        validate_output(call(kernel, inputs, 11), inputs)
    validate_output(call(tree_rejection_torch, inputs, 11), inputs)


HOST_READS = re.compile(r"\.item\(|\.tolist\(|\.cpu\(|\.numpy\(|\.nonzero\(|synchronize|"
                        r"(?<![\w.])(int|bool|float)\(")


def test_the_triton_wrapper_reads_nothing_back_from_the_device():
    """No host synchronisation in the wrapper or the host helpers it calls (int seeds; a
    per-request seed tensor is validated by kernels/request_seeds.py, which skips its one
    read during a CUDA graph capture), and a width fixed by the shapes: N + 1 for trees
    whose deepest path is 1 and 5 alike. On a GPU the real test remains:
    ``torch.cuda.set_sync_debug_mode("error")`` around a call, and ``sampling-harness bench
    tree-rejection --cuda-graph``."""
    for fn in (triton_tree_rejection.tree_rejection_triton, triton_tree_rejection._check,
               triton_tree_rejection._launch_shape):
        code = "\n".join(line.split("#")[0] for line in inspect.getsource(fn).splitlines())
        body = code.split('"""')[-1] if code.count('"""') >= 2 else code
        assert not HOST_READS.search(body), f"{fn.__name__}: {HOST_READS.search(body)}"
    target = torch.full((3, 6, 4), 0.25)
    star = {"draft_token_ids": torch.tensor([[0, 1, 2, 3, -1]] * 3),
            "parent_ids": torch.full((3, 5), -1), "draft_probs": None,
            "target_probs": target, "greedy": torch.tensor([False, True, False])}
    chain = {**star, "draft_token_ids": torch.tensor([[0, 1, 2, 3, 0]] * 3),
             "parent_ids": torch.tensor([[-1, 0, 1, 2, 3]] * 3)}
    shallow = validate_output(call(triton_kernel, star, 2), star)
    deep = validate_output(call(triton_kernel, chain, 2), chain)
    assert shallow.shape == deep.shape == (3, 6)
    assert (shallow[:, 2:] == -1).all()


def padded(out: torch.Tensor, width: int, fill) -> torch.Tensor:
    """``out`` widened to ``width`` columns, every slot past each row's path set to
    ``fill`` (a value, or "last": the row's last token again)."""
    wide = torch.full((out.shape[0], width), -1, dtype=torch.int64)
    wide[:, :out.shape[1]] = out
    past = torch.arange(width)[None, :] >= (out >= 0).sum(1, keepdim=True)
    last = out.gather(1, ((out >= 0).sum(1, keepdim=True) - 1).clamp(min=0))
    return torch.where(past, last if fill == "last" else fill, wide)


@pytest.mark.parametrize("name", list(batches()))
def test_outputs_wider_with_garbage_or_cut_below_d_plus_one_fail_validation(name):
    """Every validity batch, through torch-tree-rejection (D + 1 columns): -1 padding
    to N + 1 passes; anything else past a path (-2, token 0, token V - 1, the last token
    again) fails, and so does a width of D."""
    requests, vocab, drawn = batches()[name]
    inputs = stack(requests, vocab, CPU, drawn)
    out = validate_output(call(tree_rejection_torch, inputs, 5), inputs)
    nodes = inputs["draft_token_ids"].shape[1]
    validate_output(padded(out, nodes + 1, -1), inputs)
    for fill in (-2, 0, vocab - 1, "last"):
        wide = padded(out, nodes + 1, fill)
        if not torch.equal(wide, padded(out, nodes + 1, -1)):
            with pytest.raises(KernelFailure):
                validate_output(wide, inputs)
    with pytest.raises(KernelFailure, match=r"D \+ 1 = \d+ <= W <= N \+ 1"):
        validate_output(out[:, :-1], inputs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("drawn", [False, True], ids=["listed", "drawn"])
def test_the_triton_call_never_synchronises_and_replays_in_a_cuda_graph(drawn):
    """On a GPU: a call under torch's sync debug mode "error" raises if anything reads the
    device back, and a CUDA graph of the call replays the eager output bit for bit (the
    ragged edge batches: greedy and random rows, padding, repeated siblings when drawn)."""
    name = "ragged with padding, " + ("drawn (repeated siblings)" if drawn else "listed")
    requests, vocab, _ = edge_batches(7)[name]
    inputs = stack(requests, vocab, torch.device("cuda"), drawn)
    eager = call(triton_kernel, inputs, 11)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        again = call(triton_kernel, inputs, 11)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.equal(again, eager)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = call(triton_kernel, inputs, 11)
    captured.fill_(-7)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)
    assert eager.shape[1] == inputs["draft_token_ids"].shape[1] + 1

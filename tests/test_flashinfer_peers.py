"""FlashInfer's samplers as peers (baselines) of sample, sample-logits and rejection
(kernels/peers/flashinfer_sampling.py, declared in harness/families/peers.py).

Without flashinfer (this CPU, CI): ``list`` names none of them and says in one line how to
get them, and nothing imports flashinfer. With a stand-in ``flashinfer`` (plain torch, as
FlashInfer documents the three functions, put into sys.modules): the three register as
baselines on CUDA only, ``bench`` compares with them, and each adapter maps the family's
layout onto FlashInfer's and back, checked on small hand-made inputs. The real package is
used only where it imports and a GPU is present.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from sampling_harness.errors import HarnessError
from sampling_harness.families import FAMILIES, registry
from sampling_harness.families.registry import load

PEERS = {"sample": "flashinfer-sampling", "sample-logits": "flashinfer-top-k-top-p",
         "rejection": "flashinfer-chain"}
INSTALL = 'pip install -e ".[flashinfer]"'
ROOT = Path(__file__).resolve().parent.parent

# A stand-in for flashinfer.sampling: the three functions in plain torch, as FlashInfer's
# documentation describes them (arguments, layouts, int32 outputs, -1 padding, one random
# stream per output row keyed by (seed, row, offset)). Its uniforms lie in [0, 1); every
# call is recorded in CALLS.
FAKE_SAMPLING = '''
import torch

CALLS = []


def _uniforms(seed, offset, row, count):
    generator = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(offset) * 7919 + row)
    return torch.rand(count, generator=generator, dtype=torch.float64)


def _draw(weights, u):
    """The first index whose cumulative weight exceeds u times the total (positive entries
    only); -1 where no weight is positive."""
    cumulative = weights.double().clamp(min=0).cumsum(0)
    if cumulative[-1] <= 0:
        return -1
    return int(torch.searchsorted(cumulative, u * cumulative[-1], right=True))


def sampling_from_probs(probs, indices=None, deterministic=True, generator=None,
                        check_nan=False, seed=None, offset=None, return_valid=False):
    CALLS.append(("sampling_from_probs", {"probs": probs.clone(), "seed": seed,
                                          "offset": offset, "deterministic": deterministic}))
    ids = [_draw(probs[r], _uniforms(seed, offset, r, 1)[0]) for r in range(probs.shape[0])]
    return torch.tensor(ids, dtype=torch.int32, device=probs.device)


def top_k_top_p_sampling_from_logits(logits, top_k, top_p, indices=None,
                                     filter_apply_order="top_k_first", deterministic=True,
                                     generator=None, check_nan=False, seed=None, offset=None):
    CALLS.append(("top_k_top_p_sampling_from_logits", {
        "logits": logits.clone(), "top_k": top_k.clone(), "top_p": top_p.clone(),
        "seed": seed, "offset": offset, "deterministic": deterministic,
        "filter_apply_order": filter_apply_order}))
    ids = []
    for r in range(logits.shape[0]):
        x = logits[r].double()
        k = int(top_k[r])
        if k < x.numel():
            x = torch.where(x >= x.topk(k).values[-1], x, float("-inf"))
        p = torch.softmax(x, 0)
        above = (p[None, :] * (p[None, :] > p[:, None])).sum(1)   # mass more probable
        p = torch.where(above < float(top_p[r]), p, 0.0)
        ids.append(_draw(p, _uniforms(seed, offset, r, 1)[0]))
    return torch.tensor(ids, dtype=torch.int32, device=logits.device)


def chain_speculative_sampling(draft_probs, draft_token_ids, target_probs,
                               maybe_output_accepted_token_num=None,
                               maybe_output_emitted_draft_token_num=None, deterministic=True,
                               generator=None, seed=None, offset=None):
    CALLS.append(("chain_speculative_sampling", {
        "draft_probs": draft_probs.clone(), "draft_token_ids": draft_token_ids.clone(),
        "target_probs": target_probs.clone(), "seed": seed, "offset": offset,
        "deterministic": deterministic}))
    batch, n = draft_token_ids.shape
    out = torch.full((batch, n + 1), -1, dtype=torch.int32)
    accepted = torch.zeros(batch, dtype=torch.int32)
    emitted = torch.zeros(batch, dtype=torch.int32)
    for b in range(batch):
        u = _uniforms(seed, offset, b, n + 1)
        position = n
        for i in range(n):
            d = int(draft_token_ids[b, i])
            if u[i] * float(draft_probs[b, i, d]) < float(target_probs[b, i, d]):
                out[b, i] = d
            else:
                position = i
                break
        emitted[b] = accepted[b] = position
        residual = target_probs[b, position].double()
        if position < n:
            residual = (residual - draft_probs[b, position].double()).clamp(min=0)
        out[b, position] = _draw(residual, u[n])
    return (out.to(draft_probs.device), accepted.to(draft_probs.device),
            emitted.to(draft_probs.device))
'''


def fake_flashinfer() -> tuple[types.ModuleType, types.ModuleType]:
    """(flashinfer, flashinfer.sampling): the stand-in as modules."""
    package = types.ModuleType("flashinfer")
    package.__path__ = []
    sampling = types.ModuleType("flashinfer.sampling")
    exec(compile(FAKE_SAMPLING, "<fake flashinfer.sampling>", "exec"), sampling.__dict__)
    package.sampling = sampling
    return package, sampling


@pytest.fixture
def fresh(monkeypatch):
    """The registry's memory of failed imports, empty for this test and restored after."""
    monkeypatch.setattr(registry, "_UNIMPORTABLE", {})


@pytest.fixture
def absent(monkeypatch, fresh):
    """flashinfer cannot be found (as on this CPU, even where it is installed)."""
    monkeypatch.setitem(sys.modules, "flashinfer", None)


@pytest.fixture
def fake(monkeypatch, fresh):
    """The stand-in flashinfer in sys.modules; its flashinfer.sampling module."""
    package, sampling = fake_flashinfer()
    monkeypatch.setitem(sys.modules, "flashinfer", package)
    monkeypatch.setitem(sys.modules, "flashinfer.sampling", sampling)
    return sampling


# --- without flashinfer ---------------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("flashinfer") is not None,
                    reason="flashinfer is installed here")
def test_list_without_flashinfer_names_none_and_says_how_to_get_them():
    done = subprocess.run([sys.executable, "-m", "sampling_harness", "list"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    about = [line for line in lines if "flashinfer" in line]
    assert len(about) == 1, about
    assert about[0].startswith("peers not registered (flashinfer is not installed): ")
    assert INSTALL in about[0] and "GPU only" in about[0]
    assert all(f"{name} ({family})" in about[0] for family, name in PEERS.items())
    assert not any(line.startswith(("  kernel", "  baseline", "  mutant")) and name in line
                   for line in lines for name in PEERS.values())


def test_run_list_of_one_family_names_its_peer_alone(absent, capsys):
    from sampling_harness.commands.cli import run_list

    assert run_list("sample") == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == ("peers not registered (flashinfer is not installed): flashinfer-sampling "
                    f"(sample); to get them: {INSTALL} (GPU only)")


def test_nothing_imports_flashinfer_when_it_is_absent(absent, monkeypatch):
    """What ``check all`` does before its checks run (the defaults of every family, each
    loaded), ``list`` and an unknown peer: flashinfer is never imported, nor the adapters."""
    asked = []
    real_import, real_import_module = builtins.__import__, importlib.import_module

    def spy_import(name, *args, **kwargs):
        asked.append(name)
        return real_import(name, *args, **kwargs)

    def spy_import_module(name, *args, **kwargs):
        asked.append(name)
        return real_import_module(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", spy_import)
    monkeypatch.setattr(importlib, "import_module", spy_import_module)
    monkeypatch.delitem(sys.modules, "sampling_harness.kernels.peers.flashinfer_sampling",
                        raising=False)
    for family in FAMILIES:
        for device in ("cpu", "cuda"):
            for name in registry.default_kernels(family, device):
                load(name, family)
        assert not set(PEERS.values()) & set(registry.entries(family))
    assert registry.missing_peers(FAMILIES)
    assert not [name for name in asked if name.split(".")[0] == "flashinfer"
                or name.endswith("peers.flashinfer_sampling")]
    assert "sampling_harness.kernels.peers.flashinfer_sampling" not in sys.modules


@pytest.mark.parametrize("family", sorted(PEERS))
def test_naming_an_absent_peer_is_one_line_saying_how_to_get_it(absent, family):
    with pytest.raises(HarnessError) as caught:
        load(PEERS[family], family)
    message = str(caught.value)
    assert "\n" not in message and INSTALL in message and "flashinfer is not installed" in message
    other = "sample" if family != "sample" else "rejection"
    with pytest.raises(HarnessError, match=f"a kernel of family {family}"):
        load(PEERS[family], other)


def test_a_flashinfer_that_fails_to_import_is_said_in_one_line(fresh, monkeypatch, tmp_path):
    (tmp_path / "flashinfer").mkdir()
    (tmp_path / "flashinfer" / "__init__.py").write_text(
        'raise RuntimeError("CUDA driver not found\\nsecond line")\n')
    monkeypatch.delitem(sys.modules, "flashinfer", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    why = registry.unavailable("flashinfer")
    assert why == "import flashinfer fails: RuntimeError: CUDA driver not found"
    assert "flashinfer-sampling" not in registry.entries("sample")
    with pytest.raises(HarnessError) as caught:
        load("flashinfer-sampling", "sample")
    assert str(caught.value).count("\n") == 0 and why in str(caught.value)


def test_the_extra_names_the_package():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["flashinfer"] == ["flashinfer-python"]


# --- with a stand-in flashinfer ----------------------------------------------------------------

@pytest.mark.parametrize("family", sorted(PEERS))
def test_the_peers_register_as_baselines_on_cuda(fake, family):
    name = PEERS[family]
    entry = registry.entries(family)[name]
    assert entry.role == "baseline" and entry.peer.devices == ("cuda",)
    assert entry.meta["shipped_by"].startswith("FlashInfer's flashinfer.sampling.")
    assert "seeds" not in entry.meta                   # int seeds only
    assert name in registry.default_kernels(family, "cuda")
    assert name not in registry.default_kernels(family, "cpu")
    assert not registry.missing_peers([family])
    assert load(name, family).role == "baseline"


def test_list_shows_the_peers_with_a_fake_package_on_the_path(tmp_path):
    (tmp_path / "flashinfer").mkdir()
    (tmp_path / "flashinfer" / "__init__.py").write_text("")
    (tmp_path / "flashinfer" / "sampling.py").write_text(FAKE_SAMPLING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "sampling_harness", "list"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    for family, name in PEERS.items():
        assert any(line.startswith(f"  baseline {name}") and f"family {family}, with "
                   "flashinfer" in line for line in done.stdout.splitlines()), name
    assert "not registered" not in done.stdout


def test_bench_compares_with_the_peers_on_cuda_alone(fake):
    from sampling_harness.bench.command import bench_baselines

    assert bench_baselines("sample", ("torch-fp32",), "cuda") == (
        ("torch-fp32", "flashinfer-sampling"), [])
    baselines, notes = bench_baselines("rejection", ("torch-rejection",), "cpu")
    assert baselines == ("torch-rejection",)
    assert notes == ["flashinfer-chain not timed: it runs on cuda only"]


def test_bench_table_has_a_ratio_column_per_peer():
    from sampling_harness.bench.command import build_rows, render

    entries = [{"key": ("2x8", k, ""), "shape": "2x8", "kernel": k, "setting": {}}
               for k in ("flashinfer-sampling", "triton-exact")]
    eager = {("2x8", "flashinfer-sampling", ""): [2.0], ("2x8", "triton-exact", ""): [1.0]}
    rows = build_rows(entries, eager, {}, {}, {"2x8": 64}, 1e9, {}, ("flashinfer-sampling",),
                      False)
    assert rows[1]["vs_flashinfer-sampling"] == 2.0
    table = render("header", rows, "BxV", ("flashinfer-sampling",), False, False)
    assert "x flashinfer-sampling" in table and "| 2x8 | triton-exact |" in table


def test_sample_adapter_passes_the_seed_and_offset_zero(fake):
    from sampling_harness.kernels.peers.flashinfer_sampling import flashinfer_sample
    from sampling_harness.suites.sample.contract import validate_ids

    probs = torch.tensor([[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    ids = flashinfer_sample(probs.clone(), 41)
    validate_ids(ids, probs)
    assert ids.dtype == torch.int32 and ids[1:].tolist() == [0, 3]
    name, call = fake.CALLS[-1]
    assert name == "sampling_from_probs" and call["seed"] == 41 and call["offset"] == 0
    assert call["deterministic"] is True and torch.equal(call["probs"], probs)
    assert torch.equal(flashinfer_sample(probs.clone(), 41), ids)


def test_sample_logits_adapter_maps_temperature_top_k_and_greedy(fake):
    from sampling_harness.kernels.peers.flashinfer_sampling import flashinfer_sample_logits
    from sampling_harness.suites.sample_logits.contract import validate_ids

    logits = torch.tensor([[1.0, 3.0, 3.0, -2.0, 0.5],            # greedy, tie: 1
                           [0.5, 2.0, 1.0, float("-inf"), 0.0],   # T 0.5, top-k 2
                           [1.0, 0.0, 0.0, 0.0, 0.0],             # T 2, top-k 0: off
                           [float("nan"), 1.0, 2.0, 0.0, 0.0],    # greedy NaN row: 0
                           [0.0, 1.0, 4.0, 0.0, 0.0]], dtype=torch.bfloat16)  # top-k 9 > V
    temperature = torch.tensor([0.0, 0.5, 2.0, 0.0, 1.0])
    top_k = torch.tensor([0, 2, 0, 0, 9])
    top_p = torch.tensor([1.0, 0.9, 1.0, 1.0, 0.5])
    inputs = {"logits": logits.clone(), "temperature": temperature, "top_k": top_k,
              "top_p": top_p}
    ids = flashinfer_sample_logits(logits.clone(), temperature, top_k, top_p, 7)
    name, call = fake.CALLS[-1]
    assert name == "top_k_top_p_sampling_from_logits"
    assert (call["seed"], call["offset"], call["deterministic"]) == (7, 0, True)
    assert call["filter_apply_order"] == "top_k_first"
    assert call["logits"].dtype == torch.float32
    divisor = torch.tensor([1.0, 0.5, 2.0, 1.0, 1.0])[:, None]
    torch.testing.assert_close(call["logits"], logits.float() / divisor, rtol=0, atol=0,
                               equal_nan=True)
    assert call["top_k"].tolist() == [5, 2, 5, 5, 5] and torch.equal(call["top_p"], top_p)
    assert ids.tolist()[0] == 1 and ids.tolist()[3] == 0 and ids.tolist()[4] == 2
    assert ids[1].item() in (1, 2)                               # top-k 2 keeps 2.0 and 1.0
    validate_ids(ids, inputs)


def _rejection_inputs(draft_probs: bool, greedy=(False, False, False)):
    """Three requests over V = 5, counts (2, 0, 1), outcomes certain whatever the uniforms:
    request 0 accepts its first draft (p(d) = 1) and rejects its second (p(d) = 0),
    whose residual is one-hot at 3; request 1 has no drafts; request 2 accepts its draft."""
    target = torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0],     # request 0, draft 1: p 1
                           [0.0, 0.0, 0.0, 1.0, 0.0],     # request 0, draft 4: p 0
                           [0.0, 0.0, 1.0, 0.0, 0.0]])    # request 2, draft 2: p 1
    draft = torch.tensor([[0.1, 0.5, 0.2, 0.2, 0.0],
                          [0.0, 0.0, 0.0, 0.0, 1.0],
                          [0.2, 0.2, 0.2, 0.2, 0.2]])
    return {"draft_token_ids": torch.tensor([1, 4, 2]), "num_draft_tokens": [2, 0, 1],
            "draft_probs": draft if draft_probs else None, "target_probs": target,
            "bonus_token_ids": torch.tensor([0, 4, 3]), "greedy": torch.tensor(greedy)}


@pytest.mark.parametrize("draft_probs", [True, False], ids=["draft-probs", "one-hot"])
def test_rejection_adapter_pads_the_ragged_layout_and_maps_back(fake, draft_probs):
    from sampling_harness.kernels.peers.flashinfer_sampling import flashinfer_rejection
    from sampling_harness.kernels.rejection.torch_rejection import rejection_torch
    from sampling_harness.suites.rejection.contract import validate_output

    inputs = _rejection_inputs(draft_probs)
    out = flashinfer_rejection(*inputs.values(), 11)
    assert out.tolist() == [[1, 3, -1], [4, -1, -1], [2, 3, -1]]
    assert torch.equal(out, rejection_torch(*inputs.values(), 11))
    validate_output(out, inputs)
    name, call = fake.CALLS[-1]
    assert name == "chain_speculative_sampling"
    assert (call["seed"], call["offset"], call["deterministic"]) == (11, 0, True)
    assert call["draft_token_ids"].dtype == torch.int32
    assert call["draft_token_ids"].tolist() == [[1, 4], [0, 0], [2, 0]]
    target = call["target_probs"]
    assert target.shape == (3, 3, 5)
    assert torch.equal(target[0, :2], inputs["target_probs"][:2])
    assert torch.equal(target[2, 0], inputs["target_probs"][2])
    assert not target[1, :2].any() and not target[2, 1].any()          # padding: zero
    assert torch.equal(target[:, 2], torch.eye(5)[[0, 4, 3]])          # one-hot bonus rows
    draft = call["draft_probs"]
    expected = inputs["draft_probs"] if draft_probs else torch.eye(5)[[1, 4, 2]]
    assert draft.shape == (3, 2, 5)
    assert torch.equal(draft[0], expected[:2]) and torch.equal(draft[2, 0], expected[2])
    assert not draft[1].any() and not draft[2, 1].any()


def test_rejection_adapter_verifies_greedy_requests_itself(fake):
    from sampling_harness.kernels.peers.flashinfer_sampling import flashinfer_rejection
    from sampling_harness.suites.rejection.contract import validate_output

    inputs = _rejection_inputs(True, greedy=(True, True, True))
    out = flashinfer_rejection(*inputs.values(), 3)
    # request 0: draft 1 is the argmax (accepted), draft 4 is not (the argmax 3 emitted);
    # request 1: the bonus; request 2: draft 2 is the argmax, then the bonus
    assert out.tolist() == [[1, 3, -1], [4, -1, -1], [2, 3, -1]]
    validate_output(out, inputs)
    inputs["draft_token_ids"] = torch.tensor([0, 4, 1])
    out = flashinfer_rejection(*inputs.values(), 3)
    assert out.tolist() == [[1, -1, -1], [4, -1, -1], [2, -1, -1]]
    validate_output(out, inputs)


def test_rejection_adapter_without_drafts_returns_the_bonus_without_a_call(fake):
    from sampling_harness.kernels.peers.flashinfer_sampling import flashinfer_rejection

    before = len(fake.CALLS)
    out = flashinfer_rejection(torch.zeros(0, dtype=torch.int64), [0, 0],
                               None, torch.zeros(0, 6), torch.tensor([5, 2]),
                               torch.tensor([False, True]), 1)
    assert out.tolist() == [[5], [2]] and len(fake.CALLS) == before


def test_rejection_adapter_output_meets_the_contract_on_random_batches(fake):
    """Random ragged batches (zero counts anywhere, greedy mixed in, with and without draft
    probs) through the stand-in: every output passes the family's exact validator."""
    from sampling_harness.kernels.peers.flashinfer_sampling import flashinfer_rejection
    from sampling_harness.suites.rejection.contract import validate_output

    generator = torch.Generator().manual_seed(5)
    for trial in range(12):
        counts = torch.randint(0, 4, (5,), generator=generator).tolist()
        total, vocab = sum(counts), 7
        if total == 0:
            continue
        q = torch.rand(total, vocab, generator=generator) ** 3
        q /= q.sum(1, keepdim=True)
        p = q * torch.rand(total, vocab, generator=generator) * 2
        p[:, 0] = 0.0
        p /= p.sum(1, keepdim=True)
        inputs = {"draft_token_ids": torch.multinomial(q, 1, generator=generator)[:, 0],
                  "num_draft_tokens": counts, "draft_probs": q if trial % 2 else None,
                  "target_probs": p,
                  "bonus_token_ids": torch.randint(vocab, (5,), generator=generator),
                  "greedy": torch.rand(5, generator=generator) < 0.3}
        out = flashinfer_rejection(*inputs.values(), trial)
        assert out.shape == (5, max(counts) + 1)
        validate_output(out, inputs)


# --- the real package (a GPU machine with flashinfer installed) ------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="FlashInfer runs on CUDA only")
def test_the_real_flashinfer_meets_each_contract_once(fresh):
    pytest.importorskip("flashinfer")
    from sampling_harness.kernels.peers import flashinfer_sampling as adapters
    from sampling_harness.suites.rejection.contract import validate_output
    from sampling_harness.suites.sample.contract import validate_ids as sample_ids
    from sampling_harness.suites.sample_logits.contract import validate_ids as logits_ids

    cuda = torch.device("cuda")
    probs = torch.softmax(torch.randn(4, 1000, device=cuda), 1)
    sample_ids(adapters.flashinfer_sample(probs.clone(), 3), probs)
    inputs = {"logits": torch.randn(4, 1000, device=cuda),
              "temperature": torch.tensor([0.0, 0.7, 1.0, 1.3], device=cuda),
              "top_k": torch.tensor([0, 50, 1000, 5], device=cuda),
              "top_p": torch.tensor([1.0, 0.9, 0.5, 1.0], device=cuda)}
    ids = adapters.flashinfer_sample_logits(*(v.clone() for v in inputs.values()), 3)
    logits_ids(ids, inputs)
    inputs = {k: v.to(cuda) if isinstance(v, torch.Tensor) else v
              for k, v in _rejection_inputs(True, greedy=(False, True, False)).items()}
    validate_output(adapters.flashinfer_rejection(*inputs.values(), 3), inputs)

"""The benchmark's bookkeeping on a CPU: strict JSON, the spread of repeats, the reason a
kernel gets when it cannot be captured, the floor's percentage in eager mode, and the
launch-settings grid. (The CUDA timing itself runs only on a GPU.)"""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from sampling_harness.bench.command import (
    BenchOptions,
    build_rows,
    render,
    run_bench,
    strict_json,
)
from sampling_harness.bench.launch import bind, label, launch_parameters, parse_grid
from sampling_harness.bench.timing import (
    NotCapturable,
    capture_reason,
    classify_capture,
    profile_table,
    time_entry,
)
from sampling_harness.device import default_device
from sampling_harness.errors import HarnessError

CPU = torch.device("cpu")


def _no_constants(name):
    raise ValueError(f"non-strict JSON constant {name}")


def strict_load(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_no_constants)


KERNELS = '''
import torch


def scaled(probs, seed, *, scale=1):
    """argmax, whatever the launch scale (a launch setting that changes nothing)."""
    return torch.argmax(probs * scale, dim=1)


def shifted(probs, seed, *, shift=0):
    """argmax moved by ``shift``: a launch setting that changes the output."""
    return (torch.argmax(probs, dim=1) + shift) % probs.shape[1]


def broken(probs, seed):
    raise RuntimeError("no kernel here")
'''


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "user_kernels.py"
    path.write_text(KERNELS)
    return str(path)


def test_strict_json_maps_non_finite_figures_to_null():
    text = strict_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": -float("inf")}})
    assert strict_load(text) == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def bench(tmp_path, *kernels: str, shape: str = "2x17", **options) -> int:
    """``run_bench`` of family sample at one shape, one call a repeat (on the CPU unless
    ``device`` says otherwise)."""
    options = {"repeat": 1, "calls": 1, "device": "cpu", **options}
    return run_bench(BenchOptions("sample", tmp_path, kernels=kernels, shapes=(shape,),
                                  **options))


def test_bench_json_is_strict_and_each_figure_has_its_repeats(tmp_path, kernels, capsys):
    bench(tmp_path, f"{kernels}:scaled", f"{kernels}:broken", shape="3x33", repeat=3)
    report = strict_load((tmp_path / "bench.json").read_text())
    rows = {row["kernel"].rpartition(":")[2]: row for row in report["rows"]}
    assert report["repeat"] == 3
    # --kernel targets beside the baselines and the family's own (registered) kernels
    assert list(rows) == ["torch-fp32", "torch-fp64", "triton-exact", "triton-inverse-cdf",
                          "scaled", "broken"]
    for name in ("torch-fp32", "torch-fp64", "scaled"):
        row = rows[name]
        assert len(row["repeats_ms"]) == 3 and row["reason"] is None
        assert row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        assert row["pct_of_floor"] > 0 and row["GB_per_s"] > 0     # eager mode has the floor
    broken = rows["broken"]
    assert broken["median_ms"] is None and broken["pct_of_floor"] is None
    assert "RuntimeError: no kernel here" in broken["reason"]
    table = capsys.readouterr().out
    assert "% of floor" in table and "no figure [1]" in table
    assert "[1] " in table and "no kernel here" in table


def test_capture_reasons():
    assert capture_reason(None, []) is None
    raised = capture_reason(RuntimeError("CUDA error: out of memory\nmore"), [])
    assert raised == "capture raised RuntimeError: CUDA error: out of memory"
    try:                                          # ending a broken capture raises again
        try:
            raise RuntimeError("operation not permitted when stream is capturing")
        except RuntimeError:
            raise RuntimeError("operation failed due to a previous error during capture")  # noqa: B904
    except RuntimeError as exc:
        chained = capture_reason(exc, [])
    assert chained.startswith("capture raised RuntimeError: operation not permitted when "
                              "stream is capturing; the call synchronises with the host")
    empty = warnings.WarningMessage(UserWarning("The CUDA Graph is empty. This usually means"),
                                    UserWarning, "x.py", 1)
    assert "graph is empty" in capture_reason(None, [empty])
    aborted = capture_reason(RuntimeError("aborted"), [empty])
    assert aborted == "capture raised RuntimeError: aborted"
    assert "graph is empty" in capture_reason(NotCapturable("fails validation"), [empty])
    other = warnings.WarningMessage(UserWarning("something unrelated"), UserWarning, "x.py", 1)
    assert capture_reason(None, [other]) is None
    assert capture_reason(NotCapturable("replay fails"), []) == "replay fails"


def test_classify_capture_turns_a_raise_or_an_empty_graph_warning_into_a_reason():
    assert classify_capture(lambda: 7) == 7

    def raising():
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    def empty():
        warnings.warn("The CUDA Graph is empty. This usually means that the graph was "
                      "attempted to be captured on wrong device or stream.", UserWarning,
                      stacklevel=1)
        return object()

    for capture, words in ((raising, "capture raised RuntimeError"), (empty, "graph is empty")):
        with pytest.raises(NotCapturable, match=words):
            classify_capture(capture)


def test_an_uncapturable_call_gets_a_reason_and_keeps_its_eager_figures():
    """On a CPU every capture fails, which exercises the path of a kernel that cannot be
    captured: the repeat returns its eager figure and the reason, and the row shows the
    eager figure and its percent of the floor beside a numbered note."""
    eager, reason = time_entry(lambda work, seed: work["x"].sum(),
                               lambda: {"x": torch.ones(8)}, CPU, calls=2, graph=True)
    # without CUDA the capture raises; with it, capturing CPU work gives an empty graph
    assert eager > 0 and isinstance(reason, str) and reason.startswith(
        ("capture raised", "the captured graph is empty"))
    entry = {"key": ("8", "k", "default"), "shape": "8", "kernel": "k", "setting": {}}
    rows = build_rows([entry], {entry["key"]: [eager] * 3}, {entry["key"]: [reason] * 3}, {},
                      {"8": 32}, 1e9, {}, (), cuda_graph=True)
    row = rows[0]
    assert row["median_ms"] is None and row["reason"] == reason
    assert row["eager_median_ms"] == eager and row["eager_pct_of_floor"] > 0
    table = render("h", rows, "B", (), cuda_graph=True, ceiling=False)
    assert "no figure [1]" in table and f"[1] k at 8: {reason}" in table
    strict_load(strict_json({"rows": rows}))
    mine = {**entry, "key": ("8", "mine", "default"), "kernel": "mine"}
    rows = build_rows([entry, mine], {entry["key"]: [4.0], mine["key"]: [3.0]},
                      {entry["key"]: [reason], mine["key"]: [1.0]}, {}, {"8": 32}, 1e9, {},
                      ("k",), cuda_graph=True)
    assert rows[1]["vs_k"] == 4.0 and rows[1]["vs_k_basis"] == "eager"   # k: eager only
    assert "| 4.00* |" in render("h", rows, "B", ("k",), cuda_graph=True, ceiling=False)


def test_a_kernel_that_cannot_be_captured_keeps_its_eager_figure(monkeypatch):
    """A capture that fails (vLLM's V1 sampler: "Offset increment outside graph capture
    encountered unexpectedly") leaves the default generator in its capture state: every
    later draw from it raises. Here a fake capture fails and "poisons" a fake generator the
    kernels draw from; the entry keeps the eager figure of every repeat, gets the reason in
    the table's notes, is not captured again, and the next entry is timed as usual: what
    the failed capture left behind is undone (``after_failed_capture``)."""
    import sampling_harness.bench.timing as timing
    from sampling_harness.bench.command import time_entries

    generator = {"capturing": False}
    captures, undone = [], []

    def draws(work, seed):
        if generator["capturing"]:
            raise RuntimeError("Offset increment outside graph capture encountered "
                               "unexpectedly.")
        return work["x"].argmax(dim=1)

    def uncapturable(work, seed):
        return draws(work, seed)

    def fake_capture(call, work, seed, check):
        captures.append(call)
        if call is uncapturable:
            generator["capturing"] = True           # the capture's prologue, no epilogue
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        return "graph"

    def undo(device):
        undone.append(device)
        generator["capturing"] = False

    monkeypatch.setattr(timing, "_capture", fake_capture)
    monkeypatch.setattr(timing, "_graph_ms", lambda graph, work, flush, calls: [0.5] * calls)
    monkeypatch.setattr(timing, "after_failed_capture", undo)
    entries = [{"key": ("2x8", name, "default"), "shape": "2x8", "kernel": name,
                "setting": {}, "call": call}
               for name, call in (("vllm-like", uncapturable), ("next", draws))]
    eager, graph, reasons = time_entries(entries, lambda shape: {"x": torch.rand(2, 8)}, CPU,
                                         calls=2, repeat=3, cuda_graph=True)
    bad, good = (entry["key"] for entry in entries)
    assert reasons == {} and len(eager[bad]) == 3 and len(eager[good]) == 3
    assert graph[bad] == ["capture raised RuntimeError: CUDA error: operation not permitted "
                          "when stream is capturing; the call synchronises with the host "
                          "(.item(), .tolist(), .cpu(), a pageable copy)"]
    assert graph[good] == [0.5, 0.5, 0.5]
    assert captures.count(uncapturable) == 1 and captures.count(draws) == 3   # not retried
    assert undone == [CPU]
    rows = build_rows(entries, eager, graph, reasons, {"2x8": 64}, 1e9, {}, ("next",),
                      cuda_graph=True)
    assert rows[0]["median_ms"] is None and rows[0]["eager_median_ms"] > 0
    assert rows[0]["reason"] == graph[bad][0] and rows[1]["median_ms"] == 0.5
    table = render("h", rows, "BxV", ("next",), cuda_graph=True, ceiling=False)
    assert "| 2x8 | vllm-like | no figure [1] | - | " in table
    assert f"[1] vllm-like at 2x8: {graph[bad][0]}" in table


def test_own_kernels_that_cannot_load_are_left_out_beside_a_target(monkeypatch, kernels):
    """Beside a --kernel target, a registered kernel of the family that cannot be loaded
    (Triton not installed) is left out with a note; without a target it ends the run."""
    import sampling_harness.bench.command as command
    from sampling_harness.bench.command import timed_kernels

    real = command.load

    def load(target, family, **kwargs):
        if target == "triton-exact":
            raise HarnessError("registered kernel 'triton-exact' cannot be loaded: "
                               "ModuleNotFoundError: No module named 'triton'")
        return real(target, family, **kwargs)

    monkeypatch.setattr(command, "load", load)
    found, left_out = timed_kernels("sample", ("torch-fp32", "torch-fp64"),
                                    (f"{kernels}:scaled",))
    assert list(found) == ["torch-fp32", "torch-fp64", "triton-inverse-cdf",
                           f"{kernels}:scaled"]
    assert left_out == ["triton-exact not timed: registered kernel 'triton-exact' cannot be "
                        "loaded: ModuleNotFoundError: No module named 'triton'"]
    with pytest.raises(HarnessError, match="No module named 'triton'"):
        timed_kernels("sample", ("torch-fp32", "torch-fp64"))


def test_launch_grid_syntax():
    assert parse_grid([]) == [{}]
    assert parse_grid(["warps=4,8", "stages=3", "late=True"]) == [
        {"warps": 4, "stages": 3, "late": True}, {"warps": 8, "stages": 3, "late": True}]
    assert parse_grid(["mode=fast,None"]) == [{"mode": "fast"}, {"mode": None}]
    assert label({"warps": 8, "stages": 3}) == "warps=8 stages=3" and label({}) == "default"
    for bad, words in ((["warps"], "KEY=VALUE"), (["=4"], "KEY=VALUE"), (["warps="], "KEY="),
                       (["warps=4", "warps=8"], "twice")):
        with pytest.raises(HarnessError, match=words):
            parse_grid(bad)


def test_launch_settings_bind_as_keyword_arguments():
    def kernel(probs, seed, *, warps=4, stages=3):
        return probs, seed, warps, stages

    assert launch_parameters(kernel, ("probs", "seed")) == {"warps": 4, "stages": 3}
    assert bind("k", kernel, ("probs", "seed"), {"warps": 8})(1, 2) == (1, 2, 8, 3)
    assert bind("k", kernel, ("probs", "seed"), {}) is kernel
    with pytest.raises(HarnessError, match="'k' has no launch setting 'tile'; it takes stages"):
        bind("k", kernel, ("probs", "seed"), {"tile": 1})
    with pytest.raises(HarnessError, match="it takes none"):
        bind("k", lambda probs, seed: probs, ("probs", "seed"), {"warps": 8})

    def made(probs, seed):                      # a kernel carrying a launch factory
        return probs, seed, 4

    made.with_launch = lambda warps=4: (lambda probs, seed: (probs, seed, warps))
    assert launch_parameters(made, ("probs", "seed")) == {"warps": 4}
    assert bind("m", made, ("probs", "seed"), {"warps": 16})(1, 2) == (1, 2, 16)
    with pytest.raises(HarnessError, match="'m' has no launch setting 'tile'; it takes warps"):
        bind("m", made, ("probs", "seed"), {"tile": 1})


def test_bench_launch_grid_rows_say_whether_the_output_is_unchanged(tmp_path, kernels):
    bench(tmp_path, f"{kernels}:scaled", launch=("scale=2,3",))
    rows = strict_load((tmp_path / "bench.json").read_text())["rows"]
    mine = [r for r in rows if r["kernel"].endswith(":scaled")]
    assert [r["launch"] for r in mine] == [{}, {"scale": 2}, {"scale": 3}]
    assert [r.get("same_as_default") for r in mine] == [None, True, True]
    bench(tmp_path, f"{kernels}:shifted", launch=("shift=1",))
    rows = strict_load((tmp_path / "bench.json").read_text())["rows"]
    assert [r.get("same_as_default") for r in rows if r["launch"]] == [False]
    assert "| NO |" in (tmp_path / "bench.md").read_text()
    with pytest.raises(HarnessError, match="no launch setting 'warps'"):
        bench(tmp_path, f"{kernels}:scaled", launch=("warps=4",))


def test_the_cli_bench_namespace_becomes_the_options(monkeypatch, tmp_path):
    """Every flag of ``sampling-harness bench`` reaches the one ``BenchOptions`` that
    ``run_bench`` takes (all given, none at its default), and bad counts are refused."""
    import sampling_harness.bench.command as command
    from sampling_harness.commands import cli

    seen = []
    monkeypatch.setattr(command, "run_bench", lambda options: seen.append(options) or 0)
    assert cli.main(["bench", "logprobs", "--kernel", "a.py:k", "--kernel", "b", "--device",
                     "cpu", "--shape", "2x17x3", "--ids", "top", "--report-dir", str(tmp_path),
                     "--cuda-graph", "--repeat", "2", "--calls", "7", "--launch", "warps=4,8",
                     "--launch", "stages=3", "--ceiling", "--profile"]) == 0
    assert seen == [BenchOptions(
        family="logprobs", report_dir=tmp_path, kernels=("a.py:k", "b"), device="cpu",
        shapes=("2x17x3",), variants=("top",), cuda_graph=True, repeat=2, calls=7,
        launch=("warps=4,8", "stages=3"), ceiling=True, profile=True)]
    defaults = BenchOptions("sample", tmp_path / "elsewhere")
    assert all(getattr(seen[0], name) != getattr(defaults, name)
               for name in BenchOptions.__dataclass_fields__)
    with pytest.raises(AttributeError):
        seen[0].repeat = 1                          # frozen
    with pytest.raises(HarnessError, match="positive count"):
        BenchOptions("sample", tmp_path, calls=0)


def test_a_launch_keyword_reaches_the_kernel(monkeypatch, tmp_path):
    """A Triton kernel's launch settings are keyword arguments with the shipped values as
    defaults: ``bench --launch`` binds them (no module global patched), they reach the
    launch, and the default launch is the shipped one."""
    race = pytest.importorskip("sampling_harness.kernels.sample.triton_race")
    from sampling_harness.families import FAMILIES
    from sampling_harness.families.registry import load

    contract = FAMILIES["sample"].parameters
    kernel = load("triton-exact", "sample").fn
    assert launch_parameters(kernel, contract) == {
        "warps": 4, "programs_per_sm": 1, "stages": 5, "unroll": 1, "rows": 1}
    launches = []

    class Recorder:                                 # stands in for the jitted kernel
        def __getitem__(self, grid):
            return lambda *args, **meta: launches.append(meta)

    with monkeypatch.context() as patch:
        patch.setattr(race, "_race_kernel", Recorder())
        probs = torch.full((2, 40), 1 / 40)
        bind("triton-exact", kernel, contract, {"stages": 2, "unroll": 2})(probs, 1)
        kernel(probs, 1)
    assert [(m["STAGES"], m["UNROLL"]) for m in launches] == [(2, 2), (5, 1)]
    bench(tmp_path, "triton-exact", launch=("unroll=2", "stages=2"),
          device=default_device())     # a Triton kernel runs on the CPU only interpreted
    rows = strict_load((tmp_path / "bench.json").read_text())["rows"]
    mine = [r for r in rows if r["kernel"] == "triton-exact"]
    assert [r["launch"] for r in mine] == [{}, {"stages": 2, "unroll": 2}]
    assert [r.get("same_as_default") for r in mine] == [None, True]
    assert all(r["reason"] is None for r in mine)


def test_profile_table_shows_where_a_call_spends_its_time():
    table = profile_table(lambda work, seed: torch.argmax(work["x"], dim=1),
                          lambda: {"x": torch.rand(2, 17)}, CPU, calls=2)
    assert "aten::argmax" in table


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_each_call_gets_a_graph_figure_or_the_reason_it_has_none():
    import itertools

    dev = torch.device("cuda")

    def make_inputs():     # a fresh generator: a capture that raised may leave the default
        # CUDA generator in its capture state ("Offset increment outside graph capture")
        generator = torch.Generator(device=dev).manual_seed(0)
        return {"x": torch.rand(64, 1000, device=dev, generator=generator)}

    def timed(call, check=None):
        eager, graph = time_entry(call, make_inputs, dev, calls=5, graph=True, check=check)
        assert eager > 0
        return graph

    def argmax_of(out, inputs):
        if not torch.equal(out, inputs["x"].argmax(dim=1)):
            raise ValueError("not the argmax")

    assert timed(lambda work, seed: work["x"].argmax(dim=1), argmax_of) > 0
    assert "synchronises with the host" in timed(lambda work, seed: work["x"].sum().item())
    assert "graph is empty" in timed(lambda work, seed: torch.zeros(3))
    counter = itertools.count()                   # a host value baked into the graph
    assert "fails the family's validation: not the argmax" in timed(
        lambda work, seed: work["x"].argmax(dim=1) + next(counter), argmax_of)
    assert torch.cuda.current_stream() == torch.cuda.default_stream()

    def drawn_then_synced(work, seed):          # draws from the default CUDA generator,
        noise = torch.rand_like(work["x"])      # then synchronises: its capture fails with
        return (work["x"] + noise).argmax(dim=1).sum().item()  # the generator capturing
    assert "synchronises with the host" in timed(drawn_then_synced)
    torch.rand(8, device=dev)                   # the default generator draws eagerly again
    assert timed(lambda work, seed: (work["x"] + torch.rand_like(work["x"])).argmax(dim=1)) > 0


def test_read_ceiling_is_the_fastest_reader_and_bench_shows_its_percent(tmp_path, kernels):
    from sampling_harness.bench.ceiling import read_ceiling

    bandwidth, reader = read_ceiling(4, 100, CPU, calls=1)
    assert bandwidth > 0 and reader in ("torch.sum", "torch.amax")
    bench(tmp_path, f"{kernels}:scaled", ceiling=True)
    report = strict_load((tmp_path / "bench.json").read_text())
    assert report["ceilings"][0]["rows"] == 2 and report["ceilings"][0]["bytes_per_s"] > 0
    timed = [row for row in report["rows"] if row["reason"] is None]   # on a GPU machine
    assert all(row["pct_of_ceiling"] > 0 for row in timed)   # Triton refuses CPU tensors
    assert any(row["kernel"].endswith(":scaled") for row in timed)
    assert "% of ceiling" in (tmp_path / "bench.md").read_text()


def test_compare_bench_flags_a_figure_that_moves_beyond_the_tolerance(tmp_path, capsys):
    from sampling_harness.families.registry import _import_attr

    main = _import_attr("benchmarks/compare_bench.py:main")

    def run(name, ms):
        row = {"shape": "2x17", "kernel": "k", "launch": {}, "median_ms": ms, "min_ms": ms,
               "max_ms": ms, "reason": None}
        (tmp_path / name).write_text(strict_json({"rows": [row]}))
        return str(tmp_path / name)

    assert main([run("a.json", 1.0), run("b.json", 1.04)]) == 0
    assert main([run("a.json", 1.0), run("b.json", 1.2)]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def _rejection_inputs(accept: str, greedy_every: int = 0) -> dict:
    """Four requests of 3 drafts over V = 40: ``accept`` "all" (p = q), "none" (p(d) = 0) or
    "half" (p(d) = q(d) / 2); every ``greedy_every``-th request greedy with its first draft
    the row's argmax and its second not."""
    g = torch.Generator().manual_seed(3)
    q = torch.rand(12, 40, generator=g) + 0.1
    q /= q.sum(1, keepdim=True)
    ids = torch.multinomial(q, 1, generator=g).squeeze(1)
    rows = torch.arange(12)
    p = q.clone()
    if accept != "all":
        p[rows, ids] = 0.0 if accept == "none" else q[rows, ids] / 2
    greedy = torch.zeros(4, dtype=torch.bool)
    if greedy_every:
        greedy[::greedy_every] = True
        for b in range(0, 4, greedy_every):
            p[3 * b, ids[3 * b]] = 1.0                     # position 0 matches its argmax
            p[3 * b + 1, (ids[3 * b + 1] + 1) % 40] = 2.0  # position 1 does not
    return {"draft_token_ids": ids, "num_draft_tokens": [3] * 4, "draft_probs": q,
            "target_probs": p, "bonus_token_ids": torch.zeros(4, dtype=torch.int64),
            "greedy": greedy}


def test_rejection_floor_counts_what_the_law_reads():
    """The rejection floor (suites/rejection/floor.py), exactly: all accepted reads the
    gathered values of every draft and no row; p(d) = 0 rejects the first draft (one row
    pair a request); acceptance 1/2 reaches draft i with probability 2^-i; a greedy request
    whose first draft matches reads two target rows; without draft probs a rejection reads
    the target row alone. The output (8 B a slot) always."""
    from sampling_harness.suites.rejection.floor import rejection_floor_bytes
    out, row = 8 * 4 * 4, 4 * 40
    assert rejection_floor_bytes(_rejection_inputs("all")) == out + 4 * 3 * 16
    assert rejection_floor_bytes(_rejection_inputs("none")) == out + 4 * (16 + 2 * row)
    reached = 1 + 0.5 + 0.25
    half = 16 * reached + 2 * row * 0.5 * reached
    assert rejection_floor_bytes(_rejection_inputs("half")) == out + round(4 * half)
    greedy = _rejection_inputs("none", greedy_every=2)
    assert rejection_floor_bytes(greedy) == out + 2 * (16 + 2 * row) + 2 * 2 * (8 + row)
    one_hot = {**_rejection_inputs("none"), "draft_probs": None}
    assert rejection_floor_bytes(one_hot) == out + 4 * (12 + row)


def test_rejection_floor_is_the_mean_of_what_calls_read():
    """The floor is the expectation of the bytes a call must read given its outcome (the
    accepted length of each request): the mean over 200 seeds of torch-rejection's outcomes
    lies within 5 standard errors of it."""
    from sampling_harness.kernels.rejection.torch_rejection import rejection_torch
    from sampling_harness.suites.rejection.contract import bench_batch
    from sampling_harness.suites.rejection.floor import rejection_floor_bytes
    torch.manual_seed(1)
    inputs = bench_batch("6x4x300", CPU)
    counts = torch.tensor(inputs["num_draft_tokens"])
    greedy, vocab = inputs["greedy"], inputs["target_probs"].shape[1]
    written = 8 * 6 * 5
    figures = []
    for seed in range(200):
        out = rejection_torch(**{k: v.clone() if isinstance(v, torch.Tensor) else v
                                 for k, v in inputs.items()}, seed=seed)
        accepted = (out >= 0).sum(1) - 1
        reached = torch.minimum(accepted + 1, counts)
        rejected = accepted < counts
        read = torch.where(greedy, reached * (8 + 4 * vocab),
                           reached * 16 + rejected * 8 * vocab)
        figures.append(float(read.sum()) + written)
    mean, spread = torch.tensor(figures).mean(), torch.tensor(figures).std() / 200**0.5
    assert abs(float(mean) - rejection_floor_bytes(inputs)) < 5 * float(spread) + 1

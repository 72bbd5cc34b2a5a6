"""The ahead-of-time compile of a GPU run's listed Triton variants (harness/scale/precompile.py):
which entries a run takes, how census logs become the list, and, on a GPU, that an entry
replays to the very cache key Triton's JIT compiled it under."""

import importlib.util
import json
import sys
from types import SimpleNamespace

import pytest
import torch

from sampling_harness.scale import precompile
from sampling_harness.scale.kernel_source import fingerprint

TEST = "/x/suites/{suite}/test_fit.py::test_fit_curated[{kernel}]"


def entry(key, budgets, users):
    return {"kernel": "m:k", "key": key, "budgets": budgets, "users": users}


def test_a_run_takes_its_budget_suites_and_kernels():
    """An entry is taken when one of its checks is in the run's suites and kernels, at the
    run's budget."""
    entries = [entry("a", ["quick"], [["sample", "triton-exact"]]),
               entry("b", ["standard"], [["sample", "triton-exact"]]),
               entry("c", ["quick", "standard"], [["logprobs", "triton-logprobs"],
                                                   ["sample", "torch-fp32"]])]
    keys = lambda *args: [e["key"] for e in precompile.chosen(entries, *args)]  # noqa: E731
    assert keys("quick", ["sample", "logprobs"], None) == ["a", "c"]
    assert keys("standard", ["logprobs"], None) == ["c"]
    assert keys("quick", ["sample"], ["triton-exact"]) == ["a"]
    assert keys("quick", ["sample"], ["pkg.mod:fn"]) == []


def test_user_of_reads_suite_and_kernel_from_a_pytest_id():
    assert precompile.user_of(TEST.format(suite="sample_logits", kernel="triton-sample-logits")
                              ) == ("sample_logits", "triton-sample-logits")
    assert precompile.user_of("tests/test_x.py::test_y") is None
    assert precompile.user_of("") is None


def test_record_merges_logs_by_key_in_the_order_first_compiled(tmp_path, monkeypatch):
    """One entry per key, its budgets and checks merged, each with its kernel's source
    fingerprint; lines without a variant, a key or a check (a compile outside the suites)
    are left out."""
    monkeypatch.setattr(precompile, "fingerprint", lambda kernel: f"source of {kernel}")
    def line(key, suite, kernel, variant=True):
        return json.dumps({"test": TEST.format(suite=suite, kernel=kernel), "key": key,
                           "variant": {"kernel": f"m:{key}"} if variant else None})
    quick, standard = tmp_path / "q.jsonl", tmp_path / "s.jsonl"
    quick.write_text("\n".join([line("k2", "sample", "triton-exact"),
                                line("k1", "sample", "triton-exact"),
                                line("k2", "logprobs", "triton-logprobs"),
                                line("k3", "sample", "triton-exact", variant=False),
                                json.dumps({"test": "", "key": "k4", "variant": {}})]) + "\n")
    standard.write_text(line("k1", "sample", "triton-exact") + "\n"
                        + line("k5", "sample", "triton-exact") + "\n")
    document = precompile.record({"quick": str(quick), "standard": str(standard)})
    got = [(e["key"], e["budgets"], e["users"]) for e in document["variants"]]
    assert got == [("k2", ["quick"], [["sample", "triton-exact"], ["logprobs", "triton-logprobs"]]),
                   ("k1", ["quick", "standard"], [["sample", "triton-exact"]]),
                   ("k5", ["standard"], [["sample", "triton-exact"]])]
    assert [e["source"] for e in document["variants"]] == ["source of m:k2", "source of m:k1",
                                                           "source of m:k5"]


def test_describe_keeps_json_scalars_and_the_options_that_differ():
    """Constexprs of another type make the compile unlisted; options equal to their
    defaults are left out (Triton's parse_options restores them)."""
    from dataclasses import dataclass

    @dataclass
    class Options:
        num_warps: int = 4
        num_stages: int = 3
        debug: bool = False

    fn = SimpleNamespace(fn=SimpleNamespace(__module__="mypkg.x", __qualname__="_k"))
    got = precompile.describe(fn, {"x": "*fp32", "B": "constexpr"}, {(1,): 64},
                              Options(num_warps=8), {(0,): [["tt.divisibility", 16]]})
    assert got == {"kernel": "mypkg.x:_k", "signature": {"x": "*fp32", "B": "constexpr"},
                   "constexprs": [[[1], 64]], "attrs": [[[0], [["tt.divisibility", 16]]]],
                   "options": {"num_warps": 8}}
    assert precompile.describe(fn, {}, {(1,): object()}, Options(), {}) is None


def test_nothing_listed_starts_nothing(tmp_path, monkeypatch):
    """A missing or unreadable list, or no entry for the run: no process, no summary."""
    monkeypatch.setattr(precompile, "VARIANTS", tmp_path / "missing.json")
    assert precompile.listed() == []
    assert precompile.start("quick", ["sample"], None, 90, tmp_path / "log") is None
    assert precompile.stop(None, tmp_path / "log") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert precompile.listed(tmp_path / "bad.json") == []


def test_the_shipped_list_names_kernels_that_exist():
    """Every shipped entry's kernel is a Triton function of this checkout with the listed
    parameters (a renamed kernel or parameter needs a new list)."""
    import importlib

    for item in precompile.listed():
        module, _, name = item["kernel"].partition(":")
        fn = getattr(importlib.import_module(module), name)
        assert list(item["signature"]) == list(fn.arg_names), item["kernel"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_an_entry_replays_to_the_key_the_jit_compiled(monkeypatch, tmp_path):
    """A compile caught from the JIT (as benchmarks/compile_census.py catches it) and
    described replays to the JIT's own cache key; another constexpr makes it stale."""
    from triton.runtime.jit import JITFunction

    from sampling_harness.bench.ceiling import _row_sum

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    caught = []
    compile_once = JITFunction._do_compile

    def catch(self, key, signature, device, constexprs, options, attrs, warmup):
        kernel = compile_once(self, key, signature, device, constexprs, options, attrs, warmup)
        caught.append({**precompile.describe(self, signature, constexprs, options, attrs),
                       "key": kernel.hash})
        return kernel

    monkeypatch.setattr(JITFunction, "_do_compile", catch)
    x = torch.ones(3, 4112, device="cuda")
    out = torch.empty(3, 1, device="cuda")
    _row_sum[(3, 1)](x, out, 4112, 4112, BLOCK=512, STAGES=2, num_warps=2)
    (described,) = [json.loads(json.dumps(c)) for c in caught]
    major, minor = torch.cuda.get_device_capability()
    assert precompile.cache_key(described, 10 * major + minor) == described["key"]
    assert precompile.compile_entry(described, 10 * major + minor) == "compiled"
    described["constexprs"] = [[p, v * 2 if isinstance(v, int) else v]
                               for p, v in described["constexprs"]]
    assert precompile.compile_entry(described, 10 * major + minor) == "stale"


KEYS = """
import importlib, sys
from sampling_harness.scale.precompile import settle_cache_keys
settled = settle_cache_keys()
keys = {}
for name in sys.argv[1:]:                  # touched in the order given
    module, _, fn = name.partition(":")
    keys[name] = getattr(importlib.import_module(module), fn).cache_key
print(settled, *(keys[name] for name in sorted(keys)))
"""


def test_settled_keys_do_not_depend_on_the_order_kernels_are_used():
    """Two processes that settle first and then touch the kernels in opposite orders see
    the same keys (Triton 3.6 gives _race_kernel two keys without it:
    sampling_harness.scale.precompile)."""
    import os
    import subprocess
    import sys

    names = ["sampling_harness.kernels.sample.triton_race:_race_kernel",
             "sampling_harness.kernels.rejection.triton_rejection:_rejection_kernel"]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    runs = [subprocess.run([sys.executable, "-c", KEYS, *order], env=env, capture_output=True,
                           text=True, check=True).stdout.split()
            for order in (names, names[::-1])]
    assert runs[0] == runs[1] and int(runs[0][0]) >= 2


def test_record_puts_the_long_compiling_checks_first(tmp_path, monkeypatch):
    """The variants of the check that spent the most compile seconds lead the list (the
    run's long pole gets its variants first)."""
    monkeypatch.setattr(precompile, "fingerprint", lambda kernel: "")
    def line(key, suite, seconds):
        return json.dumps({"test": TEST.format(suite=suite, kernel="k"), "key": key,
                           "seconds": seconds, "variant": {"kernel": f"m:{key}"}})
    log = tmp_path / "q.jsonl"
    log.write_text("\n".join([line("short", "sample", 1.0), line("long1", "logprobs", 9.0),
                              line("long2", "logprobs", 9.0)]) + "\n")
    keys = [e["key"] for e in precompile.record({"quick": str(log)})["variants"]]
    assert keys == ["long1", "long2", "short"]


def test_run_counts_each_outcome_and_goes_on_past_a_failure(capsys):
    """An entry whose kernel is gone fails alone, with its reason printed; the pool still
    answers for every entry (none listed: no pool at all)."""
    gone = {"kernel": "mypkg.no_such_module:_k", "signature": {}, "constexprs": [],
            "attrs": [], "options": {}, "key": "0"}
    assert precompile.run([], 90, 4) == {}
    assert precompile.run([gone, dict(gone)], 90, 4) == {"failed": 2}
    assert capsys.readouterr().out.count("mypkg.no_such_module:_k: failed: ") == 2


def test_the_list_is_written_as_shipped_and_rekeyed_in_place(monkeypatch, tmp_path):
    """``write_list`` writes the shipped list byte for byte (one entry a line); ``rekey``
    replaces only the stale keys (here: a key function that marks two entries stale) and
    leaves none stale."""
    text = precompile.VARIANTS.read_text()
    path = tmp_path / "variants.json"
    precompile.write_list(json.loads(text), path)
    assert path.read_text() == text
    entries = precompile.listed(path)
    moved = {entries[0]["key"], entries[3]["key"]}
    fresh = {key: ("new-" + key if key in moved else key) for key in
             (e["key"] for e in entries)}
    monkeypatch.setattr(precompile, "settle_cache_keys", lambda: 0)
    monkeypatch.setattr(precompile, "cache_key",
                        lambda entry, capability: fresh.get(entry["key"], entry["key"]))
    assert precompile.rekey(90, path) == (2, 0)
    after = precompile.listed(path)
    assert [e["key"] for e in after] == [fresh[e["key"]] for e in entries]
    assert [dict(e, key=None) for e in after] == [dict(e, key=None) for e in entries]


def test_the_shipped_list_was_recorded_from_todays_kernel_source():
    """Every listed variant's source fingerprint is today's: a kernel edited since the list
    was recorded (a docstring line above it included) leaves its keys stale, and a GPU run
    then compiles at check time what the list should have compiled ahead."""
    moved = sorted({e["kernel"] for e in precompile.moved(precompile.listed())})
    assert not moved, (
        f"kernels changed since the precompile list was recorded: {moved}. On a GPU machine "
        f"run `python -m sampling_harness.scale.precompile --rekey` (same variants) or "
        f"scripts/gpu/record_precompile.sh (new variants), and commit "
        f"harness/scale/compile_variants.json")


KERNEL_MODULE = """
import triton
import triton.language as tl

SCALE = tl.constexpr({scale})


@triton.jit
def helper(x):
    return x * SCALE{helper_tail}


@triton.jit
def unrelated(x):
    return x{unrelated_tail}


@triton.jit
def kernel(x_ptr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))
"""


def test_a_fingerprint_follows_what_the_key_is_made_of(tmp_path):
    """The fingerprint changes with a line added above the kernel, a callee's body and a
    constexpr global it reads; not with a jit function it never reaches, nor with a line
    after it."""
    def of(name, **change):
        fields = {"scale": 2, "helper_tail": "", "unrelated_tail": "", **change}
        text = change.pop("above", "") + KERNEL_MODULE.format(**fields) + change.pop("below", "")
        path = tmp_path / name / "fp_kernel.py"         # one module name, several sources
        path.parent.mkdir()
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("fp_kernel", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["fp_kernel"] = module
        spec.loader.exec_module(module)
        return fingerprint("fp_kernel:kernel")

    base = of("fp_base")
    assert of("fp_same") == base
    assert of("fp_below", below="\n# a comment after the kernel\n") == base
    assert of("fp_unrelated", unrelated_tail=" + 1") == base
    assert of("fp_above", above='"""A docstring line."""\n') != base
    assert of("fp_helper", helper_tail=" + 1") != base
    assert of("fp_scale", scale=3) != base
    sys.modules.pop("fp_kernel")

"""The harness run on its own kernels, through
``sampling_harness.commands.selftest`` (what ``sampling-harness
selftest all`` runs): every registered kernel passes and every baseline meets its stated
expectation; every mutant fails the checks its metadata names, at the budget named there.
That every declared check has a mutant naming it is tests/test_declared_checks.py.

On a CPU the clean run is `check all` at the smoke budget (every edge case of every
validity check, few draws; the Triton kernels through the Triton interpreter, where quick
takes ten minutes, five of them triton-exact, whose draws tests/test_triton_race.py couples
to a float64 race bit for bit), on a GPU at quick: one run, so one family-wise false-fail
budget (1e-4) covers all kernels of all families.
"""

from __future__ import annotations

import pytest

from sampling_harness.commands import selftest
from sampling_harness.device import default_device
from sampling_harness.families import FAMILIES
from sampling_harness.families.registry import default_kernels
from tests.helpers import cli

DEVICE = default_device()
MUTANTS = [case for case in selftest.plan("all", DEVICE) if case.role == "mutant"]
BATCHES = selftest.batches(MUTANTS)


def _scheduled(batch: selftest.Batch):
    """A batch with its rough CI seconds (tests/conftest.py runs the long ones first): a
    standard-budget mutant's tail is minutes under the interpreter, a quick one seconds."""
    seconds = 150 if any(c.budget == "standard" for c in batch.cases) else 10 + 5 * len(
        batch.cases)
    return pytest.param(batch, id=batch.directory, marks=pytest.mark.long(seconds))


@pytest.mark.long(300)
def test_every_registered_kernel_passes(tmp_path):
    result = selftest.run_case(selftest.clean_case("all", DEVICE), tmp_path, timeout=1800)
    assert result.status == "pass", f"{result.detail}\n{result.output[-3000:]}"
    expected = {(family, kernel) for family in FAMILIES
                for kernel in default_kernels(family, DEVICE)}
    assert {(c["family"], c["kernel"]) for c in result.report["checks"]} == expected


@pytest.mark.parametrize("batch", [_scheduled(batch) for batch in BATCHES])
def test_every_mutant_fails_its_checks(tmp_path, batch):
    """Every mutant that can be caught here, in the batched runs of ``selftest all``."""
    results = selftest.run_batch(batch, tmp_path, timeout=1500)
    missed = [f"{r.case.label}: {r.status}: {r.detail}" for r in results if r.status != "caught"]
    assert not missed, "\n".join(missed) + f"\n{results[0].output[-3000:]}"
    for result in results:
        assert {c["kernel"] for c in result.report["checks"]} == {result.case.kernel}
        assert result.report["checks"][0]["reproduce"].startswith(
            f"sampling-harness check {result.case.family} --kernel {result.case.kernel}")


def test_the_mutants_skipped_on_this_device_say_why():
    assert all(case.skip for case in MUTANTS if not any(case in b.cases for b in BATCHES))


def test_a_batch_selects_each_mutants_own_checks_and_splits_alpha_as_its_largest():
    cases = [selftest.mutant_case("sample", name, _meta(caught_by=caught), "cpu")
             for name, caught in (("a", ["validity"]), ("b", ["fit_curated", "tail"]),
                                  ("c", ["tail"]))]
    hangs = selftest.mutant_case("sample", "h", _meta(call_timeout=2.0), "cpu")
    batches = selftest.batches([*cases, hangs])
    assert [len(b.cases) for b in batches] == [3, 1] and batches[1].args == hangs.args
    args = batches[0].args
    select = args[args.index("-k") + 1]
    assert select == "test_validity[a] or test_fit_curated[b] or test_tail[b] or test_tail[c]"
    assert args[args.index("--statistical-checks") + 1] == "2"
    assert [args[i + 1] for i, word in enumerate(args) if word == "--kernel"] == ["a", "b", "c"]


def _meta(**overrides) -> dict:
    return {"role": "mutant", "caught_by": ["validity"], "budget": "quick", "bug": "b",
            "tool": "", "devices": ["cpu", "cuda"], **overrides}


def test_a_mutant_runs_on_its_checks_at_its_budget_or_higher():
    case = selftest.mutant_case("sample", "m", _meta(caught_by=["fit_curated", "tail"]),
                                "cpu")
    assert case.budget == "quick" and not case.skip
    assert case.args[-2:] == ("-k", "test_fit_curated or test_tail")
    assert case.expected == {"fit_curated": "fail", "tail": "fail"}
    assert selftest.mutant_case("sample", "m", _meta(), "cpu", "smoke").budget == "quick"
    assert selftest.mutant_case("sample", "m", _meta(), "cpu", "standard").budget == "standard"
    deeper_on_gpu = _meta(budget="standard", gpu_budget="quick")
    assert selftest.mutant_case("sample", "m", deeper_on_gpu, "cpu").budget == "standard"
    assert selftest.mutant_case("sample", "m", deeper_on_gpu, "cuda").budget == "quick"
    hangs = selftest.mutant_case("sample", "m", _meta(call_timeout=2.0), "cpu")
    assert hangs.args[hangs.args.index("--call-timeout") + 1] == "2.0"


def test_a_mutant_is_skipped_where_it_cannot_be_caught_and_says_why():
    tool = selftest.mutant_case("sample", "m", _meta(tool="memcheck"), "cpu")
    assert "compute-sanitizer memcheck, on a GPU only" in tool.skip
    on_gpu = selftest.mutant_case("sample", "m", _meta(tool="memcheck"), "cuda")
    assert not on_gpu.skip and on_gpu.expected == {"validity_memcheck": "fail"}
    assert "--sanitize" in on_gpu.args
    cuda_bug = selftest.mutant_case("sample", "m", _meta(devices=["cuda"]), "cpu")
    assert cuda_bug.skip.startswith("its bug shows on cuda only")
    large = _meta(caught_by=["fit_curated", "fit_large_vocab"])
    assert selftest.mutant_case("sample", "m", large, "cpu").expected == {"fit_curated": "fail"}
    assert "GPU-only checks only" in selftest.mutant_case(
        "sample", "m", _meta(caught_by=["fit_large_vocab"]), "cpu").skip


def _report(*verdicts, complete=True) -> dict:
    return {"complete": complete, "checks": [
        {"family": "sample", "kernel": k, "name": n, "verdict": v, "expected": e}
        for k, n, v, e in verdicts]}


def test_judge_an_escape_a_clean_failure_and_an_error():
    """The self-test can fail: a mutant check that passes escapes; a kernel check off its
    expectation fails the clean run; a run without a report, cut off or with an error
    verdict is an error, never a catch."""
    mutant = selftest.Case("sample", "m", "quick", expected={"fit_curated": "fail",
                                                              "tail": "fail"})
    caught = _report(("m", "fit_curated", "fail", "pass"), ("m", "tail", "fail", "pass"))
    assert selftest.judge(mutant, 1, caught, "")[0] == "caught"
    half = _report(("m", "fit_curated", "fail", "pass"), ("m", "tail", "pass", "pass"))
    assert selftest.judge(mutant, 1, half, "") == ("ESCAPED", "tail passed")
    erred = _report(("m", "fit_curated", "fail", "pass"), ("m", "tail", "error", "pass"))
    assert selftest.judge(mutant, 1, erred, "")[0] == "ERROR"
    assert selftest.judge(mutant, 1, _report(complete=False), "x")[0] == "ERROR"
    assert selftest.judge(mutant, 2, None, "sampling-harness: error: no") == (
        "ERROR", "exit 2: sampling-harness: error: no")
    assert selftest.judge(mutant, None, None, "")[1].startswith("timed out")

    clean = selftest.Case("sample", "", "smoke")
    wrong = _report(("torch-fp64", "tail", "fail", "pass"))
    status, detail = selftest.judge(clean, 1, wrong, "")
    assert status == "FAIL" and "sample / torch-fp64 / tail: fail (expected pass)" in detail
    results = [selftest.Result(mutant, "caught", ""), selftest.Result(mutant, "ESCAPED", "")]
    assert selftest.conclude(results[:1]) == 0 and selftest.conclude(results) == 1


def test_the_command_runs_named_mutants_and_prints_the_table(tmp_path):
    code, output, _ = cli("selftest", "sample", "--device", "cpu", "--kernel", "hangs",
                          "--kernel", "ids-past-end", "--report-dir", str(tmp_path))
    assert code == 0, output
    assert "| sample | hangs | mutant | quick | caught |" in output
    assert "| sample | ids-past-end | mutant | quick | skipped |" in output
    assert (tmp_path / "selftest.md").exists() and (tmp_path / "sample-hangs").is_dir()
    code, output, _ = cli("selftest", "sample", "--kernel", "no-such-mutant")
    assert code == 2 and "no mutant named no-such-mutant in sample" in output

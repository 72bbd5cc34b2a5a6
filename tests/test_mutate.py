"""``sampling-harness mutate`` (harness/mutate/, docs/how-to/mutate.md): the mutation
operators and what they leave alone, the reachable source, the mutant's copy, the probes of
the original's run, the call fingerprints, the classification and the score; and the CI
case: triton-exact at smoke on a CPU, a fixed choice of mutants that shows a killed, a gap,
a likely equivalent and a dead-code row, with all five outputs."""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from sampling_harness.mutate import coverage, homogeneity, law, recorder
from sampling_harness.mutate.classify import Result, classify, score, table
from sampling_harness.mutate.edit import apply
from sampling_harness.mutate.html import to_html
from sampling_harness.mutate.operators import Source, unit_sites
from sampling_harness.mutate.reach import reach
from sampling_harness.mutate.report import to_junit, to_markdown
from sampling_harness.mutate.runs import ChildRun
from sampling_harness.mutate.workspace import Mutant, copy_name, write
from sampling_harness.stats.binomial import clopper_pearson
from tests.helpers import cli


def sites_of(text: str, path: str = "m.py"):
    """Every site of every top-level statement of ``text``."""
    text = textwrap.dedent(text)
    source, tree = Source(text), ast.parse(text)
    return text, [s for node in tree.body
                  for s in unit_sites("m", path, getattr(node, "name", "x"), node, source)]


def changes(sites) -> set[tuple[str, str, str]]:
    return {(s.operator, s.original, s.replacement) for s in sites}


def test_each_operator_makes_its_documented_changes():
    _, sites = sites_of("""
        def f(a, b, xs, i):
            c = a < b and a != b
            d = (a + b) * (a // b) ^ (a << 2)
            e = -a if not c else ~b
            a += 1.5
            return xs[i], xs[i:b]
        """)
    found = changes(sites)
    assert {("comparison", "<", "<="), ("comparison", "<", ">="),
            ("comparison", "!=", "==")} <= found
    assert {("arithmetic", "+", "-"), ("arithmetic", "*", "/"), ("arithmetic", "//", "*"),
            ("arithmetic", "+=", "-=")} <= found
    assert {("bitwise", "^", "|"), ("bitwise", "<<", ">>")} <= found
    assert ("boolean", "a < b and a != b", "a < b or a != b") in found
    assert {("unary", "-a", "a"), ("unary", "not c", "c"), ("unary", "~b", "b")} <= found
    assert {("constant", "2", "3"), ("constant", "2", "1"), ("constant", "1.5", "3.0"),
            ("constant", "1.5", "0.75")} <= found
    assert {("index", "i", "i + 1"), ("index", "i", "i - 1"), ("index", "b", "b + 1")} <= found


def test_literals_decorators_annotations_and_strings_are_left_alone():
    _, sites = sites_of('''
        @decorate(3)
        def f(x: int = -1, flag=True) -> list[int]:
            """Doc 7."""
            return f"{x + 1}", "text", None, x[-2]
        ''')
    found = changes(sites)
    assert ("constant", "-1", "0") in found and ("constant", "-1", "-2") in found
    assert ("constant", "True", "False") in found and ("constant", "-2", "-1") in found
    assert not any(s.operator == "unary" for s in sites)           # -1 is a constant
    assert not any(s.original in ("3", "x + 1", "+", "7", "int") for s in sites)


def test_every_mutant_is_its_one_change_and_keeps_every_line():
    text, sites = sites_of("""
        def f(a, b, c):
            x = a | b & c
            y = a ** -b * c
            return (x
                    + y) % 2
        """)
    for site in sites:
        mutated = apply(text, site)
        assert mutated.count("\n") == text.count("\n")
        assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(text))
    precedence = next(s for s in sites if s.original == "&")
    assert "x = ((a | b )|( c))" not in apply(text, precedence)      # parsed as (a | b) | c
    assert ast.unparse(ast.parse(apply(text, precedence)).body[0].body[0]) == "x = a | (b | c)"


def test_where_a_site_runs():
    _, sites = sites_of("""
        LIMIT = 4
        def f(a, b=2):
            if a > LIMIT:
                return a - 1
            return a
        """)
    at = {s.original + s.replacement: s for s in sites}
    assert at["45"].anchor is None and at["23"].anchor is None      # import time
    assert at[">>="].anchor == (4, 4) and at["-+"].anchor == (5, 5)
    assert at["-+"].block == (5, 5) and at[">>="].block == (4, 6)


def test_the_project_kernel_sources_all_apply():
    fn = importlib.import_module("sampling_harness.kernels.sample.triton_race").race_exact
    found = reach(fn)
    sites = found.sites()
    units = {name for units in found.units.values() for name, _ in units.values()}
    assert {"race_exact", "_race_kernel", "exponential", "philox_key", "seed_argument",
            "REFINE_BELOW"} <= units
    assert not {"_bits_kernel", "race_bits", "chunk_width"} & units      # not reachable
    assert len(sites) > 300 and {s.operator for s in sites} == {
        "comparison", "arithmetic", "bitwise", "boolean", "unary", "constant", "index"}
    for site in sites[::7]:
        assert apply(found.modules[site.module].text, site).count("\n") == \
            found.modules[site.module].text.count("\n")


def make_package(root: Path) -> None:
    """pkg/race.py calls a helper of pkg/util.py through a relative import."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text("def bump(x):\n    return x + 1\n")
    (root / "pkg" / "race.py").write_text(
        "from .util import bump\n\n\ndef kernel(x, seed):\n    return bump(x) * 2\n")


def test_a_mutant_is_a_copy_whose_mutated_helper_the_target_calls(tmp_path, monkeypatch):
    make_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = importlib.import_module("pkg.race").kernel
    found = reach(fn)
    assert found.scope == "pkg" and set(found.units) == {"pkg.race", "pkg.util"}
    site = next(s for s in found.sites() if s.module == "pkg.util" and s.original == "+")
    mutant = write(found, Mutant("m0001", site), tmp_path / "work")
    monkeypatch.syspath_prepend(str(mutant.source_root))
    copy = importlib.import_module(copy_name("pkg.race", "pkg", mutant.package))
    assert fn(3, 0) == 8 and copy.kernel(3, 0) == 4             # (3 - 1) * 2
    assert "from sampling_harness_mutant_m0001.util import bump" in \
        (mutant.source_root / mutant.package / "race.py").read_text()
    assert (tmp_path / "pkg" / "util.py").read_text().count("x + 1") == 1   # untouched
    assert "-    return x + 1" in (mutant.directory / "mutant.diff").read_text()


def test_probes_record_the_lines_run_and_change_no_line(tmp_path, monkeypatch):
    text = textwrap.dedent("""
        def f(xs):
            total = 0
            for x in xs:
                if x > 1:
                    total += x
                else:
                    pass
            with open(__file__) as handle:
                handle.read(1)
            return total
        """)
    probed = coverage.instrument(text, 0, jit_too=True)
    assert probed.count("\n") == text.count("\n")
    (tmp_path / "probed.py").write_text(probed)
    monkeypatch.syspath_prepend(str(tmp_path))
    coverage.install()
    coverage.HITS.clear()
    assert importlib.import_module("probed").f([1]) == 0
    assert {line for _, line in coverage.HITS} == {3, 4, 5, 8, 9, 10, 11}   # not 6
    _, sites = sites_of(text)
    lines = {"probed": {"m.py": sorted(line for _, line in coverage.HITS)}, "compiled": {},
             "interpreted": True}
    by_line = {s.line: coverage.reached(s, lines) for s in sites}
    assert by_line[5] and by_line[3] and not by_line[6]


def test_compiled_code_counts_as_run_by_its_block():
    _, sites = sites_of("""
        @triton.jit
        def k(x, LATE: tl.constexpr):
            y = x + 1
            if LATE:
                y = y * 2
            return y
        """)
    plus, times = (next(s for s in sites if s.original == op) for op in ("+", "*"))
    compiled = {"interpreted": False, "probed": {}, "compiled": {"m.py": [4, 7]}}
    assert plus.jit and coverage.reached(plus, compiled) and not coverage.reached(times, compiled)


def test_digests_are_exact_and_repeatable():
    x = torch.arange(1000, dtype=torch.float32)
    y = x.clone()
    y[517] = torch.nextafter(y[517], torch.tensor(1e9))
    assert recorder.tensor_digest(x) == recorder.tensor_digest(x.clone())
    assert recorder.tensor_digest(x) != recorder.tensor_digest(y)
    assert recorder.tensor_digest(x) != recorder.tensor_digest(x.flip(0))
    assert recorder.digest((x, None)) != recorder.digest((y, None))
    differ = recorder.difference(torch.tensor([1, 2, 3]), torch.tensor([1, 5, 3]))
    assert differ == [{"part": 0, "differ": 1, "of": 3,
                       "at": [{"index": [1], "original": "2", "mutant": "5"}]}]


def run_of(tmp_path, code=0, checks=(), output="") -> ChildRun:
    report = None if checks is None else {"checks": [{"name": n, "verdict": v, "message": m}
                                                     for n, v, m in checks]}
    return ChildRun(code, 3.0, report, output, tmp_path)


def test_each_outcome_is_told_apart(tmp_path):
    _, sites = sites_of("def f(a):\n    return a + 1\n")
    site = sites[0]
    diff = tmp_path / "calls.json"

    def outcome(run, body=None):
        diff.write_text(json.dumps(body or {}))
        return classify("m0000", site, run, diff)

    killed = outcome(run_of(tmp_path, 1, [("validity", "pass", ""), ("tail", "fail", "few")]))
    assert (killed.outcome, killed.check, killed.detail) == ("killed", "tail", "few")
    assert outcome(run_of(tmp_path, None, [])).outcome == "killed"              # timed out
    aborted = outcome(run_of(tmp_path, -6, None))        # a fault: killed, never a stop
    assert (aborted.outcome, aborted.detail) == (
        "killed", "fault: its run crashed (signal 6: SIGABRT)")
    exited = outcome(run_of(tmp_path, 3, None))
    assert (exited.outcome, exited.detail) == ("killed", "fault: its run exited with status 3")
    assert outcome(run_of(tmp_path, 2, None, "error: cannot import 'x'")).outcome == \
        "stillborn"
    passed = [("validity", "pass", "")]
    gap = outcome(run_of(tmp_path, 0, passed), {"compared": 9, "differing": 2, "first": {
        "check": "fit", "call": 3, "differences": [{"part": 0, "differ": 1, "of": 4, "at": [
            {"index": [2], "original": "7", "mutant": "8"}]}]}})
    assert (gap.outcome, gap.check) == ("gap", "fit")
    assert gap.detail == "fit call 3: 1 of 4 values differ (at [2]: 7 -> 8); 2 of 9 calls differ"
    same = outcome(run_of(tmp_path, 0, passed), {"compared": 9, "differing": 0, "missing": 0})
    assert (same.outcome, same.compared) == ("equivalent", 9)
    lost = outcome(run_of(tmp_path, 0, passed), {"compared": 4, "differing": 0,
                                                 "diverged": "fit/4: other inputs"})
    assert lost.outcome == "error"


def multinomial(probs: torch.Tensor, rekey=lambda seed: seed):
    """A torch CPU sampler of ``probs`` [B, V]: one id per row, keyed by ``rekey(seed)``."""
    def call(seed):
        generator = torch.Generator().manual_seed(rekey(seed) % 2**63)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)
    return call


def test_the_law_test_rejects_a_shifted_law_and_not_a_rekeyed_one():
    probs = torch.softmax(torch.randn(6, 12, generator=torch.Generator().manual_seed(3)) * 1.5,
                          dim=1)
    shifted = probs.clone()
    shifted[:, 0] += 0.15                                    # total variation ~0.13 a row
    shifted /= shifted.sum(1, keepdim=True)
    draws = 256
    seeds = law.draw_seeds(7, 2 * draws, "unit")
    assert len(set(seeds)) == 2 * draws
    original = law.sample(multinomial(probs), seeds[:draws], "a")
    assert original.shape == (draws, 6, 1)
    rekeyed = law.sample(multinomial(probs, lambda s: 7919 * s + 1), seeds[draws:], "b")
    moved = law.sample(multinomial(shifted), seeds[draws:], "b")
    assert not torch.equal(original, rekeyed)                # other tokens, one law
    same = homogeneity.homogeneity(original, rekeyed)
    assert same["rejected"] is False and same["p_value"] > law.ALPHA
    assert same["rows_tested"] == 6 and same["df"] > 6 and 0 < same["tv"] < 0.2
    assert same["distance"] == pytest.approx(2 * same["noncentrality"] / draws)
    assert same["tv"] == pytest.approx(homogeneity.detectable_tv(draws, same["df"], 6))
    differ = homogeneity.homogeneity(original, moved)
    assert differ["rejected"] is True and differ["p_value"] < 1e-6
    assert "p = " in law.describe(differ) and "power 0.9" in law.describe(differ)
    stream = law.SeedStream(7, "unit")                      # batches never repeat a seed
    assert len(set(stream.take(100) + stream.take(100))) == 200


def test_a_row_of_several_tokens_is_one_outcome():
    first = torch.tensor([[[1, 2, -1]], [[1, 3, -1]]] * 40)          # [80, 1, 3]
    swapped = torch.tensor([[[1, 2, -1]], [[3, 1, -1]]] * 40)        # same columns' laws
    assert homogeneity.homogeneity(first, first.clone())["p_value"] == 1.0
    assert homogeneity.homogeneity(first, swapped)["rejected"]               # tuples differ
    drafts = law.outcome_rows(([[4, 5], [6]], None))
    assert drafts.tolist() == [[4, 5], [6, -1]]
    longer = law.outcome_rows(([[1, 2, 3], []], None))
    assert homogeneity.stacked([drafts, longer]).shape == (2, 2, 3)
    seeds = law.draw_seeds(torch.tensor([3, -1, 5]), 4, "k")
    assert all(int(s[1]) == -1 for s in seeds) and len({int(s[0]) for s in seeds} |
                                                      {int(s[2]) for s in seeds}) == 8


def test_only_ids_of_a_seeded_family_are_draws():
    sample, logprobs = (SimpleNamespace(name=n, parameters=p) for n, p in (
        ("sample", ("probs", "seed")), ("logprobs", ("logits", "token_ids"))))
    ids, other = torch.tensor([1, 2]), torch.tensor([1, 3])
    assert law.not_draws(sample, ids, other) is None
    assert "takes no seed" in law.not_draws(logprobs, ids, other)
    assert "not ids" in law.not_draws(sample, (ids, torch.zeros(2)), (other, torch.ones(2)))
    assert law.not_draws(sample, ([[1]], torch.zeros(2)), ([[2]], torch.zeros(2))) is None
    assert "no output part" in law.not_draws(sample, torch.zeros(2), torch.zeros(2))


def test_the_law_test_of_a_call(monkeypatch):
    family = SimpleNamespace(name="sample", parameters=("probs", "seed"),
                             call=lambda fn, inputs, seed: fn(inputs["probs"], seed),
                             validate=lambda output, inputs: output)
    probs = torch.softmax(torch.randn(4, 8, generator=torch.Generator().manual_seed(5)), 1)

    def kernel(rekey, law_of=probs):
        return lambda p, seed: multinomial(law_of, rekey)(seed)

    def test(mutant, seed=11, outcomes=4, draws=None, budget="quick"):
        return law.law_test(family, kernel(lambda s: s), mutant, {"probs": probs}, seed,
                            "fit/0", outcomes, draws=draws, budget=budget)

    def slow(p, seed):
        time.sleep(0.2)                      # 32 draws a kernel: over 6 s, the limit is 1 s
        return kernel(lambda s: s)(p, seed)

    same = test(kernel(lambda s: s + 12345))             # quick: planned for TV 0.05
    assert same["verdict"] == "same-law" and same["tv"] <= same["target_tv"] == 0.05
    assert same["draws"] == same["planned_draws"] == homogeneity.planned_draws(
        same["df"], same["rows_tested"], 0.05)           # the draws the cells found ask
    smoke = test(kernel(lambda s: s + 12345), budget="smoke")
    assert smoke["verdict"] == "same-law" and smoke["draws"] < same["draws"]
    again = test(kernel(lambda s: s + 12345), budget="smoke")     # deterministic
    assert {**smoke, "seconds": 0} == {**again, "seconds": 0}
    weak = test(kernel(lambda s: s + 12345), draws=64)   # not rejected, yet too weak
    assert weak["verdict"] == "undecided" and weak["tv"] > law.FALLBACK_TV["quick"]
    assert weak["reason"].startswith("too weak to decide")
    peaked = torch.eye(8)[:4]
    assert test(kernel(lambda s: s, peaked), draws=64)["verdict"] == "differs"
    def paced(p, seed):
        time.sleep(0.002)                    # about 4 ms a draw of the two, on any machine
        return kernel(lambda s: s + 12345)(p, seed)

    monkeypatch.setitem(law.SECONDS, "quick", 0.5)          # about a hundred draws fit
    cut = test(paced)
    assert cut["verdict"] == "undecided" and cut["draws"] < cut["planned_draws"], cut
    assert "cut short by the time limit (0 s at quick)" in cut["reason"]
    monkeypatch.setitem(law.SECONDS, "quick", 1.0)
    slowed = test(slow)
    assert slowed["verdict"] == "undecided" and "too slow to test" in slowed["reason"]
    large = test(kernel(lambda s: s), outcomes=law.OUTCOMES)
    assert large["verdict"] == "undecided" and "too large" in large["reason"]

    def raises(p, seed):
        raise RuntimeError("illegal memory access")
    failed = test(raises)                                # a defect on a fresh seed: a gap
    assert failed["verdict"] == "untested" and "failed on a fresh seed: RuntimeError" in \
        failed["reason"]


def test_the_law_tests_draws_follow_the_budget():
    """The draws are planned from the total variation the family's checks resolve at the
    budget: the issue's 256 draws of one near-uniform row (V = 32001, 51 cells) detected only
    0.396; at quick the test detects 0.05 on that row, at standard 0.01."""
    from sampling_harness.families import FAMILIES

    sample = FAMILIES["sample"]
    targets = [law.target_tv(sample, b) for b in ("smoke", "quick", "standard", "thorough")]
    assert targets == [0.1, 0.05, 0.01, 0.005]
    assert law.target_tv(FAMILIES["tree-rejection"], "smoke") == 0.15
    assert law.target_tv(SimpleNamespace(budgets={}), "standard") == law.FALLBACK_TV["standard"]
    assert homogeneity.detectable_tv(256, 50, 1) == pytest.approx(0.396, abs=1e-3)
    one_row = [homogeneity.planned_draws(homogeneity.CELLS - 1, 1, tv) for tv in targets]
    assert one_row == sorted(one_row) and one_row[1] == 13701
    for tv, draws in zip(targets, one_row, strict=True):
        df = homogeneity.CELLS - 1
        assert homogeneity.detectable_tv(draws, df, 1) <= tv < homogeneity.detectable_tv(
            draws - 1, df, 1)
    rows_add_power = homogeneity.planned_draws(248, 8, 0.05) < homogeneity.planned_draws(
        31, 1, 0.05)
    assert rows_add_power


def hashed_rows(constant: int = 12345, moved: float = 0.0):
    """The issue's kernel: a torch ``sample`` kernel that seeds one generator per row from
    ``seed * 1_000_003 + r * 7_919 + constant`` (one uniform a row, then the inverse CDF);
    ``moved`` > 0 moves that much total variation of every row onto token 0 (a real change
    of law)."""
    def kernel(probs, seed):
        if moved:
            mass = moved / (1 - probs[:, :1])          # (1 - e) p + e [token 0]: TV `moved`
            probs = (1 - mass) * probs + mass * torch.eye(probs.shape[1])[0]
        u = torch.empty(probs.shape[0], 1, dtype=torch.float64)
        for r in range(probs.shape[0]):
            generator = torch.Generator().manual_seed(seed * 1_000_003 + r * 7_919 + constant)
            u[r] = torch.rand((), generator=generator, dtype=torch.float64)
        cdf = probs.double().cumsum(1)
        return torch.searchsorted(cdf, u * cdf[:, -1:]).squeeze(1).clamp_(max=probs.shape[1] - 1)
    return kernel


HASHED_PROBS = torch.softmax(torch.randn(3, 12, generator=torch.Generator().manual_seed(9)), 1)


def law_of(mutant, **options) -> dict:
    """The law test of the issue's kernel against ``mutant`` at one call of family sample."""
    from sampling_harness.families import FAMILIES

    return law.law_test(FAMILIES["sample"], hashed_rows(), mutant, {"probs": HASHED_PROBS},
                        17, "fit_curated/0", HASHED_PROBS.shape[0], **options)


def classified(tmp_path, tested: dict) -> Result:
    """The outcome of a survivor whose first differing call had this law test."""
    _, sites = sites_of("def f(a):\n    return a + 1\n")
    diff = tmp_path / "calls.json"
    diff.write_text(json.dumps({"compared": 9, "differing": 2, "first": {
        "check": "validity", "call": 2, "law": tested, "differences": [
            {"part": 0, "differ": 3, "of": 3, "at": [
                {"index": [0], "original": "7", "mutant": "8"}]}]}}))
    return classify("m0000", sites[0], run_of(tmp_path, 0, [("validity", "pass", "")]), diff)


def test_a_rekeyed_per_row_seeded_torch_kernel_is_same_law_at_quick(tmp_path):
    """The issue's defect: a mutant that changes only a constant of the per-row seed hash
    re-keys the stream. At quick the test's draws detect the 0.05 the sample family's
    checks resolve, and it is same-law, outside the score (it was a gap: 'too weak')."""
    tested = law_of(hashed_rows(12346), budget="quick")
    assert tested["verdict"] == "same-law" and tested["p_value"] > law.ALPHA, tested
    assert tested["target_tv"] == 0.05 and tested["tv"] <= 0.05
    assert tested["draws"] == tested["planned_draws"] > 1000 and tested["rows_tested"] == 3
    result = classified(tmp_path, tested)
    assert result.outcome == "same-law" and "likely equivalent in law" in result.detail
    assert score([result]).rate is None                                # outside the score


def test_a_real_law_change_of_the_checks_size_is_a_gap(tmp_path):
    """One token's probability moved by the 0.05 total variation quick's checks resolve, on
    every row: rejected at quick's draws, a gap with its p-value."""
    tested = law_of(hashed_rows(moved=0.05), budget="quick")
    assert tested["verdict"] == "differs" and tested["p_value"] < law.ALPHA, tested
    result = classified(tmp_path, tested)
    assert result.outcome == "gap" and "the law differs" in result.detail
    assert (score([result]).killed, score([result]).gaps) == (0, 1)


def test_an_undecidable_law_is_undecided_outside_the_score(tmp_path):
    """Too few draws to clear or reject: 'undecided (power N)', N the total variation the
    test detects; neither killed nor gap, so the score's denominator leaves it out."""
    tested = law_of(hashed_rows(12346), budget="quick", draws=48)
    assert tested["verdict"] == "undecided" and tested["tv"] > 0.05, tested
    assert tested["reason"].startswith("too weak to decide")
    weak = classified(tmp_path, tested)
    power = f"power {tested['tv']:.3g}"
    assert weak.outcome == "undecided" and weak.outcome_text == f"undecided ({power})"
    assert "the law test cannot decide, too weak to decide" in weak.detail
    untested = classified(tmp_path, {"verdict": "undecided", "reason": "too slow to test"})
    assert untested.outcome_text == "undecided (no test)"
    _, sites = sites_of("def f(a):\n    return a + 1\n")
    results = [weak, untested, Result("m0001", sites[0], "killed", ""),
               Result("m0002", sites[0], "gap", "")]
    assert (score(results).killed, score(results).gaps, score(results).rate) == (1, 1, 0.5)
    meta = {"kernel": "k", "budget": "quick", "device": "cpu", "family": "sample"}
    summary = to_markdown(results, meta)
    assert "| killed | gap | undecided | same-law |" in summary
    assert "| k | quick | cpu | 4 | 1 | 1 | 2 | 0 | 0 | 0 | 0 | 0 | 50.0 % (1/2;" in summary
    assert "## Undecided" in summary and f"**undecided ({power})**" in summary
    assert f"- law: undecided ({power}): too weak to decide" in summary
    suite = ET.fromstring(to_junit(results, meta))
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "2")
    page = to_html(results, meta)
    assert ".o-undecided" in page and "<h2>Undecided</h2>" in page


def test_a_survivor_whose_law_is_the_same_is_outside_the_score(tmp_path):
    _, sites = sites_of("def f(a):\n    return a + 1\n")
    diff = tmp_path / "calls.json"
    tested = {"draws": 256, "rows": 8, "rows_tested": 8, "statistic": 70.2, "df": 72,
              "alpha": 1e-3, "power": 0.9, "noncentrality": 68.4, "distance": 0.534,
              "tv": 0.129}

    def survivor(verdict: dict):
        diff.write_text(json.dumps({"compared": 9, "differing": 2, "first": {
            "check": "fit", "call": 3, "law": {**tested, **verdict}, "differences": [
                {"part": 0, "differ": 1, "of": 4, "at": [
                    {"index": [2], "original": "7", "mutant": "8"}]}]}}))
        return classify("m0000", sites[0], run_of(tmp_path, 0, [("fit", "pass", "")]), diff)

    same = survivor({"verdict": "same-law", "p_value": 0.41})
    assert (same.outcome, same.check) == ("same-law", "fit")
    assert same.detail.startswith("likely equivalent in law: fit call 3: 1 of 4 values differ")
    assert "256 x 8 draws per kernel" in same.detail and "p = 0.41" in same.detail
    assert "total variation >= 0.129" in same.detail and "power 0.9" in same.detail
    real = survivor({"verdict": "differs", "p_value": 3e-9})
    assert real.outcome == "gap" and "the law differs" in real.detail and "p = 3e-09" in \
        real.detail
    untested = survivor({"verdict": "untested", "p_value": None, "reason": "too slow"})
    assert untested.outcome == "gap" and untested.detail.endswith("law not tested: too slow")
    values = survivor({"verdict": "values", "p_value": None, "reason": "no seed"})
    assert values.outcome == "gap" and values.detail.endswith("2 of 9 calls differ")
    results = [same, real, Result("m0001", sites[0], "killed", "")]
    assert (score(results).killed, score(results).gaps) == (1, 1)
    meta = {"kernel": "k", "budget": "smoke", "device": "cpu", "family": "sample"}
    summary = to_markdown(results, meta)
    assert "| same-law |" in summary and "| k | smoke | cpu | 3 | 1 | 1 | 0 | 1 | 0 |" in summary
    assert "## Same law" in summary and "- law: same law (not rejected): two-sample" in summary
    assert "- law: the law differs (rejected)" in summary
    suite = ET.fromstring(to_junit(results, meta))
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "1")
    page = to_html(results, meta)
    assert ".o-same-law" in page and "<h2>Same law</h2>" in page


def test_the_score_is_killed_over_killed_and_gaps_with_its_exact_interval():
    _, sites = sites_of("def f(a, b):\n    return a + b < 2\n")
    outcomes = ["killed"] * 7 + ["gap"] * 2 + ["equivalent", "same-law", "dead", "stillborn",
                                                "undecided"]
    results = [Result(f"m{i:04d}", sites[i % len(sites)], o, "") for i, o in
               enumerate(outcomes)]
    s = score(results)
    assert (s.killed, s.gaps, s.rate) == (7, 2, 7 / 9)
    assert (s.low, s.high) == clopper_pearson(7, 9, 0.95)
    rows = {name: counts for name, counts, _ in table(results, lambda r: r.site.operator)}
    assert sum(c["killed"] for c in rows.values()) == 7
    assert score([Result("m0", sites[0], "equivalent", "")]).rate is None


def test_mutate_names_unknown_mutants_and_refuses_baselines(tmp_path):
    code, out, _ = cli("mutate", "sample", "--kernel", "triton-exact", "--only", "m9999",
                       "--report-dir", str(tmp_path))
    assert code == 2 and "no mutant m9999" in out
    code, out, _ = cli("mutate", "sample", "--kernel", "torch-fp32", "--dry-run")
    assert code == 2 and "is a baseline" in out
    code, out, _ = cli("mutate", "sample", "--kernel", "triton-exact", "--all", "--only",
                       "m0001")
    assert code == 2 and "--all runs every site; --only names some" in out


def test_all_chooses_every_site_and_says_so():
    from sampling_harness.commands.mutate import choose, command_line
    assert choose(37, 37, 5, []) == list(range(37))
    args = argparse.Namespace(family="sample", kernel="triton-exact", budget="quick",
                              device="cuda", seed=1, mutants=20, all=True, only=[],
                              mutant_seed=None)
    assert "--all" in command_line(args) and "--mutants" not in command_line(args)


# The CI case (issue: `mutate sample --kernel triton-exact --budget smoke` on a CPU with a
# small N): four mutants, one of each kind of row, picked by what they change (ids shift when
# the reachable source changes); about 110 s on the 2-core CI machine (docs/how-to/mutate.md):
# the original's run and the two survivors' each run every check (some 25 s each), the
# re-keying survivor its law test (smoke's 10 s), the killed one stops at its first call,
# the dead one is not run.
CI_CHECK = "test_batch_invariance"   # per-request seeds, unseeded batch-mates: the four reach it
CI_PICKS = {   # outcome -> (module, function, original, replacement, text of its line)
    "killed": ("triton_race", "float32_rows", "!=", "==", "probs.dtype != torch.float32"),
    "equivalent": ("request_seeds", "request_seeds", "31", "32", "seed >= 2**31"),
    "undecided": ("request_seeds", "fresh_for_unseeded", "1", "0", "2**31 - 1"),
    "dead": ("triton_race", "_launch_shape", "*", "/", "programs_per_sm * multiprocessors"),
}


def pick(found, module, unit, original, replacement, line) -> str:
    """The id of the first site of ``unit`` in ``module`` that makes this change on a line
    holding ``line``."""
    for index, site in enumerate(found.sites()):
        text = found.modules[site.module].text.splitlines()[site.line - 1]
        if site.module.endswith(module) and site.unit == unit and line in text and \
                (site.original, site.replacement) == (original, replacement):
            return f"m{index:04d}"
    raise AssertionError(f"no site {original} -> {replacement} in {module}.{unit} on a line "
                         f"with {line!r}: pick another for the CI case")


@pytest.mark.long(140)
def test_ci_case_triton_exact_at_smoke(tmp_path):
    fn = importlib.import_module("sampling_harness.kernels.sample.triton_race").race_exact
    found = reach(fn)
    wanted = {pick(found, *where): outcome for outcome, where in CI_PICKS.items()}
    only = [word for mutant in wanted for word in ("--only", mutant)]
    code, out, _ = cli("mutate", "sample", "--kernel", "triton-exact", "--budget", "smoke",
                       "--device", "cpu", "-k", CI_CHECK, *only, "--report-dir", str(tmp_path))
    assert code == 0, out[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    outcomes = {m["id"]: m["outcome"] for m in report["mutants"]}
    # the fresh-seed range shifted by one: other tokens from the same law. Its law test's
    # 1 x 2 call needs 1578 draws a kernel for smoke's 0.1; under the interpreter smoke's
    # 10 s make a few dozen: undecided, with the total variation it detects (a machine
    # five times faster makes them all: same-law). Never a gap.
    rekeyed = next(m for m, o in wanted.items() if o == "undecided")
    assert outcomes[rekeyed] in ("undecided", "same-law"), out[-3000:]
    assert outcomes == {**wanted, rekeyed: outcomes[rekeyed]}, out[-3000:]
    assert report["complete"] and report["score"]["killed"] == 1 and \
        report["score"]["gaps"] == 0
    survivor = next(m for m in report["mutants"] if m["id"] == rekeyed)
    assert survivor["check"] == survivor["gap"]["check"] and survivor["gap"]["differences"]
    assert survivor["gap"]["original_repeats"] and survivor["gap"]["inputs"]["seed"]
    tested = survivor["gap"]["law"]
    assert tested["budget"] == "smoke" and tested["target_tv"] == 0.1, tested
    if "p_value" not in tested:     # a loaded machine: MIN_DRAWS would not fit in smoke's 10 s
        assert outcomes[rekeyed] == "undecided", tested
        assert tested["reason"].startswith("too slow to test"), tested
        assert survivor["outcome_label"] == "undecided (no test)"
    else:
        assert tested["p_value"] >= tested["alpha"] == law.ALPHA
    if outcomes[rekeyed] == "undecided" and "p_value" in tested:
        assert tested["tv"] > 0.1 and tested["draws"] < tested["planned_draws"], tested
        assert survivor["outcome_label"] == f"undecided (power {tested['tv']:.3g})"
        assert "cut short by the time limit" in survivor["detail"]
    equivalent = next(m for m in report["mutants"] if m["outcome"] == "equivalent")
    assert equivalent["compared"] == report["original"]["calls"] > 20
    summary = (tmp_path / "summary.md").read_text()
    assert f"-k {CI_CHECK}" in summary          # the command that chooses the same mutants
    assert report["original"]["checks"] == 1         # the -k selection, nothing else
    counts = "| 1 | 0 |" if outcomes[rekeyed] == "undecided" else "| 0 | 1 |"
    assert f"| triton-exact | smoke | cpu | 4 | 1 | 0 {counts} 1 | 1 | 0 | 0 | 100.0 % (1/1;" \
        in summary
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "0", "3")
    page = (tmp_path / "report.html").read_text()
    assert all(f'class="l o-{o}"' in page for o in ("killed", outcomes[rekeyed], "equivalent",
                                                      "dead"))
    assert "score (killed / killed + gap)" in out


def test_compiled_lines_count_a_kernel_the_cache_compiled_from_another_copy(
        tmp_path, monkeypatch):
    """On a GPU, a kernel the Triton cache already held names, in its TTIR, the file it was
    first compiled from (the user's own), not this run's copy: its lines still count as run,
    matched on the file's folder and name (else all of them would be reported dead)."""
    import sys
    import types

    from sampling_harness.mutate import coverage

    copy = tmp_path / "run" / "kernels" / "race.py"
    copy.parent.mkdir(parents=True)
    copy.write_text("")
    ttir = ('loc("/home/user/project/kernels/race.py":12:4) '
            'loc("/home/user/project/other/helpers.py":3:1)')
    compiled = types.SimpleNamespace(asm={"ttir": ttir})
    kernel = types.SimpleNamespace(device_caches={0: ({"key": compiled},)})
    module = types.ModuleType("copied_race")
    module.__file__ = str(copy)
    module.kernel = kernel
    monkeypatch.setitem(sys.modules, "copied_race", module)
    monkeypatch.setattr(coverage, "_jit_functions",
                        lambda value: [value] if value is kernel else [])
    found = coverage.compiled_lines([str(copy)])
    assert found == {str(copy.resolve()): {12}}

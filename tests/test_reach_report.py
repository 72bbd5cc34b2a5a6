"""The reach report (harness/mutate/unreached.py): the lines of @triton.jit code no check ran."""

import importlib
import json

from sampling_harness.mutate import unreached
from sampling_harness.mutate.reach import reach


def exact():
    fn = importlib.import_module("sampling_harness.kernels.sample.triton_race").race_exact
    found = reach(fn)
    return found, found.sites()


def all_lines_run(found) -> dict:
    """A coverage record in which every line of every reachable file ran (interpreted)."""
    return {"interpreted": True, "compiled": {}, "probed": {
        m.path: list(range(1, len(m.text.splitlines()) + 1)) for m in found.modules.values()}}


def test_every_line_run_leaves_nothing_unreached():
    found, sites = exact()
    document = unreached.report(found, sites, all_lines_run(found), {
        "family": "sample", "kernel": "triton-exact", "budget": "smoke", "device": "cpu"})
    assert document["unreached"] == [] and document["unreached_host"] == []
    assert document["jit_lines"] > 20 and document["host_lines"] > 10
    assert "every line is reached" in unreached.headline(document)


def test_a_jit_line_that_never_ran_is_listed_with_its_text():
    found, sites = exact()
    site = next(s for s in sites if s.jit and s.anchor and s.anchor[0] == s.anchor[1])
    coverage = all_lines_run(found)
    coverage["probed"][site.path] = [n for n in coverage["probed"][site.path]
                                     if n != site.anchor[0]]
    document = unreached.report(found, sites, coverage, {
        "family": "sample", "kernel": "triton-exact", "budget": "smoke", "device": "cpu"})
    text = found.modules[site.module].text.splitlines()[site.line - 1].strip()
    assert [(u["line"], u["text"]) for u in document["unreached"]] == [(site.line, text)]
    assert document["unreached_host"] == []
    assert unreached.headline(document).startswith(
        f"reach (interpreted): 1 of {document['jit_lines']} lines")
    assert f"| {site.line} | `{text}` |" in unreached.to_markdown(document)
    assert json.loads(unreached.to_json(document))["unreached"][0]["line"] == site.line


def test_a_compiled_run_reads_the_kernels_line_table():
    found, sites = exact()
    jit_paths = {s.path for s in sites if s.jit}
    coverage = {"interpreted": False, "probed": all_lines_run(found)["probed"],
                "compiled": {path: [] for path in jit_paths}}
    lines = unreached.unreached_lines(found, sites, coverage)
    assert sum(map(len, lines.values())) == unreached.site_lines(sites)   # no instruction


def test_the_command_writes_the_report_and_exits_1_on_an_unreached_line(tmp_path, capsys):
    from types import SimpleNamespace

    from sampling_harness.commands.mutate import run_reach

    found, sites = exact()
    site = next(s for s in sites if s.jit and s.anchor)
    coverage = all_lines_run(found)
    coverage["probed"][site.path] = []
    run = SimpleNamespace(found=found, sites=sites, report_dir=tmp_path, meta={
        "family": "sample", "kernel": "triton-exact", "budget": "smoke", "device": "cpu"},
        record_original=lambda: {"coverage": coverage, "run": SimpleNamespace(seconds=1.0)})
    assert run_reach(run) == 1
    out = capsys.readouterr().out
    assert "unreached " in out and "never ran" in out and str(tmp_path / "reach.md") in out
    assert json.loads((tmp_path / "reach.json").read_text())["unreached"]
    run.record_original = lambda: {"coverage": all_lines_run(found),
                                   "run": SimpleNamespace(seconds=1.0)}
    assert run_reach(run) == 0

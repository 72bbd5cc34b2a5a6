"""What a real run writes, against what docs/reference/report-json.md documents (every field
of the run, of a check, of a skipped check), and a skipped check in every output; and the
terminal of a failing run: each failure once, pytest's own sections only when asked."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import cli

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reference" / "report-json.md"
FLOATS = '''
def floats(probs, seed):
    return probs.argmax(dim=-1).float()
'''
REASON = "dtype torch.float32"          # the floats kernel's failure, in its message


def documented(section: str) -> tuple[set[str], set[str]]:
    """(every field, the optional ones) of the table under ``## section`` in the doc."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    fields, optional = set(), set()
    for line in text[start:end if end > 0 else None].splitlines():
        row = re.match(r"\| `(\w+)` \| ([^|]*) \|", line)
        if row:
            fields.add(row.group(1))
            if "optional" in row.group(2):
                optional.add(row.group(1))
    assert fields, f"no table of fields under '## {section}' in {DOC}"
    return fields, optional


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One CPU run: torch-fp64 passes validity, floats fails it, and both skip the GPU-only
    fit_large_vocab."""
    tmp = tmp_path_factory.mktemp("fields")
    kernel = tmp / "user_kernels.py"
    kernel.write_text(FLOATS)
    code, output, report = cli("check", "sample", "--kernel", "torch-fp64", "--kernel",
                               f"{kernel}:floats", "--budget", "smoke", "--device", "cpu",
                               "-k", "test_validity or test_fit_large_vocab",
                               report_dir=tmp / "r")
    assert code == 1 and report is not None, output[-3000:]
    return output, report, tmp / "r"


def test_the_doc_lists_every_field_a_run_writes(run):
    _, report, _ = run
    for section, records in (("The run", [report]), ("A check", report["checks"]),
                             ("A skipped check", report["skipped"])):
        fields, optional = documented(section)
        assert records, section
        for record in records:
            assert set(record) - fields == set(), f"{section}: written, not documented"
            assert fields - optional - set(record) == set(), f"{section}: documented, not written"


def test_a_skipped_check_is_in_every_output_with_its_reason(run):
    output, report, directory = run
    assert [c["name"] for c in report["checks"]] == ["validity", "validity"]
    assert report["skipped"] == [
        {"name": "fit_large_vocab", "family": "sample", "kernel": kernel, "target": kernel,
         "role": "kernel", "check": "fit_large_vocab", "reason": "this check runs on a GPU only"}
        for kernel in (c["kernel"] for c in report["checks"])]
    assert (report["finished"], report["selected"]) == (4, 4)
    suite = ET.parse(directory / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("4", "2", "1")
    skips = [c for c in suite.iter("testcase") if c.find("skipped") is not None]
    assert [c.get("name") for c in skips] == ["fit_large_vocab"] * 2
    assert {c.find("skipped").get("message") for c in skips} == {"this check runs on a GPU only"}
    summary = (directory / "summary.md").read_text()
    assert "| torch-fp64 | fit_large_vocab | skipped | - | - | - | - | - | this check runs on a " \
           "GPU only |" in summary
    page = (directory / "report.html").read_text()
    assert page.count('<span class="badge skipped">skipped</span>') == 2
    assert "4 of 4 checks finished: 1 pass, 1 fail, 0 error, 2 skipped" in page
    assert "fit_large_vocab: skipped (GPU only)" in output
    assert "sample: 1 passed, 1 failed, 2 skipped" in output


def test_a_failure_is_said_once_on_the_terminal(run):
    """Its reason on its numbered line, its reproduce command in the harness's summary; no
    pytest FAILURES section, short test summary, [100%] or count line."""
    output, report, _ = run
    failed = next(c for c in report["checks"] if c["verdict"] == "fail")
    assert output.count(REASON) == 1, output
    line = next(x for x in output.splitlines() if REASON in x)
    assert re.match(r"\[\d/4\] sample / .*:floats / validity: fail in [\d.]+ s: kernel", line)
    assert output.count(failed["reproduce"]) == 1
    assert f"{line[:5]} sample / {failed['kernel']} / validity: fail\n    reproduce: " \
           f"{failed['reproduce']}\n" in output
    for pytest_own in ("FAILURES", "short test summary", "[100%]", "deselected", " failed in "):
        assert pytest_own not in output, output


def test_pytest_output_full_brings_back_pytest_sections(tmp_path):
    kernel = tmp_path / "user_kernels.py"
    kernel.write_text(FLOATS)
    code, output, report = cli("check", "sample", "--kernel", f"{kernel}:floats", "--budget",
                               "smoke", "--device", "cpu", "-k", "test_validity",
                               "--pytest-output", "full", report_dir=tmp_path / "r")
    assert code == 1 and report["verdict"] == "fail", output[-3000:]
    for pytest_own in ("FAILURES", "short test summary", "1 failed, "):
        assert pytest_own in output, output

"""The command line: exit codes, one-line errors, reports that survive interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.helpers import cli, ctrl_c_as_a_terminal_sends_it

BAD_KERNELS = '''
import os, signal, torch
NOT_CALLABLE = 3
def two_args_missing(probs):
    return probs.argmax(dim=-1)
def floats(probs, seed):
    return probs.argmax(dim=-1).float()
CALLS = {"n": 0}
def slow(probs, seed):
    import time
    time.sleep(0.3)
    g = torch.Generator().manual_seed(seed)
    return probs.div(torch.empty_like(probs).exponential_(generator=g)).argmax(dim=-1)
def killed_on_fifth_call(probs, seed):
    CALLS["n"] += 1
    if CALLS["n"] == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    g = torch.Generator().manual_seed(seed)
    return probs.div(torch.empty_like(probs).exponential_(generator=g)).argmax(dim=-1)
'''


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "user_kernels.py"
    path.write_text(BAD_KERNELS)
    return path


@pytest.mark.parametrize("args,reason", [
    (["check", "nope"], "unknown family 'nope'"),
    (["check", "sampel"], "unknown family 'sampel'; did you mean 'sample'? (known: sample, "),
    (["check", "sample", "--kernel", "no.such.module:fn"], "cannot import 'no.such.module'"),
    (["check", "sample", "--kernel", "sampling_harness.commands.cli"],
     "names no function: give sampling_harness.commands.cli:FUNCTION"),
    (["check", "sample", "--kernel", "sampling_harness.commands.cli:nothing"],
     "has no attribute 'nothing'"),
    (["check", "all", "--kernel", "torch-fp32"], "check all runs every registered"),
    (["check", "sample", "--kernel", "torch-fp32", "-k", "no_such_check"], "no checks selected"),
    (["check", "sample", "--kernel", "torch-fp32", "-k", "fit_curatd"],
     "no checks selected (-k 'fit_curatd'); did you mean 'fit_curated'"),
    (["check", "sample", "--kernel", "torch-fp32", "-k", "test_indepndence"],
     "no checks selected (-k 'test_indepndence'); did you mean 'test_independence'?"),
])
def test_harness_errors_exit_2_with_one_line(args, reason, tmp_path):
    code, output, _ = cli(*args, "--device", "cpu", report_dir=tmp_path)
    assert code == 2
    assert reason in output and "Traceback" not in output


def test_target_errors_in_user_files(kernel_file, tmp_path):
    for attr, reason in (("NOT_CALLABLE", "not callable"), ("two_args_missing", "signature")):
        code, output, _ = cli("check", "sample", "--kernel", f"{kernel_file}:{attr}",
                              "--device", "cpu", report_dir=tmp_path)
        assert code == 2 and reason in output and "Traceback" not in output


def test_contract_violation_fails_every_check_and_reports(kernel_file, tmp_path):
    code, output, report = cli("check", "sample", "--kernel", f"{kernel_file}:floats",
                               "--device", "cpu", report_dir=tmp_path)
    assert code == 1
    assert report["verdict"] == "fail" and report["complete"] is True
    assert all(c["verdict"] == "fail" and "dtype torch.float32" in c["message"]
               for c in report["checks"])
    fields = {"name", "family", "kernel", "verdict", "statistic", "p_value", "alpha", "samples",
              "min_detectable_effect", "seed", "duration", "device", "message", "reproduce"}
    assert fields <= set(report["checks"][0])
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert int(suite.get("failures")) == len(report["checks"])
    assert "FAIL" in (tmp_path / "summary.md").read_text()
    progress = [line for line in output.splitlines() if line.startswith("[")
                and " fail in " in line]                   # the reason, as it happens
    assert len(progress) == len(report["checks"])
    assert all("dtype torch.float32" in line for line in progress)
    assert output.count("dtype torch.float32") == len(report["checks"])   # there only
    end = output[output.index(f"sampling-harness: FAIL ({len(report['checks'])} checks"):]
    assert f"sample: 0 passed, {len(report['checks'])} failed, " in end
    assert end.count("    reproduce: sampling-harness check sample --kernel ") == len(
        report["checks"])
    assert output.count("reproduce: ") == len(report["checks"])   # in the summary only
    assert "slowest " in end and f"report: {tmp_path}/" in end
    assert "| kernel | check |" not in output
    for pytest_own in ("FAILURES", "short test summary", "[100%]", " failed in "):
        assert pytest_own not in output       # only with --pytest-output full (or -v)


def test_a_kernel_that_kills_its_process_fails_that_check_and_the_run_goes_on(kernel_file,
                                                                            tmp_path):
    """Independence makes 4 calls and passes; tail's first call (declared after it) kills
    the worker with SIGKILL: tail fails with that cause, in a fresh worker nothing is lost."""
    code, output, report = cli("check", "sample", "--kernel",
                               f"{kernel_file}:killed_on_fifth_call", "--device", "cpu",
                               "-k", "test_tail or test_independence", report_dir=tmp_path,
                               workers=True)
    assert code == 1 and "Traceback" not in output, output[-3000:]
    assert report["complete"] is True and report["verdict"] == "fail"
    verdicts = {c["name"]: c for c in report["checks"]}
    assert verdicts["independence"]["verdict"] == "pass"
    assert verdicts["tail"]["verdict"] == "fail"
    assert verdicts["tail"]["message"].startswith("kernel fault: the process was killed by "
                                                  "SIGKILL (Killed) in a kernel call (probs [")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_run_stopped_halfway_is_incomplete_in_all_five_outputs(kernel_file, tmp_path, stop):
    """Ctrl-C (SIGINT from outside; SIGTERM, as a CI time limit sends) once the first of two
    checks has finished: the terminal, summary.md, report.html, junit.xml and report.json say
    INCOMPLETE, 1 of 2; exit code 2."""
    command = [sys.executable, "-m", "sampling_harness", "check", "sample", "--kernel",
               f"{kernel_file}:slow", "--device", "cpu", "--budget", "smoke",
               "-k", "test_independence or test_validity", "--report-dir", str(tmp_path)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"},
                           preexec_fn=ctrl_c_as_a_terminal_sends_it)
    seen = []
    for line in run.stdout:
        seen.append(line)
        if line.startswith("[1/2] "):
            run.send_signal(stop)
            break
    rest, _ = run.communicate(timeout=300)
    output = "".join(seen) + rest
    assert run.returncode == 2 and "Traceback" not in output, output[-3000:]
    assert "[1/2] sample / " in output and "[2/2]" not in output
    assert "sampling-harness: INCOMPLETE: 1 of 2 checks finished" in output
    assert "the run is INCOMPLETE: 1 of 2 checks finished" in output
    assert "| kernel | check |" not in output          # the full table: summary.md only
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# sampling-harness: INCOMPLETE (1 of 2 checks finished)")
    page = (tmp_path / "report.html").read_text()
    assert '<span class="badge incomplete">INCOMPLETE</span>' in page
    assert "<title>sampling-harness: INCOMPLETE</title>" in page and "badge pass\">PASS" not in page
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["verdict"] == "incomplete" and properties["finished"] == "1"
    run_case = [c for c in suite.iter("testcase") if c.get("name") == "run"]
    assert run_case and "INCOMPLETE: 1 of 2" in run_case[0].find("error").get("message")
    assert int(suite.get("errors")) >= 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["verdict"], report["finished"], report["selected"]) == ("incomplete", 1, 2)
    assert report["complete"] is False and len(report["not_finished"]) == 1
    assert report["checks"][0]["duration"] > 0


def test_sigkill_leaves_the_report_of_finished_checks(kernel_file, tmp_path):
    """Reports are rewritten atomically after every check: a run killed once its first check
    has finished keeps them whole."""
    command = [sys.executable, "-m", "sampling_harness", "check", "sample", "--kernel",
               f"{kernel_file}:slow", "--device", "cpu", "--budget", "smoke",
               "--report-dir", str(tmp_path), "-k", "test_independence or test_validity"]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    for line in run.stdout:
        if line.startswith("[1/2] "):
            os.killpg(run.pid, signal.SIGKILL)       # the harness and its worker
            break
    run.communicate(timeout=300)
    assert run.returncode == -signal.SIGKILL
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["checks"]) == 1 and report["complete"] is False


def test_list_names_kernels_and_mutants():
    code, output, _ = cli("list")
    assert code == 0 and "triton-exact" in output and "fp32-noise-floor" in output


def test_the_readme_engine_adapter_passes(tmp_path):
    """docs/examples/engine_adapter.py, as the README shows it, meets the rejection contract."""
    code, output, report = cli("check", "rejection", "--kernel",
                               "docs/examples/engine_adapter.py:adapted", "--device", "cpu",
                               "-k", "test_validity or test_greedy", report_dir=tmp_path)
    assert code == 0, output[-2000:]
    assert {c["name"] for c in report["checks"]} == {"validity", "greedy"}


def test_bench_takes_any_kernel_beside_the_baselines(tmp_path):
    code, output, _ = cli("bench", "rejection", "--device", "cpu", "--shape", "3x2x33",
                          "--kernel", "docs/examples/engine_adapter.py:adapted",
                          report_dir=tmp_path)
    assert code == 0, output[-2000:]
    assert "| 3x2x33 | docs/examples/engine_adapter.py:adapted |" in output
    assert (tmp_path / "bench.md").exists()


def test_smoke_budget_prints_a_line_per_check_and_names_itself(tmp_path):
    code, output, report = cli("check", "sample", "--kernel", "torch-fp64", "--device", "cpu",
                               "--budget", "smoke", "-k", "test_tail or test_fit_large_vocab",
                               report_dir=tmp_path)
    assert code == 0, output
    assert "sampling-harness: 2 checks, budget smoke, device cpu" in output
    assert "/2] sample / torch-fp64 / fit_large_vocab: skipped (GPU only)" in output
    assert "/2] sample / torch-fp64 / tail: pass in " in output     # as they finish
    assert report["budget"] == "smoke"
    assert [(s["name"], s["reason"]) for s in report["skipped"]] == [
        ("fit_large_vocab", "this check runs on a GPU only")]
    tail = report["checks"][0]
    assert tail["min_detectable_effect"] > 0.6   # weaker than quick's 60 % shortfall, stated

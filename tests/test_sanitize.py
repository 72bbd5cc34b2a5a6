"""compute-sanitizer logs parsed and judged: the kernel's own errors fail a check, torch's own
kernels and host API errors are warnings; no GPU or no tool is one line and exit 2.
The logs below are compute-sanitizer's own output on an H100 (CUDA 13, 2026-11-23)."""

import pytest
import torch

from sampling_harness.run.sanitize import judge, parse_log, require_tool, total_errors
from tests.helpers import cli

MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 8 bytes
=========     at _shift_last_slot_kernel+0xb0 in memory_mutants.py:97
=========     by thread (0,0,0) in block (2,0,0)
=========     Access to 0x7f98de803e18 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f98de803e00 of size 24 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" \
on CUDA API call to cudaDeviceSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========
========= Target application returned an error
========= ERROR SUMMARY: 2 errors
"""

TORCH_ONLY = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(T3)+0x1c0
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f3890800808
=========     Saved host backtrace up to driver entry point at kernel launch time
=========
========= ERROR SUMMARY: 1 error
"""

CHILD_PASS = {"verdict": "pass", "checks": [{"verdict": "pass", "message": "ok",
                                              "details": {"kernel_calls": 12}}]}


def test_a_memcheck_log_splits_into_the_kernel_error_and_a_host_error():
    errors = parse_log(MEMCHECK)
    assert [(e.what[:30], e.kernel, e.source) for e in errors] == [
        ("Invalid __global__ write of si", "_shift_last_slot_kernel", "memory_mutants.py:97"),
        ("Program hit cudaErrorLaunchFai", "", "")]
    assert errors[0].line() == (
        "Invalid __global__ write of size 8 bytes in _shift_last_slot_kernel "
        "(memory_mutants.py:97), by thread (0,0,0) in block (2,0,0): Access to "
        "0x7f98de803e18 is out of bounds and is 1 bytes after the nearest allocation at "
        "0x7f98de803e00 of size 24 bytes")
    assert not errors[0].torch_own and total_errors(MEMCHECK, 2) == 2


def test_the_kernels_error_fails_the_check_with_the_first_error(tmp_path):
    outcome = judge(parse_log(MEMCHECK), "memcheck", tmp_path / "m.log", CHILD_PASS, "ok", 2)
    assert not outcome.passed
    assert outcome.message.startswith("memcheck: 1 errors in the kernel's launches, the "
                                      "first: Invalid __global__ write of size 8 bytes in "
                                      "_shift_last_slot_kernel")
    assert "1 errors in torch's own kernels or host calls, listed as warnings" in outcome.message


def test_errors_in_torchs_own_kernels_are_warnings(tmp_path):
    errors = parse_log(TORCH_ONLY)
    assert errors[0].torch_own and errors[0].kernel.startswith("void at::native::reduce_kernel")
    outcome = judge(errors, "initcheck", tmp_path / "i.log", CHILD_PASS, "ok", 1)
    assert outcome.passed and "1 errors in torch's own kernels" in outcome.message
    assert outcome.details["warnings"] and not outcome.details["kernel_errors"]


def test_a_clean_log_passes_and_a_failed_child_check_fails(tmp_path):
    clean = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
    assert parse_log(clean) == []
    clean = judge([], "racecheck", tmp_path / "r.log", CHILD_PASS, "ok")
    assert clean.passed and clean.samples == 12 and clean.min_detectable_effect == 1.0
    failed = {"verdict": "fail", "checks": [{"verdict": "fail", "message": "slot unwritten"}]}
    outcome = judge([], "racecheck", tmp_path / "r.log", failed, "the check failed: slot")
    assert not outcome.passed and "the check failed: slot" in outcome.message
    assert not judge([], "memcheck", tmp_path / "m.log", None, "no report").passed


def test_the_error_count_comes_from_the_summary_past_the_print_limit():
    assert total_errors("========= ERROR SUMMARY: 1234 errors\n", 100) == 1234


@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-GPU path")
def test_sanitize_without_a_gpu_is_one_line_and_exit_2(tmp_path):
    from sampling_harness.errors import HarnessError
    with pytest.raises(HarnessError, match="needs a CUDA GPU"):
        require_tool("memcheck", torch.device("cpu"))
    code, output, report = cli("check", "sample", "--sanitize", "memcheck", report_dir=tmp_path)
    assert code == 2 and report is None
    assert output.strip() == ("sampling-harness: error: --sanitize memcheck needs a CUDA GPU, "
                              "and this run has none")

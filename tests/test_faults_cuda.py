"""On a GPU: a kernel that asserts, writes out of bounds or never ends fails its check with
the CUDA error or the timeout, a fresh worker runs the rest, and a correct kernel beside it
keeps its verdicts (skipped without a GPU; the CPU's faults: tests/test_faults.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.helpers import cli

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")

KERNELS = Path(__file__).with_name("faulty_kernels_cuda.py")
ARGS = ("-k", "test_fit_curated or test_batch_invariance or test_tail",
        "--statistical-checks", "4", "--device", "cuda", "--budget", "smoke",
        "--call-timeout", "20")
FAULTS = {
    "asserts": "device-side assert triggered",
    "stores_out_of_bounds": "an illegal memory access was encountered",
    "never_ends": "did not return within 20 s",
}


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    code, output, report = cli("check", "sample", *ARGS, "--kernel",
                               "tests/faulty_kernels.py:race",
                               report_dir=tmp_path_factory.mktemp("alone"), workers=True)
    assert code == 0, output[-3000:]
    return sorted((c["name"], c["verdict"], c["p_value"]) for c in report["checks"])


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_gpu_fault_fails_its_check_and_the_run_goes_on(fault, alone, tmp_path):
    code, output, report = cli("check", "sample", *ARGS, "--kernel", f"{KERNELS}:{fault}",
                               "--kernel", "tests/faulty_kernels.py:race", report_dir=tmp_path,
                               workers=True)
    print(output[-4000:])
    assert code == 1, output[-3000:]
    assert report["complete"] is True and report["verdict"] == "fail"
    faulty = {c["name"]: c for c in report["checks"] if c["kernel"].endswith(f":{fault}")}
    message = faulty["fit_curated"]["message"]
    assert faulty["fit_curated"]["verdict"] == "fail" and message.startswith("kernel fault: ")
    assert FAULTS[fault] in message and "probs [" in message, message
    if fault != "never_ends":
        assert "--sanitize memcheck" in message
    assert faulty["batch_invariance"]["verdict"] == "pass"
    assert faulty["tail"]["verdict"] == "pass"
    correct = sorted((c["name"], c["verdict"], c["p_value"]) for c in report["checks"]
                     if c["kernel"].endswith(":race"))
    assert correct == alone

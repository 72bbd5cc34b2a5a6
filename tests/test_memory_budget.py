"""Memory admission on a CPU: a check sizes its calls to the memory it is granted
(``--memory-budget``, harness/scale/memory.py), runs to the same verdict with smaller calls,
and a call that cannot fit its budget fails with its bytes, never as a harness error."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest
import torch

from sampling_harness.options import reproduce_command
from sampling_harness.scale import memory
from tests.helpers import cli


def test_bytes_parse_and_print_back():
    assert memory.parse_bytes("512MiB") == 512 * 2**20
    assert memory.parse_bytes("2GB") == 2 * 10**9
    assert memory.parse_bytes("1e6") == 10**6
    assert memory.parse_bytes("4096") == 4096
    for text in ("lots", "0", "-1GiB", "3 parsecs"):
        with pytest.raises(argparse.ArgumentTypeError):
            memory.parse_bytes(text)
    for count in (2**32, 3 * 2**20, 1536, 7):
        assert memory.parse_bytes(memory.format_bytes(count)) == count


def test_call_sizes_are_powers_of_two_within_the_budget():
    assert memory.call_elements(memory.CPU_BUDGET) == 2**22
    assert memory.call_elements(10**9) == 2**23        # 15.6M elements -> 2^23
    assert memory.call_elements(1) == 1
    assert memory.call_elements(2**50) == memory.MAX_CALL_ELEMENTS
    for budget in (10**5, 10**7, 10**9):
        assert memory.call_elements(budget) * memory.BYTES_PER_CALL_ELEMENT <= budget


def test_a_gpu_budget_is_its_free_memory_split_among_the_checks_sharing_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (40 * 2**30, 80 * 2**30))
    gpu = SimpleNamespace(type="cuda")
    alone, shared = memory.default_budget(gpu, 1), memory.default_budget(gpu, 8)
    assert alone == 2**28 * memory.BYTES_PER_CALL_ELEMENT     # 32 GiB free share: the cap
    assert shared == 2**26 * memory.BYTES_PER_CALL_ELEMENT    # 4 GiB share
    assert memory.default_budget(torch.device("cpu"), 8) == memory.CPU_BUDGET


def test_reproduce_commands_carry_a_budget_other_than_the_cpus():
    base = {"family": "sample", "target": "t", "device": "cuda", "budget": "quick",
            "seed": 1, "check": "tail"}
    assert "--memory-budget" not in reproduce_command(**base, memory_budget=memory.CPU_BUDGET)
    assert reproduce_command(**base, memory_budget=2**32).endswith("--memory-budget 4GiB")
    assert reproduce_command(**base, memory_budget=10**9).endswith("--memory-budget 1000000000")


def _checks(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_a_small_budget_runs_to_a_pass_with_smaller_calls(tmp_path):
    select = ["check", "sample", "--kernel", "torch-fp64", "--budget", "smoke",
              "-k", "test_tail or test_fit_curated"]
    code, out, default = cli(*select, report_dir=tmp_path / "default")
    assert code == 0, out
    code, out, small = cli(*select, "--memory-budget", "64KiB", report_dir=tmp_path / "small")
    assert code == 0, out
    assert small["memory_budget"] == 2**16
    for name, check in _checks(small).items():
        before = _checks(default)[name]["details"]
        after = check["details"]
        assert check["verdict"] == "pass"
        assert after["max_call_elements"] == 2**10 < before["max_call_elements"]
        assert after["kernel_calls"] > before["kernel_calls"]       # smaller calls, more
        assert after["kernel_draws"] == before["kernel_draws"]      # the same evidence
        assert check["reproduce"].endswith("--memory-budget 64KiB")


def test_a_call_that_cannot_fit_fails_with_its_bytes(tmp_path):
    """Fails only beyond what the whole run was granted: a check whose fixed batch exceeds
    its own share borrows (on a GPU, admission runs it alone if memory runs out)."""
    code, out, report = cli("check", "sample", "--kernel", "torch-fp64", "--budget", "smoke",
                            "-k", "test_independence", "--memory-budget", "64KiB",
                            report_dir=tmp_path)
    assert code == 1, out
    check = _checks(report)["independence"]
    assert check["verdict"] == "fail"
    assert "call does not fit" in check["message"]
    assert "more than the 64KiB of memory the run was granted" in check["message"]
    assert "harness error" not in out


def test_a_budget_that_is_not_bytes_is_a_one_line_error():
    code, out, _ = cli("check", "sample", "--memory-budget", "lots")
    assert code == 2
    assert out.strip().splitlines()[-1].endswith("must be bytes such as 512MiB, 4GiB or 2GB, "
                                                 "got lots")
    assert len(out.strip().splitlines()) == 1

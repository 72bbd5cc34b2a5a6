"""No check raises on contract-valid output, and every statistical check fails random output
(a kernel's output never makes a check raise).

For each family, the kernel of tests/random_outputs.py returns random outputs that pass the
exact validation; a run of the whole family at ``smoke`` on the CPU must exit 1 (the kernel
failed) with no check in error (a harness error, exit 2, where the kernel is wrong), and
every statistical check the family declares, of those that run on a CPU, must fail.

``fit_generated`` of ``sample-logits`` runs one Hypothesis batch at ``smoke``, and
Hypothesis draws its simplest example first, whatever the seed: the strategies put sampled
rows first (harness/strategies/logits.py ``temperatures``), so that batch can fail a kernel
(once it was three greedy rows, which the exact validation alone pins).

The runs keep the checks in the CLI's own process (``--isolation none``): these kernels
never fault, and a worker process per run would double each run's start-up (torch and
Triton imported twice) for nothing.
"""

from __future__ import annotations

import pytest

from sampling_harness.families import FAMILIES
from tests.helpers import cli

KERNELS = "tests/random_outputs.py"

FAMILY_KERNELS = {
    "sample": "random_sample",
    "sample-logits": "random_sample_logits",
    "rejection": "random_rejection",
    "logprobs": "random_logprobs",
    "draft-probs": "random_draft_probs",
    "spec-decode": "random_spec_decode",
    "logits-processors": "random_logits_processors",
    "tree-rejection": "random_tree_rejection",
}

def statistical_on_cpu(family: str) -> set[str]:
    """The checks the family declares statistical, less those that run on a GPU only."""
    return {c.name for c in FAMILIES[family].checks if c.statistical and not c.gpu}


def test_every_family_has_a_random_kernel():
    assert set(FAMILY_KERNELS) == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(FAMILY_KERNELS))
def test_random_valid_output_fails_every_statistical_check_and_errs_none(family, tmp_path):
    code, output, report = cli("check", family, "--kernel",
                               f"{KERNELS}:{FAMILY_KERNELS[family]}", "--device", "cpu",
                               "--budget", "smoke", "--isolation", "none",
                               report_dir=tmp_path)
    assert report is not None, output
    verdicts = {c["name"]: (c["verdict"], c["message"]) for c in report["checks"]}
    erred = {name: message for name, (verdict, message) in verdicts.items()
             if verdict == "error"}
    assert not erred, f"checks raised on valid output: {erred}"
    assert code == 1, output
    for name in sorted(statistical_on_cpu(family)):
        verdict, message = verdicts[name]
        assert verdict == "fail", f"{family} / {name}: {verdict}: {message}"

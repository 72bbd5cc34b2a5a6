"""The project's own kernels under test, and deliberately wrong ones (mutants).

A kernel is just a function behind its family's contract; this package imports neither the
harness nor the suites. The registries below map a name to a ``package.module:attr`` target.
"""

from __future__ import annotations

from dataclasses import dataclass

CLEAN: dict[str, dict[str, str]] = {
    "sample": {
        "torch-fp32": "kernels.sample.torch_race:race_fp32",
        "torch-fp64": "kernels.sample.torch_race:race_fp64",
        "triton-exact": "kernels.sample.triton_race:race_exact",
    },
    "rejection": {
        "torch-rejection": "kernels.rejection.torch_rejection:rejection_torch",
        "triton-rejection": "kernels.rejection.triton_rejection:rejection_exact",
    },
    "logprobs": {
        "torch-logprobs": "kernels.logprobs.torch_logprobs:logprobs_torch",
        "torch-logprobs-gather": "kernels.logprobs.torch_logprobs:logprobs_gather",
        "triton-logprobs": "kernels.logprobs.triton_logprobs:logprobs_triton",
    },
    "draft-probs": {
        "torch-draft-probs": "kernels.draft_probs.torch_draft_probs:draft_probs_torch",
    },
    "spec-decode": {
        "torch-proposer": "kernels.spec_decode.torch_proposer:propose",
    },
    "sample-logits": {
        "torch-sample-logits": "kernels.sample_logits.torch_sample_logits:sample_logits_torch",
        "triton-sample-logits":
            "kernels.sample_logits.triton_filtered_race:sample_logits_triton",
    },
}


@dataclass(frozen=True)
class Mutant:
    target: str
    caught_by: tuple[str, ...]  # the checks that must fail on it
    budget: str         # the smallest budget at which that check catches it
    bug: str            # the field bug it re-creates
    tool: str = ""      # compute-sanitizer tool that must catch it (--sanitize; GPU only)


from kernels.mutants import MUTANTS  # noqa: E402  (the registry needs Mutant defined first)

__all__ = ["CLEAN", "MUTANTS", "Mutant"]

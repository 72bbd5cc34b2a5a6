"""What a registered kernel says about itself, kept beside its code.

A kernel is registered by an entry point (``sampling_harness.kernels.<family>``, see
pyproject.toml); the harness reads the ``sampling_harness`` attribute of the callable to
learn its role. A callable without one is a kernel under test that must pass every check.
The attribute is a plain dict, so a kernel package needs neither this module nor the
harness to declare it:

* ``{"role": "mutant", "caught_by": [...], "budget": "quick", "bug": "...", "tool": "",
  "devices": ["cpu", "cuda"], "call_timeout": None}``: a deliberately wrong kernel; the
  checks named (checks its family declares, ``sampling_harness.families.Check``) must fail on it at
  that budget (and above) on the devices named (default: all); ``tool`` names the
  compute-sanitizer tool that must catch it instead, if any. A bug that lives in one
  device's random numbers (CUDA's float32 exponential floor) names that device alone.
  ``call_timeout``: the seconds a call may take in the self-test (a mutant that hangs:
  a short one, so that its run ends soon), None for the default.
* ``{"role": "baseline", "shipped_by": "...", "must_fail": {device: {budget: [checks]}},
  "may_fail": {device: [checks]}}``: an engine's shipped behaviour, known to be wrong
  somewhere. On ``device`` at ``budget`` and above, the checks in ``must_fail`` must fail
  (their power there is near 1); those in ``may_fail`` may fail or pass; all others must
  pass. On a device it does not name, a baseline must pass everything.
"""

from __future__ import annotations


def baseline(shipped_by: str, must_fail: dict | None = None, may_fail: dict | None = None):
    """Mark a function as a baseline: what ``shipped_by`` ships, with its stated expectation."""
    def mark(fn):
        fn.sampling_harness = {
            "role": "baseline", "shipped_by": shipped_by,
            "must_fail": {device: {budget: list(checks) for budget, checks in by.items()}
                          for device, by in (must_fail or {}).items()},
            "may_fail": {device: list(checks) for device, checks in (may_fail or {}).items()}}
        return fn
    return mark


def per_request_seeds(fn):
    """Mark a function (of any role; put it above ``baseline``) as taking
    per-request seeds: an int64 [B] ``seed`` tensor as well as an int."""
    fn.sampling_harness = {**getattr(fn, "sampling_harness", {"role": "kernel"}),
                           "seeds": "per-request"}
    return fn

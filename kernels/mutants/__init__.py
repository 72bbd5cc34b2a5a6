"""Deliberately wrong kernels, each re-creating a bug seen in the field. Each is registered
in pyproject.toml and marked with ``sampling_harness.kernels.meta.mutant``: the checks that must
catch it, the
budget at which they do, the field bug. The self-test (tests/test_selftest.py) runs them."""

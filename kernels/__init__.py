"""The project's own kernels under test, baselines and deliberately wrong kernels (mutants).

A kernel is just a function behind its family's contract; this package imports neither the
harness nor the suites. Every kernel is registered by an entry point in pyproject.toml
(group ``sampling_harness.kernels.<family>``); baselines and mutants carry their metadata
beside their code (``kernels/meta.py``).
"""

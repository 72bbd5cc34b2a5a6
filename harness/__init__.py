"""sampling_harness: the verification harness for LLM sampling kernels, under one import name.

This folder is the package itself (run, report, scale, bench, commands, stats, strategies,
families, and engine: a small speculative-decoding inference engine); the project's kernels,
references and family suites install under it as ``sampling_harness.kernels``,
``sampling_harness.reference`` and ``sampling_harness.suites`` (pyproject's package-dir).
"""

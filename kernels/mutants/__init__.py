"""Deliberately wrong kernels, each re-creating a bug seen in the field. Each is declared by
its family (a ``Mutant`` of its ``FAMILY``, suites/<family>/__init__.py): the checks that must
catch it, the budget at which they do, the field bug. The self-test (tests/test_selftest.py)
runs them."""

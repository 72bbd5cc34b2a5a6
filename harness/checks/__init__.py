"""Check code that two or more families share: one home, so that no suite imports another.

Each suite (suites/<family>/) holds its family's own checks and imports only itself and
the harness; what a second family needs moves here. The modules:

* ``fits``: the verdict of a set of goodness-of-fit tests (``fit_verdict``; per-row fits with
  a coarse test, ``coarse_fit_verdict``), and the law test of one table of counts against
  its exact law (``law_test``, ``laws_outcome``);
* ``independence``: the pairings of two calls' draws under seeds s and s + 1 and their
  verdict;
* ``greedy``: greedy rows compared exactly with the reference's;
* ``rare_wins``: the group-sequential binomial test of rare events, its scale sweep and the
  tail row it draws from;
* ``batch_invariance``: exact batch invariance under named batch edits;
* ``position_laws``: (target, draft) pairs of one draft position, by name;
* ``calls``: the rows one call may take, and the token ids it must return.

Hypothesis strategies shared by several families, and the seeded runner of a check's
Hypothesis examples, are in ``sampling_harness.strategies``.
"""

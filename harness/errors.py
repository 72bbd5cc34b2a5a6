"""The two ways a run goes wrong, kept apart because they mean different exit codes.

``HarnessError``: the harness could not run at all (unknown family, a target that cannot be
imported, is not callable or has the wrong signature). Exit code 2, one line, no traceback.

``KernelFailure``: the kernel under test misbehaved (raised, hung past the per-call timeout,
returned the wrong shape, dtype or device, or an impossible token). The check fails (exit
code 1) and the run goes on.
"""


class HarnessError(Exception):
    """The harness cannot run; the message is one line for the user."""


class KernelFailure(Exception):
    """The kernel broke its contract during a call; the check that made the call fails."""

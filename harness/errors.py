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


class KernelFault(KernelFailure):
    """The kernel faulted: a sticky CUDA error (its process's CUDA context is lost) or a call
    that never returned. Its check fails with "kernel fault: ..." and, in an isolated run,
    the worker that ran it is replaced (``sampling_harness.run.faults``). ``memcheck``: a bad
    memory access, which compute-sanitizer's memcheck locates."""

    def __init__(self, message: str, memcheck: bool = False):
        super().__init__(message)
        self.memcheck = memcheck

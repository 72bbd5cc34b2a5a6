"""nox sessions: tests (CPU), lint, check, gpu and bench.

The gpu and bench sessions run offline on a GPU machine where torch and triton are already
installed: they reuse that interpreter's packages and install nothing from the network.
"""

import nox

nox.options.sessions = ["lint", "tests"]
TORCH_CPU = "torch==2.13.0"


def _install(session, offline: bool = False) -> None:
    if offline:
        session.install("--no-index", "--no-deps", "--no-build-isolation", "-e", ".")
    else:
        session.install(TORCH_CPU)
        session.install("-e", ".[dev]")


@nox.session
def tests(session):
    """The unit tests and the self-test, on CPU (Triton through its interpreter)."""
    _install(session)
    session.run("pytest", "tests", "-q", "-n", "2", "--dist", "worksteal",
                env={"TRITON_INTERPRET": "1"})


@nox.session
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "harness", "reference", "kernels", "suites", "tests",
                "benchmarks", "scripts", "docs", "noxfile.py")


@nox.session
def check(session):
    """The main job: every registered clean kernel, default device, smoke budget (posargs
    such as ``--budget quick`` override it)."""
    _install(session)
    session.run("sampling-harness", "check", "all", "--budget", "smoke", *session.posargs)


@nox.session(venv_backend="none")
def gpu(session):
    """On a GPU machine: unit tests on CUDA, then the self-test (every clean kernel must
    pass, every mutant fail the checks that catch it; posargs such as ``--budget standard``
    are passed on)."""
    _install(session, offline=True)
    session.run("python3", "-m", "pytest", "tests", "-q")
    session.run("python3", "-m", "sampling_harness", "selftest", "all", "--device", "cuda",
                *session.posargs)


@nox.session(venv_backend="none")
def bench(session):
    """``nox -s bench -- FAMILY [bench options]`` on a GPU machine."""
    _install(session, offline=True)
    family = session.posargs[0] if session.posargs else "sample"
    session.run("python3", "-m", "sampling_harness", "bench", family, "--device", "cuda",
                *session.posargs[1:])

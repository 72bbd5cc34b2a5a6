"""Independent checks spread over GPUs with pytest-xdist: one worker per GPU, one merged report.

``--gpus N`` (the CLI's option; the plugin's ``--harness-gpus N``; N > 1) starts N xdist
workers, worker i with ``CUDA_VISIBLE_DEVICES`` set to the i-th visible GPU before its
interpreter imports torch (an execnet ``popen//env:`` spec), so each worker sees one device as
``cuda``; on a CPU run the same N workers share the CPU (each with ``OMP_NUM_THREADS`` =
cores / N unless set). Checks go to whichever worker is free (``--dist load``; not
``loadgroup`` or ``loadscope``, which re-run the check a worker died in on its replacement).

The family-wise alpha is the same as a one-GPU run's: every worker collects the whole
selection and counts its statistical checks before any split (``pytest_collection_
modifyitems`` in sampling_harness.run.plugin), and a check's seeds derive from the harness seed and
its
name only, so each check draws the same bits on any worker: a spread run's statistics equal
a one-process run's, bit for bit on the same kind of device.

Verdicts travel from the worker to the controller in the test report's ``user_properties``
(as JSON); the controller alone writes report.json, junit.xml, summary.md and report.html,
after every check, through the same writers as a one-process run. A worker that dies
mid-check loses that check only: xdist replaces the worker, the report lists the check under
``not_finished`` and says ``complete: false``. (xdist's own ``-n N`` merges verdicts the same
way, but pins no GPU and knows no total for the numbered lines.)
"""

from __future__ import annotations

import json
import os

import pytest

from sampling_harness.errors import HarnessError
from sampling_harness.verdict import Verdict

VERDICT = "sampling_harness_verdict"     # user property: a verdict (and the run's alpha split)
LINE = "sampling_harness_line"           # user property: a progress line (a check skipped)
DIST = "worksteal"    # split the checks between workers, then idle workers take from busy ones


DEFAULT_WORKERS_PER_GPU = 8     # check all on a GPU: at most this many workers share it
# the workers of a GPU run compile each Triton variant once between them
# (sampling_harness.scale.compile_lock)
COMPILE_LOCK = ("TRITON_CACHE_MANAGER", "sampling_harness.scale.compile_lock:LockingCacheManager")


def default_workers(cuda: bool) -> int | None:
    """Workers for ``check all`` when none is asked for. On a GPU, per GPU: half the CPU
    cores (each worker compiles Triton kernels and builds batches on the host), at most
    DEFAULT_WORKERS_PER_GPU, and 1 where that leaves fewer than 2. On a CPU: one a core, at
    most DEFAULT_WORKERS_PER_GPU (Triton's interpreter runs a kernel on one core; each
    worker's torch then takes one thread), None (one process) on a single core."""
    cores = os.cpu_count() or 1
    if cuda:
        return max(1, min(DEFAULT_WORKERS_PER_GPU, cores // 2))
    return min(DEFAULT_WORKERS_PER_GPU, cores) if cores > 1 else None


def installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


def visible_gpus(device_type: str, count: int | None = None) -> list[str]:
    """The names of the GPUs a worker may be given: the entries of CUDA_VISIBLE_DEVICES
    that torch sees (indices 0..count-1 without it); none on a CPU run."""
    if device_type != "cuda":
        return []
    if count is None:
        import torch

        count = torch.cuda.device_count()
    listed = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
              if d.strip()]
    return listed[:count] if listed else [str(i) for i in range(count)]


def workers(options) -> int:
    """How many xdist workers ``--harness-gpus`` and ``--harness-workers-per-gpu`` ask for
    (``options``: the run's ``sampling_harness.options.RunOptions``, as in the functions
    below)."""
    return (options.gpus or 1) * (options.workers_per_gpu or 1)


def worker_specs(gpus: int, device_type: str, count: int | None = None,
                 per_gpu: int = 1) -> list[str]:
    """One execnet spec per worker: ``per_gpu`` workers pinned to each of the first N GPUs
    (worker i to GPU i // per_gpu); ``HarnessError`` (one line) when N or per_gpu < 1, N
    exceeds the GPUs torch sees on a CUDA run, or xdist is missing. On a CPU run, N * per_gpu
    workers share the CPU."""
    if gpus < 1 or per_gpu < 1:
        raise HarnessError(f"--gpus and --workers-per-gpu must be >= 1, got {gpus} and "
                           f"{per_gpu}")
    if not installed():
        raise HarnessError("--gpus needs pytest-xdist (pip install pytest-xdist)")
    total = gpus * per_gpu
    env = {}
    if "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // total))
    if device_type != "cuda":
        return ["popen" + "".join(f"//env:{k}={v}" for k, v in env.items())] * total
    if COMPILE_LOCK[0] not in os.environ:        # a user's own cache manager is kept
        env[COMPILE_LOCK[0]] = COMPILE_LOCK[1]
    devices = visible_gpus(device_type, count)
    if gpus > len(devices):
        raise HarnessError(f"--gpus {gpus} asked for, but torch sees {len(devices)} CUDA "
                           f"device{'s' * (len(devices) != 1)}")
    return ["popen" + "".join(f"//env:{k}={v}" for k, v in
                              {**env, "CUDA_VISIBLE_DEVICES": devices[i // per_gpu]}.items())
            for i in range(total)]


def configure(config: pytest.Config, options, device_type: str) -> None:
    """(Controller, from ``pytest_cmdline_main``, before xdist reads its options.) Turn
    ``--harness-gpus N`` and ``--harness-workers-per-gpu W`` into N * W pinned xdist
    workers."""
    gpus, per_gpu = options.gpus, options.workers_per_gpu
    isolated = isolating(config, options)
    if (gpus is None and per_gpu is None and not isolated) or is_worker(config):
        return
    if config.getoption("numprocesses", None) or config.getoption("tx", None):
        if gpus is None and per_gpu is None:
            return               # the user's own xdist workers isolate the checks already
        raise pytest.UsageError("give --harness-gpus N / --harness-workers-per-gpu W or "
                                "xdist's -n/--tx, not both")
    if workers(options) == 1 and not isolated:   # one process on the default device
        return
    try:
        config.option.tx = worker_specs(gpus or 1, device_type, per_gpu=per_gpu or 1)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.option.dist == "no":
        config.option.dist = DIST


class SharedGpu:
    """(A worker sharing its GPU.) After each check its cached blocks go back to the device:
    torch's caching allocator keeps what a check freed, and another worker's next check then
    runs out (measured: standard with 8 workers on an 80 GB H100). A hard cap of 1/W of the
    memory per worker was tried instead and failed the checks whose one call needs more
    (torch-sample-logits' 6 GB sort at standard with 4 workers, 22 GB still free)."""

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item):
        import torch

        torch.cuda.empty_cache()


def share_gpu_memory(config: pytest.Config, options, device) -> None:
    """(A worker.) Release cached memory after each check when W > 1 workers share a GPU."""
    per_gpu = options.workers_per_gpu or 1
    if per_gpu > 1 and device is not None and device.type == "cuda":
        config.pluginmanager.register(SharedGpu(), "sampling-harness-shared-gpu")


def isolating(config: pytest.Config, options) -> bool:
    """The checks run in worker processes (``--isolation worker``, the default, where xdist
    is installed; not under torchrun, whose ranks run a sharded check's collectives together,
    nor a --collect-only run)."""
    from sampling_harness.scale.distributed import launch_env

    try:
        launched = launch_env() is not None
    except HarnessError:       # said as a usage error when the session starts
        launched = True
    return options.isolation == "worker" and installed() \
        and not launched and not config.option.collectonly


def is_worker(config: pytest.Config) -> bool:
    return getattr(config, "workerinput", None) is not None


def distributing(config: pytest.Config) -> bool:
    """This process is an xdist controller: it runs no check, it gathers their verdicts."""
    return not is_worker(config) and config.getoption("dist", "no") != "no" and bool(
        config.getoption("tx", None))


def pack(verdict: Verdict, statistical_checks: int, worker: bool):
    """The user property that carries a verdict to whoever writes the reports: the object
    itself in one process, JSON (NaN kept) across xdist's wire."""
    if not worker:
        return (VERDICT, (verdict, statistical_checks))
    return (VERDICT, json.dumps({"verdict": verdict.to_dict(),
                                 "statistical_checks": statistical_checks}))


def unpack(report) -> tuple[Verdict, int] | None:
    """The verdict a report carries (and its run's statistical-check count), or None."""
    for name, value in getattr(report, "user_properties", ()) or ():
        if name != VERDICT:
            continue
        if isinstance(value, str):
            body = json.loads(value)
            return Verdict(**body["verdict"]), int(body["statistical_checks"])
        return value
    return None


def line(report) -> str | None:
    return next((value for name, value in getattr(report, "user_properties", ()) or ()
                 if name == LINE), None)


class Controller:
    """The controller's xdist hooks (registered only where xdist runs): the selection each
    worker collected (the numbered lines' total and the report's order)."""

    def __init__(self, state):
        self.state = state

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.state.checks:
            self.state.collected(list(ids))

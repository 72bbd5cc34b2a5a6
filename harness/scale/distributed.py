"""One big check sharded over ranks with torch.distributed: split draws, merged counts, one test.

Launched by torchrun (``torchrun --nproc-per-node N -m sampling_harness check ...``, or
``torchrun ... -m pytest --pyargs sampling_harness.suites.sample ...``): every rank runs the same
selection
with the same harness seed. A *sharded* check (the ``sample`` family's tail and fit checks)
splits its n draws over the W ranks, rank r making

    n_r = floor(n / W) + [r < n mod W],      sum over r of n_r = n exactly,

with kernel seeds from the rank's own stream (``Shard.seed``: ``derive_seed(check seed,
"rank", r, W)``, so the ranks' Philox streams are as independent as the calls of one process
are; a world of one keeps the check seed itself, so a one-process run is unchanged). Each
rank keeps a count histogram of its draws on its device; ``merged`` sums the histograms
over the ranks (an all-reduce on the GPUs with NCCL; gloo on CPUs) and hands the sum to
every rank, which then computes the same statistic on it: one test, on one sample of exactly
n draws, at the check's unchanged alpha. The same harness seed and world size reproduce the
merged counts bit for bit (a different W is a different, equally valid sample). Nothing
depends on the node a rank runs on: the same code runs multi-node under torchrun.

A check that is not sharded runs whole on every rank with the same seeds (no speed-up); rank
0's verdict is every rank's (``agree``), and only rank 0 writes reports.

Ranks must never wait on a collective that another rank will not join: ``merged`` catches a
rank's failure (a kernel that raised, hung, broke its contract) and says it to every rank in
the same step, so all ranks raise together; ranks that count different things (a different
table, shape or dtype) are an error, not a hang.

NVLink multicast (NVLS, symmetric-memory multicast) is never used: ``multicast_off`` forces
``NCCL_NVLS_ENABLE=0`` and ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` in the harness's own processes
(its CLI; a pytest run once it selects harness checks; through the environment every child
and worker they start), overriding a user's setting. A pytest run of another project, with
the plugin loaded but no harness check selected, is left as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import torch

from sampling_harness.errors import HarnessError, KernelFailure
from sampling_harness.seeds import derive_seed

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
MIN_TIMEOUT = 1800.0      # seconds a rank may wait in a collective, at least


def multicast_off(env: dict | None = None) -> dict:
    """Force NVLink multicast off in ``env`` (default: this process's environment, which
    every child process and xdist worker inherits); returns ``env``."""
    env = os.environ if env is None else env
    env.update(MULTICAST_OFF)
    return env


@dataclass(frozen=True)
class Shard:
    """This process's part of a sharded check: rank ``rank`` of ``world``."""

    rank: int = 0
    world: int = 1

    def size(self, total: int) -> int:
        """This rank's share of ``total`` draws: floor(total / W) + [rank < total mod W]."""
        return total // self.world + (self.rank < total % self.world)

    def seed(self, check_seed: int) -> int:
        """The seed of this rank's kernel-seed stream (the check seed itself when W = 1)."""
        if self.world == 1:
            return check_seed
        return derive_seed(check_seed, "rank", self.rank, self.world)


SINGLE = Shard()


@dataclass(frozen=True)
class Launch:
    """What torchrun's environment says of this process."""

    shard: Shard
    local_rank: int


def launch_env(env: dict | None = None) -> Launch | None:
    """This process's rank from torchrun's variables; None when none is set. Some set and
    others not (a half-set environment), or values that are not ranks: ``HarnessError``."""
    env = os.environ if env is None else env
    present = [name for name in TORCHRUN_VARS if env.get(name)]
    if not present:
        return None
    missing = [name for name in TORCHRUN_VARS if not env.get(name)]
    if missing:
        raise HarnessError(f"torchrun's environment is half set: {', '.join(present)} set but "
                           f"{', '.join(missing)} not; launch with torchrun or unset them")
    try:
        rank, world, local, _ = (int(env[name]) for name in
                                 ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"))
    except ValueError:
        raise HarnessError("torchrun's environment has a non-integer RANK, WORLD_SIZE, "
                           "LOCAL_RANK or MASTER_PORT") from None
    if world < 1 or not 0 <= rank < world or local < 0:
        raise HarnessError(f"torchrun's environment is inconsistent: RANK={rank}, "
                           f"WORLD_SIZE={world}, LOCAL_RANK={local}")
    return Launch(Shard(rank, world), local)


def init(launch: Launch, device_type: str, call_timeout: float) -> Shard:
    """Join the process group torchrun describes (once per process): NCCL on CUDA, with this
    rank's GPU its LOCAL_RANK; gloo on CPU. A collective waits at most
    max(30 min, 3 call timeouts) for the slowest rank."""
    import torch.distributed as dist

    multicast_off()
    if dist.is_initialized():
        return Shard(dist.get_rank(), dist.get_world_size())
    if device_type == "cuda":
        if launch.local_rank >= torch.cuda.device_count():
            raise HarnessError(f"LOCAL_RANK {launch.local_rank} but torch sees "
                               f"{torch.cuda.device_count()} CUDA devices on this node")
        torch.cuda.set_device(launch.local_rank)
    backend = "nccl" if device_type == "cuda" else "gloo"
    timeout = timedelta(seconds=max(MIN_TIMEOUT, 3 * call_timeout))
    try:
        dist.init_process_group(backend, timeout=timeout)
    except (RuntimeError, ValueError) as exc:
        raise HarnessError(f"cannot join torchrun's process group ({backend}): "
                           f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc}"
                           ) from None
    return Shard(dist.get_rank(), dist.get_world_size())


def initialized() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def current() -> Shard:
    """The process group's (rank, world size), or ``SINGLE`` outside one."""
    import torch.distributed as dist

    return Shard(dist.get_rank(), dist.get_world_size()) if initialized() else SINGLE


def shutdown() -> None:
    import torch.distributed as dist

    if initialized():
        dist.destroy_process_group()


def agree(value, shard: Shard):
    """Rank 0's ``value`` (picklable), on every rank; ``value`` itself when W = 1."""
    if shard.world == 1:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _reduce_device() -> torch.device:
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def merged(shard: Shard, what: str, count: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``count()``: this rank's integer count histogram; returns the sum over the ranks, on
    every rank, on the device ``count`` used.

    Every rank must call this with the same ``what`` and a histogram of the same shape and
    dtype. A rank whose ``count`` raised tells the others in the same step: it re-raises its
    own exception, the others raise ``KernelFailure`` (the kernel failed there) or
    ``RuntimeError`` (anything else) naming the rank; no rank is left waiting."""
    try:
        local, failure = count(), None
    except Exception as exc:  # said to every rank below, then raised on every rank
        local, failure = None, exc
    if shard.world == 1:
        if failure is not None:
            raise failure
        return local
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError(f"{what}: sharded over {shard.world} ranks without a process group")
    layout = None if local is None else (tuple(local.shape), str(local.dtype))
    said = None if failure is None else (type(failure).__name__, str(failure))
    notes: list = [None] * shard.world
    dist.all_gather_object(notes, (what, layout, said))
    if failure is not None:
        raise failure
    for rank, (_, _, note) in enumerate(notes):
        if note is not None:
            kind, message = note
            if kind == KernelFailure.__name__:
                raise KernelFailure(f"{message} (on rank {rank} of {shard.world})")
            raise RuntimeError(f"rank {rank} of {shard.world} failed: {kind}: {message}")
    if any(note[:2] != (what, layout) for note in notes):
        seen = "; ".join(f"rank {r}: {w} {s}" for r, (w, s, _) in enumerate(notes))
        raise RuntimeError(f"ranks count different things ({seen})")
    device = local.device
    reduced = local.to(_reduce_device())
    dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    return reduced.to(device)

"""One check sharded over ranks (torch.distributed, gloo on CPU): exact shares, per-rank
seeds, counts merged to what one process makes of the same shards, failures said to all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sampling_harness.commands.cli import main
from sampling_harness.errors import HarnessError, KernelFailure
from sampling_harness.families.registry import load
from sampling_harness.run.plugin import harness_environment
from sampling_harness.run.runner import Runner
from sampling_harness.scale.distributed import (
    MULTICAST_OFF,
    Shard,
    launch_env,
    merged,
    multicast_off,
)
from sampling_harness.seeds import derive_seed, seed_stream
from sampling_harness.suites.sample.contract import BUDGETS

WORLD = 2
DRAWS = 1001                    # per row: shares 501 + 500
TABLE = np.array([[0.5, 0.25, 0.125, 0.125, 0.0],
                  [0.0, 0.1, 0.2, 0.3, 0.4],
                  [0.2, 0.2, 0.2, 0.2, 0.2]], dtype=np.float32)
FULL_ENV = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": "29500"}


def test_shares_sum_to_the_stated_size_and_grow_with_it():
    for world in range(1, 6):
        for total in range(0, 40):
            shares = [Shard(r, world).size(total) for r in range(world)]
            assert sum(shares) == total and max(shares) - min(shares) <= 1
            assert all(Shard(r, world).size(total + 1) >= shares[r] for r in range(world))


def test_each_rank_has_its_own_seed_and_one_rank_keeps_the_checks():
    assert Shard(0, 1).seed(1234) == 1234
    seeds = {Shard(r, w).seed(1234) for w in (2, 4) for r in range(w)}
    assert len(seeds) == 6 and seeds == {derive_seed(1234, "rank", r, w)
                                         for w in (2, 4) for r in range(w)}


def test_multicast_is_forced_off():
    env = multicast_off({"NCCL_NVLS_ENABLE": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "0"})
    assert env == MULTICAST_OFF
    env = harness_environment({"NCCL_NVLS_ENABLE": "1"})     # what a harness run sets
    assert {k: env[k] for k in MULTICAST_OFF} == MULTICAST_OFF


@pytest.mark.parametrize("env,reason", [
    ({"RANK": "0"}, "half set: RANK set but WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT"),
    ({**FULL_ENV, "LOCAL_RANK": ""}, "half set"),
    ({**FULL_ENV, "RANK": "two"}, "non-integer"),
    ({**FULL_ENV, "RANK": "2"}, "inconsistent: RANK=2, WORLD_SIZE=2"),
])
def test_a_bad_torchrun_environment_is_one_line(env, reason):
    with pytest.raises(HarnessError, match=reason):
        launch_env(env)


def test_torchruns_environment_is_read():
    assert launch_env({}) is None
    launch = launch_env(FULL_ENV)
    assert launch.shard == Shard(1, 2) and launch.local_rank == 1


@pytest.mark.parametrize("env,extra,reason", [
    ({"RANK": "0", "WORLD_SIZE": "2"}, [], "torchrun's environment is half set"),
    (FULL_ENV, ["--gpus", "2"], "do not mix"),
])
def test_the_cli_refuses_a_bad_launch(monkeypatch, capsys, env, extra, reason):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = main(["check", "sample", "--kernel", "torch-fp64", "--device", "cpu", *extra])
    err = capsys.readouterr().err
    assert code == 2 and reason in err and len(err.strip().splitlines()) == 1


def _ctx(shard: Shard):
    """What the sharded draws see of a check: the float64 race on CPU, smoke budget."""
    seed = derive_seed(7, "sample", "test")
    return SimpleNamespace(
        device=torch.device("cpu"), seed=seed, shard=shard, max_call_elements=2**10,
        runner=Runner(load("torch-fp64", "sample"), torch.device("cpu"), 60.0),
        budget=BUDGETS["smoke"], alpha=2e-5, plan=lambda draws: None,
        rank_seeds=lambda: seed_stream(shard.seed(seed)))


def _rank(rank: int, store: str, out: str) -> None:
    """One gloo rank: the sharded fit counts and tail check, and two failures said to all."""
    from sampling_harness.suites.sample.draws import count_tokens
    from sampling_harness.suites.sample.tail import tail

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=WORLD)
    ctx = _ctx(Shard(rank, WORLD))
    found = {"counts": count_tokens(ctx, TABLE, DRAWS).tolist(),
             "tail": [(s["rare_wins"], s["rows"], s["planned_rows"])
                      for s in tail(ctx).details["scales"]]}

    def fails():
        if rank == 1:
            raise KernelFailure("returned dtype torch.float32")
        return torch.zeros(3, dtype=torch.int64)

    for name, count in (("failure", fails),
                        ("mismatch", lambda: torch.zeros(2 + rank, dtype=torch.int64))):
        try:
            merged(ctx.shard, name, count)
        except (KernelFailure, RuntimeError) as exc:
            found[name] = f"{type(exc).__name__}: {exc}"
    dist.destroy_process_group()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as handle:
        json.dump(found, handle)


def _one_process_tail(shard: Shard, monkeypatch) -> list[tuple[int, int]]:
    """The tail check's (rare wins, rows) of one rank's shard, drawn here without merging."""
    import sampling_harness.checks.rare_wins as rare_wins
    import sampling_harness.suites.sample.tail as tail_module

    monkeypatch.setattr(rare_wins, "merged", lambda shard, what, count: count())
    return [(s["rare_wins"], s["rows"]) for s in tail_module.tail(_ctx(shard)).details["scales"]]


def test_two_gloo_ranks_merge_to_the_counts_of_their_shards(tmp_path, monkeypatch):
    from sampling_harness.suites.sample.draws import local_token_counts

    mp.spawn(_rank, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]
    one = sum(local_token_counts(_ctx(Shard(r, WORLD)), TABLE, DRAWS, Shard(r, WORLD))
              for r in range(WORLD)).view(TABLE.shape)
    for found in ranks:                       # every rank holds the same merged counts
        assert found["counts"] == one.tolist()
        assert all(sum(row) == DRAWS for row in found["counts"])
    assert np.all(one.numpy()[TABLE == 0] == 0)
    tails = [_one_process_tail(Shard(r, WORLD), monkeypatch) for r in range(WORLD)]
    for found in ranks:
        for i, (wins, rows, planned) in enumerate(found["tail"]):
            assert rows == planned == sum(t[i][1] for t in tails)      # exactly n rows
            assert wins == sum(t[i][0] for t in tails)
    assert ranks[0]["failure"] == ("KernelFailure: returned dtype torch.float32 (on rank 1 "
                                   "of 2)")
    assert ranks[1]["failure"] == "KernelFailure: returned dtype torch.float32"
    assert all("ranks count different things" in found["mismatch"] for found in ranks)


def test_torchrun_shards_a_check_and_rank_0_writes_one_report(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
         str(WORLD), "-m", "sampling_harness", "check", "sample", "--kernel", "torch-fp64",
         "--budget", "smoke", "--device", "cpu", "-k", "test_tail or test_fit_curated"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = list((tmp_path / "reports").iterdir())
    assert len(runs) == 1                     # one default report dir, agreed by the ranks
    report = json.loads((runs[0] / "report.json").read_text())
    assert report["world_size"] == WORLD and report["complete"] is True
    assert [c["name"] for c in report["checks"]] == ["fit_curated", "tail"]
    assert all(c["alpha"] == pytest.approx(1e-4 / 5) for c in report["checks"])
    tail = report["checks"][1]["details"]["scales"]
    assert all(s["rows"] == s["planned_rows"] for s in tail)
    assert done.stdout.count("sampling-harness: PASS (2 checks, in ") == 1  # rank 0 alone
    assert report["checks"][1]["reproduce"].startswith(
        "torchrun --nproc-per-node 2 -m sampling_harness check sample --kernel torch-fp64")

"""triton-sample-logits on a GPU: the two launches of its device path timed apart and
together over their launch shapes, at the bench setting (temperature 0.8, top-k 50, top-p
0.9, float32 N(0, 4) logits), timed like ``sampling-harness bench`` (median of device-event
times, fresh inputs, flushed L2). Ids never depend on the launch shape: each setting's ids
are compared with the first's. CUDA only.
Usage: python3 scripts/sweep_sample_logits.py [--grid GROUP_BLOCKS;GROUP_WARPS;SELECT_WARPS;
TILES]"""

import itertools
import sys

import torch

import kernels.sample_logits.triton_filtered_race as race
import kernels.sample_logits.triton_top_k_select as top_k_select
from harness.bench import copy_bandwidth, median_ms
from harness.families.sample_logits import FAMILY, bench_batch

GRID = ((4096, 8192, 16384), (4, 8), (2, 4, 8), (2048, 4096))
if "--grid" in sys.argv:
    GRID = tuple(tuple(int(v) for v in part.split(","))
                 for part in sys.argv[sys.argv.index("--grid") + 1].split(";"))

device = torch.device("cuda")
bandwidth = copy_bandwidth(device)
torch.manual_seed(0)
print(f"device {torch.cuda.get_device_name(device)}, copy bandwidth {bandwidth / 1e12:.2f} TB/s")
print("| B x V | group block | group warps | select warps | select tile | group_max ms | "
      "select ms | call ms | % of floor |\n|---|---|---|---|---|---|---|---|---|")
for shape in FAMILY.bench.gpu_shapes:
    inputs = bench_batch(shape, device)
    floor_ms = FAMILY.bench.floor_bytes(inputs) / bandwidth * 1e3
    first = None
    for setting in itertools.product(*GRID):
        (race.GPU_GROUP_BLOCK, race.GPU_GROUP_WARPS, race.GPU_SELECT_WARPS,
         top_k_select.TILE) = setting
        logits, vocab = inputs["logits"], inputs["logits"].shape[1]
        filters = [inputs[key] for key in ("temperature", "top_k", "top_p")]
        (maxima, masses, _), width = race.group_maxima(logits, *filters), race.group_width(vocab)
        group = median_ms(lambda work, _, f=filters: race.group_maxima(work["logits"], *f),
                          inputs, 30)
        selected = median_ms(lambda work, seed, m=maxima, z=masses, s=width, w=setting[2],
                             f=filters: top_k_select.select_race(work["logits"], m, z, s, *f,
                                                    race.KMAX, seed, 1, w),
                           inputs, 30)
        call = median_ms(lambda work, seed: race.sample_logits_triton(**work, seed=seed),
                         inputs, 30)
        ids = race.sample_logits_triton(**inputs, seed=5)
        first = ids if first is None else first
        assert torch.equal(ids, first), f"{shape} {setting}: ids depend on the launch shape"
        print(f"| {shape} | {' | '.join(map(str, setting))} | {group:.4f} | {selected:.4f} | "
              f"{call:.4f} | {100 * floor_ms / call:.0f}% |", flush=True)

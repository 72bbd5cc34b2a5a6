"""Run triton-exact at 256 x 151936 a few times (for ncu), then print the SASS instruction
histogram of the compiled race kernel. Usage: python3 scripts/profile_race.py [OUTDIR]"""

import collections
import glob
import os
import re
import subprocess
import sys

import torch

import kernels.sample.triton_race as tr

probs = torch.rand(256, 151936, device="cuda").pow_(4)
probs /= probs.sum(dim=1, keepdim=True)
for seed in range(3):
    tr.race_exact(probs.clone(), seed)
torch.cuda.synchronize()
if os.environ.get("NO_SASS"):
    sys.exit()
cache = os.path.expanduser("~/.triton/cache")
cubins = glob.glob(f"{cache}/**/_race_kernel.cubin", recursive=True)
for cubin in cubins:
    sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
    ops = collections.Counter(m.group(1).split(".")[0] for m in
                              re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]+)",
                                             sass))
    print(cubin.split("/")[-2][:12], sum(ops.values()), "instructions")
    print(sorted(ops.items(), key=lambda kv: -kv[1])[:30])
    if len(sys.argv) > 1:
        open(os.path.join(sys.argv[1], "race.sass"), "w").write(sass)

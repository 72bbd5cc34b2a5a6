"""The SASS instruction histogram of a compiled Triton kernel, read from Triton's cache.

Run the kernel first (which compiles it), for instance under ncu:
  ncu --kernel-name regex:_race_kernel sampling-harness bench sample --kernel triton-exact \\
      --shape 256x151936 --repeat 1 --calls 3
then: python3 benchmarks/sass_histogram.py _race_kernel [OUTDIR]
Prints, per cached compilation of the kernel, its instruction count and the 30 most frequent
opcodes; with OUTDIR, writes each one's SASS there. CUDA toolkit's cuobjdump needed."""

import collections
import glob
import os
import re
import subprocess
import sys

OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]+)")


def histogram(sass: str) -> collections.Counter:
    """Opcode (without modifiers) -> count, over the instructions of a SASS listing."""
    return collections.Counter(m.group(1).split(".")[0] for m in OPCODE.finditer(sass))


def main(kernel: str, outdir: str | None) -> int:
    cache = os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))
    cubins = glob.glob(f"{cache}/**/{kernel}.cubin", recursive=True)
    if not cubins:
        print(f"no {kernel}.cubin under {cache}: run the kernel first", file=sys.stderr)
        return 1
    for cubin in cubins:
        sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True,
                              text=True, check=True).stdout
        ops = histogram(sass)
        tag = cubin.split("/")[-2][:12]
        print(tag, sum(ops.values()), "instructions")
        print(sorted(ops.items(), key=lambda kv: -kv[1])[:30])
        if outdir:
            with open(os.path.join(outdir, f"{kernel}-{tag}.sass"), "w") as out:
                out.write(sass)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: sass_histogram.py KERNEL_NAME [OUTDIR]")
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))

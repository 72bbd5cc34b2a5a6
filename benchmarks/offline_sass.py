"""A Triton kernel's SASS for an H100 (sm_90) without a GPU: registers, spills, and the
instruction mix of each loop.

Triton compiles for a target of our choosing with the ptxas and cuobjdump its wheel ships,
so a CPU machine with the GPU's Triton version (3.6 there: a venv with that wheel) reads the
code the GPU would run. The kernel's signature and constexprs are given as the JIT would
specialise them (pointers and multiples of 16 marked aligned); a preset names the
launches studied for issue 38.

Usage: python3 benchmarks/offline_sass.py PRESET [--maxnreg N] [--sass FILE]
PRESET: logprobs (the random-ids launch: 256 x 151936 x 21, raw logprobs, BLOCK 512, one
warp) or fallback (triton-sample-logits' whole-row fallback, 8 warps, 8 search tiles).
Prints the registers and stack, then each loop (a backward branch over more than 50
instructions): its address range, length and 10 most frequent opcodes.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"BRA .*?0x([0-9a-f]+)")


def presets() -> dict:
    """name -> (kernel, signature, constexprs, aligned arguments, warps)."""
    from sampling_harness.kernels.logprobs.triton_logprobs import _logprobs_kernel
    from sampling_harness.kernels.sample_logits.triton_row_fallback import _fallback_race
    ptr = {"logits_ptr": "*fp32", "ids_ptr": "*i64", "cutoff_ptr": "*fp32",
           "temp_ptr": "*fp32", "tickets_ptr": "*i32", "counts_ptr": "*i32",
           "values_ptr": "*fp32", "ranks_ptr": "*i64"}
    logprobs = ({**ptr, "B": "i32", "V": "i32", "K": "i32", "stride": "i32", "CHUNK": "i32",
                 "prune_limit": "i32"},
                dict(logprobs=1, processed=0, BLOCK_R=1, BLOCK=512, LANES=32, KP=32, G1=16,
                     G2=4, G3=1, STAGES=4), [*ptr, "stride", "CHUNK"], 1)
    fptr = {"logits_ptr": "*fp32", "temp_ptr": "*fp32", "topk_ptr": "*i64",
            "topp_ptr": "*fp32", "unresolved_ptr": "*i8", "ids_ptr": "*i64",
            "best_ptr": "*fp32", "part_ptr": "*i64", "tickets_ptr": "*i32",
            "cand_ptr": "*fp32"}
    fallback = ({**fptr, "seed": "i32", "B": "i32", "V": "i32", "stride": "i32",
                 "per_split": "i32", "splits": "i32", "copy_rows": "i32"},
                dict(BLOCK_R=1, BLOCK=2048, SEARCH=512, UNROLL=8, SPLIT=True),
                [*fptr, "per_split"], 8)
    return {"logprobs": (_logprobs_kernel, *logprobs),
            "fallback": (_fallback_race, *fallback)}


def compile_sm90(fn, signature: dict, constexprs: dict, aligned: list, warps: int,
                 maxnreg: int | None):
    """The compiled kernel for sm_90, as the JIT would build it for these arguments."""
    signature = {**signature, **{name: "constexpr" for name in constexprs}}
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    options = {"num_warps": warps, **({"maxnreg": maxnreg} if maxnreg else {})}
    return triton.compile(ASTSource(fn, signature, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=options)


def loops(sass: str) -> list[tuple[int, int, collections.Counter]]:
    """(start, end, opcode counts) of each backward branch's body over 50 instructions."""
    code = [(int(m.group(1), 16), m.group(2)) for m in INSTRUCTION.finditer(sass)]
    index = {address: i for i, (address, _) in enumerate(code)}
    found = []
    for i, (address, text) in enumerate(code):
        target = BRANCH.search(text)
        if target and int(target.group(1), 16) < address:
            first = index.get(int(target.group(1), 16))
            if first is not None and i - first > 50:
                body = [re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0]
                        for _, t in code[first:i + 1]]
                found.append((code[first][0], address, collections.Counter(body)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", choices=["logprobs", "fallback"])
    parser.add_argument("--maxnreg", type=int)
    parser.add_argument("--sass", help="write the whole SASS listing here")
    args = parser.parse_args()
    fn, signature, constexprs, aligned, warps = presets()[args.preset]
    kernel = compile_sm90(fn, signature, constexprs, aligned, warps, args.maxnreg)
    tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        sass = subprocess.run([os.path.join(tools, "cuobjdump"), "-sass", cubin.name],
                              capture_output=True, text=True, check=True).stdout
        usage = subprocess.run([os.path.join(tools, "cuobjdump"), "-res-usage", cubin.name],
                               capture_output=True, text=True, check=True).stdout
    if args.sass:
        with open(args.sass, "w") as out:
            out.write(sass)
    print(f"triton {triton.__version__}, sm_90:", " ".join(re.findall(r"REG:\d+|STACK:\d+",
                                                                       usage)))
    for start, end, ops in loops(sass):
        print(f"loop {start:#x}-{end:#x}: {sum(ops.values())} instructions,",
              ", ".join(f"{op} {n}" for op, n in ops.most_common(10)))


if __name__ == "__main__":
    main()

"""Which Triton variants a run compiles, and what each cost: a census for the run-time profile.

Triton compiles a kernel once per specialisation: its constexpr values, its tensors' dtypes,
and its integer arguments' classes (== 1, divisible by 16, other). A check whose generated
batches bring many classes pays a compile (seconds) for each. ``install`` wraps
``JITFunction._do_compile`` to append one JSON line per compile (kernel, seconds, the pytest
test that paid it, the specialisation, and the compile as sampling_harness.scale.precompile lists
it: the
``variant`` and its cache ``key``) to ``$COMPILE_LOG``; ``main`` tallies a log.

Usage, on a GPU (the hook is loaded by the ``sitecustomize`` beside it, in every process of
the run, xdist workers included):

    COMPILE_LOG=/tmp/compiles.jsonl PYTHONPATH=benchmarks/compile_hook:. \\
        sampling-harness check all --device cuda --budget quick
    python benchmarks/compile_census.py /tmp/compiles.jsonl
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time


def install(log_path: str) -> None:
    """Append a line per compile to ``log_path`` (no-op where triton is absent)."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return
    from sampling_harness.scale.precompile import describe
    compile_once = JITFunction._do_compile

    def timed(self, key, signature, device, constexprs, *rest):
        start = time.perf_counter()
        kernel = compile_once(self, key, signature, device, constexprs, *rest)
        line = {"kernel": self.fn.__name__, "seconds": round(time.perf_counter() - start, 3),
                "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" (")[0],
                "signature": {k: str(v) for k, v in signature.items()},
                "constexprs": {str(k): str(v) for k, v in constexprs.items()},
                "attrs": str(rest[1:2]), "warps": getattr(rest[0], "num_warps", None),
                "variant": describe(self, signature, constexprs, rest[0], rest[1]),
                "key": getattr(kernel, "hash", None),
                "options": repr(rest[0]), "fn_key": self.cache_key}
        with open(log_path, "a") as log:
            log.write(json.dumps(line) + "\n")
        return kernel

    JITFunction._do_compile = timed


def main(paths: list[str]) -> None:
    lines = [json.loads(text) for path in paths for text in open(path) if text.strip()]
    by_kernel, by_test = collections.defaultdict(list), collections.defaultdict(float)
    for line in lines:
        by_kernel[line["kernel"]].append(line)
        by_test[line["test"] or "(outside a test)"] += line["seconds"]
    print(f"{len(lines)} compiles, {sum(x['seconds'] for x in lines):.1f} s\n")
    print("| kernel | variants | seconds |\n|---|---:|---:|")
    for name, group in sorted(by_kernel.items(), key=lambda kv: -sum(x["seconds"] for x in kv[1])):
        print(f"| {name} | {len(group)} | {sum(x['seconds'] for x in group):.1f} |")
    print("\n| test | compile seconds |\n|---|---:|")
    for test, seconds in sorted(by_test.items(), key=lambda kv: -kv[1])[:25]:
        print(f"| {test} | {seconds:.1f} |")
    print("\nWhat varies between a kernel's variants:")
    for name, group in by_kernel.items():
        varying = {}
        for part in ("signature", "constexprs"):
            for arg in group[0][part]:
                seen = {x[part].get(arg) for x in group}
                if len(seen) > 1:
                    varying[arg] = sorted(map(str, seen))[:8]
        attrs = {x["attrs"] for x in group}
        distinct = {json.dumps([x["signature"], x["constexprs"], x["attrs"], x["warps"]],
                               sort_keys=True) for x in group}
        print(f"- {name}: {len(distinct)} distinct of {len(group)} compiles; {varying}; "
              f"attrs classes {len(attrs)}")
        if os.environ.get("CENSUS_ATTRS"):
            for text in sorted(attrs):
                print(f"    {text}")


if __name__ == "__main__":
    main(sys.argv[1:])

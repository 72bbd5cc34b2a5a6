"""A GPU run's Triton variants compiled ahead, in parallel, from a list shipped with the harness.

A cold ``check all --device cuda`` is mostly Triton compiling: about 140 variants, 240-395
seconds of compile time summed over the workers (docs/measurements/gpu.md), and the run's
longest checks compile theirs one after another (``logprobs / generated``: 3 dtypes x 2 K
buckets x 2 stride classes). The list (``VARIANTS``) holds each variant a run compiled, as
Triton's JIT handed it to the compiler (the kernel, its signature, constexprs, attributes and
options), tagged with the budget, family and kernel of the check that needed it.

``start`` launches ``python -m sampling_harness.scale.precompile`` beside the run: a pool of
processes
compiles the run's variants into Triton's cache through its own ``triton.compile``, the call
the JIT makes. A check that needs a variant finds it there (or waits on it:
sampling_harness.scale.compile_lock), so the long checks' compiles spread over the host's cores. A
listed
variant is compiled only when its Triton cache key, computed now from today's kernel source,
equals the key recorded: an entry of an older kernel or another Triton is skipped (the run
then compiles what it needs itself, as without the list). The compiler is content-addressed,
so precompiling changes when a variant is compiled, never what a check runs.

``record`` (on a GPU, after a kernel change) turns the compiles of a cold run into entries:
``python -m sampling_harness.scale.precompile --record quick=LOG1 standard=LOG2`` with the logs of
benchmarks/compile_census.py (scripts/gpu/record_precompile.sh runs it all). A change of a
kernel's body that keeps its variants (the same signatures, constexprs and options) needs
only their keys again (``rekey``): ``python -m sampling_harness.scale.precompile --rekey`` on
a GPU machine. Each entry also keeps its kernel's source fingerprint
(harness/scale/kernel_source.py), so a CPU test finds entries recorded from other source.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from sampling_harness.scale.kernel_source import fingerprint

VARIANTS = Path(__file__).with_name("compile_variants.json")
SCALARS = (bool, int, float, str, type(None))


def settle_cache_keys(package: str = "sampling_harness.kernels") -> int:
    """Compute the cache key of every Triton function of ``package``, in one fixed order
    (module, name), before any is launched; the number computed.

    In Triton 3.6 a function's key includes the constexpr globals of the functions it
    calls as far as their own keys were computed before (``DependenciesFinder`` merges a
    callee's globals before it asks for the callee's key): measured, ``_race_kernel`` has
    one key in a process that computed ``_rejection_kernel``'s first and another in one
    that did not. A variant then sits in the cache under two keys, and a listed key would
    match only in processes that happened to launch in the recorded order. Computing every
    key in the same order at the start of each process (workers, precompiler) gives one key
    per variant everywhere. Triton 3.9 computes the same keys in any order; this is then a
    fixed, sub-second cost (about 65 functions)."""
    import pkgutil

    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return 0
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        with contextlib.suppress(Exception):     # a module that fails to import: not ours
            importlib.import_module(info.name)
    functions = sorted((name, attr, value) for name, module in list(sys.modules.items())
                       if name == package or name.startswith(f"{package}.")
                       for attr, value in vars(module).items()
                       if isinstance(value, JITFunction) and value.__module__ == name)
    for _, _, fn in functions:
        fn.cache_key                               # noqa: B018 - computed and kept by Triton
    return len(functions)


def describe(fn, signature, constexprs, options, attrs) -> dict | None:
    """One compile as JSON (the JIT's arguments to ``triton.compile``), or None when a
    constexpr is not a JSON scalar. Options keep only what differs from Triton's defaults."""
    if not all(isinstance(v, SCALARS) for v in constexprs.values()):
        return None
    fields = type(options).__dataclass_fields__
    changed = {k: v for k, v in options.__dict__.items()
               if k in fields and isinstance(v, SCALARS) and v != fields[k].default
               and k != "arch" and k != "enable_fp_fusion" and "imprecise" not in k}
    return {"kernel": f"{fn.fn.__module__}:{fn.fn.__qualname__}",
            "signature": dict(signature),
            "constexprs": [[list(path), value] for path, value in constexprs.items()],
            "attrs": [[list(path), value] for path, value in attrs.items()],
            "options": changed}


def compile_inputs(entry: dict, capability: int):
    """(ASTSource, target, options, cache key) of an entry with today's kernel source, for
    ``capability`` (e.g. 90): what the JIT hands ``triton.compile`` (its options parsed
    from the launch's keywords), and the key ``triton.compile`` files the result under."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.cache import get_cache_key
    from triton.runtime.jit import get_cache_invalidating_env_vars

    module, _, name = entry["kernel"].partition(":")
    fn = getattr(importlib.import_module(module), name)
    src = ASTSource(fn, dict(entry["signature"]),
                    {tuple(path): value for path, value in entry["constexprs"]},
                    {tuple(path): value for path, value in entry["attrs"]})
    target = GPUTarget("cuda", capability, 32)
    backend = make_backend(target)
    options = backend.parse_options(dict(entry["options"])).__dict__
    parsed = backend.parse_options(dict(options, **src.parse_options()))   # as compile does
    key = get_cache_key(src, backend, parsed, get_cache_invalidating_env_vars())
    return src, target, options, hashlib.sha256(key.encode("utf-8")).hexdigest()


def cache_key(entry: dict, capability: int) -> str:
    """Triton's cache key of an entry compiled for ``capability`` with today's source."""
    return compile_inputs(entry, capability)[3]


def compile_entry(entry: dict, capability: int) -> str:
    """Compile one entry into Triton's cache: "compiled" (or found there), "stale" (its
    key today differs from the recorded one), or "failed: ..." (one line)."""
    try:
        src, target, options, key = compile_inputs(entry, capability)
        if key != entry["key"]:
            return "stale"
        import triton

        triton.compile(src, target=target, options=options)
        return "compiled"
    except Exception as exc:          # a listed variant that no longer compiles: skip it
        return f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def chosen(entries: list[dict], budget: str, suites: list[str], kernels: list[str] | None
           ) -> list[dict]:
    """The entries a run needs: its budget, and a check of its families' suites on one of
    its kernels (``kernels`` None: any)."""
    return [e for e in entries if budget in e["budgets"]
            and any(suite in suites and (kernels is None or kernel in kernels)
                    for suite, kernel in e["users"])]


def user_of(test: str) -> tuple[str, str] | None:
    """(suite, kernel under test) of a pytest id ``.../suites/SUITE/test_x.py::test_c[KERNEL]``."""
    path, _, name = test.partition("::")
    parts = Path(path).parts
    if "suites" not in parts or "[" not in name:
        return None
    suite = parts[parts.index("suites") + 1]
    return suite, name[name.index("[") + 1:name.rindex("]")]


def record(logs: dict[str, str]) -> dict:
    """The shipped document from census logs ({budget: path}, benchmarks/compile_census.py
    lines with a ``variant``): one entry per cache key, with the budgets and (suite, kernel)
    checks that compiled it; the variants of the checks that spent the most compile time
    first (the run's long poles), then in the order first compiled."""
    entries: dict[str, dict] = {}
    spent: dict[str, float] = {}          # compile seconds of each check, over the logs
    tests: dict[str, list[str]] = {}      # the checks that compiled each key
    for budget, path in logs.items():
        for text in Path(path).read_text().splitlines():
            line = json.loads(text) if text.strip() else {}
            user = user_of(line.get("test", ""))
            if not line.get("variant") or not line.get("key") or user is None:
                continue
            spent[line["test"]] = spent.get(line["test"], 0.0) + line.get("seconds", 0.0)
            tests.setdefault(line["key"], []).append(line["test"])
            entry = entries.setdefault(line["key"], {**line["variant"], "key": line["key"],
                                                     "budgets": [], "users": []})
            if budget not in entry["budgets"]:
                entry["budgets"].append(budget)
            if list(user) not in entry["users"]:
                entry["users"].append(list(user))
    ordered = sorted(entries.values(), key=lambda e: -max(spent[t] for t in tests[e["key"]]))
    sources = fingerprints(ordered)
    for entry in ordered:
        entry["source"] = sources[entry["kernel"]]
    return {"about": "Triton variants compiled by cold runs of `sampling-harness check all "
                     "--device cuda` (harness/scale/precompile.py)", "variants": ordered}


def listed(path: Path | None = None) -> list[dict]:
    """The shipped entries (none when the file is missing or unreadable)."""
    try:
        document = json.loads((path or VARIANTS).read_text())
    except (OSError, ValueError):
        return []
    return document.get("variants", []) if isinstance(document, dict) else []


def write_list(document: dict, path: Path | None = None) -> None:
    """Write ``document`` ({"about", "variants"}) as the shipped list is kept: one entry a
    line, so a re-record or a re-key reads as a diff of the entries it changed."""
    rows = ",\n".join(json.dumps(entry) for entry in document["variants"])
    (path or VARIANTS).write_text(f'{{"about": {json.dumps(document["about"])},\n'
                                  f'"variants": [\n{rows}\n]}}\n')


def stale(entries: list[dict], capability: int) -> list[dict]:
    """The entries whose cache key today (this Triton, this source) differs from the
    recorded one: a precompiler skips them."""
    return [e for e in entries if cache_key(e, capability) != e["key"]]


def fingerprints(entries: list[dict]) -> dict[str, str]:
    """Today's source fingerprint of each kernel the entries name (harness/scale/
    kernel_source.py), once per kernel."""
    return {kernel: fingerprint(kernel) for kernel in {e["kernel"] for e in entries}}


def moved(entries: list[dict]) -> list[dict]:
    """The entries recorded from other source than today's (their ``source`` fingerprint):
    stale on any machine, found without a GPU."""
    today = fingerprints(entries)
    return [e for e in entries if e.get("source") != today[e["kernel"]]]


def rekey(capability: int, path: Path | None = None) -> tuple[int, int]:
    """Recompute the keys of the list's stale entries in place, and every entry's source
    fingerprint; (re-keyed, stale after). For a kernel change that keeps every variant
    (its body, a comment, a docstring: the same signatures, constexprs and options), which
    changes the keys but not what a run compiles; a change of the variants needs
    ``record`` from cold runs. Run on the GPU machine whose Triton computes the keys."""
    document = json.loads((path or VARIANTS).read_text())
    settle_cache_keys()
    old = stale(document["variants"], capability)
    for entry in old:
        entry["key"] = cache_key(entry, capability)
    sources = fingerprints(document["variants"])
    for entry in document["variants"]:
        entry["source"] = sources[entry["kernel"]]
    write_list(document, path)
    return len(old), len(stale(listed(path), capability))


def start(budget: str, suites: list[str], kernels: list[str] | None, capability: int,
          log: Path) -> subprocess.Popen | None:
    """Launch the precompiler beside a run (module doc); None when nothing is listed."""
    if not chosen(listed(), budget, suites, kernels):
        return None
    command = [sys.executable, "-c", "import sys; from sampling_harness.scale.precompile import "
               "main; sys.exit(main(sys.argv[1:]))", "--budget", budget,
               "--capability", str(capability), "--processes",
               str(os.cpu_count() or 1), "--suites", *suites]
    if kernels is not None:
        command += ["--kernels", *kernels]
    from sampling_harness.scale.xdist_gpus import COMPILE_LOCK

    env = dict(os.environ)
    env.setdefault(*COMPILE_LOCK)      # the workers wait on a variant it is compiling
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def stop(process: subprocess.Popen | None, log: Path) -> str | None:
    """End a precompiler that is still running (its work is only a head start) and return
    its summary line, or None."""
    if process is None:
        return None
    if process.poll() is None:       # its pool's processes too: its own session
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    try:
        lines = [line for line in log.read_text().splitlines() if line.startswith("precompiled")]
    except OSError:
        return None
    return lines[-1] if lines else "precompile: stopped before it finished"


@contextlib.contextmanager
def beside(budget: str, suites: list[str], kernels: list[str] | None, capability: int,
           log: Path):
    """Run the body with the precompiler working beside it (``start``), then end the
    precompiler (``stop``) and print its summary line."""
    process = start(budget, suites, kernels, capability, log)
    try:
        yield process
    finally:
        summary = stop(process, log)
        if summary:
            print(summary)


def run(entries: list[dict], capability: int, processes: int) -> dict[str, int]:
    """Compile ``entries`` on ``processes`` processes (at most one per entry); the count of
    each outcome. The pool forks from a process that imported the kernels and settled their
    keys (``main``), and touches no CUDA."""
    outcomes: dict[str, int] = {}
    if not entries:
        return outcomes
    with ProcessPoolExecutor(max_workers=min(processes, len(entries)),
                             mp_context=get_context("fork")) as pool:
        for entry, outcome in zip(entries, pool.map(compile_entry, entries,
                                                    [capability] * len(entries)), strict=True):
            kind = outcome.split(":")[0]
            outcomes[kind] = outcomes.get(kind, 0) + 1
            if kind == "failed":
                print(f"{entry['kernel']}: {outcome}", flush=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sampling_harness.scale.precompile", description=(
        "compile a GPU run's listed Triton variants ahead (harness/scale/precompile.py)"))
    parser.add_argument("--budget")
    parser.add_argument("--capability", type=int, default=90)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--suites", nargs="*", default=None)
    parser.add_argument("--kernels", nargs="*", default=None)
    parser.add_argument("--record", nargs="*", metavar="BUDGET=LOG",
                        help="write the list from census logs instead")
    parser.add_argument("--rekey", action="store_true",
                        help="recompute the stale entries' keys instead (``rekey``)")
    args = parser.parse_args(argv)
    if args.record:
        document = record(dict(item.split("=", 1) for item in args.record))
        write_list(document)
        print(f"{len(document['variants'])} variants written to {VARIANTS}")
        return 0
    if args.rekey:
        done, left = rekey(args.capability)
        print(f"{done} of {len(listed())} entries re-keyed; {left} stale after")
        return 0
    settle_cache_keys()
    entries = listed()
    suites = args.suites if args.suites is not None else sorted(
        {suite for e in entries for suite, _ in e["users"]})
    todo = chosen(entries, args.budget, suites, args.kernels)
    began = time.perf_counter()
    outcomes = run(todo, args.capability, args.processes)
    print(f"precompiled {outcomes.get('compiled', 0)} of {len(todo)} listed variants in "
          f"{time.perf_counter() - began:.1f} s on {args.processes} processes ("
          + ", ".join(f"{n} {kind}" for kind, n in sorted(outcomes.items())) + ")", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

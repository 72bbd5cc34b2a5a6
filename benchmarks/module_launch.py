"""Kernels whose launch settings are still module globals, given keyword launch settings so
that ``sampling-harness bench --launch KEY=V1,V2`` sweeps them like any kernel.

Transitional: a kernel whose function takes its launch settings as keyword arguments needs
none of this (``bench --kernel NAME --launch ...`` directly); delete its entry here when it
does. Each wrapper sets the named globals for the duration of one call and restores them,
so a CUDA-graph capture bakes the setting into its graph and the next entry sees the
defaults again. Only launch knobs are listed: none of them changes what the kernel
computes (the bench's "= default" column checks it on every setting).

Usage: sampling-harness bench sample --cuda-graph --launch warps=4,8 --launch stages=3,4,5 \\
           --kernel benchmarks/module_launch.py:triton_exact
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

SAMPLE = ("probs", "seed")
SAMPLE_LOGITS = ("logits", "temperature", "top_k", "top_p", "seed")
LOGPROBS = ("logits", "token_ids", "mode", "temperature", "top_k", "top_p")
RACE = "sampling_harness.kernels.sample.triton_race"
INVERSE = "sampling_harness.kernels.sample.triton_inverse_cdf"
FILTERED = "sampling_harness.kernels.sample_logits.triton_filtered_race"
SELECT = "sampling_harness.kernels.sample_logits.triton_top_k_select"
FALLBACK = "sampling_harness.kernels.sample_logits.triton_row_fallback"
LOGPROBS_MODULE = "sampling_harness.kernels.logprobs.triton_logprobs"


def with_module_launch(target: str, contract: tuple[str, ...],
                       knobs: dict[str, tuple[str, str]]) -> Callable:
    """``target`` (``module:function``) as a kernel taking, beyond ``contract``, one
    keyword-only launch setting per knob (``name: (module, GLOBAL)``), defaulting to the
    global's current value."""
    module_name, _, attr = target.partition(":")
    fn = getattr(importlib.import_module(module_name), attr)
    places = {name: (importlib.import_module(module), glob) for name, (module, glob)
              in knobs.items()}
    missing = [f"{m.__name__}.{g}" for m, g in places.values() if not hasattr(m, g)]
    if missing:           # the kernel moved on: its row in the table says so
        def gone(*args):
            raise AttributeError(f"{target}: no global {', '.join(missing)} any more; give "
                                 "the kernel keyword launch settings and drop it from "
                                 "benchmarks/module_launch.py")
        gone.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in contract])
        return gone

    def kernel(*args, **settings):
        saved = {name: getattr(*places[name]) for name in settings}
        try:
            for name, value in settings.items():
                setattr(*places[name], value)
            return fn(*args)
        finally:
            for name, value in saved.items():
                setattr(*places[name], value)

    kernel.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in contract]
        + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=getattr(m, g))
           for name, (m, g) in places.items()])
    kernel.__doc__ = f"{target} with launch settings {', '.join(knobs)}"
    return kernel


triton_exact = with_module_launch(f"{RACE}:race_exact", SAMPLE, {
    "warps": (RACE, "GPU_WARPS"), "programs_per_sm": (RACE, "GPU_PROGRAMS_PER_SM"),
    "stages": (RACE, "GPU_STAGES"), "unroll": (RACE, "GPU_UNROLL"), "rows": (RACE, "GPU_ROWS"),
    "late_noise": (RACE, "GPU_LATE_NOISE")})

triton_inverse_cdf = with_module_launch(f"{INVERSE}:inverse_cdf", SAMPLE, {
    "chunk": (INVERSE, "GPU_CHUNK"), "warps": (INVERSE, "GPU_WARPS"),
    "programs_per_sm": (INVERSE, "GPU_PROGRAMS_PER_SM"), "stages": (INVERSE, "GPU_STAGES")})

triton_sample_logits = with_module_launch(f"{FILTERED}:sample_logits_triton", SAMPLE_LOGITS, {
    "group_block": (FILTERED, "GPU_GROUP_BLOCK"), "warps": (FILTERED, "GPU_WARPS"),
    "select_tile": (SELECT, "TILE"),
    "select_small": (SELECT, "GPU_SMALL"),
    "fallback_block": (FALLBACK, "GPU_BLOCK"), "fallback_search": (FALLBACK, "GPU_SEARCH"),
    "fallback_warps": (FALLBACK, "GPU_WARPS"),
    "fallback_programs_per_sm": (FALLBACK, "GPU_PROGRAMS_PER_SM")})

triton_logprobs = with_module_launch(f"{LOGPROBS_MODULE}:logprobs_triton", LOGPROBS, {
    "block": (LOGPROBS_MODULE, "GPU_BLOCK"), "warps": (LOGPROBS_MODULE, "GPU_WARPS"),
    "programs_per_sm": (LOGPROBS_MODULE, "GPU_PROGRAMS_PER_SM"),
    "stages": (LOGPROBS_MODULE, "GPU_STAGES"), "prune": (LOGPROBS_MODULE, "PRUNE")})

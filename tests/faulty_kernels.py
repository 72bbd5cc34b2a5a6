"""Kernels of the ``sample`` family that fault in native code on a large batch (more than
``LARGE`` rows: fit_curated's), and one correct kernel to run beside them. A kernel under
development faults like this: on some shapes, not on every call."""

from __future__ import annotations

import ctypes
import os

import torch

LARGE = 5000       # rows: fit_curated's batches are larger at smoke; the other checks' smaller


def race(probs, seed):
    """A correct exponential race in float64."""
    generator = torch.Generator(device=probs.device).manual_seed(int(seed))
    noise = torch.empty(probs.shape, dtype=torch.float64, device=probs.device)
    return (probs.double() / noise.exponential_(generator=generator)).argmax(-1)


def segfaults(probs, seed):
    if probs.shape[0] > LARGE:
        ctypes.string_at(0)               # reads address 0: SIGSEGV
    return race(probs, seed)


def aborts(probs, seed):
    if probs.shape[0] > LARGE:
        os.abort()                        # SIGABRT, as a failed C assert
    return race(probs, seed)


def exits(probs, seed):
    if probs.shape[0] > LARGE:
        os._exit(3)                       # a native library's exit(3)
    return race(probs, seed)


def hangs_holding_the_interpreter_lock(probs, seed):
    if probs.shape[0] > LARGE:
        ctypes.PyDLL(None).sleep(3600)    # native code that keeps the GIL: no thread runs
    return race(probs, seed)


def hangs_on_every_call(probs, seed):
    ctypes.PyDLL(None).sleep(3600)
    return race(probs, seed)

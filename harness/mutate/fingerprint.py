"""Fingerprints of kernel calls for ``mutate``: digests of the exact bits of inputs and
outputs, and the parts of a validated output (used by the recorder and the law test).

Digests are of the exact bits (``tensor_digest``): BLAKE2b of a CPU tensor's bytes; a GPU
tensor's bits summed on the GPU with two independent position-dependent weights, modulo
2^64.
"""

from __future__ import annotations

import hashlib

import torch

SLICE = 1 << 24                                    # elements digested at a time
_WORDS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_WEIGHTS = (-7046029254386353131, -4658895280553007687)    # odd 64-bit multipliers


def _signed(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def tensor_digest(tensor: torch.Tensor) -> str:
    """'int64[4, 7]:..': dtype, shape and a digest of the bits: BLAKE2b of the bytes on a
    CPU; on a GPU two position-weighted sums of the bits as integers, modulo 2^64 (no copy
    to the host; integer sums do not depend on the order of the additions)."""
    flat = tensor.detach().contiguous().reshape(-1)
    head = f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}"
    if flat.device.type == "cpu":
        data = flat.view(torch.uint8).numpy() if flat.numel() else b""
        return f"{head}:{hashlib.blake2b(memoryview(data), digest_size=16).hexdigest()}"
    words = flat.view(_WORDS[flat.element_size()]) if flat.dtype != torch.bool \
        else flat.view(torch.uint8)
    sums = [0, 0]
    for start in range(0, words.numel(), SLICE):
        part = words[start:start + SLICE].to(torch.int64)
        where = torch.arange(start, start + part.numel(), device=part.device,
                             dtype=torch.int64)
        for i, weight in enumerate(_WEIGHTS):
            mixed = (where + 1) * weight
            mixed = mixed ^ (mixed >> 31)
            sums[i] = _signed(sums[i] + int((part * (mixed | 1)).sum()))
    return f"{head}:{sums[0] % 2**64:x}:{sums[1] % 2**64:x}"


def digest(value) -> str:
    """A digest of a call's argument or output: tensors by ``tensor_digest``, containers
    part by part, anything else by its repr."""
    if isinstance(value, torch.Tensor):
        return tensor_digest(value)
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(digest(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={digest(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def parts(output) -> list:
    """The parts of a validated output (a tensor, or a tuple with None for absent parts)."""
    return list(output) if isinstance(output, tuple) else [output]

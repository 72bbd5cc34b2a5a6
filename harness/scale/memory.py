"""How much memory one check's kernel calls may use, and the call sizes that follow from it.

A check that draws many samples streams them through the kernel in calls of at most
``call_elements(budget)`` input elements (``ctx.max_call_elements``): more, smaller calls
when its budget is small; the same evidence either way, since the draws a check makes are
set by its budget name, not by its calls.

* ``budget`` is bytes. On a GPU the default is 80 % of the memory free when the run starts,
  divided among the checks that share the GPU (``--workers-per-gpu``); on a CPU it is
  ``CPU_BUDGET``. It is resolved once per run, by the process that starts the workers, and
  every worker and every reproduce command gets the same number (call sizes fix the draws).
* A call's working set is bounded by ``BYTES_PER_CALL_ELEMENT`` bytes per input element: the
  float32 input, a kernel's scratch (a sort's values and int64 indices), the output and the
  harness's float64 copies of what it validates. Measured: 66 bytes per element at the peak
  of the hungriest check (standard, 2^28 elements: 16.6 GiB held by one worker).
* Call sizes are powers of two, at most ``MAX_CALL_ELEMENTS`` (2^28: offsets of a call stay
  within int32 with room for a kernel's scratch), at least one element (a check then makes
  its smallest call: one row).

A check with a fixed batch (independence draws 131072 rows in one call) may exceed its share:
it borrows, and admission (``scale.gpu_share``) runs it alone if the GPU's memory runs out. A
call whose own inputs and output exceed what the whole run was granted (the budget times the
checks sharing the device) cannot fit: the runner fails it with the bytes
(``sampling_harness.run.runner.CallTooLarge``), a clear verdict instead of an out-of-memory
error in the middle of a run.
"""

from __future__ import annotations

import argparse
import re

BYTES_PER_CALL_ELEMENT = 64
MAX_CALL_ELEMENTS = 2**28
CPU_BUDGET = 2**22 * BYTES_PER_CALL_ELEMENT          # 256 MiB: calls of 2^22 elements
GPU_FRACTION = 0.8                                   # of the free memory at the start

_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_bytes(text: str) -> int:
    """An argparse type: ``512MiB``, ``4GiB``, ``2GB``, ``1e9`` or a plain byte count > 0
    (binary units are powers of 1024, decimal ones of 1000); else a one-line usage error."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"must be bytes such as 512MiB, 4GiB or 2GB, got {text}")
    value = int(float(match.group(1)) * _UNITS[match.group(2)])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 bytes, got {text}")
    return value


def format_bytes(count: int) -> str:
    """Bytes as a reader and ``parse_bytes`` both take them: ``4GiB``, ``1.5MiB``, ``512B``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.4g}{unit}"
    return f"{count}B"


def call_elements(budget: int) -> int:
    """The input elements of the largest call a check with ``budget`` bytes makes: the
    largest power of two whose working set (``BYTES_PER_CALL_ELEMENT`` each) fits, capped at
    ``MAX_CALL_ELEMENTS``; at least 1."""
    elements = max(1, budget // BYTES_PER_CALL_ELEMENT)
    return min(MAX_CALL_ELEMENTS, 1 << (elements.bit_length() - 1))


def default_budget(device, checks_sharing: int = 1) -> int:
    """The default budget of one check on ``device``: ``CPU_BUDGET`` on a CPU; on a GPU
    ``GPU_FRACTION`` of its free memory now, split among ``checks_sharing`` checks and
    rounded down to the budget of its call size (so that the number in a reproduce command
    gives the same calls)."""
    if getattr(device, "type", "cpu") != "cuda":
        return CPU_BUDGET
    import torch

    free, _ = torch.cuda.mem_get_info(device)
    share = int(free * GPU_FRACTION) // max(1, checks_sharing)
    return call_elements(share) * BYTES_PER_CALL_ELEMENT


def call_bytes(tensors) -> int:
    """Bytes of the tensors among ``tensors`` (a call's inputs and output)."""
    import torch

    return sum(t.nbytes for t in tensors if isinstance(t, torch.Tensor))

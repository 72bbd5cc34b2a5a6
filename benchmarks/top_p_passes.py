"""The passes of the fallback's top-p search on bench-like rows, counted in the Triton
interpreter (CPU): how many read the whole row before the copy to scratch, how many
entries the copy holds, how many read the copy. Each row's threshold is checked against a
sort's (tests/test_top_p_search.py).

Usage: PYTHONPATH=. python3 benchmarks/top_p_passes.py  (a minute or two)
"""

import os

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402

import sampling_harness.kernels.sample_logits.triton_top_p_search as search  # noqa: E402
from tests.test_top_p_search import _top_p_keys, top_p_key  # noqa: E402

ROWS = {"flat-top-p": (0.1, 1.0, 0.99), "top-p": (2.0, 0.8, 0.9)}   # std, T, top_p
V, NO_KTH = 151936, -2139095041


def main() -> None:
    log = []
    probes, copy = search.probes, search.copy_range

    def counted_probes(*args):
        log.append("row pass" if not any(isinstance(e, tuple) for e in log) else "copy pass")
        return probes(*args)

    def counted_copy(*args):
        n = copy(*args)
        log.append(("copy", int(np.asarray(n.handle.data).max())))
        return n

    search.probes, search.copy_range = counted_probes, counted_copy
    g = torch.Generator().manual_seed(0)
    print("| row | search passes over the row | entries copied | passes over the copy | "
          "= sort |")
    print("|---|---:|---:|---:|---|")
    for name, (std, t, top_p) in ROWS.items():
        log.clear()
        x = torch.randn(1, V, generator=g) * std
        out = torch.zeros(1, dtype=torch.int32)
        _top_p_keys[(1,)](x, torch.zeros(search.CAP.value), torch.tensor([NO_KTH],
                          dtype=torch.int32), torch.tensor([t]), torch.tensor([top_p]), out,
                          1, V, 1, BLOCK_R=1, BLOCK=4096)
        copied = [e[1] for e in log if isinstance(e, tuple)]
        exact = out.item() == top_p_key(x[0].numpy(), NO_KTH, t, top_p)
        print(f"| {name} | {log.count('row pass')} | {copied[0] if copied else '-'} | "
              f"{log.count('copy pass')} | {exact} |")


if __name__ == "__main__":
    main()

"""The peers of the families: other projects' kernels run as baselines where the project
imports (``sampling_harness.families.Peer``; the adapters are in kernels/peers/). A family
declares its peers in its ``FAMILY`` with these factories.

FlashInfer's samplers are peers of ``sample``, ``sample-logits`` and ``rejection``
(kernels/peers/flashinfer_sampling.py). They need the package ``flashinfer`` (the extra
``flashinfer`` of this project: flashinfer-python) and a CUDA GPU: FlashInfer compiles its
kernels for the GPU on first use.
"""

from __future__ import annotations

from sampling_harness.families import Peer

FLASHINFER_INSTALL = 'pip install -e ".[flashinfer]" (GPU only)'


def flashinfer(name: str, attr: str) -> Peer:
    """The peer ``name``: FlashInfer's sampler behind the adapter ``attr`` of
    kernels/peers/flashinfer_sampling.py, on CUDA, where ``flashinfer`` imports."""
    return Peer(name, f"sampling_harness.kernels.peers.flashinfer_sampling:{attr}",
                requires="flashinfer", install=FLASHINFER_INSTALL, devices=("cuda",))

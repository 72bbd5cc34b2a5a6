"""Other projects' sampling kernels, run beside the project's own as baselines ("peers").

Each module here is a thin adapter: a function with a family's kernel signature that maps
the family's contract (suites/<family>, docs/families/) onto another project's documented
API, and carries the baseline's metadata (``kernels/meta.py``): what the project ships, the
checks it may fail and why. The families declare their peers (``Family.peers``, in
harness/families/peers.py), and a peer is registered only while its project imports: without it
nothing here is imported, and ``sampling-harness list`` says how to get it.

* ``flashinfer_sampling``: FlashInfer's ``sampling_from_probs`` (family ``sample``),
  ``top_k_top_p_sampling_from_logits`` (``sample-logits``) and
  ``chain_speculative_sampling`` (``rejection``); CUDA only
  (``pip install -e ".[flashinfer]"``).
"""

"""triton-logits-processors under its launch setting design=overlap, for `check --kernel
scripts/gpu/lp_overlap.py:overlap` (the GPU run that decides the default design)."""

from sampling_harness.kernels.logits_processors.triton_logits_processors import (
    logits_processors_triton,
)

overlap = logits_processors_triton.with_launch(design="overlap")

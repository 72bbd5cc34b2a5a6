"""Kernels of family ``logits-processors``: the torch baseline written the way engines write
it, and the project's fused Triton kernel."""

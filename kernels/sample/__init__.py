"""Kernels of family ``sample``: fn(probs float32 [B, V], seed int) -> token ids [B]."""

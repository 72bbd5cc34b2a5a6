"""``sampling-harness bench``: timing kernels of a family against its baselines and the read
ceiling."""

"""The engine of the sampling-kernel verification harness."""

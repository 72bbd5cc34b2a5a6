"""Float64 ground truth for the kernel families: exact distributions and values, no kernels.

Imports only numpy, scipy and torch; never the harness or the kernels.
"""

"""A worked example of a package whose sampler is checked by sampling-harness."""

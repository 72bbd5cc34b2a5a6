"""A worked example of a package whose sampler is checked by sampling-harness (race.py), and
that adds a family of its own, ``coin`` (coin/, flip.py: docs/how-to/add-a-family.md)."""

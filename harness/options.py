"""Argument types shared by the CLI's subcommands (each subcommand module adds its own
arguments; none of them imports the CLI)."""

from __future__ import annotations

import argparse


def positive(kind, upper=None):
    """An argparse type: a number > 0 (and < ``upper``), else a one-line usage error."""
    def parse(text: str):
        value = kind(text)
        if value <= 0 or (upper is not None and value >= upper):
            bound = f" and < {upper}" if upper is not None else ""
            raise argparse.ArgumentTypeError(f"must be > 0{bound}, got {text}")
        return value
    return parse

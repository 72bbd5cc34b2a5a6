"""``python -m sampling_harness``: the command line (``sampling-harness``), for child processes
and torchrun."""

import sys

from sampling_harness.commands.cli import program

sys.exit(program())

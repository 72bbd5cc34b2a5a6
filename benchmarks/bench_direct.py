"""``sampling-harness bench`` with the direct launcher on (kernels/direct_launch.py is off by
default until it is measured on a GPU): ``python benchmarks/bench_direct.py FAMILY ...`` takes
the arguments of ``sampling-harness bench``."""

import sys

from sampling_harness.commands.cli import main
from sampling_harness.kernels import direct_launch

if __name__ == "__main__":
    direct_launch.ENABLED = True
    sys.exit(main(["bench", *sys.argv[1:]]))

"""The command line: ``sampling-harness`` and its subcommands (check, list, bench, selftest,
calibrate, reproduce, compare, simulate)."""

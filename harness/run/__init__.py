"""One check of one kernel: the pytest plugin, what a check sees, the validated kernel call,
the session that collects verdicts."""

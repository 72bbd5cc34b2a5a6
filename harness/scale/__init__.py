"""Scale-out: xdist workers and GPUs, torchrun ranks, the schedule, measured durations, the
Triton precompiler."""

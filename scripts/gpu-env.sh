# Sourced by the GPU scripts (bash), from the repository root: the environment they run in.
# Python prints unbuffered, Triton compiles for the GPU (never its interpreter), and the
# project is installed in editable mode from this checkout, offline: no index and no
# dependencies (torch and triton are the machine's own). A failed install is shown, not
# hidden. NO_INSTALL=1 skips it (a checkout installed already, a rehearsal on a CPU).
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
if [ -z "${NO_INSTALL:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
    || python3 -m pip install -q --no-index --no-deps --no-build-isolation -e .
fi

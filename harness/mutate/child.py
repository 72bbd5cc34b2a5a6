"""``python -m sampling_harness.mutate.child check FAMILY ...``: one child run of ``mutate``.

The ``check`` command as the CLI runs it (``sampling_harness.run.check_command.main``), with
what the environment asks for around it:

* ``SAMPLING_HARNESS_MUTATE_RECORD`` (and for a mutant ``..._AGAINST``, ``..._ORIGINAL``):
  record or compare every kernel call (harness/mutate/recorder.py, added to the run's
  pytest plugins);
* ``SAMPLING_HARNESS_MUTATE_TRACE`` (the original's run, of its instrumented copy): a JSON
  file naming the reachable source files (``files``, in the probes' numbering), their
  copies (``copies``) and where to write the lines run (``out``): the probes' builtin is
  installed before any module is imported (harness/mutate/coverage.py).

The exit code is the ``check`` command's.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from sampling_harness.mutate.coverage import ENV_TRACE

PLUGIN = "sampling_harness.mutate.recorder"


def main(argv: list[str]) -> int:
    spec = os.environ.get(ENV_TRACE)
    asked = json.loads(Path(spec).read_text()) if spec else None
    if asked is not None:
        from sampling_harness.mutate import coverage

        coverage.install()
    from sampling_harness.mutate import recorder
    from sampling_harness.run.check_command import main as check

    recorder.install()
    given = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    os.environ["PYTEST_PLUGINS"] = ",".join(dict.fromkeys([*given, PLUGIN]))
    try:
        return check(argv)
    finally:
        if asked is not None:
            _write_coverage(asked)
        if recorder.RECORDER is not None:
            recorder.RECORDER.write()


def _write_coverage(asked: dict) -> None:
    """The lines run, by original file: probed (host code; jit code interpreted) and
    compiled (the TTIR of the kernels launched from the copies)."""
    from sampling_harness.mutate import coverage

    files, copies = asked["files"], asked["copies"]
    probed: dict[str, set[int]] = {file: set() for file in files}
    for index, line in coverage.HITS:
        probed[files[index]].add(line)
    compiled = coverage.compiled_lines(copies)
    by_copy = {os.path.realpath(c): f for c, f in zip(copies, files, strict=True)}
    Path(asked["out"]).write_text(json.dumps({
        "interpreted": os.environ.get("TRITON_INTERPRET") == "1",
        "probed": {f: sorted(lines) for f, lines in probed.items()},
        "compiled": {by_copy[c]: sorted(lines) for c, lines in compiled.items()}}))

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

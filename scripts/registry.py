"""The registry for shell scripts: ``registry.py FAMILY ROLE`` prints the names of that role
(kernel, baseline, mutant; ``tested`` = kernel and baseline), one per line;
``registry.py FAMILY caught NAME`` prints the -k selection of the checks that catch a mutant;
``registry.py FAMILY tool NAME`` its compute-sanitizer tool (empty if none)."""

import sys

from sampling_harness.commands.selftest import selection
from sampling_harness.families.registry import by_role, default_kernels, entries

family, what, *rest = sys.argv[1:]
if what == "tested":
    print("\n".join(default_kernels(family)))
elif what in ("kernel", "baseline", "mutant"):
    print("\n".join(by_role(family, what)))
elif what == "caught":
    print(selection(entries(family)[rest[0]].meta["caught_by"]))
elif what == "tool":
    print(entries(family)[rest[0]].meta.get("tool", ""))
else:
    sys.exit(f"registry.py: unknown query {what!r}")

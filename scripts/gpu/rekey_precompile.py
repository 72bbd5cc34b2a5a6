"""The shipped precompile list re-keyed after a kernel change that keeps every variant: run on
a GPU machine (the keys are its Triton's), from the repository root.

A listed variant is compiled ahead only when its Triton cache key, computed from today's
source, equals the recorded one (harness/scale/precompile.py). An edit of a kernel's body
(its arithmetic, a comment, a docstring) changes the key of each of its variants but not
the variants a run compiles: the same signatures, constexprs and options. For such an edit
the entries' keys are computed again here; an edit that adds or removes a constexpr, an
argument or a launch setting needs scripts/gpu/record_precompile.sh (cold runs that see
which variants are compiled). Prints how many entries were stale before and after, and
writes the list to ``argv[1]`` (default: the shipped list, in place).
"""

import json
import sys
from pathlib import Path

from sampling_harness.scale import precompile


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else precompile.VARIANTS
    document = json.loads(precompile.VARIANTS.read_text())
    precompile.settle_cache_keys()
    stale = 0
    for entry in document["variants"]:
        key = precompile.cache_key(entry, 90)
        if key != entry["key"]:
            stale += 1
            entry["key"] = key
    rows = ",\n".join(json.dumps(entry) for entry in document["variants"])
    target.write_text(f'{{"about": {json.dumps(document["about"])},\n"variants": [\n{rows}\n]}}\n')
    after = sum(precompile.cache_key(e, 90) != e["key"] for e in precompile.listed(target))
    print(f"{stale} of {len(document['variants'])} entries re-keyed; {after} stale after")


if __name__ == "__main__":
    main()

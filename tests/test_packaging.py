"""One import name: the distribution installs the package ``sampling_harness`` alone, the
design's folders mapped under it (pyproject's package-dir), and no code, example or document
imports one of the generic names the folders have on disk (``harness``, ``kernels``,
``reference``, ``suites``: ``kernels`` is also Hugging Face's kernel hub). The fresh-venv
proof is tests/test_one_import_name.py."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
GENERIC = re.compile(r"^\s*(?:from|import)\s+(harness|kernels|reference|suites)\b", re.M)
SOURCES = ("harness", "kernels", "reference", "suites", "tests", "benchmarks", "scripts",
           "docs", "noxfile.py")


def test_the_listed_packages_are_the_folders_that_hold_an_init():
    setuptools = PYPROJECT["tool"]["setuptools"]
    mapped = setuptools["package-dir"]
    assert set(mapped) == {"sampling_harness", "sampling_harness.kernels",
                           "sampling_harness.reference", "sampling_harness.suites"}
    found = {".".join((name, *init.parent.relative_to(ROOT / folder).parts))
             for name, folder in mapped.items() for init in (ROOT / folder).rglob("__init__.py")}
    assert set(setuptools["packages"]) == found
    assert all(p == "sampling_harness" or p.startswith("sampling_harness.")
               for p in setuptools["packages"])


def test_no_source_imports_a_generic_top_level_name():
    paths = [p for s in SOURCES for p in ((ROOT / s).rglob("*.py") if (ROOT / s).is_dir()
                                          else [ROOT / s])]
    found = [f"{p.relative_to(ROOT)}: {m.group(0).strip()}" for p in paths
             for m in GENERIC.finditer(p.read_text())]
    assert not found, found


def test_every_entry_point_names_the_one_package():
    points = PYPROJECT["project"]["entry-points"]
    targets = [t for group in points.values() for t in group.values()]
    targets += list(PYPROJECT["project"]["scripts"].values())
    assert targets and all(t.startswith("sampling_harness.") for t in targets), targets

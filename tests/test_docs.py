"""The documents stay true to the repository: README.md and docs/ (no kernel runs).

* every relative link in README.md and docs/**/*.md resolves, and so does its #anchor
  (GitHub's heading slugs);
* every repository path the documents name (``harness/...``, ``scripts/...``) exists, and
  a one-off script cited as ``<commit>:<path>`` (removed from the tree) exists at that commit;
* README.md is a user document: under 300 lines, no dates, no "stop N", no "issue N";
* README.md's test command is what .ci/run runs;
* docs/reference/cli.md has a section for every subcommand and names every option;
* the documents that list the families (the how-to's contract table, cli.md's family lists
  and usage blocks) list every family.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
REPO_PATH = re.compile(r"(?<![\w./<:-])((?:harness|reference|kernels|suites|tests|scripts|"
                       r"docs|benchmarks|\.ci)/[\w./-]*[\w/])")
PLACEHOLDERS = ("top_n", "top-n")
COMMITTED_PATH = re.compile(r"\b([0-9a-f]{7,40}):"
                            r"((?:scripts|tests|benchmarks|harness|kernels)/[\w./-]*\w)")
HISTORY = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}|stop [0-9]+|issue [0-9]+")
TEST_COMMAND = "TRITON_INTERPRET=1 python -m pytest tests -q -n 2 --dist worksteal"


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (where a link is text)."""
    return CODE_SPAN.sub(" ", FENCE.sub(" ", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text (link targets, emphasis and code
    marks dropped), lower-cased, punctuation but hyphens and underscores removed, each space
    a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file; repeated headings get -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub(" ", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` whose file or anchor does not exist."""
    broken = []
    for target in LINK.findall(prose(path.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):      # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and (resolved.is_dir() or resolved.suffix != ".md"
                         or anchor not in anchors(resolved)):
            broken.append(f"{target} (no heading with anchor #{anchor})")
    return broken


def test_slugs_follow_github():
    assert slug("5. Keep it checked") == "5-keep-it-checked"
    assert slug("The split of alpha") == "the-split-of-alpha"
    assert slug("`check`") == "check"
    assert slug("Family `sample`: one token id per row") == "family-sample-one-token-id-per-row"
    assert slug("report.json") == "reportjson"


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_relative_links_resolve(path):
    assert not broken_links(path), f"{_name(path)}: broken links: {broken_links(path)}"


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_named_repository_paths_exist(path):
    text = re.sub(r"\]\([^)]*\)", "]", path.read_text(encoding="utf-8"))   # links: above
    missing = sorted({found for found in REPO_PATH.findall(text)
                      if not any(p in found for p in PLACEHOLDERS)
                      and not (ROOT / found).exists()})
    assert not missing, f"{_name(path)} names paths that do not exist: {missing}"


def _in_history(commit: str, path: str) -> bool | None:
    """Whether ``path`` exists at ``commit``; None where git or that commit is not here
    (a shallow clone)."""
    try:
        known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
                               capture_output=True, timeout=30)
        if known.returncode != 0:
            return None
        found = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}:{path}"],
                               capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.returncode == 0


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_cited_commit_paths_exist_at_their_commit(path):
    cited = sorted(set(COMMITTED_PATH.findall(path.read_text(encoding="utf-8"))))
    missing = [f"{c}:{p}" for c, p in cited if _in_history(c, p) is False]
    assert not missing, f"{_name(path)} cites commit:path pairs that do not exist: {missing}"


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## A section\n")
    page.write_text("[ok](other.md#a-section) [gone](missing.md) [bad](other.md#nowhere)\n"
                    "`[in code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n")
    assert broken_links(page) == ["missing.md (no such file)",
                                  "other.md#nowhere (no heading with anchor #nowhere)"]


def test_readme_is_a_short_user_document():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines (at most 299)"
    dated = [f"{n}: {line}" for n, line in enumerate(lines, 1) if HISTORY.search(line)]
    assert not dated, f"README.md holds dates or history (move them to CHANGELOG.md): {dated}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ('pip install torch==2.13.0 && pip install -e ".[dev]" && ' + TEST_COMMAND) in readme
    assert ('pip install torch==2.13.0 && pip install -e ".[dev]" && '
            "sampling-harness check all --budget smoke") in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci.splitlines(), ".ci/run does not run the README's test command"


def test_cli_reference_covers_every_subcommand_and_option():
    from sampling_harness.commands.cli import _parser

    reference = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    parser = _parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = []
    for name, sub in commands.choices.items():
        if f"## `{name}`" not in reference:
            missing.append(f"section `{name}`")
        for action in sub._actions:
            missing += [f"{name} {option}" for option in action.option_strings
                        if option.startswith("--") and option != "--help"
                        and option not in reference]
    assert not missing, ("docs/reference/cli.md misses (paste `sampling-harness COMMAND "
                         f"--help` into its section): {missing}")


def test_family_lists_hold_every_family():
    from sampling_harness.families import FAMILIES

    howto = (ROOT / "docs" / "how-to" / "check-your-kernel.md").read_text(encoding="utf-8")
    missing = [f"check-your-kernel.md: {f}" for f in FAMILIES
               if f"| [{f}](../families/{f}.md) | `fn(" not in howto]
    reference = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    missing += [f"cli.md: `{f}`" for f in FAMILIES if f"`{f}`" not in reference]
    for block in FENCE.finditer(reference):
        text = " ".join(re.sub(r"-\n\s+", "-", block.group(0)).split())   # argparse wraps at -
        listed = re.search(r"\{sample,|family sample \|", text)     # choices or FAMILY's help
        if text.startswith("``` usage: sampling-harness") and listed:
            missing += [f"cli.md, {text.split()[3]} usage: {f}" for f in FAMILIES
                        if not re.search(rf"(?<![\w-]){f}(?![\w-])", text)]
    assert not missing, f"family lists that miss a family (sampling-harness list): {missing}"

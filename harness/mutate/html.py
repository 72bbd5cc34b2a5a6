"""report.html of ``mutate``: one self-contained page (no network, no figures).

The score and the outcome counts, the score per operator and per line, every mutant (each
linked to its line), each gap with its inputs and both outputs, each undecided mutant
("undecided (power N)": its law test could not decide; outside the score) and each same-law
mutant with its law test, then the source view: every module with a chosen mutant, line by
line, each mutated line coloured by the worst outcome of its mutants (gap, error,
undecided, same-law, equivalent, dead, stillborn, killed) with their list on hover.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from sampling_harness.mutate.classify import OUTCOMES, Result, by_line, by_operator, table
from sampling_harness.mutate.report import SCORE_HEADER, gap_details, score_row
from sampling_harness.report.html import STYLE as BASE_STYLE

COLOURS = {"killed": "#d5f5e3", "gap": "#f5b7b1", "undecided": "#d1f2eb", "same-law": "#d6eaf8",
           "equivalent": "#fcf3cf", "dead": "#d5d8dc", "stillborn": "#e8daef",
           "error": "#fad7a0"}
WORST = ("gap", "error", "undecided", "same-law", "equivalent", "dead", "stillborn", "killed")
STYLE = BASE_STYLE + "".join(f".o-{o} {{ background: {c}; }}\n" for o, c in COLOURS.items()) + """
pre.source { font: 12px/1.35 ui-monospace, monospace; border: 1px solid #ddd; padding: 0;
  overflow-x: auto; }
pre.source span.l { display: block; padding: 0 .5em; white-space: pre; }
pre.source span.n { color: #999; display: inline-block; width: 4em; user-select: none; }
.legend span { padding: .1em .6em; margin-right: .4em; border-radius: 3px; }
"""


def _table(head: list[str], rows: list[list[str]]) -> str:
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<table class="checks"><thead><tr>{"".join(f"<th>{escape(h)}</th>" for h in head)}'
            f"</tr></thead><tbody>{body}</tbody></table>")


def _line_id(result: Result, files: dict[str, int]) -> str:
    return f"f{files[result.site.path]}-L{result.site.line}"


def _badge(outcome: str, text: str | None = None) -> str:
    return f'<span class="o-{outcome}" style="padding:0 .4em">{escape(text or outcome)}</span>'


def _grouped(results: list[Result], key, title: str) -> str:
    rows = [[escape(name), *(str(counts[o]) for o in OUTCOMES), escape(group.text)]
            for name, counts, group in table(results, key)]
    return _table([title, *OUTCOMES, "score"], rows)


def _mutants(results: list[Result], files: dict[str, int]) -> str:
    rows = [[escape(r.id), f'<a href="#{_line_id(r, files)}"><code>{escape(r.site.label)}'
             f"</code></a>", escape(r.site.operator), _badge(r.outcome, r.outcome_text),
             escape(r.check or "-"),
             f"{r.seconds:.1f}", escape(r.detail)] for r in sorted(results, key=lambda r: r.id)]
    return _table(["mutant", "site", "operator", "outcome", "check", "seconds", "detail"], rows)


def _gap(result: Result, files: dict[str, int]) -> str:
    """A gap's (or undecided or same-law mutant's) section: its heading linked to its line,
    then its facts (``gap_details``)."""
    head, *facts = [line for line in gap_details(result) if line]
    items = "".join(f"<li>{escape(fact.removeprefix('- '))}</li>" for fact in facts)
    kind = "bad" if result.outcome == "gap" else f"o-{result.outcome}"
    return (f'<section class="check {kind}"><h3><a href="#{_line_id(result, files)}">'
            f"{escape(head.removeprefix('### '))}</a></h3><ul>{items}</ul></section>")


def _source(path: str, index: int, results: list[Result]) -> str:
    """One file, every line numbered; mutated lines coloured and titled with their mutants."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return f"<p class=muted>{escape(path)}: cannot be read</p>"
    at: dict[int, list[Result]] = {}
    for r in results:
        at.setdefault(r.site.line, []).append(r)
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        mutants = at.get(number, [])
        attributes = f'id="f{index}-L{number}"'
        if mutants:
            worst = min(WORST.index(r.outcome) for r in mutants)
            title = "\n".join(f"{r.id} {r.site.operator} `{r.site.original}` -> "
                              f"`{r.site.replacement}`: {r.outcome_text}" for r in mutants)
            attributes += f' class="l o-{WORST[worst]}" title="{escape(title, quote=True)}"'
        else:
            attributes += ' class="l"'
        lines.append(f'<span {attributes}><span class="n">{number}</span>{escape(line)}</span>')
    return f"<h3><code>{escape(path)}</code></h3>\n<pre class=source>{''.join(lines)}</pre>"


def to_html(results: list[Result], meta: dict) -> str:
    files = {path: i for i, path in enumerate(sorted({r.site.path for r in results}))}
    legend = "".join(f'<span class="o-{o}">{o}</span>' for o in WORST)
    gaps = [r for r in results if r.outcome == "gap"]
    gap_html = "".join(_gap(r, files) for r in gaps)
    undecided = [r for r in results if r.outcome == "undecided"]
    undecided_html = "".join(_gap(r, files) for r in undecided)
    same = [r for r in results if r.outcome == "same-law"]
    same_html = "".join(_gap(r, files) for r in same)
    sources = "\n".join(_source(path, i, [r for r in results if r.site.path == path])
                        for path, i in files.items())
    title = f"sampling-harness mutate: {meta.get('family')} / {meta.get('kernel')}"
    incomplete = "" if meta.get("complete", True) else \
        '<div class="banner">INCOMPLETE: stopped before every mutant ran</div>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<link rel="icon" href="data:,"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n<h1>{escape(title)}</h1>{incomplete}\n"
            f"<p><code>{escape(str(meta.get('command', '')))}</code></p>\n"
            f"{_table(SCORE_HEADER, [[escape(str(c)) for c in score_row(results, meta)]])}\n"
            f"<h2>Per operator</h2>{_grouped(results, by_operator, 'operator')}\n"
            f"<h2>Per source line</h2>{_grouped(results, by_line, 'line')}\n"
            f"<h2>Mutants</h2>{_mutants(results, files)}\n"
            + (f"<h2>Gaps</h2>{gap_html}\n" if gaps else "")
            + (f"<h2>Undecided</h2><p>Outputs differ on the same seed; the two-sample law "
               f"test could not decide (too weak for the budget's target, whose power it "
               f"states, or no test): outside the score.</p>{undecided_html}\n"
               if undecided else "")
            + (f"<h2>Same law</h2><p>Outputs differ on the same seed; a two-sample "
               f"chi-square test over fresh seeds cannot tell the laws apart.</p>"
               f"{same_html}\n" if same else "")
            + f'<h2>Source</h2><p class="legend">{legend}</p>\n{sources}\n</body></html>\n')

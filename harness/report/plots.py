"""Plot data that checks attach to their outcomes, and its rendering as small PNG figures.

Convention. A check that has a picture explaining its verdict puts one JSON-serialisable
dict in ``Outcome.details["plot"]``, built by one of the builders below (never by hand):
``{"kind": KIND, "title": str, ...}``, every array a list of at most ``CAP`` numbers
(finite floats rounded to 6 significant digits, TME to 17; a non-finite value is None).
The kinds:

* ``counts`` (``counts_plot``): observed against expected counts over the pooled bins of a
  chi-square test (bins in pooling order: sparsest first), the standardised residuals
  (O - E) / sqrt(E), the worst bins named (``worst``), p-value, statistic and df. A check with
  several sub-tests shows the one its message names: the first with the smallest p-value.
  More than ``CAP`` bins are summed in runs of ``merged`` neighbours (the worst bins are
  found before merging).
* ``tail`` (``tail_plot``): per rarity scale, the exact rare mass and the observed rare
  frequency with its 95% Clopper-Pearson interval.
* ``lengths`` (``lengths_plot``): the histogram of an acceptance length A = 0..n against
  its exact law.
* ``errors`` (``errors_plot``): the distribution of |value - reference| (quantiles of the
  sorted errors), the largest tolerance, the count over their own tolerance, TME and its
  bound.

Checks build one candidate per sub-test (a ``"plot"`` key in each record) and keep one with
``pop_plot``, which also removes the candidates so that the report's records stay small.
A check with no plot data gets no figure. ``render`` draws a plot dict (matplotlib, Agg,
imported on first use) and returns PNG bytes.
"""

from __future__ import annotations

import io
import math

import numpy as np

from sampling_harness.stats.binomial import clopper_pearson
from sampling_harness.stats.chisquare import pooled_counts

CAP = 320            # entries per array in plot data
WORST = 5            # worst bins named in a counts plot
DPI = 80
SIZE = (7.2, 3.6)    # inches: 576 x 288 pixels at DPI


def _num(value, digits: int = 6) -> float | None:
    """A finite float rounded to ``digits`` significant digits, or None."""
    value = float(value)
    return float(f"{value:.{digits}g}") if math.isfinite(value) else None


def _nums(values) -> list:
    return [_num(v) for v in np.ravel(np.asarray(values, dtype=np.float64))]


def _worst_bins(observed, expected, labels, unit: str, ids) -> list[dict]:
    """The ``WORST`` bins of largest |O - E| / sqrt(E), each named by its token when alone."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(expected > 0, (observed - expected) / np.sqrt(expected), 0.0)
    keep = labels >= 0
    sizes = np.bincount(labels[keep], minlength=observed.size)
    first = np.full(observed.size, -1)
    first[labels[keep][::-1]] = np.flatnonzero(keep)[::-1]
    worst = []
    for b in np.argsort(-np.abs(z), kind="stable")[:WORST]:
        token = int(first[b]) if ids is None else int(ids[first[b]])
        name = f"{unit} {token}" if sizes[b] == 1 else f"bin {b} ({sizes[b]} {unit}s)"
        worst.append({"bin": int(b), "label": name, "observed": _num(observed[b]),
                      "expected": _num(expected[b]), "z": _num(z[b])})
    return worst


def counts_plot(title: str, counts, probs, labels, p_value: float, statistic: float | None = None,
                df: int | None = None, unit: str = "token", ids=None) -> dict:
    """Plot data of one pooled chi-square test (``labels`` from ``pool_bins``; ``ids`` maps
    a position of ``counts`` to the token id it stands for, when ``counts`` is a subset)."""
    counts, probs = np.ravel(np.asarray(counts, np.float64)), np.ravel(np.asarray(probs))
    labels = np.ravel(np.asarray(labels))
    observed, expected = pooled_counts(counts, probs, labels)
    bins = observed.size
    worst = _worst_bins(observed, expected, labels, unit, ids)
    merged = max(1, math.ceil(observed.size / CAP))
    if merged > 1:
        starts = np.arange(0, observed.size, merged)
        observed, expected = np.add.reduceat(observed, starts), np.add.reduceat(expected, starts)
    for w in worst:
        w["at"] = w["bin"] // merged
    return {"kind": "counts", "title": title, "unit": unit, "bins": bins,
            "merged": merged, "observed": _nums(observed), "expected": _nums(expected),
            "impossible": int(counts[probs <= 0].sum()), "p_value": _num(p_value),
            "statistic": None if statistic is None else _num(statistic), "df": df,
            "worst": worst}


def tail_plot(scales: list[dict], title: str = "rare mass per scale") -> dict:
    """Plot data of a tail check from its scale records (``scale``, ``rare_mass``,
    ``rare_wins``, ``rows``, ``p_value``), at most ``CAP`` scales."""
    scales = scales[:CAP]
    bounds = [clopper_pearson(s["rare_wins"], s["rows"]) for s in scales]
    return {"kind": "tail", "title": title, "scales": _nums([s["scale"] for s in scales]),
            "expected": _nums([s["rare_mass"] for s in scales]),
            "observed": _nums([s["rare_wins"] / max(s["rows"], 1) for s in scales]),
            "low": _nums([b[0] for b in bounds]), "high": _nums([b[1] for b in bounds]),
            "wins": [int(s["rare_wins"]) for s in scales],
            "rows": [int(s["rows"]) for s in scales],
            "p_values": _nums([s["p_value"] for s in scales])}


def lengths_plot(title: str, counts, law, p_value: float) -> dict:
    """Plot data of an acceptance-length histogram (``counts`` of A = 0..n) and its law."""
    counts = np.ravel(np.asarray(counts, np.float64))[:CAP]
    law = np.ravel(np.asarray(law, np.float64))[:CAP]
    draws = float(counts.sum())
    return {"kind": "lengths", "title": title, "observed": _nums(counts),
            "expected": _nums(law * draws), "draws": int(draws), "p_value": _num(p_value)}


def errors_plot(title: str, errors, tolerances, tme: float | None = None,
                tme_bound: float | None = None) -> dict:
    """Plot data of absolute errors |value - reference| (NaN counts as infinite) against
    their per-value tolerances: quantiles of the errors, the largest tolerance, the count of
    values over their own tolerance, and TME with its bound when given."""
    errors = np.ravel(np.asarray(errors, np.float64))
    tolerances = np.ravel(np.asarray(tolerances, np.float64))
    errors = np.where(np.isnan(errors), np.inf, errors)
    finite = np.sort(errors[np.isfinite(errors) & (errors > 0)])
    picks = np.unique(np.linspace(0, finite.size - 1, min(CAP, finite.size)).round().astype(int))
    zeros = int((errors == 0).sum())
    return {"kind": "errors", "title": title, "tokens": int(errors.size), "zeros": zeros,
            "nonfinite": int((~np.isfinite(errors)).sum()),
            "over": int((errors > tolerances).sum()),
            "errors": _nums(finite[picks]),
            "fractions": _nums((zeros + picks + 1) / max(errors.size, 1)),
            "tolerance": _num(tolerances.max()) if tolerances.size else None,
            "tme": None if tme is None else _num(tme, 17),
            "tme_bound": None if tme_bound is None else _num(tme_bound, 17)}


def by_p_value(record: dict):
    """Sort key of ``pop_plot``: the smallest p-value first (the first among equals)."""
    p = record.get("p_value")
    return 2.0 if p is None or not p == p else p


def by_error(record: dict):
    """Sort key of ``pop_plot`` for errors plots: most values over their tolerance first,
    then the largest TME relative to its bound."""
    plot = record["plot"]
    ratio = (plot["tme"] or math.inf) / plot["tme_bound"] if plot["tme_bound"] else 0.0
    return (-plot["over"], -plot["nonfinite"], -ratio)


def pop_plot(records: list[dict], key=by_p_value, prefix=None) -> dict | None:
    """Remove the ``"plot"`` key from every record and return the plot of the record that
    ``key`` ranks first (None if none has one); ``prefix(record)`` is put before its title."""
    best, chosen = None, None
    for record in records:
        if record.get("plot") is not None and (best is None or key(record) < best):
            best, chosen = key(record), record
    plot = chosen.pop("plot") if chosen is not None else None
    for record in records:
        record.pop("plot", None)
    if plot is not None and prefix is not None:
        plot["title"] = f"{prefix(chosen)}: {plot['title']}"
    return plot


# Rendering: one small figure per plot dict.

def _fmt(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def _array(values) -> np.ndarray:
    """A plot array back as float64, None as NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _decade(value: float, _position=None) -> str:
    """A log axis's tick label as plain text ("1e-6", "100"): mathtext labels are parsed
    per figure, the largest cost of a small one."""
    return f"{value:g}" if 1e-3 <= value < 1e4 else \
        f"{value:.0e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")


def _log(ax, which: str) -> None:
    """Put ``ax``'s ``which`` axis ("x" or "y") on a log scale with plain labels on its
    decades and no minor ticks (each tick is an object laid out per figure: minor ones cost
    most of the time)."""
    from matplotlib.ticker import FuncFormatter, NullLocator
    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_major_formatter(FuncFormatter(_decade))
    axis.set_minor_locator(NullLocator())


def _draw_counts(fig, plot: dict) -> None:
    from matplotlib.ticker import MaxNLocator
    observed, expected = _array(plot["observed"]), _array(plot["expected"])
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    x = np.arange(observed.size)
    edges = np.arange(observed.size + 1) - 0.5        # one filled step path, not a bar each
    top.stairs(np.nan_to_num(expected), edges, fill=True, color="#d5d8dc", label="expected")
    top.plot(x, observed, "o", ms=3 if x.size > 60 else 4, color="#c0392b", label="observed")
    positive = np.concatenate([observed[observed > 0], expected[expected > 0]])
    if positive.size and positive.max() / positive.min() > 30:
        _log(top, "y")
    top.set_ylabel("draws per bin")
    top.legend(loc="best", fontsize=7, frameon=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(expected > 0, (observed - expected) / np.sqrt(expected), 0.0)
    z = np.nan_to_num(z)
    far = np.abs(z) > 3
    bottom.stairs(np.where(far, 0.0, z), edges, fill=True, color="#999")
    bottom.stairs(np.where(far, z, 0.0), edges, fill=True, color="#c0392b")
    bottom.axhline(0, color="#333", lw=0.6)
    reach = max(float(np.abs(z).max(initial=0.0)), 3.0)
    bottom.set_ylim(-1.45 * reach, 1.45 * reach)
    bottom.set_ylabel("(O-E)/√E")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    named: list[int] = []
    for w in plot["worst"][:3]:  # the label on the other side of 0 from its bar
        at = w["at"]
        if 0 <= at < x.size and z[at] != 0 and all(abs(at - n) > x.size / 8 for n in named):
            named.append(at)
            bottom.annotate(w["label"], (at, 0), xytext=(0, -2 if z[at] > 0 else 2),
                            textcoords="offset points", fontsize=7, ha="center",
                            va="top" if z[at] > 0 else "bottom", color="#7b241c",
                            bbox={"fc": "white", "alpha": 0.75, "lw": 0, "pad": 0.5})
    merged = f", each point {plot['merged']} bins" if plot["merged"] > 1 else ""
    bottom.set_xlabel(f"pooled bin, sparsest first ({plot['bins']} bins{merged})")
    extra = f"; {plot['impossible']} draws at probability 0" if plot["impossible"] else ""
    top.set_title(f"{plot['title']}\nχ² = {_fmt(plot['statistic'], '.1f')} on {plot['df']} df, "
                  f"p = {_fmt(plot['p_value'], '.2g')}{extra}", fontsize=10)


def _draw_tail(fig, plot: dict) -> None:
    ax = fig.subplots()
    x = _array(plot["scales"])
    expected, observed = _array(plot["expected"]), _array(plot["observed"])
    low, high = _array(plot["low"]), _array(plot["high"])
    ax.plot(x, expected, "s--", ms=5, mfc="none", color="#555", label="exact rare mass")
    seen = observed > 0
    ax.errorbar(x[seen], observed[seen], yerr=[observed[seen] - low[seen],
                                              high[seen] - observed[seen]],
                fmt="o", ms=4, capsize=3, color="#c0392b", label="observed (95% interval)")
    if (~seen).any():
        ax.plot(x[~seen], high[~seen], "v", ms=6, color="#c0392b",
                label="no rare win: upper bound")
    for i in range(x.size):
        if plot["wins"][i] is not None and np.isfinite(expected[i]):
            ax.annotate(f"{plot['wins'][i]:,} wins\n({expected[i] * plot['rows'][i]:,.1f} due)",
                        (x[i], observed[i] if seen[i] else high[i]), xytext=(6, 0),
                        textcoords="offset points", fontsize=7, va="center", color="#7b241c")
    _log(ax, "x")
    _log(ax, "y")
    values = np.concatenate([expected, low[low > 0], high])
    values = values[np.isfinite(values) & (values > 0)]
    if values.size:  # at least a decade: equal masses must not blow up the intervals
        middle = math.sqrt(values.min() * values.max())
        ax.set_ylim(min(values.min() / 1.5, middle / 3.2), max(values.max() * 1.5, middle * 3.2))
    if np.isfinite(x).any():
        ax.set_xlim(np.nanmin(x) / 3, np.nanmax(x) * 6)
    ax.set_xlabel("rarity scale (rare / head probability)")
    ax.set_ylabel("rare mass per row")
    ax.legend(fontsize=7, frameon=False)
    worst = min((p for p in plot["p_values"] if p is not None), default=None)
    ax.set_title(f"{plot['title']}: smallest p = {_fmt(worst, '.2g')}", fontsize=10)


def _draw_lengths(fig, plot: dict) -> None:
    ax = fig.subplots()
    observed, expected = _array(plot["observed"]), _array(plot["expected"])
    x = np.arange(observed.size)
    draws = max(plot["draws"], 1)
    spread = 2 * np.sqrt(np.maximum(expected * (1 - expected / draws), 0))
    ax.bar(x, observed, width=0.6, color="#e6b0aa", label="observed")
    ax.errorbar(x, expected, yerr=spread, fmt="o", ms=4, capsize=3, color="#333",
                label="exact law ± 2 sd")
    positive = np.concatenate([observed[observed > 0], expected[expected > 0]])
    if positive.size and positive.max() / positive.min() > 30:
        _log(ax, "y")
    ax.set_xticks(x)
    ax.set_xlabel("accepted drafts A")
    ax.set_ylabel("draws")
    ax.legend(fontsize=7, frameon=False)
    ax.set_title(f"{plot['title']}: {plot['draws']:,} draws, p = {_fmt(plot['p_value'], '.2g')}",
                 fontsize=10)


def _draw_errors(fig, plot: dict) -> None:
    ax = fig.subplots()
    errors, fractions = _array(plot["errors"]), _array(plot["fractions"])
    start = plot["zeros"] / max(plot["tokens"], 1)
    if errors.size:
        ax.step(np.concatenate([[errors[0]], errors]), np.concatenate([[start], fractions]),
                where="post", color="#2e86c1", label="|value - reference|")
        _log(ax, "x")
    else:
        ax.text(0.5, 0.5, "no nonzero finite error", ha="center", transform=ax.transAxes)
    lines = [("largest tolerance", plot["tolerance"], "#c0392b", "--")]
    if plot["tme_bound"] is not None:
        lines += [("ln TME", math.log(plot["tme"]) if plot["tme"] else None, "#117a65", "-"),
                  ("ln TME bound", math.log(plot["tme_bound"]), "#b9770e", ":")]
    for name, value, colour, style in lines:
        if value is not None and value > 0:
            ax.axvline(value, color=colour, ls=style, lw=1.2, label=f"{name} {value:.2g}")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("absolute error")
    ax.set_ylabel("fraction of values ≤ error")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, frameon=False, loc="lower right")
    tme = "" if plot["tme_bound"] is None else (
        f", TME {_fmt(plot['tme'], '.9g' if plot['tme'] < 10 else '.3g') if plot['tme'] else 'inf'}"
        f" (bound {_fmt(plot['tme_bound'], '.9g')})")
    ax.set_title(f"{plot['title']}\n{plot['tokens']:,} values, {plot['zeros']:,} exact, "
                 f"{plot['over']:,} over tolerance, {plot['nonfinite']} non-finite{tme}",
                 fontsize=10)


DRAW = {"counts": _draw_counts, "tail": _draw_tail, "lengths": _draw_lengths,
        "errors": _draw_errors}


def render(plot: dict) -> bytes:
    """The PNG of one plot dict (``SIZE`` at ``DPI``); ValueError for an unknown kind."""
    if plot.get("kind") not in DRAW:
        raise ValueError(f"unknown plot kind {plot.get('kind')!r}")
    from matplotlib.figure import Figure  # Agg through Figure.savefig: no pyplot state
    fig = Figure(figsize=SIZE, dpi=DPI)  # fixed margins: a layout engine doubles the cost
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.14, top=0.86, hspace=0.1)
    DRAW[plot["kind"]](fig, plot)
    for ax in fig.axes:
        ax.tick_params(labelsize=8)
        ax.xaxis.label.set_size(9)
        ax.yaxis.label.set_size(9)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()

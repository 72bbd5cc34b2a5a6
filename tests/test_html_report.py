"""report.html: the plot builders on synthetic data, the page with odd values, and a real run
opened in a headless Chromium (skipped where chromium or chromedriver is not installed)."""

from __future__ import annotations

import json
import math
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sampling_harness.report.html import STYLE, FigureCache, to_html
from sampling_harness.report.plots import (
    CAP,
    by_error,
    counts_plot,
    errors_plot,
    lengths_plot,
    pop_plot,
    render,
    tail_plot,
)
from sampling_harness.report.writers import write_all
from sampling_harness.stats.binomial import clopper_pearson
from sampling_harness.stats.chisquare import chisquare_gof, pool_bins, pooled_counts
from sampling_harness.verdict import Verdict
from tests.helpers import cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
BROWSER = Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()
META = {"budget": "smoke", "device": "cpu", "harness_seed": 7, "family_alpha": 1e-4,
        "statistical_checks": 2, "started": "2026-01-01T00:00:00+00:00",
        "families": ["sample"], "complete": False}


def verdict(name: str, state: str = "pass", plot: dict | None = None, **fields) -> Verdict:
    values = dict(name=name, family="sample", kernel="k", target="k", check=name, verdict=state,
                  statistic=1.0, p_value=0.5, alpha=1e-5, samples=100,
                  min_detectable_effect=0.1, effect="total variation", seed=1, duration=0.1,
                  device="cpu", message=f"{name} said {state}",
                  reproduce=f"sampling-harness check sample -k test_{name}",
                  details={} if plot is None else {"plot": plot})
    return Verdict(**{**values, **fields})


def drawn(probs: np.ndarray, draws: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).multinomial(draws, probs / probs.sum())


def css_rules(style: str) -> dict[str, dict[str, str]]:
    """selector -> {property: value} of a flat style sheet (no at-rules)."""
    rules = {}
    for block in style.split("}"):
        selectors, _, body = block.partition("{")
        props = dict(p.split(":", 1) for p in body.split(";") if ":" in p)
        for selector in selectors.split(","):
            if selector.strip():
                rules.setdefault(" ".join(selector.split()), {}).update(
                    {k.strip(): v.strip() for k, v in props.items()})
    return rules


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb (or #rgb) colours (1 to 21)."""
    def luminance(colour: str) -> float:
        colour = colour if len(colour) == 7 else "#" + "".join(c * 2 for c in colour[1:])
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
                  for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


SHOWN_COLOURS = """
let e = arguments[0], back = "rgb(255, 255, 255)";
for (let up = e; up; up = up.parentElement) {
  const b = getComputedStyle(up).backgroundColor;
  if (b !== "transparent" && b !== "rgba(0, 0, 0, 0)") { back = b; break; }
}
return [getComputedStyle(e).color, back];
"""   # an element's text colour and the first opaque background under it (white: the page)


def hex_of(css: str) -> str:
    """'rgb(77, 86, 86)' (a computed colour) as '#4d5656'."""
    return "#" + "".join(f"{int(v):02x}" for v in re.findall(r"\d+", css)[:3])


def test_pooled_counts_are_what_the_chisquare_compares():
    probs = np.random.default_rng(1).dirichlet(np.full(300, 0.3))
    counts = drawn(probs, 5000)
    labels = pool_bins(5000 * probs)
    observed, expected = pooled_counts(counts, probs, labels)
    statistic, df, _ = chisquare_gof(counts, probs, labels)
    assert observed.sum() == pytest.approx(expected.sum())
    assert df == observed.size - 1
    assert stats.chisquare(observed, expected)[0] == pytest.approx(statistic)


def test_counts_plot_names_the_worst_token_and_caps_its_arrays():
    probs = np.full(2000, 1 / 2000)
    counts = drawn(probs, 200_000)
    counts[1234] += 300                                  # one token drawn far too often
    labels = pool_bins(counts.sum() * probs)
    statistic, df, p_value = chisquare_gof(counts, probs, labels)
    plot = counts_plot("uniform", counts, probs, labels, p_value, statistic, df)
    assert plot["bins"] == 2000 and plot["merged"] == math.ceil(2000 / CAP)
    assert len(plot["observed"]) == len(plot["expected"]) <= CAP
    assert plot["worst"][0]["label"] == "token 1234" and plot["worst"][0]["z"] > 15
    assert plot["worst"][0]["at"] == 1234 // plot["merged"]
    assert sum(plot["observed"]) == pytest.approx(counts.sum())
    json.dumps(plot, allow_nan=False)


def test_counts_plot_maps_subset_ids_and_counts_impossible_draws():
    probs = np.array([0.0, 0.5, 0.0, 0.5])
    counts = np.array([3, 40, 0, 60])
    labels = pool_bins(100 * probs)
    plot = counts_plot("subset", counts[[1, 3]], probs[[1, 3]], labels[[1, 3]], 0.04,
                       ids=np.array([1, 3]))
    assert {w["label"] for w in plot["worst"]} == {"token 1", "token 3"}
    assert counts_plot("all", counts, probs, labels, 0.0)["impossible"] == 3


def test_tail_plot_intervals():
    scales = [{"scale": 1e-2, "rare_mass": 0.01, "rare_wins": 0, "rows": 1000, "p_value": 1e-4},
              {"scale": 1e-4, "rare_mass": 0.01, "rare_wins": 12, "rows": 1000, "p_value": 0.5}]
    plot = tail_plot(scales)
    assert plot["low"][0] == 0
    assert plot["high"][0] == pytest.approx(1 - 0.025 ** (1 / 1000), rel=1e-5)
    assert plot["low"][1] < plot["observed"][1] == 0.012 < plot["high"][1]
    assert clopper_pearson(5, 5) == (pytest.approx(0.025 ** (1 / 5)), 1.0)
    json.dumps(plot, allow_nan=False)


def test_lengths_plot_expects_every_draw():
    law = np.array([0.5, 0.3, 0.2])
    plot = lengths_plot("A", [48, 33, 19], law, 0.7)
    assert plot["draws"] == 100 and plot["expected"] == [50.0, 30.0, 20.0]


def test_errors_plot_counts_exact_nonfinite_and_over_tolerance():
    rng = np.random.default_rng(2)
    errors = np.concatenate([rng.exponential(1e-7, 1000), [0.0] * 50, [np.inf, np.nan, 0.5]])
    tolerances = np.full(errors.size, 1e-6)
    plot = errors_plot("raw_logprobs", errors, tolerances, tme=math.inf, tme_bound=1.000001)
    assert plot["tokens"] == 1053 and plot["zeros"] == 50 and plot["nonfinite"] == 2
    assert plot["over"] == int((errors[:1000] > 1e-6).sum()) + 3
    assert len(plot["errors"]) <= CAP and plot["errors"] == sorted(plot["errors"])
    assert 0 < plot["fractions"][0] and plot["fractions"][-1] <= 1.0
    assert plot["tme"] is None and plot["tme_bound"] == 1.000001
    json.dumps(plot, allow_nan=False)


def test_pop_plot_keeps_the_first_smallest_p_value_and_strips_the_rest():
    records = [{"name": "a", "p_value": 0.0, "plot": {"title": "a"}},
               {"name": "b", "p_value": 0.0, "plot": {"title": "b"}},
               {"name": "c", "p_value": 1e-9},
               {"name": "d", "p_value": 0.3, "plot": None}]
    plot = pop_plot(records, prefix=lambda r: r["name"].upper())
    assert plot == {"title": "A: a"} and all("plot" not in r for r in records)
    assert pop_plot([{"p_value": 0.1}]) is None
    worse = errors_plot("w", [1.0], [0.1])
    better = errors_plot("b", [1e-9], [0.1], tme=1.0, tme_bound=1.1)
    assert pop_plot([{"plot": better}, {"plot": worse}], by_error) is worse


def synthetic_plots() -> list[dict]:
    probs = np.random.default_rng(3).dirichlet(np.ones(40))
    counts = drawn(probs, 4000)
    labels = pool_bins(4000 * probs, max_bins=16)
    scales = [{"scale": s, "rare_mass": 0.01, "rare_wins": w, "rows": 5000, "p_value": 0.2}
              for s, w in ((1e-2, 50), (1e-6, 0))]
    return [counts_plot("fit", counts, probs, labels, 0.3, 12.0, 15),
            tail_plot(scales), lengths_plot("A", [10, 30, 60], [0.1, 0.3, 0.6], 0.9),
            errors_plot("lp", [0.0, 1e-8, 2e-7, np.nan], [1e-6] * 4, 1.0000002, 1.000001),
            errors_plot("nothing", [0.0, 0.0], [0.0, 0.0])]


@pytest.mark.parametrize("index", range(5))
def test_every_kind_renders_a_png(index):
    assert render(synthetic_plots()[index])[:8] == b"\x89PNG\r\n\x1a\n"


def test_page_with_no_plot_data_nan_inf_and_markup_in_messages():
    odd = verdict("odd", "error", p_value=math.nan, alpha=math.inf, samples=None,
                  statistic=-math.inf, min_detectable_effect=None,
                  message="<script>alert(1)</script> & co")
    page = to_html([verdict("plain"), odd], META, FigureCache())
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "nan" in page and "inf" in page and "incomplete" in page
    assert "<img" not in page and page.index("&lt;script") < page.index("plain said")
    assert to_html([], META, FigureCache()).count("ERROR") >= 1


def test_page_survives_plots_it_cannot_draw():
    broken = [{"kind": "counts", "title": "nan", "unit": "token", "bins": 2, "merged": 1,
               "observed": [None, None], "expected": [None, 1.0], "impossible": 0,
               "p_value": None, "statistic": None, "df": None, "worst": []},
              {"kind": "no-such-kind", "title": "?"}]
    cache = FigureCache()
    page = to_html([verdict("a", "fail", plot=broken[0]), verdict("b", plot=broken[1])], META,
                   cache)
    assert "unknown plot kind" in page and page.count("<section") == 2


def test_figures_render_once_per_plot(tmp_path):
    cache = FigureCache()
    checks = [verdict(f"c{i}", "fail" if i == 1 else "pass", plot=p)
              for i, p in enumerate(synthetic_plots())]
    for n in range(1, len(checks) + 1):
        to_html(checks[:n], META, cache)
    assert cache.renders == len(checks)
    page = to_html(checks, META, cache)
    assert page.count('<img class="plot" src="data:image/png;base64,') == len(checks)
    assert "http://" not in page and "https://" not in page
    write_all(tmp_path, checks, {**META, "complete": True})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.html",
                                                          "report.json", "summary.md"]
    assert "<td>complete</td>" in (tmp_path / "report.html").read_text()


def test_an_incomplete_run_is_never_green(tmp_path):
    """Every check that finished passed, but 3 of 5 did: INCOMPLETE in all four files."""
    meta = {**META, "complete": False, "selected": 5, "not_finished": ["x::a", "x::b", "x::c"]}
    write_all(tmp_path, [verdict("a"), verdict("b")], meta)
    page = (tmp_path / "report.html").read_text()
    assert '<span class="badge incomplete">INCOMPLETE</span></h1>' in page
    assert "badge pass\">PASS" not in page and "2 of 5 checks finished" in page
    colour = re.search(r"\.incomplete \{ background: (#[0-9a-f]{6})", page).group(1)
    assert colour not in re.search(r"\.pass \{ background: (#[0-9a-f]{6})", page).group(1)
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# sampling-harness: INCOMPLETE (2 of 5 checks finished)")
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["verdict"], report["verdict_of_finished"]) == ("incomplete", "pass")
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["verdict"] == \
        "incomplete"
    assert suite.get("errors") == "1" and "did not finish: x::a" in suite.find(
        "testcase[@name='run']/error").get("message")
    write_all(tmp_path, [verdict("a"), verdict("b")], {**meta, "complete": True,
                                                       "not_finished": [], "selected": 2})
    assert '<span class="badge pass">PASS</span></h1>' in (tmp_path / "report.html").read_text()
    assert json.loads((tmp_path / "report.json").read_text())["verdict"] == "pass"


def chrome():
    """A headless Chromium driven by Debian's chromedriver, with the console log kept."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1300,2400"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.mark.skipif(not BROWSER, reason="chromium and chromedriver are not installed "
                           "(apt-get install chromium chromium-driver)")
def test_real_run_in_a_headless_browser(tmp_path):
    code, output, report = cli("check", "sample", "--kernel", "double-softmax", "--kernel",
                               "torch-fp64", "-k", "fit_curated or fit_large_vocab",
                               "--budget", "smoke",
                               "--device", "cpu", report_dir=tmp_path, timeout=300)
    assert report is not None, output
    states = {c["kernel"]: c["verdict"] for c in report["checks"]}
    assert states == {"double-softmax": "fail", "torch-fp64": "pass"}, output
    driver = chrome()
    try:
        driver.get((tmp_path / "report.html").as_uri())
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
        rows = driver.find_elements("css selector", "table.checks tbody tr")
        first = rows[0].text
        assert "double-softmax" in first and "fit_curated" in first and "fail" in first
        assert rows[0].get_attribute("class") in ("bad", "stated")   # stated: a mutant caught
        anchor = rows[0].find_element("css selector", "a").get_attribute("href").split("#")[1]
        section = driver.find_element("id", anchor)
        image = section.find_element("css selector", "img.plot")
        assert image.get_attribute("src").startswith("data:image/png;base64,")
        assert driver.execute_script("return arguments[0].complete && "
                                     "arguments[0].naturalWidth", image) > 0
        skipped = driver.find_element("css selector", "tr.skipped td")    # GPU only
        shown = driver.execute_script(SHOWN_COLOURS, skipped)
        assert contrast(*map(hex_of, shown)) >= 4.5, shown
        driver.save_screenshot(str(tmp_path / "report.png"))
    finally:
        driver.quit()


def test_skipped_checks_are_in_all_four_files_with_their_reason(tmp_path):
    skipped = [{"name": "big", "family": "sample", "kernel": "k", "target": "k",
                "role": "kernel", "check": "big", "reason": "this check runs on a GPU only"},
               {"name": "big", "family": "sample", "kernel": "b", "target": "b",
                "role": "baseline", "check": "big", "reason": "no <GPU> | here"}]
    meta = {**META, "complete": True, "selected": 3, "finished": 3, "not_finished": [],
            "skipped": skipped}
    write_all(tmp_path, [verdict("a")], meta)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["skipped"] == skipped and report["verdict"] == "pass"
    assert [c["name"] for c in report["checks"]] == ["a"]
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("skipped")) == ("3", "2")
    cases = {c.get("classname"): c.find("skipped") for c in suite.iter("testcase")}
    assert cases["sample.k"].get("message") == "this check runs on a GPU only"
    assert cases["sample.b"].get("message") == "no <GPU> | here"
    summary = (tmp_path / "summary.md").read_text()
    assert "| k | big | skipped | - | - | - | - | - | this check runs on a GPU only |" in summary
    assert "| b | big | skipped | - | - | - | - | - | - | no <GPU> / here |" in summary
    page = (tmp_path / "report.html").read_text()
    assert page.count('<tr class="skipped">') == 2 and "no &lt;GPU&gt; | here" in page
    assert "3 of 3 checks finished: 1 pass, 0 fail, 0 error, 2 skipped" in page


def test_a_skipped_row_is_readable_and_still_looks_skipped():
    """WCAG AA for text (contrast >= 4.5) in a skipped row and its badge; the row keeps a
    background and style of its own; no rule for a bare ``.skipped`` (a badge colour) also
    paints the row, whose class it is."""
    rules = css_rules(STYLE)
    assert contrast("#777777", "#7f8c8d") < 1.5 and contrast("#000000", "#ffffff") == 21
    assert ".skipped" not in rules and "tr.skipped" not in rules
    row = rules[".checks tr.skipped td"]
    page = rules["body"].get("background", "#ffffff")
    assert contrast(row["color"], row["background"]) >= 4.5
    assert row["background"] != page and row.get("font-style") == "italic"
    badge = rules[".badge.skipped"]["background"]
    assert contrast(rules[".badge"]["color"], badge) >= 4.5
    assert badge != row["background"]


def test_one_check_is_said_in_the_singular(tmp_path):
    meta = {**META, "complete": False, "selected": 1, "finished": 0, "not_finished": ["x::a"]}
    write_all(tmp_path, [], meta)
    assert "0 of 1 check finished" in (tmp_path / "report.html").read_text()
    assert (tmp_path / "summary.md").read_text().startswith(
        "# sampling-harness: INCOMPLETE (0 of 1 check finished)")


def test_every_badge_and_muted_text_meets_wcag_aa():
    """White on each verdict badge, and muted notes on the page, at contrast >= 4.5 (the
    incomplete badge was 3.7, the muted notes 4.48)."""
    rules = css_rules(STYLE)
    white = rules[".badge"]["color"]
    for badge in (".pass", ".fail", ".error", ".incomplete", ".badge.skipped"):
        assert contrast(white, rules[badge]["background"]) >= 4.5, badge
    assert contrast(rules[".muted"]["color"], "#ffffff") >= 4.5

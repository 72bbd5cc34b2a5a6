"""The reports are rewritten after every check: each check's text is made once
(harness/report/writers.py ``made_once``), and report.json stays exactly
``json.dumps(body, indent=2)`` of the whole run, NaN and infinity kept readable."""

import json

from sampling_harness.report import writers
from tests.test_html_report import verdict

META = {"budget": "smoke", "device": "cpu", "harness_seed": 1, "family_alpha": 1e-4,
        "statistical_checks": 2, "complete": True, "skipped": [
            {"family": "sample", "kernel": "k", "name": "tail", "reason": "GPU only"}]}


def whole_body(verdicts, meta) -> str:
    body = {"verdict": writers.run_verdict(verdicts, meta),
            "verdict_of_finished": writers.overall(verdicts), "finished": len(verdicts),
            **meta, "skipped": writers.skipped_checks(meta),
            "checks": [v.to_dict() for v in verdicts]}
    return json.dumps(writers._finite(body), indent=2) + "\n"


def test_report_json_is_the_whole_bodys_dump_at_every_rewrite():
    verdicts = [verdict("fit", details={"nested": {"a": [1.0, float("nan")], "b": "x\ny"}}),
                verdict("tail", "fail", statistic=float("inf")), verdict("greedy")]
    for n in range(len(verdicts) + 1):
        text = writers.to_json(verdicts[:n], META)
        assert text == whole_body(verdicts[:n], META)
        assert json.loads(text)["checks"] == json.loads(whole_body(verdicts[:n], META))["checks"]


def test_each_checks_text_is_made_once_across_rewrites(monkeypatch):
    made = []
    record = writers._json_record
    monkeypatch.setattr(writers, "_json_record", lambda v: made.append(v.name) or record(v))
    verdicts = [verdict("fit"), verdict("tail")]
    for n in (1, 2, 2):
        writers.to_json(verdicts[:n], META)
        writers.to_junit(verdicts[:n], META)
    assert made == ["fit", "tail"]
    assert all(set(v.__dict__["_made"]) == {"json", "junit"} for v in verdicts)

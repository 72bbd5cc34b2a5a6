"""The terminal's one-line reasons: a long one keeps its head and its end."""

from sampling_harness.run.terminal import REASON, one_line


def test_a_short_line_is_kept_whole_and_only_the_first_line_counts():
    assert one_line("fail: x\nsecond line") == "fail: x"
    assert one_line("") == "" and one_line(None) == ""


def test_a_long_line_loses_its_middle_never_its_end():
    line = "row 'curated-7' fails: " + "detail " * 80 + "value 0.25 reference 0.5 (seed 7)"
    shown = one_line(line)
    assert len(shown) == REASON
    assert shown.startswith("row 'curated-7' fails: ")
    assert shown.endswith("value 0.25 reference 0.5 (seed 7)") and " ... " in shown

"""The verdict record: what one check concluded, with everything needed to trust or redo it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from sampling_harness.words import counted


@dataclass
class Outcome:
    """What a check function returns; the check context adds who, where and when."""

    passed: bool
    message: str
    statistic: float | None = None
    p_value: float | None = None       # Bonferroni-adjusted over the check's sub-tests
    alpha: float | None = None         # the check's share of the run's false-fail budget
    samples: int | None = None         # draws (token ids) the check's decision rests on
    min_detectable_effect: float | None = None
    effect: str = ""                   # what the minimum detectable effect measures
    details: dict = field(default_factory=dict)


@dataclass
class Verdict:
    name: str
    family: str
    kernel: str                        # the kernel's name in the run (registered name or target)
    target: str                        # what loads it again: a registered name or module:attr
    check: str                         # the check function (name without a sanitizer suffix)
    verdict: str                       # "pass" | "fail" | "error"
    statistic: float | None
    p_value: float | None
    alpha: float | None
    samples: int | None
    min_detectable_effect: float | None
    effect: str
    seed: int
    duration: float
    device: str
    message: str
    reproduce: str
    details: dict = field(default_factory=dict)
    role: str = "kernel"               # "kernel" | "baseline" | "mutant" (families/registry.py)
    expected: str = "pass"             # "pass" | "fail" | "either": what the run gates on
    why: str = ""                      # the stated expectation, when it is not "pass"

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def as_expected(self) -> bool:
        """The verdict is what the run expects of this kernel (errors never are)."""
        return self.verdict != "error" and self.expected in (self.verdict, "either")


def overall(verdicts: list[Verdict]) -> str:
    """A run errs if any check erred (or none ran), else fails if any check concluded other
    than expected: a kernel or mutant failed, or a baseline missed its stated expectation."""
    if not verdicts or any(v.verdict == "error" for v in verdicts):
        return "error"
    return "pass" if all(v.as_expected for v in verdicts) else "fail"


def run_verdict(verdicts: list[Verdict], meta: dict) -> str:
    """The run's verdict: "incomplete" when it did not finish every selected check (stopped,
    timed out, a worker died; or still running), whatever the finished checks say; else
    ``overall``. An incomplete run never reads as a pass."""
    return overall(verdicts) if meta.get("complete", True) else "incomplete"


def finished_of_selected(verdicts: list[Verdict], meta: dict) -> str:
    """'3 of 77 checks finished' (the total when the run knows it); a skipped check is a
    finished one (``meta["finished"]``: checks with a verdict or skipped)."""
    finished, selected = meta.get("finished", len(verdicts)), meta.get("selected")
    return f"{finished} of {counted(selected, 'check')} finished" if selected else \
        f"{counted(finished, 'check')} finished"

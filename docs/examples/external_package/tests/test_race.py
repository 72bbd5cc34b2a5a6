"""The package's own tests, calling the harness's checks on its sampler."""

from sampling_harness.api import run_checks


def test_sampler_passes_the_harness(harness_checks):
    result = harness_checks("sample", "my-race", checks=["validity", "fit_curated"],
                            budget="smoke")
    assert result.passed, result.summary
    assert {v.name for v in result.verdicts} == {"validity", "fit_curated"}


def test_by_module_path(tmp_path):
    result = run_checks("sample", "mysampler.race:sample", tmp_path, checks=["validity"],
                        budget="smoke")
    assert result.passed, result.summary

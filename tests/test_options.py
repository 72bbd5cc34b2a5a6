"""The one table of run options (harness/options.py): the CLI's ``check`` and the pytest
plugin both get every option of it, with the same defaults; ``plugin_args`` and ``cli_args``
parse back to the values they were given; a reproduce command parses back to its check's
values; a bad value is refused once, by the parser, in one line. No kernel runs."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from types import SimpleNamespace

import pytest

from sampling_harness import options
from sampling_harness.commands.cli import _parser
from sampling_harness.options import DEFAULTS, OPTIONS, cli_args, plugin_args, reproduce_command
from sampling_harness.run import plugin
from sampling_harness.stats.multiple import DEFAULT_FAMILY_ALPHA

PLUGIN_OPTIONS = [option for option in OPTIONS if not option.cli_only]
# a value other than the default for every option of the table
GIVEN = {"kernel": ["torch-fp32", "pkg.mod:fn"], "device": "cpu", "budget": "smoke",
         "seed": 7, "report_dir": "out/here", "select": "test_tail or test_validity",
         "call_timeout": 12.5, "family_alpha": 0.001, "statistical_checks": 9,
         "sanitize": "memcheck", "gpus": 2, "workers_per_gpu": 3, "memory_budget": 2**30,
         "isolation": "none", "pytest_output": "full",
         "precompile": False}


def check_parser() -> argparse.ArgumentParser:
    """The CLI's ``check`` subparser."""
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["check"]


def parse_check(words: list[str]) -> argparse.Namespace:
    return _parser().parse_args(["check", "sample", *words])


def plugin_parser() -> pytest.Parser:
    """A pytest parser holding what the plugin's ``pytest_addoption`` adds."""
    parser = pytest.Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    return parser


def parse_plugin(words: list[str]) -> dict:
    return {k: v for k, v in vars(plugin_parser().parse(words)).items() if k != "file_or_dir"}


def test_the_table_covers_every_value_given():
    assert set(GIVEN) == {option.dest for option in OPTIONS}
    assert all(GIVEN[o.dest] != ([] if o.repeatable else o.default) for o in OPTIONS)


def test_the_cli_gets_every_option_of_the_table():
    flags = {s: a.dest for a in check_parser()._actions for s in a.option_strings}
    assert {o.flag: o.dest for o in OPTIONS}.items() <= flags.items()
    assert set(flags) - {o.flag for o in OPTIONS} == {"-h", "--help"}


def test_the_plugin_gets_every_option_but_the_cli_only_ones():
    parser = plugin_parser()
    names = {name: argument.dest for group in [parser._anonymous, *parser._groups]
             for argument in group.options for name in argument.names()}
    assert names == {o.plugin_flag: o.plugin_dest for o in PLUGIN_OPTIONS}
    assert {o.flag for o in OPTIONS if o.cli_only} == {"-k", "--no-precompile"}
    assert all(o.plugin_flag == "--harness-" + o.flag[2:] for o in PLUGIN_OPTIONS)


def test_installed_pytest_lists_every_plugin_option():
    """The plugin as pytest loads it (its entry point), not only its hook called here."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:randomly"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    missing = [o.plugin_flag for o in PLUGIN_OPTIONS if f"{o.plugin_flag}=" not in done.stdout]
    assert not missing, missing
    assert "(default: quick)" in done.stdout and "(default: 20261122)" in done.stdout


def test_defaults_agree_between_the_table_the_cli_and_the_plugin():
    cli = vars(parse_check([]))
    assert {o.dest: cli[o.dest] for o in OPTIONS} == {
        o.dest: [] if o.repeatable else o.default for o in OPTIONS}
    assert parse_plugin([]) == DEFAULTS
    assert DEFAULTS == {o.plugin_dest: cli[o.dest] for o in PLUGIN_OPTIONS}
    assert DEFAULTS["harness_seed"] == options.DEFAULT_SEED
    assert DEFAULTS["harness_family_alpha"] == DEFAULT_FAMILY_ALPHA


def test_a_default_list_is_never_shared_between_parses():
    assert parse_check(["--kernel", "a"]).kernel == ["a"]
    assert parse_check([]).kernel == [] and parse_plugin([])["harness_kernel"] == []


def test_the_help_shows_the_defaults():
    text = check_parser().format_help()
    for shown in ("(default: quick)", "(default: auto)", "(default: 20261122)",
                  "(default: 600.0)", "(default: 0.0001)"):
        assert shown in " ".join(text.split())


def test_plugin_args_round_trip():
    parsed = parse_plugin(plugin_args(GIVEN))
    assert parsed == {o.plugin_dest: GIVEN[o.dest] for o in PLUGIN_OPTIONS}
    assert parse_plugin(plugin_args(vars(parse_check([])))) == DEFAULTS


def test_plugin_args_of_the_cli_leave_out_cli_only_and_unset_options():
    words = plugin_args(vars(parse_check(["-k", "test_tail", "--no-precompile"])))
    assert "-k" not in words and not any("precompile" in w for w in words)
    assert "--harness-gpus" not in words and "--harness-kernel" not in words
    assert words[:2] == ["--harness-device", "auto"]


def test_cli_args_round_trip_in_the_order_given():
    words = cli_args(GIVEN)
    assert words[:4] == ["--kernel", "torch-fp32", "--kernel", "pkg.mod:fn"]
    assert words[-1] == "--no-precompile"
    parsed = vars(parse_check(words))
    assert {dest: parsed[dest] for dest in GIVEN} == GIVEN
    assert cli_args({"seed": None, "select": "test_tail", "precompile": True}) == [
        "-k", "test_tail"]


CHECK = {"family": "sample", "target": "pkg.mod:fn", "device": "cpu", "budget": "smoke",
         "seed": 20261122, "check": "tail"}


@pytest.mark.parametrize("extra,expected", [
    ({"statistical_checks": 20},
     "sampling-harness check sample --kernel pkg.mod:fn --device cpu --budget smoke "
     "--seed 20261122 --statistical-checks 20 -k test_tail"),
    ({"statistical_checks": 0, "family_alpha": DEFAULT_FAMILY_ALPHA},
     "sampling-harness check sample --kernel pkg.mod:fn --device cpu --budget smoke "
     "--seed 20261122 -k test_tail"),
    ({"statistical_checks": 5, "family_alpha": 0.05, "sanitize": "racecheck"},
     "sampling-harness check sample --kernel pkg.mod:fn --device cpu --budget smoke "
     "--seed 20261122 --statistical-checks 5 -k test_tail --family-alpha 0.05 "
     "--sanitize racecheck"),
    ({"statistical_checks": 3, "world": 4},
     "torchrun --nproc-per-node 4 -m sampling_harness check sample --kernel pkg.mod:fn "
     "--device cpu --budget smoke --seed 20261122 --statistical-checks 3 -k test_tail"),
])
def test_reproduce_command_renders_as_reports_record_it(extra, expected):
    assert reproduce_command(**CHECK, **extra) == expected


def test_a_reproduce_command_parses_back_to_its_check():
    command = reproduce_command(**{**CHECK, "target": "my dir/k.py:fn"}, statistical_checks=7,
                                family_alpha=1 / 3, sanitize="memcheck")
    words = shlex.split(command)
    assert words[:3] == ["sampling-harness", "check", "sample"]
    args = _parser().parse_args(words[1:])
    assert (args.kernel, args.device, args.budget, args.seed, args.statistical_checks,
            args.select, args.family_alpha, args.sanitize) == (
        ["my dir/k.py:fn"], "cpu", "smoke", 20261122, 7, "test_tail", 1 / 3, "memcheck")


@pytest.mark.parametrize("words,reason", [
    (["--budget", "huge"], "argument --budget: invalid choice: 'huge'"),
    (["--gpus", "0"], "argument --gpus: must be > 0, got 0"),
    (["--statistical-checks", "two"], "must be an integer > 0, got two"),
    (["--family-alpha", "1"], "argument --family-alpha: must be > 0 and < 1.0, got 1"),
    (["--call-timeout", "-1"], "argument --call-timeout: must be > 0, got -1"),
    (["--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
])
def test_a_bad_value_is_one_usage_line_from_both_parsers(words, reason, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_check(words)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert exit_.value.code == 2 and len(errors) == 1 and reason in errors[0]
    with pytest.raises(pytest.UsageError) as usage:
        plugin_parser().parse([f"--harness-{words[0][2:]}", words[1]])
    errors = [line for line in str(usage.value).splitlines() if "error:" in line]
    assert len(errors) == 1 and reason.replace("--", "--harness-") in errors[0]


def test_run_options_are_the_table_typed():
    """``RunOptions`` has one field per option of the table, with its default; a parsed
    ``check`` command line and pytest's config give the same object."""
    from dataclasses import fields

    from sampling_harness.options import RunOptions

    assert [f.name for f in fields(RunOptions)] == [o.dest for o in OPTIONS]
    assert RunOptions().values() == {o.dest: o.default for o in OPTIONS}
    given = {**GIVEN, "kernel": tuple(GIVEN["kernel"])}
    assert RunOptions.from_namespace(parse_check(cli_args(GIVEN))) == RunOptions(**given)
    config = plugin_parser().parse(plugin_args(GIVEN))
    from_pytest = RunOptions.from_pytest(SimpleNamespace(getoption=lambda d: getattr(config, d)))
    cli_only = {o.dest: o.default for o in OPTIONS if o.cli_only}
    assert from_pytest == RunOptions(**{**given, **cli_only})
    assert from_pytest.given() and not RunOptions().given()
    assert RunOptions.from_values({"kernel": "one"}).kernel == ("one",)   # mutate's --kernel


@pytest.mark.parametrize("plugin,flags", [(False, "--gpus / --workers-per-gpu"),
                                          (True, "--harness-gpus / --harness-workers-per-gpu")])
def test_the_rules_between_options_are_one_function(plugin, flags):
    from sampling_harness.errors import HarnessError
    from sampling_harness.options import RunOptions

    with pytest.raises(HarnessError, match="^check all runs every registered kernel"):
        RunOptions(kernel=("a",)).resolve(family="all")
    with pytest.raises(HarnessError, match=f"^{flags} \\(pytest-xdist\\) and torchrun do not"):
        RunOptions(gpus=2).resolve(torchrun=True, plugin=plugin)
    with pytest.raises(HarnessError, match="do not mix"):
        RunOptions().resolve(torchrun=True, xdist=True, plugin=plugin)
    sanitize = "--harness-sanitize" if plugin else "--sanitize"
    with pytest.raises(HarnessError, match=f"^{sanitize} does not run under torchrun$"):
        RunOptions(sanitize="memcheck").resolve(torchrun=True, plugin=plugin)
    assert RunOptions(gpus=2).resolve(family="sample") == RunOptions(gpus=2)


def test_check_all_implies_workers_per_gpu_and_on_a_cpu_one_a_core(monkeypatch):
    from sampling_harness.options import RunOptions
    from sampling_harness.scale import xdist_gpus

    monkeypatch.setattr(xdist_gpus, "default_workers", lambda cuda: 5 if cuda else 3)
    assert RunOptions().resolve(family="all", cuda=True).workers_per_gpu == 5
    assert RunOptions().resolve(family="all", cuda=False).workers_per_gpu == 3
    for given, family, cuda, torchrun in [(RunOptions(), "sample", True, False),
                                          (RunOptions(), "sample", False, False),
                                          (RunOptions(select="test_tail"), "all", True, False),
                                          (RunOptions(workers_per_gpu=2), "all", True, False)]:
        assert given.resolve(family=family, cuda=cuda, torchrun=torchrun) == given


def test_the_default_workers_follow_the_cores(monkeypatch):
    from sampling_harness.scale import xdist_gpus

    for cores, gpu, cpu in [(1, 1, None), (2, 1, 2), (16, 8, 8), (64, 8, 8)]:
        monkeypatch.setattr(xdist_gpus.os, "cpu_count", lambda c=cores: c)
        assert (xdist_gpus.default_workers(True), xdist_gpus.default_workers(False)) == (gpu, cpu)

"""Errors a user can act on: a usage error is one line on stderr (exit 2), the usage stays
under ``--help`` (which shows every subcommand's defaults); a kernel name that is not one
gets the closest names, a name of another family names that family; ``list FAMILY``; a run
leaves no ``.hypothesis/`` in the working directory."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sampling_harness.commands import cli
from sampling_harness.run import check_command
from tests.helpers import ctrl_c_as_a_terminal_sends_it


def run(*args: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    """``sampling-harness ARGS`` as a user runs it: its exit code, stdout and stderr apart."""
    return subprocess.run([sys.executable, "-m", "sampling_harness", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600,
                          preexec_fn=ctrl_c_as_a_terminal_sends_it)


@pytest.mark.parametrize("args,line", [
    (["check", "sample", "--budget", "nonsense"],
     "sampling-harness: error: argument --budget: invalid choice: 'nonsense' (choose from "
     "smoke, quick, standard, thorough)"),
    (["check", "sample", "--family-alpha", "2"],
     "sampling-harness: error: argument --family-alpha: must be > 0 and < 1.0, got 2"),
    (["check"], "sampling-harness: error: the following arguments are required: family"),
    (["bench", "nope"], "sampling-harness: error: argument family: invalid choice: 'nope' "
                        "(choose from sample, "),
    (["list", "nope"], "sampling-harness: error: argument family: invalid choice: 'nope' "),
    (["list", "sampel"], "sampling-harness: error: argument family: invalid choice: 'sampel'; "
                         "did you mean 'sample'? (choose from sample, "),
    (["check", "sample", "--budget", "quik"], "sampling-harness: error: argument --budget: "
                                              "invalid choice: 'quik'; did you mean 'quick'? "),
    (["nope"], "sampling-harness: error: argument command: invalid choice: 'nope' (choose "
               "from check, list, bench"),
    (["check", "sample", "--no-such-flag"],
     "sampling-harness: error: unrecognized arguments: --no-such-flag"),
])
def test_a_usage_error_is_one_line_on_stderr(args, line):
    done = run(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert done.stderr.startswith(line), done.stderr
    assert "usage:" not in done.stderr


@pytest.mark.parametrize("target,line", [
    ("row-shfit", "no kernel 'row-shfit' in family sample; did you mean 'row-shift'? "
                  "(registered: torch-fp32, torch-fp64, "),
    ("accept-all", "'accept-all' is a kernel of family rejection; run 'sampling-harness "
                   "check rejection --kernel accept-all'"),
    ("sampling_harness.commands.cli", "kernel target 'sampling_harness.commands.cli' names "
                                      "no function: give sampling_harness.commands.cli:"
                                      "FUNCTION"),
])
def test_a_kernel_that_is_no_target_says_what_to_type(target, line):
    done = run("check", "sample", "--kernel", target, "--device", "cpu")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"sampling-harness: error: {line}"), done.stderr


def test_kernel_names_errors_in_process():
    from sampling_harness.errors import HarnessError
    from sampling_harness.families.registry import load

    with pytest.raises(HarnessError) as raised:
        load("row-shfit", "sample")
    text = str(raised.value)
    assert "did you mean 'row-shift'?" in text
    assert "mutants: " in text and "unseeded-fast-path" in text       # the family's names
    assert "a kernel of your own: package.module:attr or path/to/file.py:attr" in text
    with pytest.raises(HarnessError, match=r"^no kernel 'zzzz' in family sample \(registered"):
        load("zzzz", "sample")
    with pytest.raises(HarnessError, match="run 'sampling-harness bench rejection --kernel "
                                           "accept-all'"):
        load("accept-all", "sample", command="bench")
    with pytest.raises(HarnessError, match="names no function: give my_kernels.py:FUNCTION"):
        load("my_kernels.py", "sample")
    assert load("row-shift", "sample").role == "mutant"


def test_misspelt_names_get_the_closest_in_one_phrase():
    """Kernel, family, check and choice names share one suggestion (``did_you_mean``); a
    count says its noun once, in the singular for 1 (``counted``)."""
    from sampling_harness.errors import HarnessError
    from sampling_harness.families import FAMILIES
    from sampling_harness.families.registry import load
    from sampling_harness.words import counted, did_you_mean

    assert did_you_mean("sampel", FAMILIES) == "; did you mean 'sample'?"
    assert did_you_mean("zzzz", FAMILIES) == ""
    with pytest.raises(HarnessError, match=r"^unknown family 'rejecton'; did you mean "
                                           r"'rejection' or 'tree-rejection'\? \(known: sample, "):
        load("torch-fp32", "rejecton")
    with pytest.raises(HarnessError, match=r"declares no check 'fit_curatd'; did you mean "
                                           r"'fit_curated'"):
        FAMILIES["sample"].check("fit_curatd")
    assert [counted(n, "check") for n in (0, 1, 2)] == ["0 checks", "1 check", "2 checks"]


def test_list_takes_one_family():
    done = run("list", "rejection")
    assert done.returncode == 0, done.stderr
    families = [line for line in done.stdout.splitlines() if line.startswith("family ")]
    assert len(families) == 1 and families[0].startswith("family rejection: ")
    assert "accept-all" in done.stdout and "triton-exact" not in done.stdout


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    return next(a for a in parser._actions
                if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("name", ["check", "list", "bench", "selftest", "calibrate",
                                  "reproduce", "compare", "simulate"])
def test_help_shows_the_defaults_of_every_subcommand(name, capsys, monkeypatch):
    """Every option with a default worth showing (not None, a switch or an empty list) says
    it in ``--help``, once."""
    monkeypatch.setenv("COLUMNS", "1000")           # no line wrapped inside a word
    parser = subcommands()[name]
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["--help"])
    assert done.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith(f"usage: sampling-harness {name}")
    for action in parser._actions:
        default = action.default
        if argparse.SUPPRESS in (action.help, default):
            continue
        if action.dest == "report_dir" or (default not in (None, [], ())
                                           and not isinstance(default, bool)):
            help_text = " ".join((action.help % {"default": default}).split())
            assert "default" in help_text.lower(), f"{name} {action.dest}: {action.help!r}"
            assert help_text in shown, f"{name} {action.dest}"
            assert help_text.lower().count("default") == 1, help_text
    if name == "simulate":
        assert "--requests REQUESTS default: 64" in shown


def test_help_is_plain_text(capsys):
    """No reStructuredText markup (``double backticks``, roles) in ``--help``, top level
    or any subcommand's."""
    for parser in (cli._parser(), *subcommands().values()):
        with pytest.raises(SystemExit):
            parser.parse_args(["--help"])
        shown = capsys.readouterr().out
        assert shown.startswith("usage: sampling-harness")
        assert "``" not in shown and ":func:" not in shown and ":mod:" not in shown, shown


def test_a_run_leaves_no_hypothesis_directory(tmp_path):
    """Hypothesis keeps files in ./.hypothesis/ (the constants it reads from local modules,
    an example database, observability logs: forced on here, as a check that does write
    there). A CLI run keeps them in a temporary directory of its own, removed afterwards."""
    env = {**os.environ, "HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY": "1"}
    env.pop(check_command.HYPOTHESIS_STORAGE, None)
    done = run("check", "sample", "--kernel", "torch-fp64", "--device", "cpu", "--budget",
               "smoke", "-k", "test_fit_generated", "--report-dir", str(tmp_path / "report"),
               cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not (tmp_path / ".hypothesis").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_the_hypothesis_storage_is_the_runs_own_and_is_undone(monkeypatch, tmp_path):
    """Inside the CLI's run Hypothesis stores in a temporary directory (this process's
    Hypothesis too, where it had settled on one); on the way out the environment and
    Hypothesis's directory are as before and the temporary one is gone. A directory the
    user set is kept."""
    from hypothesis import configuration

    monkeypatch.delenv(check_command.HYPOTHESIS_STORAGE, raising=False)
    before = configuration.storage_directory("x", intent_to_write=False).path
    with check_command.hypothesis_storage_elsewhere():
        storage = os.environ[check_command.HYPOTHESIS_STORAGE]
        inside = configuration.storage_directory("x", intent_to_write=False).path
        assert inside.parent == Path(storage) and os.path.isdir(storage)
    assert check_command.HYPOTHESIS_STORAGE not in os.environ and not os.path.exists(storage)
    assert configuration.storage_directory("x", intent_to_write=False).path == before
    monkeypatch.setenv(check_command.HYPOTHESIS_STORAGE, str(tmp_path))
    with check_command.hypothesis_storage_elsewhere():
        assert os.environ[check_command.HYPOTHESIS_STORAGE] == str(tmp_path)
    assert os.environ[check_command.HYPOTHESIS_STORAGE] == str(tmp_path)

"""The run options of a check, declared once (``OPTIONS``), and what is built from them.

A run option is spelt in two places: the CLI's ``sampling-harness check --budget smoke`` and
the pytest plugin's ``--harness-budget smoke`` (prefixed, so that it never collides with
another project's conftest options). Both parsers, the plugin's ``DEFAULTS``, the
``--harness-*`` arguments the CLI hands to pytest (``plugin_args``), the ``check`` command
lines other commands start (``cli_args``) and the command that re-runs one check
(``reproduce_command``) are all built from the one table, so an option cannot drift between
them. Values are validated once, by the parser of the table (argparse ``type`` and
``choices``), with a one-line usage error (``Parser``).

The table is the class ``RunOptions``: one typed field per option, its ``Option`` in the
field's metadata. A parsed command line (``from_namespace``) or pytest's config
(``from_pytest``) becomes one frozen ``RunOptions`` that the CLI, the plugin and the
subcommands pass on; no option is read back by its name. The rules between options (which
combinations are refused, which value one implies for another) are ``RunOptions.resolve``,
called by the CLI and by the plugin alike.

Also the argparse type ``positive`` that the subcommands share (none of them imports the
CLI), and ``TOOLS``, the compute-sanitizer tools ``--sanitize`` takes
(``sampling_harness.run.sanitize`` runs them).
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from sampling_harness.budgets import BUDGET_NAMES
from sampling_harness.errors import HarnessError
from sampling_harness.scale.memory import CPU_BUDGET, format_bytes, parse_bytes
from sampling_harness.stats.multiple import DEFAULT_FAMILY_ALPHA
from sampling_harness.words import did_you_mean

DEFAULT_SEED = 20261122
DEVICES = ("auto", "cpu", "cuda")
PLUGIN_PREFIX = "--harness-"
TOOLS = ("memcheck", "initcheck", "racecheck")     # compute-sanitizer's, for --sanitize


class Parser(argparse.ArgumentParser):
    """A usage error is one line on stderr, exit code 2 (the usage stays under ``--help``);
    an invalid choice names the closest choices and lists them all as they are typed."""

    def error(self, message: str):
        self.exit(2, f"sampling-harness: error: {message}\n")

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = list(map(str, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}"
                                                 f"{did_you_mean(str(value), choices)} "
                                                 f"(choose from {', '.join(choices)})")


def positive(kind, upper=None):
    """An argparse type: a number > 0 (and < ``upper``), else a one-line usage error."""
    bound = f" and < {upper}" if upper is not None else ""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"must be {what} > 0{bound}, got {text}") from None
        if value <= 0 or (upper is not None and value >= upper):
            raise argparse.ArgumentTypeError(f"must be > 0{bound}, got {text}")
        return value
    return parse


@dataclass(frozen=True)
class Option:
    """One run option: its CLI flag (its plugin twin is derived: ``--budget`` is
    ``--harness-budget``, dest ``harness_budget``) and how argparse parses it.

    ``action`` is ``store``, ``append`` (repeatable: its default is ``()``, handed to the
    parsers as a fresh list) or ``store_false`` (a ``--no-X`` switch, default True).
    ``cli_only`` options have no plugin twin: pytest has its own ``-k``; precompiling is the
    CLI's business."""

    flag: str
    dest: str
    help: str
    default: object = None
    type: Callable[[str], object] | None = None
    choices: tuple | None = None
    metavar: str | None = None
    action: str = "store"
    cli_only: bool = False

    @property
    def repeatable(self) -> bool:
        return self.action == "append"

    @property
    def plugin_flag(self) -> str:
        return PLUGIN_PREFIX + self.flag.removeprefix("--")

    @property
    def plugin_dest(self) -> str:
        return "harness_" + self.dest

    def kwargs(self, **changes) -> dict:
        """``add_argument`` keyword arguments, with ``changes`` (a subcommand's own default
        or help) applied; the help ends with the default, where there is one to show."""
        if self.action == "store_false":
            kwargs = {"dest": self.dest, "action": "store_false", "help": self.help}
        else:
            default = list(self.default) if self.repeatable else self.default
            kwargs = {"dest": self.dest, "action": self.action, "default": default,
                      "type": self.type, "choices": self.choices, "metavar": self.metavar,
                      "help": self.help}
        kwargs.update(changes)
        default = kwargs.get("default")
        if default not in (None, []) and "help" not in changes:
            kwargs["help"] = f"{kwargs['help']} (default: {default})"
        return {key: value for key, value in kwargs.items() if value is not None}

    def words(self, value, flag: str | None = None) -> list[str]:
        """The command-line words that give this option ``value`` (none for None, an empty
        list or a switch left on); ``flag`` defaults to the CLI's."""
        flag = flag or self.flag
        if value is None:
            return []
        if self.action == "store_false":
            return [] if value else [flag]
        values = value if self.repeatable else [value]
        return [word for one in values for word in (flag, _text(one))]


def _text(value) -> str:
    """A value as a command line gives it (floats by repr: they parse back to the same)."""
    return repr(value) if isinstance(value, float) else str(value)


def budget_words(budget: int | None) -> str | None:
    """A memory budget as a reproduce command gives it: None for the CPU's default (it
    changes no call), else in the unit that parses back to the same bytes."""
    if budget is None or budget == CPU_BUDGET:
        return None
    text = format_bytes(budget)
    return text if parse_bytes(text) == budget else str(budget)


def _option(flag: str, help: str, **how) -> object:
    """A field of ``RunOptions``: its default, and its ``Option`` (the dest is the field's
    name) in the field's metadata."""
    default = how.get("default")
    if how.get("action") == "store_false":
        how["default"] = default = True
    return field(default=default, metadata={"option": Option(flag, "", help, **how)})


@dataclass(frozen=True)
class RunOptions:
    """The run options of one check run, typed: the one table of options (each field's
    ``Option``, in the order of ``sampling-harness check --help``). Built once from a parsed
    command line (``from_namespace``) or from pytest's config (``from_pytest``), then passed
    on; ``resolve`` applies the rules between options. A subcommand that takes only some of
    the options leaves the others at their defaults (its own defaults may be None: not
    given, it decides)."""

    kernel: tuple[str, ...] = _option(
        "--kernel", "kernel under test: registered name, package.module:attr or "
        "path/to/file.py:attr (repeatable; default: the family's registered kernels and "
        "baselines)", default=(), metavar="TARGET", action="append")
    device: str = _option("--device", "auto: CUDA when torch sees a GPU, else the CPU",
                          default="auto", choices=DEVICES)
    budget: str = _option("--budget", "how much evidence the checks gather", default="quick",
                          choices=BUDGET_NAMES)
    seed: int = _option("--seed", "harness seed: every check's seeds derive from it",
                        default=DEFAULT_SEED, type=int)
    report_dir: str | Path | None = _option("--report-dir", "default: reports/<timestamp>/")
    select: str | None = _option("-k", "pytest -k selection of checks", cli_only=True)
    call_timeout: float = _option(
        "--call-timeout", "seconds one kernel call may take before it counts as hung",
        default=600.0, type=positive(float))
    family_alpha: float = _option(
        "--family-alpha", "false-fail budget of the whole run, split across its checks",
        default=DEFAULT_FAMILY_ALPHA, type=positive(float, 1.0))
    statistical_checks: int | None = _option(
        "--statistical-checks", "split the false-fail budget as if over N statistical checks "
        "(set by reproduce commands; default: count the selected run's)", type=positive(int),
        metavar="N")
    sanitize: str | None = _option(
        "--sanitize", "re-run the validity checks under compute-sanitizer (GPU only)",
        choices=TOOLS)
    gpus: int | None = _option(
        "--gpus", "spread the checks over N GPUs, one pytest-xdist worker each (on a CPU run: "
        "N workers on the CPU); see docs/scale-out.md", type=positive(int), metavar="N")
    workers_per_gpu: int | None = _option(
        "--workers-per-gpu", "W pytest-xdist workers share each GPU (Triton's compilation and "
        "the host's work run in parallel; default for check all on a GPU: half the CPU cores, "
        "at most 8; on a CPU: one a core, at most 8); see docs/scale-out.md",
        type=positive(int), metavar="W")
    isolation: str = _option(
        "--isolation", "worker: the checks run in pytest-xdist worker processes, so a kernel "
        "that crashes, asserts or hangs fails its check and a fresh worker runs the rest; "
        "none: in this process (for a debugger; a fault ends the run)", default="worker",
        choices=("worker", "none"))
    memory_budget: int | None = _option(
        "--memory-budget", "memory one check's kernel calls may use, e.g. 512MiB or 4GiB: "
        "checks stream their draws in calls sized to it, and a call that cannot fit fails "
        "with its bytes (default: on a GPU 80%% of its free memory at the start, split among "
        "the checks sharing it; on a CPU 256MiB)", type=parse_bytes, metavar="BYTES")
    pytest_output: str = _option(
        "--pytest-output", "quiet: each check once on the terminal, on its numbered line, and "
        "the harness's summary; full: also pytest's own (FAILURES with tracebacks, short test "
        "summary, count line), as pytest -v shows them", default="quiet",
        choices=("quiet", "full"))
    precompile: bool = _option(
        "--no-precompile", "on a GPU, do not compile the run's listed Triton variants ahead "
        "in parallel (harness/scale/precompile.py)", action="store_false", cli_only=True)

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> RunOptions:
        """The options of ``values`` (dest -> value, as a parser leaves them: a repeatable
        option's list, or a subcommand's single value of it, becomes a tuple); the options
        it lacks keep their defaults."""
        given = {}
        for option in OPTIONS:
            if option.dest in values:
                value = values[option.dest]
                if option.repeatable:
                    value = () if value is None else (value,) if isinstance(value, str) \
                        else tuple(value)
                given[option.dest] = value
        return cls(**given)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> RunOptions:
        """The run options of a parsed command line (of ``check`` or a subcommand sharing
        some of them)."""
        return cls.from_values(vars(args))

    @classmethod
    def from_pytest(cls, config) -> RunOptions:
        """The run options of a pytest run (its ``--harness-*`` options; the CLI-only ones at
        their defaults)."""
        return cls.from_values({option.dest: config.getoption(option.plugin_dest)
                                for option in OPTIONS if not option.cli_only})

    def values(self) -> dict[str, object]:
        """dest -> value, in the table's order."""
        return {option.dest: getattr(self, option.dest) for option in OPTIONS}

    def given(self) -> bool:
        """An option of the plugin's has a value other than its default (the run selects
        the harness: ``plugin.selected``)."""
        return any(getattr(self, o.dest) != o.default for o in OPTIONS if not o.cli_only)

    def plugin_args(self) -> list[str]:
        """The ``--harness-*`` arguments that give a pytest run these options."""
        return plugin_args(self.values())

    def resolve(self, *, family: str | None = None, cuda: bool = False,
                torchrun: bool = False, xdist: bool = False,
                plugin: bool = False) -> RunOptions:
        """The rules between options, in one place (the CLI's ``check`` and the plugin's
        session both call it): ``HarnessError`` (one line) for a combination refused, else
        the options with what they imply.

        ``family`` is ``check``'s (None in the plugin); ``cuda``: the run's device is a GPU;
        ``torchrun``: the process runs under torchrun; ``xdist``: under pytest-xdist;
        ``plugin``: say the flags as the plugin spells them (``--harness-gpus``)."""
        def flag(dest: str) -> str:
            option = BY_DEST[dest]
            return option.plugin_flag if plugin else option.flag

        if family == "all" and self.kernel:
            raise HarnessError("check all runs every registered kernel and baseline; name a "
                               "family to check --kernel targets")
        per_gpu = self.workers_per_gpu
        if per_gpu is None and family == "all" and not torchrun and \
                not self.sanitize and not self.select:
            from sampling_harness.scale.xdist_gpus import default_workers

            per_gpu = default_workers(cuda)
        if torchrun and (xdist or (self.gpus or 1) * (per_gpu or 1) > 1):
            raise HarnessError(f"{flag('gpus')} / {flag('workers_per_gpu')} (pytest-xdist) "
                               f"and torchrun do not mix: spread independent checks or shard "
                               f"one, not both")
        if torchrun and self.sanitize:
            raise HarnessError(f"{flag('sanitize')} does not run under torchrun")
        return replace(self, workers_per_gpu=per_gpu)


OPTIONS: tuple[Option, ...] = tuple(   # in the order of ``sampling-harness check --help``
    replace(f.metadata["option"], dest=f.name) for f in fields(RunOptions))
BY_DEST = {option.dest: option for option in OPTIONS}
# the plugin's option destinations and defaults: a value other than its default selects the
# harness (plugin.selected)
DEFAULTS = {option.plugin_dest: [] if option.repeatable else option.default
            for option in OPTIONS if not option.cli_only}


def add_to_argparse(parser: argparse.ArgumentParser, names: Iterable[str] | None = None,
                    **changes: dict) -> None:
    """Add the options ``names`` (dests; default: all, in the table's order) to a CLI
    (sub)parser; ``changes[dest]`` overrides that option's keyword arguments there (a
    subcommand whose ``--budget`` has its own default, say)."""
    for name in names or BY_DEST:
        option = BY_DEST[name]
        parser.add_argument(option.flag, **option.kwargs(**changes.get(name, {})))


def add_to_pytest(group) -> None:
    """Add every option but the CLI-only ones to the plugin's pytest option group, as
    ``--harness-*``."""
    for option in OPTIONS:
        if not option.cli_only:
            group.addoption(option.plugin_flag, **option.kwargs(dest=option.plugin_dest))


def cli_args(values: Mapping[str, object]) -> list[str]:
    """The CLI words of ``values`` (dest -> value), in their order; None values left out."""
    return [word for dest, value in values.items() for word in BY_DEST[dest].words(value)]


def plugin_args(values: Mapping[str, object]) -> list[str]:
    """The ``--harness-*`` arguments of ``values`` (dest -> value, e.g. ``vars(args)`` of the
    CLI), in the table's order: CLI-only options, None values and empty lists left out."""
    return [word for option in OPTIONS if not option.cli_only
            for word in option.words(values.get(option.dest), option.plugin_flag)]


def reproduce_command(*, family: str, target: str, device: str, budget: str, seed: int,
                      check: str, statistical_checks: int | None = None,
                      family_alpha: float = DEFAULT_FAMILY_ALPHA, sanitize: str | None = None,
                      memory_budget: int | None = None, world: int = 1) -> str:
    """The command that re-runs one check alone with the same bits and alpha: its kernel,
    device, budget and harness seed, the run's count of statistical checks (its alpha split,
    whatever ``-k`` selects), its family alpha where not the default, its sanitizer, its
    memory budget where not the CPU's default (it sizes the calls, so the draws); under
    torchrun (``world`` > 1) with as many ranks, on any number of nodes."""
    launcher = ["sampling-harness"] if world == 1 else [
        "torchrun", "--nproc-per-node", str(world), "-m", "sampling_harness"]
    values = {"kernel": [target], "device": device, "budget": budget, "seed": seed,
              "statistical_checks": statistical_checks or None, "select": f"test_{check}",
              "family_alpha": None if family_alpha == DEFAULT_FAMILY_ALPHA else family_alpha,
              "sanitize": sanitize, "memory_budget": budget_words(memory_budget)}
    return shlex.join([*launcher, "check", family, *cli_args(values)])

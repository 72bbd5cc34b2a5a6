"""Launch settings of a kernel, and the one grid syntax that sweeps them.

A kernel's launch settings are the keyword arguments of its function beyond the family's
contract, each with a default (warps, stages, programs per SM, block widths ...): the
harness calls a kernel positionally with the contract's arguments, so such a keyword never
changes what the kernel computes, only how it is launched. A kernel may instead carry a
factory, ``fn.with_launch(**settings) -> kernel``, whose keyword parameters with defaults
are its settings. ``sampling-harness bench
--launch KEY=VALUE[,VALUE...]`` times every combination of the values given (a grid, the
Cartesian product over keys) by binding them as keyword arguments: no module global is
patched, so two settings can be timed side by side in one process.

Values are Python literals (``8``, ``0.5``, ``True``, ``None``); anything else is a string.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
from collections.abc import Callable

from sampling_harness.errors import HarnessError


def parse_value(text: str) -> object:
    """``8`` -> 8, ``0.5`` -> 0.5, ``True`` -> True, ``None`` -> None, ``abc`` -> "abc"."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_grid(items: list[str], option: str = "--launch") -> list[dict]:
    """Every setting of a grid given as ``KEY=V1,V2,...`` items (one key each): the product
    of the keys' values, in the order given, the first key varying slowest. No items: one
    empty setting (the kernel's defaults). A malformed item or a repeated key raises a
    one-line HarnessError naming it."""
    axes: dict[str, list] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier() or not values.strip():
            raise HarnessError(f"{option} takes KEY=VALUE[,VALUE...]; got {item!r}")
        if key in axes:
            raise HarnessError(f"{option} names {key!r} twice; give its values as one "
                               f"comma-separated list")
        axes[key] = [parse_value(v.strip()) for v in values.split(",") if v.strip()]
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


def label(setting: dict) -> str:
    """``warps=8 stages=3``, or ``default`` for the kernel's own settings."""
    return " ".join(f"{k}={v}" for k, v in setting.items()) or "default"


FACTORY = "with_launch"


def _factory(fn: Callable) -> Callable | None:
    factory = getattr(fn, FACTORY, None)
    return factory if callable(factory) else None


def launch_parameters(fn: Callable, contract: tuple[str, ...]) -> dict[str, object]:
    """The launch settings ``fn`` accepts: the keyword-capable parameters with a default of
    its ``with_launch`` factory if it has one, else of ``fn`` itself outside the family's
    contract, with those defaults."""
    try:
        parameters = inspect.signature(_factory(fn) or fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters
            if p.name not in contract and p.default is not inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def bind(name: str, fn: Callable, contract: tuple[str, ...], setting: dict) -> Callable:
    """``fn`` with ``setting`` bound as keyword arguments, or a one-line HarnessError
    naming the settings ``fn`` does not take and those it does."""
    if not setting:
        return fn
    known = launch_parameters(fn, contract)
    unknown = [key for key in setting if key not in known]
    if unknown:
        takes = (f"it takes {', '.join(sorted(known))}" if known else
                 "it takes none (launch settings are keyword arguments of the kernel "
                 "function beyond the contract)")
        raise HarnessError(f"kernel {name!r} has no launch setting "
                           f"{', '.join(map(repr, unknown))}; {takes}")
    factory = _factory(fn)
    return factory(**setting) if factory else functools.partial(fn, **setting)

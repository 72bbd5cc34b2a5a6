"""The harness's own pytest runs load only the pytest plugins they need.

Installed in an environment, pytest loads every plugin of it (entry-point group
``pytest11``) into every run, and each xdist worker loads them again: on a GPU image
pytest-benchmark then printed its xdist warning once per worker at the top of each
``check all``. The CLI's run (``sampling-harness check``) turns that autoloading off for its
pytest (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``) and names the plugins it needs in
``PYTEST_PLUGINS``: the harness's own, pytest-xdist's (``--gpus``) and Hypothesis's. Both
are environment variables, so that every process of the run loads the same: the xdist
workers and the compute-sanitizer child (``sampling_harness.run.sanitize``) inherit them.
A plain ``pytest`` run, ``pytest --pyargs sampling_harness.suites.sample`` included, keeps
pytest's autoloading.

``run_pytest`` is the one way the CLI starts its pytest (``check``, ``reproduce``): those
plugins only, quiet (no cache, no warning that a plugin imported early cannot be rewritten),
a stop handled as ``sampling_harness.run.stop`` says.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, MutableMapping
from importlib.metadata import entry_points

AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
PLUGINS = "PYTEST_PLUGINS"
HARNESS_PLUGIN = "sampling_harness.run.plugin"
# entry-point names (group pytest11) of the other plugins a harness run needs
NEEDED = ("xdist", "hypothesispytest")
QUIET = ("-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning")


def own_plugins() -> list[str]:
    """The modules of the plugins a harness run loads: the harness's, then those of
    ``NEEDED`` that are installed (their modules as their entry points name them)."""
    modules = {ep.name: ep.module for ep in entry_points(group="pytest11")}
    return [HARNESS_PLUGIN, *(modules[name] for name in NEEDED if name in modules)]


@contextlib.contextmanager
def only_own_plugins(env: MutableMapping[str, str] | None = None) -> Iterator[list[str]]:
    """While inside: no plugin autoloading in ``env`` (default: this process's environment,
    which the run's child processes inherit), and ``PYTEST_PLUGINS`` naming the harness's
    plugins after those already named there. Both restored on the way out. Yields the
    plugin modules."""
    env = os.environ if env is None else env
    saved = {name: env.get(name) for name in (AUTOLOAD, PLUGINS)}
    given = [spec.strip() for spec in (saved[PLUGINS] or "").split(",") if spec.strip()]
    plugins = list(dict.fromkeys([*given, *own_plugins()]))
    env[AUTOLOAD] = "1"
    env[PLUGINS] = ",".join(plugins)
    try:
        yield plugins
    finally:
        for name, value in saved.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value


def run_pytest(argv: list[str]) -> int:
    """``pytest.main`` of a harness run: ``argv`` (its files or nodes, then the harness's
    options) after ``QUIET``, with only the harness's plugins, a SIGINT or SIGTERM stopping
    the run (INCOMPLETE, exit 2) rather than the process."""
    import pytest

    from sampling_harness.run.stop import sigterm_stops

    with sigterm_stops(), only_own_plugins():
        return pytest.main([*argv[:1], *QUIET, *argv[1:]])

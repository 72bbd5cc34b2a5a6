"""Progress of a running check: a tqdm bar on a terminal, nothing in CI.

A bar counts the draws the kernel has made for the check (``Runner.draws``) and, where the
check states its plan (``CheckContext.plan``), shows the fraction done and the time left.
It is drawn only when stdout is a terminal and the environment does not say CI
(``CI=true``, as GitHub Actions, GitLab and most runners set): there, the one numbered line
per finished check (``HarnessSession.progress``) is all the output, line-oriented.

pytest captures the output of a running test; the bar writes around that capture, to the
terminal pytest itself writes to.
"""

from __future__ import annotations

import os

from tqdm import tqdm


def interactive(config) -> bool:
    """pytest's terminal is a terminal (asked of its reporter: while a test runs, the
    process's own stdout is pytest's capture file), and this is not a CI job."""
    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    return not ci and terminal is not None and bool(getattr(terminal, "isatty", False))


class _Terminal:
    """A file for tqdm that writes to pytest's terminal with capture suspended."""

    def __init__(self, config):
        self.capture = config.pluginmanager.get_plugin("capturemanager")
        self.terminal = config.pluginmanager.get_plugin("terminalreporter")

    def write(self, text: str) -> None:
        if self.capture is None or self.terminal is None:
            return
        with self.capture.global_and_fixture_disabled():
            self.terminal._tw.write(text)
            self.terminal._tw.flush()

    def flush(self) -> None:
        pass


class CheckProgress:
    """The bar of one check; a no-op object when not ``interactive``."""

    def __init__(self, config, label: str, enabled: bool | None = None):
        enabled = interactive(config) if enabled is None else enabled
        self.bar = tqdm(total=None, desc=label, unit=" draws", unit_scale=True, leave=False,
                        file=_Terminal(config), mininterval=0.5, dynamic_ncols=True) \
            if enabled else None

    def plan(self, draws: int) -> None:
        """The check will make about ``draws`` more draws (adds to the total)."""
        if self.bar is not None:
            self.bar.total = (self.bar.total or 0) + int(draws)
            self.bar.refresh()

    def update(self, draws: int) -> None:
        if self.bar is not None:
            if self.bar.total is not None and self.bar.n + draws > self.bar.total:
                self.bar.total = self.bar.n + draws
            self.bar.update(draws)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

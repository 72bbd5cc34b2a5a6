"""compute-sanitizer on demand: a family's validity checks re-run in a child process under
NVIDIA's memcheck, initcheck or racecheck, its log parsed and split by whose kernel erred.

The child is the same pytest run, narrowed to one check and one kernel, with the CUDA
caching allocator off (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``): every tensor is then its own
allocation, so memcheck sees a store one element past an output (``--padding`` keeps the
next allocation from starting right there), and initcheck sees memory nobody wrote. An error
in a launch of any kernel that is not torch's own fails the check, the tool's first error in
the message and the whole log kept in the report directory; errors in torch's own kernels
(names in the at::, c10::, cub:: or thrust:: namespaces) and host API errors are listed
apart, as warnings: they are most often a consequence, and never the kernel's fault alone.
A kernel written in torch ops therefore runs its launches as torch's: the sanitizer can
only name it through a warning.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sampling_harness.errors import HarnessError
from sampling_harness.options import TOOLS
from sampling_harness.verdict import Outcome

if TYPE_CHECKING:     # torch loads when a tool is asked for
    import torch

TOOL_OPTIONS = {"memcheck": ("--leak-check", "no", "--padding", "1024"),
                "initcheck": (), "racecheck": ("--racecheck-report", "hazard")}
CHILD_TIMEOUT = 1800.0
TORCH_NAMESPACES = re.compile(r"(?:^|[\s<(,*&])(?:at|c10|cub|thrust|at_cuda_detail|cutlass)::")
_PREFIX = re.compile(r"^=+ ?")
_NOT_ERRORS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "RACECHECK SUMMARY",
               "Target application returned", "This tool ")
_KERNEL = (re.compile(r"\bat (.+?)\+0x[0-9a-fA-F]+(?: in (\S+))?"),   # at NAME+0x330 in f.py:55
           re.compile(r"\bat 0x[0-9a-fA-F]+ in (.+?)()$"))            # at 0x330 in NAME
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


def find_tool() -> str | None:
    """compute-sanitizer on PATH, or under $CUDA_HOME or /usr/local/cuda."""
    found = shutil.which("compute-sanitizer")
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        candidate = Path(home or "/nonexistent") / "bin" / "compute-sanitizer"
        if found is None and candidate.exists():
            found = str(candidate)
    return found


def require_tool(tool: str, device: torch.device) -> str:
    """The tool's path, or ``HarnessError`` with one line saying what is missing."""
    import torch

    if tool not in TOOLS:
        raise HarnessError(f"unknown sanitizer tool {tool!r}; known: {', '.join(TOOLS)}")
    if device.type != "cuda" or not torch.cuda.is_available():
        raise HarnessError(f"--sanitize {tool} needs a CUDA GPU, and this run has none")
    path = find_tool()
    if path is None:
        raise HarnessError(f"--sanitize {tool}: compute-sanitizer is not installed (not on "
                           "PATH, nor under $CUDA_HOME/bin or /usr/local/cuda/bin)")
    return path


@dataclass(frozen=True)
class SanitizerError:
    """One error block of a compute-sanitizer log."""

    what: str       # its first line: "Invalid __global__ write of size 8 bytes"
    kernel: str     # the device function it names, "" for a host API error
    source: str     # "file.py:55" where the tool knows it, else ""
    detail: tuple[str, ...]   # the lines after

    @property
    def torch_own(self) -> bool:
        return bool(TORCH_NAMESPACES.search(self.kernel))

    def line(self) -> str:
        """'Invalid __global__ write of size 8 bytes in k (f.py:55), by thread (1,0,0) in
        block (0,0,0): Access to 0x...18 is out of bounds and is 1 bytes after ...'."""
        where = f" in {self.kernel}" + (f" ({self.source})" if self.source else "") \
            if self.kernel else ""
        thread = next((f", {part}" for part in self.detail if part.startswith("by thread")), "")
        access = " ".join(part for part in self.detail
                          if part.startswith(("Access", "Address", "and is")))
        return f"{self.what}{where}{thread}" + (f": {access}" if access else "")


def parse_log(text: str) -> list[SanitizerError]:
    """The error blocks of a log: a block is an unindented line after the ``=====`` prefix
    (summaries and banners excepted) and the indented lines under it."""
    blocks: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith("="):
            continue
        line = _PREFIX.sub("", raw)
        if line and not line[0].isspace():
            blocks.append([line] if not line.startswith(_NOT_ERRORS) else [])
        elif line.strip() and blocks and blocks[-1]:
            blocks[-1].append(line.strip())
    errors = []
    for block in filter(None, blocks):
        host = block[0].startswith("Program hit")
        match = None if host else next((m for part in block for pattern in _KERNEL
                                        if (m := pattern.search(part))), None)
        errors.append(SanitizerError(block[0], match.group(1) if match else "",
                                     match.group(2) or "" if match else "", tuple(block[1:])))
    return errors


def total_errors(text: str, printed: int) -> int:
    """The log's ERROR SUMMARY count (the tool stops printing at --print-limit)."""
    match = _SUMMARY.search(text)
    return max(printed, int(match.group(1))) if match else printed


def child_command(tool_path: str, tool: str, log: Path, pytest_args: list[str]) -> list[str]:
    return [tool_path, "--tool", tool, *TOOL_OPTIONS[tool], "--print-limit", "100",
            "--log-file", str(log), sys.executable, "-m", "pytest", *pytest_args]


def judge(errors: list[SanitizerError], tool: str, log: Path, child: dict | None,
          child_note: str, total: int | None = None) -> Outcome:
    """The verdict: the kernel's own errors fail, torch's and the host's are warnings; the
    child's own check verdict (the validity check itself) must pass too. ``total``: the
    tool's own count of errors, printed or not."""
    own = [e for e in errors if e.kernel and not e.torch_own]
    others = [e for e in errors if e not in own]
    checked = ((child or {}).get("checks") or [{}])[0]
    scope = dict(samples=checked.get("details", {}).get("kernel_calls"), min_detectable_effect=1.0,
                 effect="errors the tool reports in the kernel's launches over its calls "
                        "(any fails)")
    details = {"tool": tool, "log": str(log), "errors": total or len(errors),
               "kernel_errors": [e.line() for e in own[:20]],
               "warnings": [e.line() for e in others[:20]], "child": child_note}
    warn = (f"; {len(others)} errors in torch's own kernels or host calls, listed as "
            "warnings" if others else "")
    if own:
        shown = f" of the {len(errors)} printed ({total} in all)" if total and total > len(
            errors) else ""
        return Outcome(False, f"{tool}: {len(own)} errors{shown} in the kernel's launches, "
                              f"the first: "
                              f"{own[0].line()}{warn}; log {log}", details=details, **scope)
    if child is None or child.get("verdict") != "pass":
        return Outcome(False, f"under {tool}: {child_note}{warn}; log {log}", details=details,
                       **scope)
    return Outcome(True, f"{tool}: no error in the kernel's launches{warn}; log {log}",
                   details=details, **scope)


def run_under_tool(tool: str, pytest_args: list[str], directory: Path,
                   timeout: float = CHILD_TIMEOUT) -> Outcome:
    """Run ``pytest pytest_args`` (one check, one kernel) under ``tool``; judge its log."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    log, child_dir = directory / f"{tool}.log", directory / "child"
    args = [*pytest_args, "--harness-report-dir", str(child_dir)]
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    try:
        done = subprocess.run(child_command(require_tool(tool, torch.device("cuda")), tool,
                                            log, args),
                              capture_output=True, text=True, timeout=timeout, env=env)
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        output = f"the child did not finish within {timeout:g} s"
    (directory / "child-output.txt").write_text(output)
    report = child_dir / "report.json"
    child = json.loads(report.read_text()) if report.exists() else None
    if child is None:
        tail = " / ".join(output.strip().splitlines()[-3:])
        note = f"the child run wrote no report: {tail}"[:400]
    else:
        checks = child.get("checks") or [{}]
        note = f"the check {checks[0].get('verdict')}ed: {checks[0].get('message', '')}"[:400]
    text = log.read_text(errors="replace") if log.exists() else ""
    errors = parse_log(text)
    return judge(errors, tool, log, child, note, total_errors(text, len(errors)))

"""What a check function sees (``CheckContext``): the kernel's runner, the budget, the check's
seed and alpha; and how its outcome becomes the run's verdict of the check.

A check function ``check_fn(ctx) -> Outcome`` calls the kernel only through ``ctx.runner``
(validated calls, ``sampling_harness.run.runner``), draws its kernel seeds from ``ctx.seeds()`` (or
``ctx.rank_seeds()`` for its share of a sharded check) and tests at ``ctx.alpha``.
``CheckContext.run`` turns what it returns or raises into a ``Verdict``: a kernel failure
is a fail, anything else an error; under torchrun rank 0's verdict is the run's; a check
whose harness work runs out of a shared GPU's memory is run again (it is seeded: the same
batches, the same verdict). The pytest plugin (``sampling_harness.run.plugin``) makes one per check,
handing it the declared ``Check`` itself (its test item's).
"""

from __future__ import annotations

import sys
import time

import pytest
import torch

from sampling_harness.errors import KernelFailure, KernelFault
from sampling_harness.families import FAMILIES, Check, declaring_files
from sampling_harness.families.registry import Kernel, expectation
from sampling_harness.options import RunOptions, reproduce_command
from sampling_harness.run import faults
from sampling_harness.run.progress import CheckProgress
from sampling_harness.run.runner import OutOfMemoryFailure, Runner
from sampling_harness.run.sanitize import run_under_tool
from sampling_harness.run.session import HarnessSession
from sampling_harness.scale import distributed, gpu_share, memory, xdist_gpus
from sampling_harness.seeds import derive_seed, seed_stream
from sampling_harness.verdict import Outcome, Verdict


class CheckContext:
    """What a check function sees: the kernel's runner, the budget, its seed and its alpha."""

    _progress: CheckProgress | None = None

    def __init__(self, state: HarnessSession, kernel: Kernel, check: Check, node: pytest.Item):
        self.state = state
        self.kernel = kernel
        self.check = check
        self.check_name = check.name
        self.sanitize = state.sanitize
        self.name = f"{self.check_name}_{self.sanitize}" if self.sanitize else self.check_name
        self.statistical = check.statistical
        self.family = FAMILIES[kernel.family]
        self.budget = self.family.budgets[state.budget]
        self.device = state.device
        self.alpha = state.check_alpha if self.statistical else None
        self.seed = derive_seed(state.harness_seed, kernel.family, self.check_name)
        self.memory_budget = state.memory_budget      # bytes its calls may use
        self.max_call_elements = memory.call_elements(self.memory_budget)
        self.runner = Runner(kernel, self.device, state.call_timeout, state.memory_pool)
        self.expectation = expectation(kernel.meta, self.check_name, self.device.type,
                                       state.budget)
        self.config = node.config
        self.node = node
        self.shard = state.shard      # this process's part of a sharded check
        self.check_retries = 0        # re-runs alone on a GPU after running out of its memory

    def plan(self, draws: int) -> None:
        """The check is about to make ``draws`` draws: the progress bar's total (and ETA)."""
        if self._progress is not None:
            self._progress.plan(draws)

    def seeds(self):
        """Kernel seeds of a check run whole (the same on every rank of a torchrun)."""
        return seed_stream(self.seed)

    def rank_seeds(self):
        """Kernel seeds of this rank's share of a sharded check (harness/scale/distributed.py):
        the check's own stream in one process, an independent stream per rank otherwise."""
        return seed_stream(self.shard.seed(self.seed))

    def reproduce(self) -> str:
        """The command that re-runs this check alone with the same bits and alpha (under
        torchrun: with as many ranks, on any number of nodes)."""
        s = self.state
        return reproduce_command(
            family=self.kernel.family, target=self.kernel.target, device=self.device.type,
            budget=s.budget, seed=s.harness_seed, check=self.check_name,
            statistical_checks=s.statistical_checks, family_alpha=s.family_alpha,
            sanitize=self.sanitize, memory_budget=s.memory_budget, world=self.shard.world)

    def sanitized(self) -> Outcome:
        """This check of this kernel, re-run in a child process under compute-sanitizer, at
        the smoke budget whatever the run's (every edge case, few draws: the tool slows
        each memory access by orders of magnitude)."""
        args = [str(declaring_files()[self.family.name]), "-q",
                "-p", "no:cacheprovider", "-k", self.check.test_name, *RunOptions(
                    kernel=(self.kernel.target,), device="cuda", budget="smoke",
                    seed=self.state.harness_seed, call_timeout=self.state.call_timeout,
                    family_alpha=self.state.family_alpha).plugin_args()]
        directory = (self.state.report_dir / "sanitize" /
                     f"{self.kernel.family}-{self.kernel.name}-{self.check_name}")
        return run_under_tool(self.sanitize, args, directory)

    def _verdict(self, outcome: Outcome, state: str, seconds: float) -> Verdict:
        effects = self.runner.side_effects
        if effects:    # isolated (sampling_harness.run.isolation), and said once in the message
            outcome.message += (f" (isolated: the kernel {'; '.join(effects)}; settings "
                                f"restored after each call)")
            outcome.details["side_effects"] = effects
        if self.check_retries:
            outcome.message += (" (run again alone on the GPU: beside other checks it ran out "
                                "of the GPU's memory)")
            outcome.details["check_retries"] = self.check_retries
        return Verdict(
            name=self.name, family=self.kernel.family, kernel=self.kernel.name,
            target=self.kernel.target, check=self.check_name, verdict=state,
            statistic=outcome.statistic, p_value=outcome.p_value, alpha=outcome.alpha,
            samples=outcome.samples, min_detectable_effect=outcome.min_detectable_effect,
            effect=outcome.effect, seed=self.seed, duration=round(seconds, 3),
            device=str(self.device), message=outcome.message, reproduce=self.reproduce(),
            details={**outcome.details, "kernel_calls": self.runner.calls,
                     "kernel_draws": self.runner.draws,
                     "kernel_seconds": round(self.runner.seconds, 3),
                     "guard_seconds": round(self.runner.guard_seconds, 3),
                     "max_call_elements": self.max_call_elements},
            role=self.kernel.role, expected=self.expectation.verdict, why=self.expectation.why)

    def _settle(self, verdict: Verdict) -> Verdict:
        """The run's verdict of this check: rank 0's under torchrun (every rank the same; a
        rank that concluded otherwise says so on its stderr), put on the test's report for
        whoever writes the reports."""
        own, verdict = verdict, distributed.agree(verdict, self.shard)
        if (own.verdict, own.message) != (verdict.verdict, verdict.message):
            print(f"sampling-harness: rank {self.shard.rank}: {own.kernel} / {own.name}: "
                  f"{own.verdict} here ({own.message}); rank 0's {verdict.verdict} taken",
                  file=sys.stderr)
        self.node.user_properties.append(
            xdist_gpus.pack(verdict, self.state.statistical_checks, self.state.worker))
        return verdict

    def _attempts(self, check_fn) -> Outcome:
        """``check_fn(self)`` under the GPU's memory admission (``scale.gpu_share``): beside
        the other checks of the GPU, and when its work or a kernel call runs out of memory
        there, once more alone on the GPU (it is seeded: the same batches, the verdict a run
        alone reaches). Out of memory alone is the kernel's failure, with the bytes it asked
        for (a call), or the harness's error (its own work). Not under torchrun: every rank
        must run a sharded check's collectives alike."""
        faults.demand_usable()      # --isolation none, after an earlier check's fault
        share = gpu_share.for_device(self.device) if self.shard.world == 1 else None
        if share is None:
            return _unwrapped(check_fn, self)
        try:
            with share.shared():
                return _unwrapped(check_fn, self)
        except Exception as exc:
            if not gpu_share.caused_by(exc, (torch.OutOfMemoryError, OutOfMemoryFailure)):
                raise
        self.check_retries += 1
        self.runner.restart()
        torch.cuda.empty_cache()
        with share.alone():
            return _unwrapped(check_fn, self)

    def run(self, check_fn) -> Verdict:
        """Run ``check_fn(self) -> Outcome``; record the verdict; fail the test if it failed."""
        started = time.perf_counter()
        if self.sanitize:
            check_fn = CheckContext.sanitized
        faults.checking(self._verdict(Outcome(passed=False, message="", alpha=self.alpha),
                                      "fail", 0.0).to_dict(), self.state.statistical_checks)
        self._progress = CheckProgress(self.config, f"{self.kernel.name} / {self.name}")
        self.runner.on_draws = self._progress.update
        try:
            outcome = self._attempts(check_fn)
            state = "pass" if outcome.passed else "fail"
        except KernelFault as exc:
            locate = f"; locate the access: {self.reproduce()} --sanitize memcheck" \
                if exc.memcheck else ""
            outcome = Outcome(passed=False, message=f"kernel fault: {exc}{locate}",
                              alpha=self.alpha, details={"fault": True})
            state = "fail"
        except KernelFailure as exc:
            alone = " (alone on the GPU)" if isinstance(exc, OutOfMemoryFailure) \
                and self.check_retries else ""
            outcome = Outcome(passed=False, message=f"kernel {exc}{alone}", alpha=self.alpha)
            state = "fail"
        except Exception as exc:
            if self.device.type == "cuda" and faults.sticky_cuda_error(exc) and \
                    not isinstance(exc, faults.ProcessLost):
                # the kernel's asynchronous error, surfacing in the harness's next CUDA call:
                # this process's CUDA context is lost (the worker is replaced after this check)
                faults.spoil("a sticky CUDA error", f"{self.kernel.name} / {self.name}")
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                outcome = Outcome(passed=False, alpha=self.alpha, details={"fault": True},
                                  message=f"kernel fault: {first} (surfaced after a kernel "
                                          f"call returned); locate the access: "
                                          f"{self.reproduce()} --sanitize memcheck")
                state = "fail"
            else:
                outcome = Outcome(passed=False,
                                  message=f"harness error: {type(exc).__name__}: {exc}")
                verdict = self._settle(self._verdict(outcome, "error",
                                                     time.perf_counter() - started))
                if verdict.verdict == "error":
                    raise
                state = None
        finally:
            self._progress.close()
        if state is not None:
            verdict = self._settle(self._verdict(outcome, state, time.perf_counter() - started))
        state = verdict.verdict
        if not verdict.as_expected:
            expected = f" (expected to fail: {verdict.why})" if verdict.expected == "fail" else ""
            pytest.fail(f"{self.kernel.name} / {self.name}: {state}{expected}: "
                        f"{verdict.message}\nreproduce: {verdict.reproduce}", pytrace=False)
        if state == "fail":
            pytest.xfail(f"{self.kernel.name} / {self.name}: failed as stated ({verdict.why})")
        return verdict


def _unwrapped(check_fn, ctx):
    """``check_fn(ctx)``; an error that Hypothesis wrapped (``FlakyFailure``: the failing
    example passed when replayed, as a call that ran out of a shared GPU's memory does) is
    raised as itself, so the verdict names the real error."""
    try:
        return check_fn(ctx)
    except Exception as exc:
        if not getattr(exc, "exceptions", None):     # an exception group (3.11's or the backport)
            raise
        raise gpu_share.leaves(exc)[0] from exc


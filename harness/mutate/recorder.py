"""The differential of ``mutate``: every kernel call of a check run, fingerprinted.

Loaded in the child runs of ``mutate`` (harness/mutate/child.py: a pytest plugin, and an
observer of the runner's validated calls, ``runner.CALL_OBSERVERS``). A call is keyed by its
check and its place among the check's calls; its fingerprint is a digest of its inputs and
seed and a digest of its validated output.

* The original's run writes every call's fingerprint (``ENV_RECORD``).
* A mutant's run makes the same calls (the checks are seeded: the same batches, the same
  seeds) and compares each with the original's (``ENV_AGAINST``): the calls whose inputs
  match are *compared*; those whose outputs differ are counted, and at the first of them the
  original kernel (``ENV_ORIGINAL``) is called here on the same inputs and seed, and both
  outputs are summarised where they differ (the gap), with the inputs of the row that
  differs; the inputs are saved beside (``gap-inputs.pt``) when they are small. Where the
  family draws (its contract takes a seed, the parts that differ are ids), both kernels are
  then called again with fresh seeds and their laws compared (harness/mutate/law.py): the
  gap's ``law``.

Unseeded requests (seed -1) draw fresh seeds from torch's global generator, so that both
runs give them the same draws the recorder seeds that generator before each check and after
each call, from the check's name and the next call's place (``reseed``): every call starts
from its own fixed state, in the original's run and in a mutant's alike.

Digests are of the exact bits (harness/mutate/fingerprint.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch

from sampling_harness.mutate.fingerprint import digest, parts, tensor_digest  # noqa: F401

ENV_RECORD = "SAMPLING_HARNESS_MUTATE_RECORD"      # this run's record (JSON) goes here
ENV_AGAINST = "SAMPLING_HARNESS_MUTATE_AGAINST"    # the original's record to compare with
ENV_ORIGINAL = "SAMPLING_HARNESS_MUTATE_ORIGINAL"  # the original kernel: FAMILY=TARGET
SHOWN = 5                                          # differing elements shown of a gap
SAVED_INPUTS = 64 << 20                            # bytes of a gap's inputs saved, at most


def reseed(check: str, call: int) -> None:
    """Put torch's global generators (CPU and every GPU) in the state call ``call`` of
    ``check`` starts from."""
    torch.manual_seed(int(short(f"{check}/{call}")[:15], 16))


def short(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def _values(tensor: torch.Tensor, index: tuple) -> str:
    value = tensor[index].item()
    return repr(value) if isinstance(value, float) else str(value)


def difference(original, mutant) -> list[dict]:
    """Per output part: how many elements differ, and the first few with both values."""
    found = []
    for i, (a, b) in enumerate(zip(parts(original), parts(mutant), strict=False)):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) \
                or a.shape != b.shape:
            if digest(a) != digest(b):
                found.append({"part": i, "differ": "shape or kind",
                              "original": _brief(a), "mutant": _brief(b)})
            continue
        differ = a != b
        if a.dtype.is_floating_point:
            differ &= ~(a.isnan() & b.isnan())
        count = int(differ.sum())
        if count:
            at = [tuple(int(j) for j in row) for row in differ.nonzero()[:SHOWN].tolist()]
            found.append({"part": i, "differ": count, "of": a.numel(),
                          "at": [{"index": list(j), "original": _values(a, j),
                                  "mutant": _values(b, j)} for j in at]})
    return found


def _brief(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    return repr(value)[:80]


def describe_inputs(inputs: dict, seed, row: int | None = None) -> dict:
    """Each input in a line: dtype, shape, range; the row that differs, where given."""
    from sampling_harness.seeds import described

    lines = {}
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor):
            text = _brief(value)
            if value.numel() and value.dtype.is_floating_point:
                finite = value[value.isfinite()]
                if finite.numel():
                    text += f" in [{finite.min().item():.4g}, {finite.max().item():.4g}]"
            if row is not None and value.dim() and row < value.shape[0]:
                picked = value[row]
                text += f"; row {row}: " + (str(picked.tolist()) if picked.numel() <= 16 else
                                            f"{int((picked != 0).sum())} nonzero of "
                                            f"{picked.numel()}")
            lines[name] = text
        else:
            lines[name] = repr(value)[:160]
    lines["seed"] = described(seed)
    return lines


class Recorder:
    """Fingerprints of one run's calls; compares them with the original's when given."""

    def __init__(self, out: Path, against: Path | None = None, original: str | None = None):
        self.out, self.original = out, original
        self.check = "?"
        self.calls: dict[str, dict] = {}
        self.slowest = 0.0
        self.seconds: dict[int, float] = {}        # runner -> its seconds so far
        self.expected = json.loads(against.read_text())["calls"] if against else None
        self.compared = self.differing = 0
        self.first: dict | None = None
        self.diverged: str | None = None

    def observe(self, runner, inputs: dict, seed, output) -> None:
        spent = runner.seconds - self.seconds.get(id(runner), 0.0)
        self.seconds[id(runner)] = runner.seconds
        self.slowest = max(self.slowest, spent)
        key = f"{self.check}/{runner.calls - 1}"
        fingerprint = {"inputs": short(digest(inputs) + "|" + digest(seed)),
                       "output": short(digest(output))}
        self.calls[key] = fingerprint
        try:
            self._compare(runner, key, fingerprint, inputs, seed, output)
        finally:
            reseed(self.check, runner.calls)

    def _compare(self, runner, key: str, fingerprint: dict, inputs: dict, seed, output):
        if self.expected is None:
            return
        expected = self.expected.get(key)
        if expected is None or expected["inputs"] != fingerprint["inputs"]:
            self.diverged = self.diverged or (f"{key}: the original made no such call" if
                                              expected is None else f"{key}: other inputs")
            return
        self.compared += 1
        if expected["output"] != fingerprint["output"]:
            self.differing += 1
            if self.first is None:
                self.first = self._gap(runner, key, inputs, seed, output, expected["output"])

    def _gap(self, runner, key: str, inputs: dict, seed, output, recorded: str) -> dict:
        """The first call whose output differs: both outputs where they differ, the inputs
        (the row that differs), and whether the original repeats its recorded output."""
        check, _, index = key.rpartition("/")
        gap = {"check": check, "call": int(index)}
        try:
            reference = self._original_output(runner, inputs, seed)
            gap["differences"] = difference(reference, output)
            gap["original_repeats"] = short(digest(reference)) == recorded
            first = next((d["at"][0]["index"] for d in gap["differences"] if d.get("at")),
                         None)
            gap["inputs"] = describe_inputs(inputs, seed, first[0] if first else None)
        except Exception as exc:     # the report says so; the run's verdicts stand
            gap["error"] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            gap["law"] = self._law(runner, key, inputs, seed, reference, output)
        try:
            kept = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
            size = sum(v.numel() * v.element_size() for v in kept.values()
                       if isinstance(v, torch.Tensor))
            if size <= SAVED_INPUTS:
                path = self.out.parent / "gap-inputs.pt"
                torch.save({"inputs": kept, "seed": seed.cpu() if isinstance(
                    seed, torch.Tensor) else seed, "check": check, "call": int(index)}, path)
                gap["saved"] = str(path)
        except Exception:            # best effort: the summary above is the report's
            pass
        return gap

    def _law(self, runner, key: str, inputs: dict, seed, reference, output) -> dict:
        """The law test of a call of a stochastic family whose ids differ
        (harness/mutate/law.py): the original and the mutant called on its inputs with
        fresh seeds, as many times as the budget's target deviation asks; torch's
        generators are put back after it by ``observe``, so the rest of the run is as
        without it."""
        from sampling_harness.mutate import law

        try:
            why = law.not_draws(runner.family, reference, output)
            if why is not None:
                return {"verdict": "values", "reason": why}
            return law.law_test(runner.family, self._original_fn(), runner.kernel.fn, inputs,
                                seed, key, law.outcome_rows(output).numel())
        except Exception as exc:     # the gap stands, untested
            return {"verdict": "untested", "reason": f"{type(exc).__name__}: {exc}"[:300]}

    def _original_fn(self):
        from sampling_harness.families.registry import load

        name, _, target = (self.original or "").partition("=")
        return load(target, name).fn

    def _original_output(self, runner, inputs: dict, seed):
        family = runner.family
        fn = self._original_fn()
        fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        call_seed = seed.clone() if isinstance(seed, torch.Tensor) else seed
        reseed(self.check, runner.calls - 1)          # the state the mutant's call began in
        output = family.call(fn, fresh, call_seed)
        if runner.device.type == "cuda":
            torch.cuda.synchronize(runner.device)
        return family.validate(output, inputs)

    def result(self) -> dict:
        body = {"calls": self.calls, "slowest_call": self.slowest}
        if self.expected is not None:
            missing = sorted(set(self.expected) - set(self.calls))
            body.update({"compared": self.compared, "differing": self.differing,
                         "first": self.first, "diverged": self.diverged,
                         "missing": len(missing), "original_calls": len(self.expected)})
        return body

    def write(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(self.result()), encoding="utf-8")


RECORDER: Recorder | None = None


def install() -> Recorder | None:
    """Start recording in this process where the environment asks for it (a child run)."""
    global RECORDER
    out = os.environ.get(ENV_RECORD)
    if not out:
        return None
    from sampling_harness.run import runner

    against = os.environ.get(ENV_AGAINST)
    RECORDER = Recorder(Path(out), Path(against) if against else None,
                        os.environ.get(ENV_ORIGINAL))
    runner.CALL_OBSERVERS.append(RECORDER.observe)
    return RECORDER


def pytest_runtest_setup(item) -> None:
    """(A hook.) The check whose calls come next."""
    check = getattr(item, "check", None)
    if RECORDER is not None and check is not None:
        RECORDER.check = check.name
        reseed(check.name, 0)

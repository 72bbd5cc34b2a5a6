"""Batch invariance, exact: a request drawn with the same seed gives the same output whatever
else is in its batch. Shared by families sample, sample-logits, rejection and tree-rejection.

A batch is a list of requests, each its own row(s) of the family's inputs (an ``Adapter``
draws and assembles them) and, with per-request seeds, its own seed (-1: unseeded). Each
trial draws a base batch, calls the kernel on it, then calls it on edited copies of it:
each edited batch applies one to three named edits in turn (``INT_SEED_EDITS``,
``PER_REQUEST_EDITS``). Every request the edits left alone (same row(s), same seed, not
unseeded) must give the same output as in the base call, exactly:

* an int seed (every kernel): the edits that keep a request's row index, since row r's draws
  may depend on (seed, r): rows appended after it, rows removed from the end, other rows'
  content changed;
* per-request seeds (kernels whose metadata says so): every edit, also rows inserted,
  removed anywhere and shuffled, other rows reseeded or made unseeded, and unseeded rows
  inserted; a request's output may depend only on its own seed and row(s).
  Also, seeds must matter: many copies of one diffuse request with distinct seeds must not
  all draw the same output (``distinct_seeds``; its false-fail probability is below 2^-377).

No statistics and no alpha: a correct kernel never fails (outputs of unseeded requests,
legitimately random per call, are never compared). A kernel whose noise moves with the batch
changes a compared request's output with probability 1 - sum_i p_i^2 per request (the rows
are diffuse: above one half for most), and a trial compares dozens, so such a kernel is
caught at the first edit that moves its noise. A failure names the request (its rows in
both calls and its seed) and the edit; it re-calls the base batch first, so that a kernel
that is merely nondeterministic is named as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from sampling_harness.seeds import SKIPPED, UNSEEDED, request_seeds, takes_request_seeds
from sampling_harness.verdict import Outcome

TRIALS = {"smoke": 3, "quick": 8, "standard": 32, "thorough": 128}   # base batches per mode
EDITED = 4                     # edited batches per base batch
MAX_BATCH = 8                  # requests in a base batch (three edits may add up to 12)
SPREAD_TOKENS = 63             # distinct_seeds: a uniform law over at least this many outputs
SPREAD_REQUESTS = 64           # ... drawn by this many copies of one request, distinct seeds
UNSEEDED_SHARE = 0.25          # per-request mode: share of fresh requests drawn unseeded


@dataclass(frozen=True)
class Request:
    ident: int                 # which request (kept through edits; a changed one gets a new id)
    content: object            # its row(s), as the family's Adapter draws them
    seed: int                  # per-request seed (-1 unseeded); unused with an int seed


@dataclass(frozen=True)
class Adapter:
    """What a family adds: ``shape(rng)`` draws a trial's shared shape (a dict: V, ...),
    ``fresh(rng, shape)`` one request's content, ``inputs(contents, shape, device)`` the
    call's inputs (every contract argument but the seed), ``outputs(validated, contents)``
    one hashable output per request, ``label(content)`` a few words on a request;
    ``spread()``: (shape, content) of a request whose output is uniform over SPREAD_TOKENS
    values or more."""

    shape: Callable
    fresh: Callable
    inputs: Callable
    outputs: Callable
    label: Callable = lambda content: ""
    spread: Callable | None = None


class Pool:
    """Draws fresh requests with new ids (per-request mode: seeds, some unseeded)."""

    def __init__(self, adapter: Adapter, shape: dict, rng: np.random.Generator,
                 per_request: bool):
        self.adapter, self.shape, self.rng, self.per_request = adapter, shape, rng, per_request
        self.next_id = 0

    def seed(self, unseeded_share: float = UNSEEDED_SHARE) -> int:
        if not self.per_request:
            return UNSEEDED
        return UNSEEDED if self.rng.random() < unseeded_share else \
            int(self.rng.integers(0, 2**31 - 1))

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def request(self, seed: int | None = None) -> Request:
        return Request(self.new_id(), self.adapter.fresh(self.rng, self.shape),
                       self.seed() if seed is None else seed)


# The edits: small named pieces, each (requests, pool) -> (requests, words naming it).

def appended(batch: list[Request], pool: Pool):
    k = int(pool.rng.integers(1, 5))
    return batch + [pool.request() for _ in range(k)], f"{k} request(s) appended"


def truncated(batch: list[Request], pool: Pool):
    if len(batch) < 2:
        return appended(batch, pool)
    keep = int(pool.rng.integers(1, len(batch)))
    return batch[:keep], f"the last {len(batch) - keep} request(s) removed"


def changed(batch: list[Request], pool: Pool):
    rows = _some_rows(batch, pool)
    out = [replace(pool.request(), seed=r.seed) if i in rows else r for i, r in enumerate(batch)]
    return out, f"the content of row(s) {sorted(rows)} changed"


def removed(batch: list[Request], pool: Pool):
    if len(batch) < 2:
        return appended(batch, pool)
    rows = _some_rows(batch, pool)
    return [r for i, r in enumerate(batch) if i not in rows], f"row(s) {sorted(rows)} removed"


def inserted(batch: list[Request], pool: Pool):
    out = list(batch)
    k = int(pool.rng.integers(1, 4))
    for _ in range(k):
        out.insert(int(pool.rng.integers(0, len(out) + 1)), pool.request())
    return out, f"{k} request(s) inserted"


def shuffled(batch: list[Request], pool: Pool):
    order = pool.rng.permutation(len(batch))
    return [batch[i] for i in order], f"rows shuffled to {order.tolist()}"


def unseeded_inserted(batch: list[Request], pool: Pool):
    out = list(batch)
    k = int(pool.rng.integers(1, 4))
    for _ in range(k):
        out.insert(int(pool.rng.integers(0, len(out) + 1)), pool.request(seed=UNSEEDED))
    return out, f"{k} unseeded request(s) inserted"


def unseeded_made(batch: list[Request], pool: Pool):
    rows = _some_rows(batch, pool)
    out = [replace(r, ident=pool.new_id(), seed=UNSEEDED) if i in rows else r
           for i, r in enumerate(batch)]
    return out, f"row(s) {sorted(rows)} made unseeded"


def reseeded(batch: list[Request], pool: Pool):
    rows = _some_rows(batch, pool)
    out = [replace(r, ident=pool.new_id(), seed=pool.seed(0.0)) if i in rows else r
           for i, r in enumerate(batch)]
    return out, f"row(s) {sorted(rows)} reseeded"


def _some_rows(batch: list[Request], pool: Pool) -> set[int]:
    """One to half of the rows (at least one, never all of a batch of two or more)."""
    count = int(pool.rng.integers(1, max(1, len(batch) // 2) + 1))
    return {int(i) for i in pool.rng.choice(len(batch), size=count, replace=False)}


INT_SEED_EDITS = (appended, truncated, changed)
PER_REQUEST_EDITS = INT_SEED_EDITS + (removed, inserted, shuffled, unseeded_inserted,
                                      unseeded_made, reseeded)


def composed(batch: list[Request], pool: Pool, edits) -> tuple[list[Request], str]:
    """One to three edits drawn from ``edits``, applied in turn; their names joined."""
    names = []
    for _ in range(int(pool.rng.integers(1, 4))):
        edit = edits[int(pool.rng.integers(0, len(edits)))]
        batch, name = edit(batch, pool)
        names.append(name)
    return batch, ", then ".join(names)


MODES = {False: "int seed", True: "per-request seeds"}


class Moved(Exception):
    """A compared request's output changed."""


def run_mode(ctx, adapter: Adapter, per_request: bool, rng: np.random.Generator,
             tally: dict) -> None:
    """All trials of one mode, counting the request outputs compared in ``tally[mode]``.
    Raises ``Moved`` with the first request whose output changed."""
    mode = MODES[per_request]
    tally[mode] = 0
    edits = PER_REQUEST_EDITS if per_request else INT_SEED_EDITS
    seeds = ctx.seeds()
    for _ in range(TRIALS.get(ctx.budget.name, TRIALS["quick"])):
        shape = adapter.shape(rng)
        pool = Pool(adapter, shape, rng, per_request)
        base = [pool.request() for _ in range(int(rng.integers(1, MAX_BATCH + 1)))]
        call_seed = next(seeds)
        before = call(ctx, adapter, base, shape, call_seed, per_request)
        for _ in range(EDITED):
            edited, name = composed(base, pool, edits)
            after = call(ctx, adapter, edited, shape, call_seed, per_request)
            tally[mode] += compare(ctx, adapter, base, before, edited, after, name, shape,
                                   call_seed, per_request)


def call(ctx, adapter: Adapter, batch: list[Request], shape: dict, call_seed: int,
         per_request: bool) -> list:
    """The outputs of one validated call on ``batch``, one per request."""
    contents = [r.content for r in batch]
    inputs = adapter.inputs(contents, shape, ctx.device)
    seed = request_seeds([r.seed for r in batch], ctx.device) if per_request else call_seed
    return adapter.outputs(ctx.runner.call(inputs, seed), contents)


def compare(ctx, adapter, base, before, edited, after, name, shape, call_seed,
            per_request) -> int:
    """Compare every request of ``edited`` present unchanged in ``base`` (per-request: seeded;
    int seed: at the same row); raise ``Moved`` naming the first that changed."""
    rows = {r.ident: i for i, r in enumerate(base)}
    compared = 0
    for j, request in enumerate(edited):
        i = rows.get(request.ident)
        if i is None or (per_request and request.seed == UNSEEDED) or \
                (not per_request and i != j):
            continue
        compared += 1
        if after[j] != before[i]:
            nondeterministic(ctx, adapter, base, before, shape, call_seed, per_request)
            seed = f"seed {request.seed}" if per_request else f"int seed {call_seed}"
            raise Moved(
                f"request at row {i} ({seed}{adapter.label(request.content)}) drew {before[i]} "
                f"in a batch of {len(base)}, but {after[j]} at row {j} of {len(edited)} after: "
                f"{name}")
    return compared


def nondeterministic(ctx, adapter, base, before, shape, call_seed, per_request) -> None:
    """Call ``base`` again; raise ``Moved`` if a compared (seeded) request's output differs
    from the first call: the kernel is nondeterministic, or its seeded requests follow the
    fresh draws of unseeded batch-mates."""
    again = call(ctx, adapter, base, shape, call_seed, per_request)
    for i, request in enumerate(base):
        if (per_request and request.seed == UNSEEDED) or again[i] == before[i]:
            continue
        seed = f"seed {request.seed}" if per_request else f"int seed {call_seed}"
        unseeded = sum(r.seed == UNSEEDED for r in base) if per_request else 0
        cause = (f"its {unseeded} unseeded batch-mate(s)' fresh draws move it, or the kernel "
                 "is nondeterministic") if unseeded else "the kernel is nondeterministic"
        raise Moved(f"the same batch of {len(base)} requests and seeds, called twice, gave "
                    f"request at row {i} ({seed}{adapter.label(request.content)}) {before[i]} "
                    f"then {again[i]}: {cause}")


def distinct_seeds(ctx, adapter: Adapter, rng: np.random.Generator) -> int | None:
    """Per-request seeds must reach the draws: SPREAD_REQUESTS copies of one request with a
    uniform law over k >= SPREAD_TOKENS outputs, each with its own seed, all drawing the same
    output has probability k^-(n-1) <= 63^-63 (about 2^-377) under the contract: far below any
    false-fail budget, so it is held exact (no alpha spent). A kernel that keys every row by
    one seed, or by none, draws one output n times. Returns the number of distinct outputs;
    raises ``Moved``."""
    if adapter.spread is None:
        return None
    shape, content = adapter.spread()
    seeds = rng.choice(2**31 - 1, size=SPREAD_REQUESTS, replace=False)
    batch = [Request(i, content, int(s)) for i, s in enumerate(seeds)]
    outs = call(ctx, adapter, batch, shape, 0, True)
    if len(set(outs)) == 1:
        raise Moved(f"{SPREAD_REQUESTS} copies of one request{adapter.label(content)}, whose "
                    f"output is uniform over {SPREAD_TOKENS} or more values, with "
                    f"{SPREAD_REQUESTS} distinct seeds all drew {outs[0]}: the per-request "
                    "seeds do not reach the draws")
    return len(set(outs))


def invariance(ctx, adapter: Adapter) -> Outcome:
    """The check: the int-seed mode, then the per-request mode if the kernel declares it."""
    rng = np.random.default_rng(ctx.seed)
    per_request = takes_request_seeds(ctx.kernel.meta)
    counts: dict[str, int] = {}
    spread = None
    try:
        for mode in ([False, True] if per_request else [False]):
            run_mode(ctx, adapter, mode, rng, counts)
        if per_request:
            spread = distinct_seeds(ctx, adapter, rng)
    except Moved as moved:
        mode = list(counts)[-1]
        return Outcome(False, f"{mode}: {moved}", samples=sum(counts.values()),
                       effect="any request whose output moves with its batch (exact)",
                       details={"mode": mode, "compared": counts})
    trials = TRIALS.get(ctx.budget.name, TRIALS["quick"])
    said = "; ".join(f"{mode}: {n} request outputs unchanged over {trials} base batches and "
                     f"{trials * EDITED} edited ones" for mode, n in counts.items())
    if spread is not None:
        said += (f"; {SPREAD_REQUESTS} copies of one request with distinct seeds drew {spread} "
                 "distinct outputs")
    if not per_request:
        said += f"; per-request seeds: {SKIPPED}"
    return Outcome(True, said, samples=sum(counts.values()),
                   effect="any request whose output moves with its batch (exact)",
                   details={"compared": counts,
                            "per_request": "checked" if per_request else SKIPPED})

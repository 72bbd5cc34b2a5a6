"""A small speculative-decoding engine: toy models, real kernels, every part pluggable.

Each step, like an inference engine's:

1. the scheduler orders the running requests (a seeded shuffle: batches get reordered);
2. the target model scores, for a request of length L with n pending drafts, positions
   L .. L + n: the rows that verify the drafts and the bonus row. A position at or past
   max_model_len has no valid state (no KV slot): its row is whatever the buffer held,
   seeded garbage, never an error;
3. the draft-probability hand-over gives the rejection sampler the cached draft laws in
   batch order (family ``draft-probs``);
4. the sampler draws each bonus token from its row (family ``sample-logits``, temperature
   1), the rejection sampler emits accepted drafts and one recovered or bonus token
   (family ``rejection``), and the logprob gatherer returns each emitted token's logprob
   from the row it was emitted at (family ``logprobs``, raw_logprobs);
5. tokens are appended; a request stops at max_tokens (its output cut there) or once its
   sequence reaches max_model_len. Nothing else trims: the proposer must respect the limit;
6. the proposer step (family ``spec-decode``) drafts for the next step. Synchronous
   scheduling tells it the true lengths; asynchronous scheduling plans the next step while
   this one is in flight, so the proposer must leave room for k + 1 more tokens
   (lookahead = k + 1).

Every random choice comes from the config's seed; the run is reproducible. The engine
records, per verified draft, its acceptance probability sum_x min(p(x), q(x)) under the true
target and draft laws of its context (float64), for the acceptance-rate check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from sampling_harness.seeds import derive_seed
from sampling_harness.suites.spec_decode.engine.toy import ToyModel

GARBAGE = 30.0   # past max_model_len a row holds stale values of this magnitude


@dataclass(frozen=True)
class EngineConfig:
    num_spec_tokens: int = 3
    max_model_len: int = 16
    scheduling: str = "sync"     # "sync" or "async"
    seed: int = 0

    def __post_init__(self):
        if self.scheduling not in ("sync", "async"):
            raise ValueError(f"scheduling must be sync or async, got {self.scheduling!r}")
        if self.num_spec_tokens < 0 or self.max_model_len < 2:
            raise ValueError("num_spec_tokens must be >= 0 and max_model_len >= 2")


@dataclass(frozen=True)
class Parts:
    """Callables meeting each family's contract (positional arguments, in contract order)."""

    proposer: Callable
    handover: Callable
    rejection: Callable
    sampler: Callable
    logprobs: Callable


@dataclass
class Request:
    req_id: str
    prompt: list[int]
    max_tokens: int
    output: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    drafts: list[int] = field(default_factory=list)

    @property
    def tokens(self) -> list[int]:
        return self.prompt + self.output


@dataclass
class EngineRun:
    requests: list[Request]
    alphas: list[float] = field(default_factory=list)     # per verified draft
    accepted: list[bool] = field(default_factory=list)
    steps: int = 0

    @property
    def acceptance_rate(self) -> float:
        return float(np.mean(self.accepted)) if self.accepted else float("nan")

    @property
    def expected_acceptance(self) -> float:
        return float(np.mean(self.alphas)) if self.alphas else float("nan")


class Engine:
    def __init__(self, target: ToyModel, draft: ToyModel, config: EngineConfig, parts: Parts,
                 device: torch.device | str = "cpu"):
        if target.vocab != draft.vocab or target.context != draft.context:
            raise ValueError("target and draft must share V and the context length")
        self.target, self.draft, self.config, self.parts = target, draft, config, parts
        self.device = torch.device(device)
        self.draft_table = draft.tensor(self.device)

    def seed(self, *parts) -> int:
        return derive_seed(self.config.seed, *parts)

    def row(self, req: Request, position: int, seq: list[int]) -> np.ndarray:
        """The target's float32 logits predicting ``position`` after ``seq``; garbage past
        the limit (no state there)."""
        if position < self.config.max_model_len:
            return self.target.logits(seq)
        rng = np.random.default_rng(self.seed("garbage", req.req_id, position))
        return rng.uniform(-GARBAGE, GARBAGE, self.target.vocab).astype(np.float32)

    def run(self, requests: list[Request]) -> EngineRun:
        record = EngineRun(requests)
        running = [r for r in requests if len(r.tokens) < self.config.max_model_len]
        cache, cache_ids = None, []
        order_rng = np.random.default_rng(self.seed("order"))
        while running:
            batch = [running[i] for i in order_rng.permutation(len(running))]
            self.step(batch, cache, cache_ids, record)
            running = [r for r in batch if len(r.output) < r.max_tokens
                       and len(r.tokens) < self.config.max_model_len]
            cache, cache_ids = self.propose(running, record.steps)
            record.steps += 1
        return record

    def propose(self, running: list[Request], step: int):
        if not running:
            return None, []
        k = self.config.num_spec_tokens
        lookahead = k + 1 if self.config.scheduling == "async" else 0
        drafts, probs = self.parts.proposer(
            self.draft_table, self.draft.context, [r.tokens for r in running],
            [list(r.drafts) for r in running], k, self.config.max_model_len, lookahead,
            self.seed("propose", step))
        for req, d in zip(running, drafts, strict=True):
            req.drafts = list(d)
        return probs, [r.req_id for r in running]

    def step(self, batch: list[Request], cache, cache_ids: list[str], record: EngineRun):
        counts = [len(r.drafts) for r in batch]
        verify_rows, bonus_rows, emitted_at = [], [], []
        for req in batch:
            seq, base = req.tokens, len(req.tokens)
            rows = [self.row(req, base + i, seq + req.drafts[:i])
                    for i in range(len(req.drafts) + 1)]
            verify_rows += rows[:-1]
            bonus_rows.append(rows[-1])
            emitted_at.append(rows)
        dev = self.device
        vocab = self.target.vocab
        target_logits = torch.as_tensor(np.array(verify_rows, np.float32).reshape(-1, vocab),
                                        device=dev)
        bonus_logits = torch.as_tensor(np.array(bonus_rows, np.float32), device=dev)
        size = len(batch)
        ones = torch.ones(size, device=dev)
        zeros = torch.zeros(size, dtype=torch.int64, device=dev)
        bonus = self.parts.sampler(bonus_logits, ones, zeros, ones,
                                   self.seed("bonus", record.steps))
        draft_probs = None if cache is None else self.parts.handover(
            cache, cache_ids, [r.req_id for r in batch], counts)
        drafts = torch.tensor([t for r in batch for t in r.drafts], dtype=torch.int64, device=dev)
        out = self.parts.rejection(drafts, counts, draft_probs, target_logits.softmax(dim=1),
                                   bonus.long(), torch.zeros(size, dtype=torch.bool, device=dev),
                                   self.seed("reject", record.steps))
        emitted = [[t for t in row if t >= 0] for row in out.tolist()]
        self.acceptance(batch, emitted, record)
        self.append(batch, emitted, emitted_at)

    def acceptance(self, batch: list[Request], emitted: list[list[int]], record: EngineRun):
        """Per verified draft: sum_x min(p, q) under the true laws of its context, and
        whether it was accepted."""
        for req, tokens in zip(batch, emitted, strict=True):
            accepted = len(tokens) - 1
            for i in range(min(accepted + 1, len(req.drafts))):
                seq = req.tokens + req.drafts[:i]
                if len(seq) >= self.config.max_model_len:
                    break
                p, q = self.target.probs64(seq), self.draft.probs64(seq)
                record.alphas.append(float(np.minimum(p, q).sum()))
                record.accepted.append(i < accepted)

    def append(self, batch: list[Request], emitted: list[list[int]], emitted_at):
        flat_rows, flat_ids, owners = [], [], []
        for b, (req, tokens) in enumerate(zip(batch, emitted, strict=True)):
            tokens = tokens[:req.max_tokens - len(req.output)]
            for j, t in enumerate(tokens):
                flat_rows.append(emitted_at[b][j])
                flat_ids.append(t)
                owners.append(b)
        if not flat_ids:
            return
        count = len(flat_ids)
        dev = self.device
        logits = torch.as_tensor(np.array(flat_rows, np.float32), device=dev)
        ids = torch.tensor(flat_ids, dtype=torch.int64, device=dev)[:, None]
        got = self.parts.logprobs(logits, ids, "raw_logprobs", torch.ones(count, device=dev),
                                  torch.zeros(count, dtype=torch.int64, device=dev),
                                  torch.ones(count, device=dev))
        values = (got[0] if isinstance(got, tuple) else got)[:, 0].tolist()
        for b, t, v in zip(owners, flat_ids, values, strict=True):
            batch[b].output.append(t)
            batch[b].logprobs.append(v)

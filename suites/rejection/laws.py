"""The laws of family ``rejection``: (accepted length A, emitted token Y) per request.

For a request with n drafts, P(A = j, Y = y) = prod_{i<j} alpha_i (1 - alpha_j) r_j(y) for
j < n (r_j the normalised residual max(p_j - q_j, 0)), and P(A = n, Y = bonus) =
prod_i alpha_i (reference/rejection.py). Three checks, each a chi-square per request on the
cells of this table (sparse cells pooled to expect >= 5 draws; observed cells of
probability 0 are exact failures):

* joint: curated requests at a small V, drafts drawn from q on every call;
* fixed_drafts: the law conditional on fixed, adversarial drafts (target probability
  0, the argmax, tiny target probability, random), with draft probs and without (q one-hot);
* law_generated: batches drawn by Hypothesis (ragged counts with zeros, greedy mixes, laws
  with zeros, ties, p = q, near-equal p and q, q with mass where p has none).

Draws per request are planned so that any deviation of total variation ``budget.joint_tv``
on the pooled cells is detected with power ``budget.power`` (worst case over deviation
shapes). Alpha: the check's share, split (Bonferroni) over the requests tested.
"""

from __future__ import annotations

from hypothesis import strategies as st

from sampling_harness.checks.fits import law_test, laws_outcome
from sampling_harness.reference.rejection import RejectionLaws, joint_law
from sampling_harness.stats.chisquare import planned_samples
from sampling_harness.stats.multiple import bonferroni
from sampling_harness.strategies.rejection import rejection_laws
from sampling_harness.strategies.seeded import each_example
from sampling_harness.suites.rejection.draws import tally
from sampling_harness.suites.rejection.requests import CURATED, build

EFFECT = "total variation of the (accepted length, emitted token) law on its pooled cells"


def request_laws(laws: RejectionLaws) -> dict[int, object]:
    """The exact joint law of every random request (greedy rows are checked exactly)."""
    found = {}
    for b in range(laws.batch):
        target, draft, fixed, bonus, greedy = laws.request(b)
        if not greedy:
            found[b] = joint_law(target, draft, bonus, fixed)
    return found


def tally_and_test(ctx, batches: list[tuple[list[str], RejectionLaws]], alpha: float) -> list:
    """Tally every batch with its planned draws and test each random request."""
    results = []
    for names, laws in batches:
        exact = request_laws(laws)
        if not exact:
            continue
        replicas = planned_samples([law.ravel() for law in exact.values()],
                                   ctx.budget.joint_tv, alpha, ctx.budget.power)
        tables = tally(ctx, laws, replicas)
        results += [{**law_test(names[b], tables[b], law, alpha, ctx.budget.power),
                     "vocab": laws.vocab} for b, law in exact.items()]
    return results


def run(ctx, batches) -> object:
    tested = sum(len(request_laws(laws)) for _, laws in batches)
    alpha = bonferroni(ctx.alpha, max(1, tested))
    results = tally_and_test(ctx, batches, alpha)
    return laws_outcome(ctx, results, alpha, EFFECT, sum(r["draws"] for r in results),
                        describe=lambda r: f"(A, Y) = {divmod(r['worst_cell'], r['vocab'])}")


def joint(ctx):
    return run(ctx, [build(CURATED, ctx.budget.joint_vocab, ctx.seed)])


def fixed_drafts(ctx):
    vocab = ctx.budget.joint_vocab
    return run(ctx, [build(CURATED, vocab, ctx.seed, fixed=True),
                     build(CURATED, vocab, ctx.seed + 1, draft_probs=False)])


def generated_batches(max_vocab: int):
    """Batches with drafts drawn from q, or fixed drafts with or without draft probs."""
    return st.one_of(
        rejection_laws(max_batch=6, max_drafts=4, max_vocab=max_vocab, drafted=True),
        rejection_laws(max_batch=6, max_drafts=4, max_vocab=max_vocab, drafted=False,
                       with_draft_probs=None)).filter(has_random_request)


def has_random_request(laws: RejectionLaws) -> bool:
    """A batch with a law to test: some random request with drafts (greedy requests and
    zero-draft ones are checked exactly by every call, in this check too)."""
    return bool(any(n > 0 and not g for n, g in zip(laws.num_draft_tokens, laws.greedy,
                                                   strict=True)))


def law_generated(ctx):
    """Hypothesis draws the batches (seeded by the check's seed, so a run is repeatable)."""
    budget, batches = ctx.budget, []

    def one_batch(laws):
        batches.append(([f"generated-{len(batches)}.{b}" for b in range(laws.batch)], laws))

    each_example(ctx.seed, budget.generated_batches,
                 generated_batches(budget.generated_max_vocab), one_batch)
    return run(ctx, batches)

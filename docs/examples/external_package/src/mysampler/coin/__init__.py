"""Family ``coin``, declared in one place; entry point ``sampling_harness.families``."""

from mysampler.coin import checks
from mysampler.coin.contract import BUDGETS, validate
from sampling_harness.families import Check, Family, Mutant

FAMILY = Family(
    name="coin",
    parameters=("probs", "seed"),
    doc=("fn(probs: float32 [B, 2] (tails, heads), rows >= 0 summing to 1, seed: int in "
         "[0, 2^31)) -> int64 [B] on probs.device: row r is 1 with probability probs[r, 1]"),
    validate=validate,
    output_bytes=lambda inputs: 8 * inputs["probs"].shape[0],
    draws=lambda inputs: inputs["probs"].shape[0],
    budgets=BUDGETS,
    checks=(
        Check("validity", checks.validity, detects=(
            "a broken contract (dtype, shape, device, ids), a side of probability 0, "
            "ids that change between two calls with one seed, a raise, a hang")),
        Check("fit", checks.fit, statistical=True, detects=(
            "a coin whose heads rate is off its P(heads) by budget.tv or more")),
    ),
    mutants=(
        Mutant("tempered-twice", "mysampler.coin.mutants:tempered_twice",
               caught_by=("fit",), budget="quick",
               bug=("temperature applied twice: biased coins lean further, while fair and "
                    "certain ones (all the validity check sees) stay right")),
        Mutant("unseeded", "mysampler.coin.mutants:unseeded",
               caught_by=("validity",), budget="quick",
               bug="the seed ignored: one (probs, seed) gives different ids call to call"),
    ),
)

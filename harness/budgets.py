"""Budgets: how much evidence a run gathers, named smoke, quick, standard or thorough.

``smoke`` is sized for the Triton interpreter on a laptop CPU and for compute-sanitizer
(every edge case of every validity check, few draws): its minimum detectable effects are
several times weaker than quick's, and the report states them. No mutant is registered
at it.

Each family states, per budget name, the effects its checks must detect
(``Family.budgets``); sample counts are not set here but derived by each check from those
targets, the power and its share of the false-fail budget (see harness/stats).
How large one kernel call may be is not a budget's business: it follows from the memory
a check is granted (harness/scale/memory.py).
"""

from __future__ import annotations

BUDGET_NAMES = ("smoke", "quick", "standard", "thorough")

"""harness/scale/compile_lock.py: a variant that one process is compiling is loaded, not compiled
again, by another that asks for it meanwhile; a failed or stuck holder never blocks for good.

Each test plays Triton's part (``get_group`` before a compile, ``put`` and ``put_group``
after it) in this process and in a forked one, on a cache folder of its own."""

from __future__ import annotations

import multiprocessing
import time

import pytest

pytest.importorskip("triton")

from sampling_harness.scale import compile_lock  # noqa: E402
from sampling_harness.scale.compile_lock import LockingCacheManager  # noqa: E402

KEY, NAME = "VARIANT", "kernel.json"
HOLD_S = 0.6


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    yield tmp_path
    for folder in list(compile_lock._held):
        compile_lock._release(folder)


def _compiled(manager: LockingCacheManager) -> None:
    """What Triton does after a compile: the files, then the group."""
    path = manager.put("{}", NAME, binary=False)
    manager.put_group(NAME, {NAME: path})


def _ask(key, wait_s, results):
    """(Another process.) How long get_group took, and whether it found the variant."""
    compile_lock.WAIT_S = wait_s
    start = time.monotonic()
    group = LockingCacheManager(key).get_group(NAME)
    results.put((time.monotonic() - start, group is not None))


def _asked_meanwhile(key=KEY, wait_s=30.0, then=None):
    """Start another process asking for ``key``, run ``then`` after HOLD_S here, and return
    what the other process saw."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    other = context.Process(target=_ask, args=(key, wait_s, results))
    other.start()
    time.sleep(HOLD_S)
    if then is not None:
        then()
    seen = results.get(timeout=60)
    other.join(timeout=60)
    return seen


def test_a_waiter_loads_what_the_holder_compiled():
    holder = LockingCacheManager(KEY)
    assert holder.get_group(NAME) is None              # a miss: this process compiles
    seconds, found = _asked_meanwhile(then=lambda: _compiled(holder))
    assert found and seconds >= HOLD_S * 0.8            # it waited, then loaded
    assert not compile_lock._held                      # put_group let go


def test_a_hit_takes_no_lock():
    _compiled(LockingCacheManager(KEY))
    assert LockingCacheManager(KEY).get_group(NAME) is not None
    assert not compile_lock._held


def test_a_failed_compile_lets_go_at_the_next_lookup():
    holder = LockingCacheManager(KEY)
    assert holder.get_group(NAME) is None              # the compile that will raise
    assert LockingCacheManager("OTHER").get_group(NAME) is None   # the process goes on
    seconds, found = _asked_meanwhile()
    assert not found and seconds < HOLD_S / 2           # free at once: it compiles itself


def test_a_waiter_compiles_itself_after_wait_s():
    holder = LockingCacheManager(KEY)
    assert holder.get_group(NAME) is None              # held, and never finished
    seconds, found = _asked_meanwhile(wait_s=0.2)
    assert not found and 0.15 <= seconds < HOLD_S


def test_triton_loads_the_manager_from_the_workers_environment(monkeypatch):
    from triton import knobs

    from sampling_harness.scale.xdist_gpus import COMPILE_LOCK

    monkeypatch.setenv(*COMPILE_LOCK)
    assert knobs.cache.manager_class is LockingCacheManager

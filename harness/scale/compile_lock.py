"""One Triton compile per kernel variant across the workers of a run.

Workers that share a GPU (``check all`` starts 8 on one H100) share Triton's on-disk cache,
but Triton only looks there before it compiles: two workers that need the same variant at
once both compile it, and the second's seconds are wasted. On a cold H100 run of ``check all
--budget quick`` 61 of 148 compiles (about 40 % of 354 compile seconds) were such duplicates
(benchmarks/compile_census.py, docs/measurements/gpu.md).

``LockingCacheManager`` is Triton's own file cache with a lock per variant around the
compile: on a miss, ``get_group`` takes an exclusive ``flock`` on the variant's cache folder
and looks again (another worker may have finished it meanwhile); when it still misses, the
process compiles and ``put_group`` releases the lock after the files are in place. A waiter
therefore loads the variant instead of compiling it. Triton calls ``get_group`` once per
compile, before it, and ``put_group`` once, after it; a compile that raises never reaches
``put_group``, so a process releases any lock it still holds at its next ``get_group`` (its
previous compile is over by then), and a waiter gives up after ``WAIT_S`` and compiles
itself. An ``flock`` dies with its process, so a crashed worker leaves no lock behind. The
lock only orders work: what is compiled, and every verdict, is the same with or without it.

Triton is told through its documented knob ``TRITON_CACHE_MANAGER=MODULE:CLASS``, here
``sampling_harness.scale.compile_lock:LockingCacheManager``: sampling_harness.scale.xdist_gpus
sets it (its ``COMPILE_LOCK``) for the workers of a GPU run unless the user set one.
"""

from __future__ import annotations

import fcntl
import os
import time

from triton.runtime.cache import FileCacheManager

LOCK_FILE = "compiling.lock"
WAIT_S = 300.0           # a waiter compiles itself after this long (a stuck or failed holder)
POLL_S = 0.02

_held: dict[str, int] = {}       # cache folder -> the fd of the lock this process holds


def _release(folder: str) -> None:
    fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)             # closing the fd drops the flock


def _acquire(path: str, wait_s: float) -> int | None:
    """The fd of an exclusive flock on ``path``, or None after ``wait_s`` seconds."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(POLL_S)


class LockingCacheManager(FileCacheManager):
    """Triton's file cache, with one compile per variant across processes (module
    docstring). The dump and override folders (``dump``/``override``) are Triton's own."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        self._locks = not (override or dump)

    def get_group(self, filename: str):
        group = super().get_group(filename)
        if group is not None or not self._locks:
            return group
        for folder in list(_held):           # this process's previous compile is over
            _release(folder)
        fd = _acquire(os.path.join(self.cache_dir, LOCK_FILE), WAIT_S)
        group = super().get_group(filename)  # finished by the worker we waited on?
        if fd is not None:
            if group is None:
                _held[self.cache_dir] = fd   # ours to compile: released by put_group
            else:
                os.close(fd)
        return group

    def put_group(self, filename: str, group):
        try:
            return super().put_group(filename, group)
        finally:
            _release(self.cache_dir)

"""The call thread (harness/run/call_thread.py): kept between calls, replaced after a hang,
each call starting from a fresh thread's torch settings."""

import threading

import torch

from sampling_harness.run import call_thread
from sampling_harness.run.call_thread import call_in_thread

CPU = torch.device("cpu")


def _record(into: list):
    return lambda: into.append((threading.get_ident(), torch.is_grad_enabled()))


def test_calls_share_one_thread_that_is_not_the_callers():
    seen = []
    assert call_in_thread(_record(seen), CPU, 10.0)
    assert call_in_thread(_record(seen), CPU, 10.0)
    assert seen[0][0] == seen[1][0] != threading.get_ident()


def test_a_call_past_its_timeout_gets_a_new_thread_for_the_next_call():
    release, seen = threading.Event(), []
    assert call_in_thread(_record(seen), CPU, 10.0)
    assert not call_in_thread(lambda: release.wait(30.0), CPU, 0.2)
    assert call_in_thread(_record(seen), CPU, 10.0)      # not queued behind the stuck call
    release.set()
    assert seen[0][0] != seen[1][0]


def test_each_call_starts_with_grad_mode_on_whatever_the_last_call_left():
    seen = []
    assert call_in_thread(lambda: torch.set_grad_enabled(False), CPU, 10.0)
    assert call_in_thread(_record(seen), CPU, 10.0)
    assert seen == [(call_thread._THREAD.thread.ident, True)]

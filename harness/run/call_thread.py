"""The thread that makes a process's kernel calls, one after another, kept between calls.

A kernel runs in a thread of its own so that the harness can stop waiting for it (a call past
its timeout is a fault, not a hang of the run). A fresh thread per call paid, on a GPU, the
setting-up of a thread's CUDA state at its first CUDA call: on an H200, rejection's
``marginal`` spent 10 ms of an 18 ms call in the kernel's thread, 0.27 ms of it the kernel
(docs/measurements/gpu.md), and with the thread kept the check at standard took 66-74 s
instead of 171 s. So
the thread is kept, and replaced only when a call outlives its timeout (it is left running,
as a daemon, and the process is spoiled: harness/run/faults.py).

Each call starts from a fresh thread's torch settings, as a new thread would: grad mode on,
and on a GPU the device's default stream current, whatever the previous kernel left.
"""

from __future__ import annotations

import queue
import threading

import torch


class CallThread:
    """A daemon thread that runs the calls handed to it in turn."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="sampling-harness-kernel",
                                       daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            job, device, done = self.jobs.get()
            torch.set_grad_enabled(True)
            if device.type == "cuda":
                torch.cuda.set_stream(torch.cuda.default_stream(device))
            try:
                job()
            finally:
                done.set()

    def run(self, job, device: torch.device, timeout: float) -> bool:
        """Run ``job()`` (which must not raise) in the thread; False if it is still running
        after ``timeout`` seconds."""
        done = threading.Event()
        self.jobs.put((job, device, done))
        return done.wait(timeout)


_THREAD: CallThread | None = None


def call_in_thread(job, device: torch.device, timeout: float) -> bool:
    """``job()`` in the process's call thread (made at the first call, and again after a call
    that outlived its timeout); False if it did not return within ``timeout`` seconds."""
    global _THREAD
    if _THREAD is None:
        _THREAD = CallThread()
    finished = _THREAD.run(job, device, timeout)
    if not finished:
        _THREAD = None          # that thread is busy for good: the next call gets a new one
    return finished

"""How fast this CPU computes a training step's arithmetic, measured once per machine.

A step's cost is estimated from the floating-point operations ``torch.utils.flop_counter``'s
formulas count in it (``flops.py``: matrix products, convolutions, attention) over what one
core does of the same kinds per second, measured here on a small convolution and a small
matrix product, forward and backward. Counted operations per second, not the CPU's peak:
the measured steps include what the counter leaves out around them (the backward's
bookkeeping, reductions), so a full step's seconds come out near what the step takes.

Timed by the measuring thread's CPU time on one thread, as the autocast speeds are
(``limits/device/autocast.py``): per-core speed, which a busy machine barely disturbs. The
figures are kept in the user's cache directory, keyed by torch version and CPU. A step's
seconds are those of this machine unloaded, on the threads torch uses: the same script gets
the same answer on a busy machine (where its steps take longer than said) as on a quiet one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from quickdev.cachedir import quickdev_cache_dir
from quickdev.limits.device.autocast import _machine_key as machine_key
from quickdev.limits.own_work import own_work
from quickdev.limits.step_cost.flops import FlopCount
from quickdev.rundir.jsonio import read_json_object, write_json

log = logging.getLogger(__name__)

CACHE_FILE = "cpu_flops.json"
_ROUNDS = 5
# Operators whose FLOPs are convolutions; every other counted one is a matrix product
# (linear layers, attention, bmm).
CONVOLUTIONS = frozenset(
    {
        "convolution",
        "_convolution",
        "convolution_backward",
        "cudnn_convolution",
        "convolution_overrideable",
        "_slow_conv2d_forward",
    }
)


@dataclass(frozen=True)
class Speed:
    """Counted FLOPs per second of one core, by kind."""

    convolution: float
    matmul: float

    def seconds(self, flops: Mapping[str, int], cores: float) -> float:
        """The wall-clock seconds of ``flops`` (operator name -> count) on ``cores`` cores
        (``cores_now``), taken as scaling perfectly."""
        conv = sum(n for op, n in flops.items() if op in CONVOLUTIONS)
        other = sum(flops.values()) - conv
        return (conv / self.convolution + other / self.matmul) / max(cores, 0.05)


def measured_speed() -> Speed:
    """From the cache, else measured now (a fraction of a second, once per machine)."""
    path = quickdev_cache_dir(CACHE_FILE)
    key = machine_key()
    cached = read_json_object(path) or {}
    known = cached.get(key)
    if isinstance(known, dict):
        try:
            speed = Speed(float(known["convolution"]), float(known["matmul"]))
            if speed.convolution > 0 and speed.matmul > 0:
                return speed
        except (KeyError, TypeError, ValueError):
            pass  # another version's figures: measured again
    speed = measure()
    log.info("CPU speed measured: %s", speed)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {**cached, key: vars(speed)}, indent=1)
    except OSError:
        log.warning("cannot cache the CPU speed in %s", path, exc_info=True)
    return speed


def measure() -> Speed:
    """Counted FLOPs per second of a convolution layer's and a linear layer's forward and
    backward, on one thread, best of a few rounds. Plain tensors and functional calls, no
    ``nn.Module`` and no ``Tensor.backward``: the job's limits watch those to count the
    script's steps. The script's random numbers stay its own."""
    with own_work(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        f = torch.nn.functional
        image = torch.randn(4, 32, 32, 32)
        kernel = torch.randn(64, 32, 3, 3, requires_grad=True)
        rows = torch.randn(512, 512)
        weight = torch.randn(512, 512, requires_grad=True)

        def conv() -> None:
            out = f.conv2d(image, kernel, padding=1)
            torch.autograd.grad(out.square().mean(), kernel)

        def matmul() -> None:
            out = f.linear(f.linear(rows, weight), weight)
            torch.autograd.grad(out.square().mean(), weight)

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return Speed(_rate(conv), _rate(matmul))
        finally:
            torch.set_num_threads(threads)


def _rate(work: Callable[[], None]) -> float:
    counter = FlopCount()
    with counter:
        work()  # also the first run, which sets up its kernels: not timed
    best = float("inf")
    for _ in range(_ROUNDS):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return counter.total / max(best, 1e-6)

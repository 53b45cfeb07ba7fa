"""How fast this CPU computes a training step's arithmetic, measured once per machine.

A step's cost is estimated from the floating-point operations ``torch.utils.flop_counter``'s
formulas count in it (``flops.py``: matrix products, convolutions, attention) over what one
core does of the same kinds per second, measured here on a small convolution and a small
matrix product, forward and backward. Counted operations per second, not the CPU's peak:
the measured steps include what the counter leaves out around them (the backward's
bookkeeping, reductions), so a full step's seconds come out near what the step takes.
Plus the memory its operators write (``flops.py``), at the rate one core writes a new
tensor of each kind: fresh pages (a large tensor) and reused memory. A large batch's
activations can cost a CPU more than its arithmetic (a small convolutional network at batch
1024: 3.5 s of FLOPs, 15 GB of activations and gradients written, 12 s a step here).

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
from quickdev.limits.step_cost.flops import FRESH, FRESH_BYTES, REUSED, FlopCount
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
    """Counted FLOPs per second of one core, by kind, and bytes of new tensors written per
    second of one core, by memory (``flops.FRESH``/``REUSED``)."""

    convolution: float
    matmul: float
    fresh_memory: float
    reused_memory: float

    def seconds(
        self, flops: Mapping[str, int], cores: float, written: Mapping[str, int] | None = None
    ) -> float:
        """The wall-clock seconds of ``flops`` (operator name -> count) and of ``written``
        (bytes by memory) on ``cores`` cores (``cores_now``), taken as scaling perfectly."""
        conv = sum(n for op, n in flops.items() if op in CONVOLUTIONS)
        other = sum(flops.values()) - conv
        written = written or {}
        memory = written.get(FRESH, 0) / self.fresh_memory
        memory += written.get(REUSED, 0) / self.reused_memory
        return (conv / self.convolution + other / self.matmul + memory) / max(cores, 0.05)


def measured_speed() -> Speed:
    """From the cache, else measured now (a fraction of a second, once per machine)."""
    path = quickdev_cache_dir(CACHE_FILE)
    key = machine_key()
    cached = read_json_object(path) or {}
    known = cached.get(key)
    if isinstance(known, dict):
        try:
            speed = Speed(**{name: float(known[name]) for name in Speed.__dataclass_fields__})
            if min(vars(speed).values()) > 0:
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
    backward, and bytes per second of an elementwise operator's new output (one above
    ``FRESH_BYTES``, one below), on one thread, best of a few rounds. Plain tensors and
    functional calls, no ``nn.Module`` and no ``Tensor.backward``: the job's limits watch
    those to count the script's steps. The script's random numbers stay its own."""
    with own_work(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        f = torch.nn.functional
        image = torch.randn(4, 32, 32, 32)
        kernel = torch.randn(64, 32, 3, 3, requires_grad=True)
        rows = torch.randn(512, 512)
        weight = torch.randn(512, 512, requires_grad=True)
        large = torch.ones(2 * FRESH_BYTES // 4)  # float32: a new output twice the size
        small = torch.ones(FRESH_BYTES // 8)  # half the size: beyond a core's caches

        def conv() -> None:
            out = f.conv2d(image, kernel, padding=1)
            torch.autograd.grad(out.square().mean(), kernel)

        def matmul() -> None:
            out = f.linear(f.linear(rows, weight), weight)
            torch.autograd.grad(out.square().mean(), weight)

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return Speed(
                _rate(conv, "flops"),
                _rate(matmul, "flops"),
                _rate(lambda: torch.relu(large), FRESH),
                _rate(lambda: torch.relu(small), REUSED),
            )
        finally:
            torch.set_num_threads(threads)


def _rate(work: Callable[[], object], counted: str) -> float:
    """What ``work`` does per second: its FLOPs, or its bytes written to ``counted`` memory."""
    counter = FlopCount()
    with counter:
        work()  # also the first run, which sets up its kernels: not timed
    done = counter.total if counted == "flops" else counter.written[counted]
    best = float("inf")
    for _ in range(_ROUNDS):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return done / max(best, 1e-6)

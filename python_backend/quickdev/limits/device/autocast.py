"""CUDA autocast regions on a CPU, computed in what is fast on this CPU.

A GPU script's ``autocast("cuda", float16)`` asks for speed, not for float16's numerics. On
a CPU, bfloat16 or float16 autocast is fast only where the CPU computes them natively
(AMX, AVX512-BF16/FP16); elsewhere it is several times slower than float32 (a nanoGPT
forward: 43.5 s instead of 7.5 s). So the job measures, once per machine, how fast a small
transformer block trains under CPU autocast in each dtype, against float32, and uses a
half precision only when it is clearly faster (``_MARGIN``); otherwise the region runs in
float32 with autocast off. A float32
the script asked for is always float32. The figures are kept in the user's cache
directory, keyed by torch version and CPU.
"""

from __future__ import annotations

import json
import logging
import platform
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from quickdev.cachedir import quickdev_cache_dir
from quickdev.dtypes import HALF
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.own_work import own_work
from quickdev.limits.patching import Patcher
from quickdev.rundir.jsonio import read_json_object, write_json

log = logging.getLogger(__name__)

CACHE_FILE = "cpu_autocast.json"
# A half precision must be this many times float32's speed to be chosen: the measurement is
# steady within a few percent, and a smaller gain can go to the casts in the rest of a step.
_MARGIN = 1.15
_WIDTH = 256
_ROUNDS = 6


@dataclass(frozen=True)
class Choice:
    """What a CUDA autocast region asked for and what it runs in here; ``None``: float32,
    autocast off."""

    asked: torch.dtype
    ran: torch.dtype | None
    why: str

    @property
    def ran_name(self) -> str:
        return _name(self.ran or torch.float32)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def choose(asked: torch.dtype, speeds: Callable[[], dict[str, float]]) -> Choice:
    """The dtype a CUDA autocast region asking for ``asked`` runs in on this CPU."""
    if asked not in HALF:
        return Choice(asked, None, f"the script asked for {_name(asked)}")
    measured = speeds()
    figures = ", ".join(f"{_name(d)} {measured.get(_name(d), 0.0):.2f}×" for d in HALF)
    fast = [d for d in HALF if measured.get(_name(d), 0.0) >= _MARGIN]
    if not fast:
        return Choice(asked, None, f"float32 is fastest on this CPU ({figures} its speed)")
    # The asked dtype when it is among the fast ones: its numerics are the script's.
    ran = asked if asked in fast else max(fast, key=lambda d: measured[_name(d)])
    return Choice(asked, ran, f"{_name(ran)} is fastest on this CPU ({figures} float32's speed)")


def measured_speeds() -> dict[str, float]:
    """Each dtype's speed under CPU autocast relative to float32 (``_measure``): from the
    cache, else measured now (a few seconds, once per machine) and cached."""
    path = quickdev_cache_dir(CACHE_FILE)
    key = _machine_key()
    cached = read_json_object(path) or {}
    known = cached.get(key)
    # Speeds are relative to float32's, so float32's own is 1: figures of another form
    # (an earlier version's absolute ones) are measured again, not misread as ratios.
    if (
        isinstance(known, dict)
        and all(isinstance(v, int | float) for v in known.values())
        and known.get("float32") == 1.0
    ):
        return {str(k): float(v) for k, v in known.items()}
    speeds = _measure()
    log.info("CPU autocast speeds against float32 measured: %s", speeds)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {**cached, key: speeds}, indent=1)
    except OSError:
        log.warning("cannot cache the CPU autocast figures in %s", path, exc_info=True)
    return speeds


def _machine_key() -> str:
    capability = torch.backends.cpu.get_cpu_capability()
    return json.dumps([torch.__version__, platform.machine(), _cpu_model(), capability])


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _measure() -> dict[str, float]:
    """Speed relative to float32 of a small transformer block's forward and backward under
    CPU autocast in each half precision (matmuls, attention, norms and autocast's casts:
    what a training step spends its time on), on one thread, timed by that thread's CPU
    time: per-core speed, which a busy machine barely disturbs (wall-clock time on a
    loaded machine varied twofold). Rounds alternate between the dtypes and the best time
    counts; a dtype far behind is not timed again.

    Plain tensors and functional ops, no ``nn.Module`` and no ``Tensor.backward``: the
    job's limits watch modules and backward calls to count the script's steps and losses.
    """
    with torch.random.fork_rng(devices=[]):  # the script's random numbers stay its own
        torch.manual_seed(0)
        block = _Block(_WIDTH)
        x = torch.randn(2, 128, _WIDTH)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _compare(block, x)
    finally:
        torch.set_num_threads(threads)


def _compare(block: _Block, x: torch.Tensor) -> dict[str, float]:
    dtypes: list[torch.dtype] = []
    for dtype in (torch.float32, *HALF):
        try:  # the first step of a dtype sets up its kernels: not timed
            block.time_step(x, dtype)
            dtypes.append(dtype)
        except RuntimeError:
            pass  # CPU autocast without this dtype in this torch
    best = dict.fromkeys(dtypes, float("inf"))
    for _ in range(_ROUNDS):
        for dtype in dtypes:
            if best[dtype] == float("inf") or best[dtype] < 3 * best[torch.float32]:
                best[dtype] = min(best[dtype], block.time_step(x, dtype))
    fp32 = best[torch.float32]
    return {_name(d): round(fp32 / best.get(d, float("inf")), 2) for d in (torch.float32, *HALF)}


class _Block:
    """Pre-norm attention and MLP, as in GPT-style models, in functional form."""

    def __init__(self, width: int, heads: int = 4) -> None:
        self.heads = heads

        def weight(rows: int, columns: int) -> torch.Tensor:
            return torch.randn(rows, columns).mul_(columns**-0.5).requires_grad_()

        self.qkv = weight(3 * width, width)
        self.proj = weight(width, width)
        self.up = weight(4 * width, width)
        self.down = weight(width, 4 * width)
        self.params = [self.qkv, self.proj, self.up, self.down]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = torch.nn.functional
        b, t, c = x.shape
        q, k, v = f.linear(f.layer_norm(x, (c,)), self.qkv).chunk(3, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = f.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + f.linear(y.transpose(1, 2).reshape(b, t, c), self.proj)
        out: torch.Tensor = x + f.linear(
            f.gelu(f.linear(f.layer_norm(x, (c,)), self.up)), self.down
        )
        return out

    def time_step(self, x: torch.Tensor, dtype: torch.dtype) -> float:
        context = (
            torch.autocast("cpu", dtype=dtype)
            if dtype != torch.float32
            else torch.autocast("cpu", enabled=False)
        )
        # CPU time of this thread (torch runs on it alone here): what other processes take
        # of the core while it waits does not count.
        started = time.thread_time()
        with context:
            loss = self.forward(x).float().square().mean()
        torch.autograd.grad(loss, self.params)
        return time.thread_time() - started


def install(
    patcher: Patcher,
    engine: DeviceEngine,
    speeds: Callable[[], dict[str, float]] = measured_speeds,
    float32_why: str | None = None,
) -> None:
    """``torch.autocast("cuda")``, ``torch.amp.autocast`` and ``torch.cuda.amp.autocast`` (a
    subclass) all initialise here: CUDA autocast becomes CPU autocast in the dtype
    ``choose`` picks, or autocast off. ``float32_why``: every region runs in float32, for
    that reason (the NaN hunt, which checks each call against CUDA's own dtypes)."""
    autocast = torch.amp.autocast_mode.autocast
    original_init = autocast.__init__
    original_enter: Callable[[Any], Any] = autocast.__enter__
    original_exit: Callable[..., Any] = autocast.__exit__
    choices: dict[torch.dtype, Choice] = {}
    # The CUDA regions made: what each asked to compute in (None: off, or float32).
    asked_of: weakref.WeakKeyDictionary[Any, torch.dtype | None] = weakref.WeakKeyDictionary()

    def init(
        self: Any,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if device_type == "cuda":
            asked = dtype or torch.float16  # CUDA autocast's default
            asked_of[self] = asked if enabled and asked in HALF else None
            choice = choices.get(asked)
            if choice is None:
                if float32_why is not None and asked in HALF:
                    choice = Choice(asked, None, float32_why)
                else:
                    with own_work():  # not the script's: out of its modes and its profile
                        choice = choose(asked, speeds)
                choices[asked] = choice
                engine.autocast.append(_report(choice))
                log.info("autocast cuda %s: %s (%s)", _name(asked), choice.ran_name, choice.why)
            engine.count(f"autocast cuda {_name(asked)} -> cpu {choice.ran_name}")
            device_type, dtype = "cpu", choice.ran
            # float32: autocast off (CPU autocast would warn about a dtype it lacks).
            enabled = enabled and choice.ran is not None
        original_init(self, device_type, dtype, enabled, cache_enabled)

    # Entered and left as the script's region is, so the engine knows, whatever ran here, what
    # the region computes in on a GPU (the memory forecast replays that).
    def enter(self: Any) -> Any:
        entered = original_enter(self)
        if self in asked_of:
            engine.enter_cuda_autocast(asked_of[self])
        return entered

    def leave(self: Any, *exc: Any) -> Any:
        try:
            return original_exit(self, *exc)
        finally:
            if self in asked_of:
                engine.exit_cuda_autocast()

    patcher.set(autocast, "__init__", init)
    patcher.set(autocast, "__enter__", enter)
    patcher.set(autocast, "__exit__", leave)


def _report(choice: Choice) -> dict[str, str]:
    return {"asked": f"cuda {_name(choice.asked)}", "ran": choice.ran_name, "why": choice.why}

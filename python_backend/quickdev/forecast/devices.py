"""The devices a forecast is compared with: parsed from ``--memory-forecast [DEVICE]``.

Torch-free: the command line parses these before torch loads. GPU makers count memory
in binary units ("24 GB" cards hold 24 GiB), so a GB here is 2**30 bytes throughout.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass

from quickdev.rundir.memory import GB, format_gb

# Compared with when the job's machine has no CUDA device and none was named.
DEFAULT_SIZES_GB = (24, 40, 80)
# "auto": this machine's CUDA device where there is one, else DEFAULT_SIZES_GB.
AUTO = "auto"

# Cards named often enough to be worth a name; each size is the card's own memory.
KNOWN_DEVICES_GB: dict[str, float] = {
    "t4": 16,
    "v100": 32,
    "a10": 24,
    "a10g": 24,
    "l4": 24,
    "rtx3090": 24,
    "rtx4090": 24,
    "a6000": 48,
    "l40s": 48,
    "a100-40gb": 40,
    "a100": 80,
    "a100-80gb": 80,
    "h100": 80,
    "h200": 141,
}


class DeviceSpecError(argparse.ArgumentTypeError):
    """A DEVICE that names no size; the message is one line naming the fix."""


@dataclass(frozen=True)
class Capacity:
    """A device the forecast is compared with."""

    name: str  # as shown: "24 GB", "h100 (80 GB)", "cuda:0 (79.1 GB)"
    bytes: int


@dataclass(frozen=True)
class DeviceChoice:
    """What ``--memory-forecast DEVICE`` asks: ``auto`` in the list (or alone) means this
    machine's CUDA device where there is one, else the sizes listed beside it (else the
    defaults)."""

    auto: bool
    listed: tuple[Capacity, ...] = ()


def parse_devices(text: str) -> DeviceChoice:
    """``auto``, ``24``, ``24GB``, ``40GiB``, ``h100``, ``a100-40gb`` or a comma list of
    them (``auto,24,40,80``)."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise DeviceSpecError(f"expected a size in GB or a device name, got {text!r}")
    auto = any(part.lower() == AUTO for part in parts)
    listed = tuple(_one(part) for part in parts if part.lower() != AUTO)
    return DeviceChoice(auto, listed)


def _one(text: str) -> Capacity:
    lowered = text.lower()
    if lowered in KNOWN_DEVICES_GB:
        size = KNOWN_DEVICES_GB[lowered]
        return Capacity(f"{lowered} ({format_gb(size * GB)})", int(size * GB))
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(gb|gib|g)?", lowered)
    if match is None or float(match.group(1)) <= 0:
        names = ", ".join(sorted(KNOWN_DEVICES_GB))
        raise DeviceSpecError(
            f"{text!r} is not a size in GB (24, 40GB) or a known device ({names})"
        )
    size = float(match.group(1))
    return Capacity(format_gb(size * GB), int(size * GB))


def default_capacities(sizes_gb: tuple[float, ...] = DEFAULT_SIZES_GB) -> list[Capacity]:
    return [Capacity(format_gb(s * GB), int(s * GB)) for s in sizes_gb]


def add_memory_forecast_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-forecast",
        nargs="?",
        const=AUTO,
        type=_checked,
        metavar="DEVICE",
        help="forecast the GPU memory of one training step and whether it fits DEVICE: a "
        "size in GB, a card (h100, a100-40gb) or a list (24,40,80); default this machine's "
        f"GPU, else {','.join(map(str, DEFAULT_SIZES_GB))} GB",
    )


def _checked(text: str) -> str:
    parse_devices(text)
    return text


def memory_forecast_alone(argv: list[str]) -> list[str]:
    """``--memory-forecast train.py``: a script (``.py``, or a file that exists) after the
    flag stays the script; any other word is the DEVICE, checked as one."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word == "--memory-forecast":
            following = out[i + 1]
            if following.endswith(".py") or os.path.isfile(following):
                out[i] = f"--memory-forecast={AUTO}"
            break
    return out

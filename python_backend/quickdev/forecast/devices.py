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

# Cards named often enough to be worth a name; each size is the card's own memory. A name
# is matched without case, spaces, dashes, "nvidia" or "geforce" ("RTX 4090", "rtx-4090");
# a card with a model number is also named by its number alone ("4090").
KNOWN_DEVICES_GB: dict[str, float] = {
    "t4": 16,
    "v100": 32,
    "a10": 24,
    "a10g": 24,
    "l4": 24,
    "rtx3080": 10,
    "rtx3090": 24,
    "rtx4080": 16,
    "rtx4090": 24,
    "rtx5090": 32,
    "a5000": 24,
    "a6000": 48,
    "a40": 48,
    "l40s": 48,
    "a100-40gb": 40,
    "a100": 80,
    "a100-80gb": 80,
    "h100": 80,
    "h200": 141,
}
# A bare number above this is no GPU's memory in GB: a card's model number mistyped, or
# another unit ("--memory-forecast 4090" is an RTX 4090, never 4090 GB).
MAX_SIZE_GB = 512
# How the accepted forms are named in an error.
FORMS = "a size in GB (24, 40GB; at most 512), a card (h100, rtx4090, 4090, a100-40gb) or a list"


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
    """``auto``, ``24``, ``24GB``, ``40GiB``, ``h100``, ``a100-40gb``, ``RTX 4090``,
    ``4090`` or a comma list of them (``auto,24,40,80``)."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise _not_a_device(text)
    auto = any(part.lower() == AUTO for part in parts)
    listed = tuple(_one(part) for part in parts if part.lower() != AUTO)
    return DeviceChoice(auto, listed)


def _one(text: str) -> Capacity:
    name = _card(text)
    if name is not None:
        size = KNOWN_DEVICES_GB[name]
        return Capacity(f"{name} ({format_gb(size * GB)})", int(size * GB))
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(gb|gib|g)?", text.lower())
    if match is None or not 0 < float(match.group(1)) <= MAX_SIZE_GB:
        raise _not_a_device(text)
    size = float(match.group(1))
    return Capacity(format_gb(size * GB), int(size * GB))


def _not_a_device(text: str) -> DeviceSpecError:
    names = ", ".join(sorted(KNOWN_DEVICES_GB))
    return DeviceSpecError(f"{text!r} is not {FORMS}; known cards: {names}")


def _card(text: str) -> str | None:
    """The known card ``text`` names, if any."""
    key = re.sub(r"[\s_-]+", "", text.lower()).removeprefix("nvidia").removeprefix("geforce")
    for name in KNOWN_DEVICES_GB:
        plain = name.replace("-", "")
        if key == plain or (plain.startswith("rtx") and key == plain.removeprefix("rtx")):
            return name
    return None


def default_capacities(sizes_gb: tuple[float, ...] = DEFAULT_SIZES_GB) -> list[Capacity]:
    return [Capacity(format_gb(s * GB), int(s * GB)) for s in sizes_gb]


def add_memory_forecast_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-forecast",
        nargs="?",
        const=AUTO,
        type=_checked,
        metavar="DEVICE",
        help="forecast the GPU memory of one training step and whether it fits DEVICE: "
        f"{FORMS} (24,40,80); default this machine's GPU, else "
        f"{','.join(map(str, DEFAULT_SIZES_GB))} GB",
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

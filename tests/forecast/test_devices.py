"""``--memory-forecast [DEVICE]``: sizes, card names, lists, and the script after the flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from quickdev.forecast.devices import (
    DeviceChoice,
    DeviceSpecError,
    memory_forecast_alone,
    parse_devices,
)
from quickdev.forecast.forecast import capacities
from quickdev.rundir.memory import GB

from tests.support.stand_in import cpu_stand_in


def test_sizes_names_and_lists() -> None:
    assert [(c.name, c.bytes) for c in parse_devices("24").listed] == [("24 GB", 24 * GB)]
    assert [c.bytes for c in parse_devices("40GB,80gib,12.5").listed] == [
        40 * GB,
        80 * GB,
        int(12.5 * GB),
    ]
    assert [(c.name, c.bytes) for c in parse_devices("H100").listed] == [("h100 (80 GB)", 80 * GB)]
    assert not parse_devices("h100").auto


def test_auto_is_this_machines_gpu_else_the_sizes_beside_it() -> None:
    assert parse_devices("auto") == DeviceChoice(auto=True)
    choice = parse_devices("auto,24,h100")
    assert choice.auto and [c.bytes for c in choice.listed] == [24 * GB, 80 * GB]


@cpu_stand_in
def test_without_cuda_auto_is_the_sizes_beside_it_else_the_defaults() -> None:
    choice = parse_devices("auto,24,h100")
    assert [c.bytes for c in capacities(choice)] == [24 * GB, 80 * GB]
    assert [c.name for c in capacities(parse_devices("auto"))] == ["24 GB", "40 GB", "80 GB"]


@pytest.mark.parametrize("text", ["4090", "RTX 4090", "rtx-4090", "NVIDIA GeForce RTX 4090"])
def test_a_card_is_named_by_its_model_number_as_people_write_it(text: str) -> None:
    (card,) = parse_devices(text).listed
    assert (card.name, card.bytes) == ("rtx4090 (24 GB)", 24 * GB)


@pytest.mark.parametrize("text", ["foo", "-3", "0", "24TB", ",", "4090GB", "5000", "1024"])
def test_a_device_that_names_no_size_is_one_line_naming_the_fix(text: str) -> None:
    """A number no GPU's memory reaches is a mistake (a card's number mistyped, MB meant),
    never that many GB; the error names the forms that are accepted."""
    with pytest.raises(DeviceSpecError) as raised:
        parse_devices(text)
    message = str(raised.value)
    assert "\n" not in message
    assert "a size in GB (24, 40GB; at most 512), a card (h100, rtx4090, 4090" in message
    assert "known cards: a10, a100" in message


def test_the_script_after_the_flag_stays_the_script(tmp_path: Path) -> None:
    script = tmp_path / "train"
    script.write_text("")
    assert memory_forecast_alone(["--memory-forecast", "train.py"]) == [
        "--memory-forecast=auto",
        "train.py",
    ]
    assert memory_forecast_alone(["--memory-forecast", str(script)])[0] == "--memory-forecast=auto"
    assert memory_forecast_alone(["--memory-forecast", "24", "train.py"]) == [
        "--memory-forecast",
        "24",
        "train.py",
    ]

"""Settings as the extension sends them: flat or under "quickdev", with its defaults."""

import json
from typing import Any

from quickdev.server.settings import parse_settings
from quickdev.server.types import Settings

from tests.support.paths import REPO

PACKAGE_JSON = REPO / "package.json"


def package_defaults() -> dict[str, object]:
    """The defaults declared once, in the extension's package.json."""
    configuration = json.loads(PACKAGE_JSON.read_text())["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    properties = {k: v for section in sections for k, v in section["properties"].items()}
    return {
        key.removeprefix("quickdev."): spec.get("default")
        for key, spec in properties.items()
        if key.count(".") == 1
    }


def test_package_json_defaults_give_the_default_settings_without_complaint() -> None:
    settings, problems = parse_settings(package_defaults())
    assert problems == []
    assert settings == Settings()


def test_values_flat_or_under_the_section() -> None:
    raw = {
        "python": "/opt/env/bin/python",
        "batches": 5,
        "runsDir": "/srv/quickdev-runs",
        "lenses": {"step": False},
    }
    for shape in (raw, {"quickdev": raw}):
        settings, problems = parse_settings(shape)
        assert problems == []
        assert settings.python == "/opt/env/bin/python"
        assert settings.batches == 5
        assert settings.runs_dir == "/srv/quickdev-runs"
        assert settings.lenses == {
            "run": True,
            "debug": True,
            "profile": True,
            "nonfinite": True,
            "step": False,
            "memory": True,
        }


def test_bad_values_fall_back_with_one_line_each() -> None:
    settings, problems = parse_settings(
        {"python": 3, "batches": True, "runsDir": "", "lenses": {"run": "yes", "bogus": True}}
    )
    assert settings == Settings()
    assert len(problems) == 5
    assert all("\n" not in p for p in problems)
    named = [p.split()[0].rstrip(":") for p in problems]
    assert named == [
        "quickdev.python",
        "quickdev.batches",
        "quickdev.runsDir",
        "quickdev.lenses.run",
        "quickdev.lenses.bogus",
    ]
    settings, problems = parse_settings(
        {"batches": 0, "runsDir": None, "lenses": [], "python": " "}
    )
    assert settings == Settings()
    assert [p.split()[0] for p in problems] == [
        "quickdev.batches",
        "quickdev.runsDir",
        "quickdev.lenses",
    ]
    assert parse_settings("nonsense")[1] == ["quickdev settings must be an object, got str"]
    assert parse_settings(None) == (Settings(), [])


def test_retention_settings_reach_the_job_command_line() -> None:
    from pathlib import Path

    from quickdev.cli import build_parser, run_options
    from quickdev.rundir.retention import Retention
    from quickdev.server.job_request import JobRequest, job_command

    settings, problems = parse_settings({"runsKeep": 3, "runsMaxSizeMb": 0})
    assert problems == []
    retention = Retention(settings.runs_keep, settings.runs_max_size_mb)
    request = JobRequest(
        Path("train.py"), "run", Path("."), Path(".quickdev/runs"), "python", retention=retention
    )
    command = job_command(request, "20260101-train")
    own = command[command.index("run") + 1 :]
    assert run_options(build_parser().parse_args(["run", *own]), []).retention == retention
    _, problems = parse_settings({"runsKeep": -1})
    assert problems and problems[0].startswith("quickdev.runsKeep")


def test_memory_forecast_devices_are_checked_as_devices() -> None:
    settings, problems = parse_settings({"memoryForecastDevices": ["16", "h100"]})
    assert problems == [] and settings.memory_forecast_devices == ["16", "h100"]
    settings, problems = parse_settings({"memoryForecastDevices": ["24", "huge"]})
    assert settings.memory_forecast_devices == Settings().memory_forecast_devices
    assert [p.split()[0] for p in problems] == ["quickdev.memoryForecastDevices"]


def test_the_step_cost_bound_reaches_jobs_but_not_debug_jobs() -> None:
    from pathlib import Path

    from quickdev.cli import build_parser, run_options
    from quickdev.options import step_cost_bound
    from quickdev.server.job_request import JobRequest, job_command
    from quickdev.server.start_job import StartJob, _limits

    def options(settings: Settings, mode: str) -> Any:
        request = JobRequest(
            Path("train.py"),
            mode,  # type: ignore[arg-type]
            Path("."),
            Path(".quickdev/runs"),
            "python",
            limits=_limits(StartJob(script="train.py"), settings, mode),  # type: ignore[arg-type]
        )
        command = job_command(request, "20260101-train")
        own = command[command.index("run") + 1 : command.index("--")]
        return run_options(build_parser().parse_args(["run", *own]), [])

    settings, problems = parse_settings({"stepSeconds": 12})
    assert problems == [] and settings.step_seconds == 12
    assert step_cost_bound(options(settings, "run")) == 12
    assert step_cost_bound(options(settings, "profile")) == 12
    assert step_cost_bound(options(settings, "debug")) is None  # the script's own sizes
    never, _ = parse_settings({"stepSeconds": 0})
    assert step_cost_bound(options(never, "run")) is None
    assert step_cost_bound(options(Settings(), "run")) == 5.0
    _, problems = parse_settings({"stepSeconds": -1})
    assert problems and problems[0].startswith("quickdev.stepSeconds must be seconds ≥ 0")

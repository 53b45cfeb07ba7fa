"""Settings from the client: initialization options and ``workspace/didChangeConfiguration``.

The section is ``quickdev``; the defaults mirror the extension's package.json. A value of
the wrong type is reported once and replaced by its default, never fatal.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from quickdev.server.app import QuickdevServer
from quickdev.server.log import log
from quickdev.server.types import LENS_KINDS, Settings

SECTION = "quickdev"


def parse_settings(raw: object) -> tuple[Settings, list[str]]:
    """Settings from the client's JSON, and one line per value that was ignored."""
    problems: list[str] = []
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    if raw is None:
        return Settings(), problems
    if not isinstance(raw, dict):
        problems.append(f"quickdev settings must be an object, got {type(raw).__name__}")
        return Settings(), problems
    default = Settings()

    python = raw.get("python")
    if python is not None and not isinstance(python, str):
        problems.append("quickdev.python must be a path to a Python interpreter; using default")
        python = None
    python = python.strip() if python else None  # "" (the default) means the server's own

    batches: Any = raw.get("batches", default.batches)
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        problems.append(f"quickdev.batches must be a whole number ≥ 1, got {batches!r}; using 2")
        batches = default.batches

    batch_size: Any = raw.get("batchSize", default.batch_size)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 0:
        problems.append(
            f"quickdev.batchSize must be a whole number ≥ 0, got {batch_size!r}; using 0"
        )
        batch_size = default.batch_size

    runs_dir: Any = raw.get("runsDir", default.runs_dir)
    if not isinstance(runs_dir, str) or not runs_dir.strip():
        problems.append("quickdev.runsDir must be a folder path; using .quickdev/runs")
        runs_dir = default.runs_dir

    lenses = dict(default.lenses)
    raw_lenses = raw.get("lenses", {})
    if isinstance(raw_lenses, dict):
        for kind, on in raw_lenses.items():
            if kind not in lenses:
                problems.append(f"quickdev.lenses.{kind} is not one of {', '.join(LENS_KINDS)}")
            elif not isinstance(on, bool):
                problems.append(f"quickdev.lenses.{kind} must be true or false; ignored")
            else:
                lenses[kind] = on
    else:
        problems.append("quickdev.lenses must be an object of booleans; ignored")

    settings = Settings(
        python=python or None,
        batches=batches,
        batch_size=batch_size,
        runs_dir=runs_dir,
        lenses=lenses,
    )
    return settings, problems


def setup(server: QuickdevServer) -> None:
    @server.feature(types.INITIALIZE)
    def on_initialize(ls: QuickdevServer, params: types.InitializeParams) -> None:
        _apply(ls, params.initialization_options)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_change(ls: QuickdevServer, params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if not raw:  # the client only says "changed": ask for the section
            values = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
            )
            raw = values[0] if values else None
        _apply(ls, raw)


def _apply(ls: QuickdevServer, raw: object) -> None:
    settings, problems = parse_settings(raw)
    ls.state.settings = settings
    log.info("settings: %s", settings)
    for problem in problems:
        ls.show_error(problem)

"""Settings from the client: initialization options and ``workspace/didChangeConfiguration``.

The section is ``quickdev``; the defaults mirror the extension's package.json. A value of
the wrong type is reported once and replaced by its default, never fatal.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args, get_type_hints

from lsprotocol import types

from quickdev.rundir.validate import converter
from quickdev.server.app import QuickdevServer
from quickdev.server.log import log
from quickdev.server.types import Settings

SECTION = "quickdev"
_INVALID = object()


def parse_settings(raw: object) -> tuple[Settings, list[str]]:
    """Settings from the client's JSON, and one line per value that was ignored.

    Each setting is checked by the shared converter on its own, so one wrong value falls
    back to its default (the field's metadata words the problem) and the others are kept.
    """
    problems: list[str] = []
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    if raw is None:
        return Settings(), problems
    if not isinstance(raw, dict):
        problems.append(f"quickdev settings must be an object, got {type(raw).__name__}")
        return Settings(), problems
    hints = get_type_hints(Settings)
    defaults = Settings()
    values: dict[str, Any] = {}
    for setting in dataclasses.fields(Settings):
        key = setting.metadata["key"] or setting.name
        if key not in raw:
            continue
        name = f"{SECTION}.{key}"
        default = getattr(defaults, setting.name)
        if isinstance(default, dict):
            values[setting.name] = _merged(setting, name, raw[key], default, hints, problems)
            continue
        try:
            value = converter.structure(raw[key], hints[setting.name])
        except Exception:
            value = _INVALID
        valid = setting.metadata["valid"]
        if value is _INVALID or (valid is not None and not valid(value)):
            problems.append(f"{name} {setting.metadata['problem'].format(value=raw[key])}")
        else:
            values[setting.name] = value
    settings = Settings(**values)
    if settings.python is not None:  # "" (the default) means the server's own
        settings = dataclasses.replace(settings, python=settings.python.strip() or None)
    return settings, problems


def _merged(
    setting: dataclasses.Field[Any],
    name: str,
    raw: object,
    default: dict[str, Any],
    hints: dict[str, Any],
    problems: list[str],
) -> dict[str, Any]:
    """A dict setting taken key by key over its default: an unknown or wrong entry is
    reported and ignored, the others kept."""
    if not isinstance(raw, dict):
        problems.append(f"{name} {setting.metadata['problem'].format(value=raw)}")
        return default
    value_kind = get_args(hints[setting.name])[1]
    merged = dict(default)
    for entry, value in raw.items():
        if entry not in merged:
            problems.append(f"{name}.{entry} is not one of {', '.join(default)}")
            continue
        try:
            merged[entry] = converter.structure(value, value_kind)
        except Exception as exc:
            problems.append(f"{name}.{entry}: {exc}; ignored")
    return merged


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

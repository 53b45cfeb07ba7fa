"""docs/protocol.md held to the server: every command registered with the argument dataclass and
the answer type the command table names, every type's fields as its table lists them (``?``:
may be absent), and the settings as package.json declares them, defaults included. The
extension's side of the same document: tests/extension/server/protocolFields.test.ts."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from typing import Any

import pytest
from quickdev.server.main import build_server
from quickdev.server.types import Settings

from tests.support.paths import REPO

DOC = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
PROPERTIES = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["contributes"][
    "configuration"
]["properties"]

Table = dict[str, bool]  # field → required


def documented_types(markdown: str) -> dict[str, Table]:
    """Each "### `Name`" section's field table: `name` or `name`? in the first column."""
    types: dict[str, Table] = {}
    current: Table | None = None
    for line in markdown.splitlines():
        if heading := re.fullmatch(r"###\s+`(\w+)`\s*", line):
            current = types[heading[1]] = {}
            continue
        if line.startswith("#"):
            current = None
        if current is not None and (row := re.match(r"\|\s*`(\w+)`(\?)?\s*\|", line)):
            current[row[1]] = row[2] is None
    return types


def documented_commands(markdown: str) -> dict[str, tuple[str, str]]:
    """The command table: each `quickdev.*` row's argument and answer (first word in backticks)."""
    commands: dict[str, tuple[str, str]] = {}
    for line in markdown.splitlines():
        row = re.match(r"\|\s*`(quickdev\.\w+)`\s*\|\s*`([^`]+)`[^|]*\|\s*`([^`]+)`", line)
        if row:
            assert row[1] not in commands, f"{row[1]} is listed twice in docs/protocol.md"
            commands[row[1]] = (row[2], row[3])
    return commands


def dataclass_fields(kind: type[Any]) -> Table:
    return {
        f.name: f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in dataclasses.fields(kind)
    }


def typeddict_fields(kind: Any) -> Table:
    return {name: name in kind.__required_keys__ for name in typing.get_type_hints(kind)}


def nested_typeddicts(hint: Any) -> list[Any]:
    """The TypedDicts a field's type names, also inside list[...] or X | None."""
    if typing.is_typeddict(hint):
        return [hint]
    return [found for arg in typing.get_args(hint) for found in nested_typeddicts(arg)]


TYPES = documented_types(DOC)
COMMANDS = documented_commands(DOC)


def test_the_server_registers_every_documented_command_and_no_other() -> None:
    server = build_server()
    assert sorted(server.state.commands) == sorted(COMMANDS)
    assert set(COMMANDS) <= set(server.protocol.fm.commands)


def test_each_command_reads_and_answers_the_documented_types_field_for_field() -> None:
    commands = build_server().state.commands
    checked: set[str] = set()
    for name, (argument, answer) in COMMANDS.items():
        command = commands[name]
        if argument == "{}":
            assert dataclass_fields(command.argument) == {}, f"{name} takes no argument"
        else:
            assert dataclass_fields(command.argument) == TYPES[argument], (
                f"{name}'s argument {command.argument.__name__} differs from {argument}"
            )
            checked.add(argument)
        pending = [typing.get_type_hints(command.handler)["return"]]
        assert pending[0].__name__ == answer, f"{name} answers {pending[0].__name__}"
        while pending:
            kind = pending.pop()
            assert typeddict_fields(kind) == TYPES[kind.__name__], (
                f"server/protocol.py's {kind.__name__} differs from docs/protocol.md"
            )
            checked.add(kind.__name__)
            for hint in typing.get_type_hints(kind).values():
                pending.extend(nested_typeddicts(hint))
    # Every documented type is what some command reads or answers (Settings: below).
    assert checked == set(TYPES) - {"Settings"}


def _client_key(field: dataclasses.Field[Any]) -> str:
    return field.metadata.get("key") or field.name


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def test_settings_are_the_documented_ones_with_package_json_s_defaults() -> None:
    fields = dataclasses.fields(Settings)
    assert {_client_key(f) for f in fields} == set(TYPES["Settings"])
    for field in fields:
        key = f"quickdev.{_client_key(field)}"
        assert key in PROPERTIES, f"package.json does not declare {key}"
        # An unset interpreter is "" in the editor and None here.
        default = "" if _default(field) is None else _default(field)
        assert PROPERTIES[key]["default"] == default, f"{key}'s default differs from the server's"


def test_a_missing_field_or_a_command_listed_twice_is_caught() -> None:
    markdown = "### `RunError`\n\n|---|---|\n| `message` | str |\n| `file`? | path |\n"
    assert documented_types(markdown) == {"RunError": {"message": True, "file": False}}
    row = '| `quickdev.getRun` | `RunRef` | `RunDetail`; refused when … `{"error"}` |'
    assert documented_commands(row) == {"quickdev.getRun": ("RunRef", "RunDetail")}
    with pytest.raises(AssertionError, match="listed twice"):
        documented_commands(f"{row}\n{row}")

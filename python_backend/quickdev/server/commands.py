"""How every ``quickdev.*`` command answers: a JSON object, or ``{"error": one line}``.

Failures are answers rather than LSP errors so the extension can show them as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from quickdev.rundir.validate import converter, failed_field
from quickdev.server.app import QuickdevServer
from quickdev.server.log import log
from quickdev.server.types import Command

T = TypeVar("T")
# A command's answer: one of the types of server/protocol.py, or {"error": one line}.
Answer = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class NoArgument:
    """The argument of a command that takes none (``{}``)."""


class CommandError(Exception):
    """Bad input or an impossible request; the message names the problem and the fix."""


def register(
    server: QuickdevServer,
    name: str,
    argument: type[T],
    handler: Callable[[QuickdevServer, T], Awaitable[Answer]],
) -> None:
    """``handler`` answers ``name`` with the argument read into the dataclass ``argument``;
    its return annotation is the answer's type (server/protocol.py)."""

    async def run(ls: QuickdevServer, *arguments: Any) -> Answer:
        try:
            return await handler(ls, parse_argument(_single_object(name, arguments), argument))
        except CommandError as exc:
            return {"error": str(exc)}
        except Exception as exc:
            log.exception("command %s failed", name)
            return {"error": f"{name} failed unexpectedly ({exc}); see the Quickdev log"}

    server.command(name)(run)
    server.state.commands[name] = Command(argument, handler)


def _single_object(name: str, arguments: tuple[Any, ...]) -> dict[str, Any]:
    if not arguments:
        return {}
    if len(arguments) == 1 and isinstance(arguments[0], dict):
        return arguments[0]
    raise CommandError(f"{name} takes one JSON object argument, got {list(arguments)!r}")


def problem(message: str) -> dict[str, str]:
    """Field metadata: the one line a wrong value answers (``{value!r}`` is the value)."""
    return {"problem": message}


def parse_argument(argument: dict[str, Any], kind: type[T]) -> T:
    """A command's argument as the dataclass ``kind``; unknown keys are ignored.

    A field of the wrong type answers its ``problem`` metadata, else a generic line.
    """
    try:
        return converter.structure(argument, kind)
    except Exception as exc:
        name = failed_field(exc)
        if name is None:
            raise CommandError(f"bad command argument: {exc}") from None
        if name not in argument:
            raise CommandError(f'missing "{name}" in the command argument') from None
        messages = {f.name: f.metadata.get("problem") for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
        template = messages.get(name) or '"{name}" has the wrong type: {value!r}'
        raise CommandError(template.format(name=name, value=argument[name])) from None

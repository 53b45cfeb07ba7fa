"""How every ``quickdev.*`` command answers: a JSON object, or ``{"error": one line}``.

Failures are answers rather than LSP errors so the extension can show them as they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from quickdev.server.app import QuickdevServer
from quickdev.server.log import log

Answer = dict[str, Any]
Handler = Callable[[QuickdevServer, dict[str, Any]], Awaitable[Answer]]


class CommandError(Exception):
    """Bad input or an impossible request; the message names the problem and the fix."""


def register(server: QuickdevServer, name: str, handler: Handler) -> None:
    async def run(ls: QuickdevServer, *arguments: Any) -> Answer:
        try:
            return await handler(ls, _single_object(name, arguments))
        except CommandError as exc:
            return {"error": str(exc)}
        except Exception as exc:
            log.exception("command %s failed", name)
            return {"error": f"{name} failed unexpectedly ({exc}); see the Quickdev log"}

    server.command(name)(run)


def _single_object(name: str, arguments: tuple[Any, ...]) -> dict[str, Any]:
    if not arguments:
        return {}
    if len(arguments) == 1 and isinstance(arguments[0], dict):
        return arguments[0]
    raise CommandError(f"{name} takes one JSON object argument, got {list(arguments)!r}")


def string_field(argument: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = argument.get(key)
    if value is None:
        if required:
            raise CommandError(f'missing "{key}" in the command argument')
        return None
    if not isinstance(value, str) or not value:
        raise CommandError(f'"{key}" must be a non-empty string, got {value!r}')
    return value

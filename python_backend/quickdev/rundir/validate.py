"""Typed values from untrusted JSON (files other processes write, arguments from the client).

Needs cattrs, so only the language server imports this module (it bundles cattrs); the job
runs in the user's interpreter, which may not have it, and reads with ``result.read_result``.

One cattrs converter, stricter than cattrs' default: it checks types instead of converting
(``"3"`` is no int, ``true`` is no number, a string is no list), so a malformed value is
reported rather than quietly turned into another one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

import cattrs

from quickdev.rundir import option_table
from quickdev.rundir.layout import RESULT_FILE
from quickdev.rundir.result import JobResult, Limits

log = logging.getLogger(__name__)

T = TypeVar("T")


class InvalidData(ValueError):
    """JSON that does not have the expected shape; the message is one line."""


def _is(kind: type[Any], name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        # bool is an int to Python but not to a person writing JSON.
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise TypeError(f"expected {name}, got {value!r}")
        return value

    return hook


def _number(value: Any, _: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _is_list(kind: Any) -> bool:
    return kind is list or get_origin(kind) is list


def _list_hook(list_type: Any, conv: cattrs.Converter) -> Callable[[Any, Any], list[Any]]:
    (item,) = get_args(list_type) or (Any,)

    def hook(value: Any, _: Any) -> list[Any]:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {value!r}")
        return [conv.structure(v, item) for v in value]

    return hook


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_structure_hook(str, _is(str, "a string"))
    conv.register_structure_hook(bool, _is(bool, "true or false"))
    conv.register_structure_hook(int, _is(int, "a whole number"))
    conv.register_structure_hook(float, _number)
    conv.register_structure_hook_factory(_is_list, _list_hook)
    conv.register_structure_hook(Limits, lambda value, _: _limits(value, conv))
    return conv


def _limits(value: Any, conv: cattrs.Converter) -> Limits:
    """result.json's ``limits``: the option table's limits flat beside the other fields,
    each a number or null."""
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {value!r}")
    for key in (limit.result_key for limit in option_table.LIMITS):
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
            raise TypeError(f"expected a number or null for {key}, got {number!r}")
    hints = get_type_hints(Limits)
    for name in (f.name for f in fields(Limits) if f.name != "values" and f.name in value):
        conv.structure(value[name], hints[name])
    return Limits.from_dict(value)


converter = _converter()


def structure(data: Any, kind: type[T]) -> T:
    """``data`` (a JSON object) as a ``kind``; raises InvalidData naming the first wrong field."""
    if not isinstance(data, dict):
        raise InvalidData(f"invalid {kind.__name__}: expected a JSON object, got {data!r:.60}")
    try:
        return converter.structure(data, kind)
    except Exception as exc:
        raise InvalidData(describe(exc, kind)) from None


def read_json(path: Path, kind: type[T]) -> T:
    """A JSON file as a ``kind``; raises OSError, or InvalidData for bad JSON or shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidData(f"{path.name} is not JSON ({exc})") from None
    return structure(data, kind)


def failed_field(exc: BaseException) -> str | None:
    """The top-level field whose value cattrs rejected, if it names one."""
    if isinstance(exc, cattrs.ClassValidationError):
        for sub in exc.exceptions:
            for note in getattr(sub, "__notes__", []):
                name = getattr(note, "name", None)
                if isinstance(name, str):
                    return name
    return None


def describe(exc: BaseException, kind: type[Any]) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        problems = cattrs.transform_error(exc)
        if problems:
            return f"invalid {kind.__name__}: {problems[0]}"
    return f"invalid {kind.__name__}: {exc}"


def read_result_checked(run_dir: Path) -> JobResult | None:
    """A run's ``result.json``, checked field by field; None (logged) when missing or malformed."""
    try:
        return read_json(run_dir / RESULT_FILE, JobResult)
    except (OSError, InvalidData) as exc:
        log.info("no readable result in %s: %s", run_dir, exc)
        return None

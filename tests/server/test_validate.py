"""What comes from disk or the client is checked, not coerced: a wrong type is an error."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from quickdev.rundir.validate import InvalidData, structure
from quickdev.server.commands import CommandError, parse_argument, problem


@dataclass(frozen=True)
class Sample:
    count: int
    names: list[str] = field(default_factory=list)
    share: float = 0.0
    flag: bool = False


@pytest.mark.parametrize(
    "data",
    [
        {"count": True},  # a JSON boolean is no number
        {"count": "3"},  # nor is a string of digits
        {"count": 1.5},
        {"count": 1, "names": "ab"},  # a string is no list of strings
        {"count": 1, "names": [1]},
        {"count": 1, "share": "0.5"},
        {"count": 1, "flag": 1},
        {},
        [1],
        None,
    ],
)
def test_wrong_shapes_are_one_line_errors(data: object) -> None:
    with pytest.raises(InvalidData) as caught:
        structure(data, Sample)
    assert "\n" not in str(caught.value)


def test_right_shapes_are_kept_and_unknown_keys_ignored() -> None:
    value = structure({"count": 2, "names": ["a"], "share": 1, "later": "field"}, Sample)
    assert value == Sample(count=2, names=["a"], share=1.0)


@dataclass(frozen=True)
class Argument:
    pid: int = field(metadata=problem('"pid" must be a process id, got {value!r}'))
    note: str | None = None


def test_command_arguments_answer_the_fields_own_line() -> None:
    assert parse_argument({"pid": 12}, Argument) == Argument(pid=12)
    with pytest.raises(CommandError, match=r"^\"pid\" must be a process id, got '12'$"):
        parse_argument({"pid": "12"}, Argument)
    with pytest.raises(CommandError, match=r'^missing "pid" in the command argument$'):
        parse_argument({}, Argument)
    with pytest.raises(CommandError, match=r'^"note" has the wrong type: 3$'):
        parse_argument({"pid": 1, "note": 3}, Argument)

"""Which files are the user's: where the limits point when they report a place."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import quickdev.limits.user_code
import torch
from quickdev.limits.user_code import caller_origin, is_user_file


def test_this_file_is_the_users_and_libraries_are_not() -> None:
    assert is_user_file(__file__)
    assert not is_user_file(str(torch.__file__))
    assert not is_user_file(os.__file__)  # the standard library
    assert not is_user_file(str(quickdev.limits.user_code.__file__))  # our own
    assert not is_user_file(str(json.__file__))
    assert not is_user_file("<string>")
    assert not is_user_file("")


def test_a_symlink_to_a_library_file_is_a_library_file(tmp_path: Path) -> None:
    link = tmp_path / "linked_torch.py"
    link.symlink_to(str(torch.__file__))
    assert not is_user_file(str(link))


def test_caller_origin_skips_library_frames_to_the_users_line() -> None:
    origins: list[str] = []

    def probe(obj: dict[str, object]) -> dict[str, object]:
        # Like a patched constructor: skip ourselves, start at whoever called us.
        origins.append(caller_origin(skip=2))
        return obj

    line = sys._getframe().f_lineno + 1
    json.loads('{"a": 1}', object_hook=probe)  # json's decoder (a library) calls probe
    assert origins == [f"{__file__}:{line}"]

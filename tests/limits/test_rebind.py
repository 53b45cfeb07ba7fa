"""Names a library bound before the limits (a warm start's preload) follow the patches."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest
from quickdev.limits import rebind
from quickdev.limits.patching import Patcher


def original_load(path: str) -> str:
    return f"original {path}"


@pytest.fixture
def modules() -> Iterator[tuple[types.ModuleType, types.ModuleType]]:
    """``fakelib_src`` owns ``load``; ``fakelib_user`` did ``from fakelib_src import load``."""
    source = types.ModuleType("fakelib_src")
    source.load = original_load  # type: ignore[attr-defined]
    source.enabled = True  # type: ignore[attr-defined]
    user = types.ModuleType("fakelib_user")
    user.load = source.load  # type: ignore[attr-defined]
    user.flag = True  # type: ignore[attr-defined]
    sys.modules.update({source.__name__: source, user.__name__: user})
    yield source, user
    for module in (source, user):
        sys.modules.pop(module.__name__, None)


def test_a_name_bound_early_points_at_the_newest_replacement_and_is_undone(
    modules: tuple[types.ModuleType, types.ModuleType],
) -> None:
    source, user = modules
    patcher = Patcher()
    patcher.set(source, "load", lambda path: f"limited {path}")
    first = source.load
    patcher.set(source, "load", lambda path: f"limited twice {first(path)}")
    patcher.set(source, "enabled", False)
    assert rebind.install(patcher, ["fakelib_user", "not_imported"]) == 1
    assert user.load("a.pt") == "limited twice limited a.pt" == source.load("a.pt")
    assert user.flag is True  # a replaced flag's value is not a name to follow
    patcher.undo_all()
    assert user.load is original_load and source.load is original_load


def test_a_cold_job_rebinds_nothing_and_torch_and_quickdev_are_never_rebound() -> None:
    assert rebind.imported_before_limits() == []
    assert {"torch", "quickdev", "os"} <= rebind.COLD_BEFORE_LIMITS

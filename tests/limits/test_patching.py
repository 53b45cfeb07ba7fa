"""Patcher: every patch is undone, in reverse order, back to exactly what was there."""

from __future__ import annotations

import types

from quickdev.limits.patching import Patcher


class Base:
    def method(self) -> str:
        return "base"

    @staticmethod
    def static() -> str:
        return "static"


class Child(Base):
    pass


class Slotted:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = "original"


def test_set_returns_the_original_and_undo_puts_it_back() -> None:
    module = types.ModuleType("sample")
    original = module.fn = lambda: "original"  # type: ignore[attr-defined]
    patcher = Patcher()
    assert patcher.set(module, "fn", lambda: "patched") is original
    assert module.fn() == "patched"  # type: ignore[attr-defined]
    patcher.undo_all()
    assert module.fn is original  # type: ignore[attr-defined]


def test_patches_of_one_attribute_are_undone_last_first() -> None:
    module = types.ModuleType("sample")
    original = module.fn = lambda: "original"  # type: ignore[attr-defined]
    patcher = Patcher()
    first = patcher.set(module, "fn", lambda: "first")
    second = patcher.set(module, "fn", lambda: "second")
    assert first is original
    assert second() == "first"
    patcher.undo_all()
    assert module.fn is original  # type: ignore[attr-defined]


def test_an_inherited_attribute_is_removed_again_not_copied_down() -> None:
    patcher = Patcher()
    patcher.set(Child, "method", lambda self: "patched")
    assert Child().method() == "patched"
    assert Base().method() == "base"
    patcher.undo_all()
    assert "method" not in vars(Child)
    assert Child.method is Base.method


def test_a_staticmethod_stays_a_staticmethod() -> None:
    raw = vars(Base)["static"]
    patcher = Patcher()
    original = patcher.set(Base, "static", staticmethod(lambda: "patched"))
    assert original() == "static"  # the function as attribute access gives it
    assert Base().static() == "patched"
    patcher.undo_all()
    assert vars(Base)["static"] is raw
    assert Base().static() == "static"


def test_an_object_without_a_dict_gets_its_value_back() -> None:
    obj = Slotted()
    patcher = Patcher()
    patcher.set(obj, "value", "patched")
    assert obj.value == "patched"
    patcher.undo_all()
    assert obj.value == "original"


def test_on_undo_runs_in_reverse_order_among_the_patches_and_only_once() -> None:
    module = types.ModuleType("sample")
    module.fn = "original"  # type: ignore[attr-defined]
    seen: list[str] = []
    patcher = Patcher()
    patcher.on_undo(lambda: seen.append(f"first sees {module.fn}"))  # type: ignore[attr-defined]
    patcher.set(module, "fn", "patched")
    patcher.on_undo(lambda: seen.append(f"last sees {module.fn}"))  # type: ignore[attr-defined]
    patcher.undo_all()
    patcher.undo_all()
    assert seen == ["last sees patched", "first sees original"]

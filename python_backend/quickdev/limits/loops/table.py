"""The user's rewritten loops, file by file, and which of them enclose a running frame's line."""

from __future__ import annotations

import builtins
import sys
from dataclasses import dataclass
from types import CodeType, FrameType

# The check at each loop head reads ``FLAG_PREFIX<index>__``: None (a builtin, so it is
# always defined) until a budget marks the loop in one frame, then a dict in the module's
# globals ({frame: True}); ``FRAME_GETTER`` is ``sys._getframe``. Both are C functions and
# plain loads, so the check adds no Python frame a debugger or profiler could show.
FLAG_PREFIX = "__quickdev_loop_"
FRAME_GETTER = "__quickdev_frame__"

# What a comprehension's own frame is called (Python 3.11; 3.12 inlines list, set and dict
# comprehensions into the enclosing frame). It cannot be ended by a ``break``.
COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})


def flag_name(index: int) -> str:
    return f"{FLAG_PREFIX}{index}__"


@dataclass(frozen=True)
class Loop:
    """One rewritten loop of a file."""

    index: int  # its flag's number, unique in its file
    line: int  # the loop statement's first line
    end_line: int
    header_end: int  # the last line of ``for … in …:`` / ``while …:``

    @property
    def flag(self) -> str:
        return flag_name(self.index)

    def encloses(self, line: int) -> bool:
        return self.line <= line <= self.end_line

    def drives(self, line: int) -> bool:
        """Whether ``line`` is the loop's own header: the loop is fetching its next item
        (a ``for`` over a DataLoader asks for a batch from its header)."""
        return self.line <= line <= self.header_end


class LoopTables:
    """Every rewritten file's loops, as the loop transform registers them."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[Loop, ...]] = {}
        self._by_code: dict[CodeType, tuple[Loop, ...]] = {}
        self._defined = 0  # flags 0 .. _defined - 1 exist as builtins

    def add(self, filename: str, loops: tuple[Loop, ...]) -> None:
        self._files[filename] = loops
        self._by_code.clear()
        highest = max((loop.index for loop in loops), default=-1)
        setattr(builtins, FRAME_GETTER, sys._getframe)
        for index in range(self._defined, highest + 1):
            setattr(builtins, flag_name(index), None)
        self._defined = max(self._defined, highest + 1)

    def has_file(self, filename: str) -> bool:
        return filename in self._files

    def loops_of(self, code: CodeType) -> tuple[Loop, ...]:
        """The rewritten loops written directly in ``code`` (not in functions it defines):
        each loop's check names its flag, so the code's names say which are its own."""
        found = self._by_code.get(code)
        if found is None:
            loops = self._files.get(code.co_filename, ())
            names = set(code.co_names)
            found = tuple(loop for loop in loops if loop.flag in names)
            self._by_code[code] = found
        return found

    def loops_at(self, frame: FrameType, line: int | None = None) -> list[Loop]:
        """The frame's rewritten loops enclosing its line (or ``line``), innermost first."""
        line = frame.f_lineno if line is None else line
        if line is None:
            return []
        loops = [loop for loop in self.loops_of(frame.f_code) if loop.encloses(line)]
        loops.sort(key=lambda loop: loop.line, reverse=True)
        return loops

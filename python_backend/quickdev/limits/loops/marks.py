"""Telling a loop, in one frame, to end at its next iteration, and seeing that it did.

A mark is an entry ``{frame: True}`` in the dict the loop's flag names in that frame's
globals; the loop's check pops it and breaks. A mark still there later was not reached
yet: the loop is still in the iteration it was told to end after (pending), or its frame
left without reaching the head again (dropped when seen off the stack).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import FrameType

from quickdev.limits.loops.table import COMPREHENSIONS, Loop, LoopTables
from quickdev.rundir.result import EndedLoop

# A generator's or coroutine's frame is off the stack while suspended, not gone.
_SUSPENDABLE = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


@dataclass
class Mark:
    frame: FrameType
    loop: Loop
    ended: EndedLoop  # what the result says once the loop has ended
    line: int  # the frame's line when marked

    def reached(self) -> bool:
        flags = self.frame.f_globals.get(self.loop.flag)
        return not (isinstance(flags, dict) and self.frame in flags)

    def withdraw(self) -> None:
        flags = self.frame.f_globals.get(self.loop.flag)
        if isinstance(flags, dict):
            flags.pop(self.frame, None)


@dataclass(frozen=True)
class Place:
    """A frame of the user's rewritten code on the stack, the line it is at, and its
    loops around that line (innermost first)."""

    frame: FrameType
    line: int
    loops: tuple[Loop, ...]


def places(tables: LoopTables, frame: FrameType | None) -> list[Place]:
    """The rewritten frames from ``frame`` outward that are inside a loop, innermost
    first. A comprehension of a rewritten file running innermost (it cannot be ended)
    comes first as a place without loops."""
    found: list[Place] = []
    while frame is not None:
        code = frame.f_code
        line = frame.f_lineno
        if not found and code.co_name in COMPREHENSIONS and tables.has_file(code.co_filename):
            found.append(Place(frame, line or 0, ()))
        elif line is not None and tables.loops_of(code):
            loops = tables.loops_at(frame, line)
            if loops:
                found.append(Place(frame, line, tuple(loops)))
        frame = frame.f_back
    return found


class Marks:
    """The marks made so far and the loops that ended by them."""

    def __init__(self) -> None:
        self.pending: list[Mark] = []
        self.ended: list[EndedLoop] = []

    def add(self, frame: FrameType, loop: Loop, ended: EndedLoop, line: int) -> Mark:
        flags = frame.f_globals.get(loop.flag)
        if not isinstance(flags, dict):
            flags = {}
            frame.f_globals[loop.flag] = flags
        flags[frame] = True
        mark = Mark(frame, loop, ended, line)
        self.pending.append(mark)
        return mark

    def refresh(self) -> list[Mark]:
        """Move the marks whose loops ended to ``ended`` (returned), drop those whose
        frames are gone; what stays is pending."""
        if not self.pending:
            return []
        live = stack_ids()
        reached: list[Mark] = []
        keep: list[Mark] = []
        for mark in self.pending:
            if mark.reached():
                reached.append(mark)
                _add_ended(self.ended, mark.ended)
            elif id(mark.frame) in live or mark.frame.f_code.co_flags & _SUSPENDABLE:
                keep.append(mark)
            else:
                mark.withdraw()  # its frame returned inside the iteration: nothing to end
        self.pending = keep
        return reached

    def on_stack(self, budget: str) -> list[Mark]:
        """Pending marks of ``budget`` whose frames are running now (not suspended
        generators)."""
        live = stack_ids()
        return [m for m in self.pending if id(m.frame) in live and m.ended.budget == budget]

    def find(self, frame: FrameType, loop: Loop) -> Mark | None:
        return next((m for m in self.pending if m.frame is frame and m.loop == loop), None)

    def withdraw_all(self) -> None:
        """The job ends: no loop is told to end any more, no frame is kept alive."""
        for mark in self.pending:
            mark.withdraw()
        self.pending = []


def stack_ids() -> set[int]:
    """The ids of the frames running now, this thread's whole stack."""
    ids = set()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        ids.add(id(frame))
        frame = frame.f_back
    return ids


def _add_ended(ended: list[EndedLoop], new: EndedLoop) -> None:
    """One entry per loop and budget; a loop ended again (an evaluation loop called each
    epoch) counts its times."""
    for entry in ended:
        if (entry.file, entry.line, entry.budget) == (new.file, new.line, new.budget):
            entry.times += 1
            return
    ended.append(new)

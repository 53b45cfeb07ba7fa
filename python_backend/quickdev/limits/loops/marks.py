"""Telling a loop, in one frame, to end at its next iteration, and seeing that it did.

A mark is an entry ``{frame: token}`` in the dict the loop's flag names in that frame's
globals; the loop's check pops it and breaks. A mark still there later was not reached
yet: the loop is still in the iteration it was told to end after (pending), or its frame
left without reaching the head again (dropped when seen off the stack).

Only that entry holds the frame: once the loop has popped it, nothing of the job keeps
the frame, so the user's objects in it are freed where the script lets go of them, as
without the job: a log file a training function left open is closed when it returns, and
a DDP model's process group does not outlive the script into the job's own ending.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from dataclasses import dataclass
from types import FrameType

from quickdev.limits.loops.table import COMPREHENSIONS, Loop, LoopTables
from quickdev.rundir.result import EndedLoop

# A generator's or coroutine's frame is off the stack while suspended, not gone.
_SUSPENDABLE = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


class Mark:
    """One loop told to end in one frame. It keeps the frame's id and the token of its
    entry, not the frame: the entry holds the frame while the mark is pending, so the id
    names no other frame until the loop has popped it."""

    def __init__(self, frame: FrameType, loop: Loop, ended: EndedLoop, line: int) -> None:
        self.loop = loop
        self.ended = ended  # what the result says once the loop has ended
        self.line = line  # the frame's line when marked
        self.frame_id = id(frame)
        self.suspendable = bool(frame.f_code.co_flags & _SUSPENDABLE)
        self._globals = frame.f_globals
        self._token = object()  # true, as the check needs, and this mark's alone
        flags = self._flags()
        if flags is None:
            flags = self._globals[loop.flag] = {}
        flags[frame] = self._token

    def _flags(self) -> dict[FrameType, object] | None:
        flags = self._globals.get(self.loop.flag)
        return flags if isinstance(flags, dict) else None

    def is_in(self, frame: FrameType) -> bool:
        flags = self._flags()
        return flags is not None and flags.get(frame) is self._token

    def reached(self) -> bool:
        flags = self._flags()
        return flags is None or all(token is not self._token for token in flags.values())

    def withdraw(self) -> None:
        flags = self._flags()
        if flags is not None:
            for frame, token in list(flags.items()):
                if token is self._token:
                    del flags[frame]


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
        mark = Mark(frame, loop, ended, line)
        self.pending.append(mark)
        return mark

    def refresh(self, live: Collection[int] | None = None) -> list[Mark]:
        """Move the marks whose loops ended to ``ended`` (returned), drop those whose
        frames are gone; what stays is pending. ``live``: the ids of the frames running
        now, where the caller has walked the stack already."""
        if not self.pending:
            return []
        if live is None:
            live = stack_ids()
        reached: list[Mark] = []
        keep: list[Mark] = []
        for mark in self.pending:
            if mark.reached():
                reached.append(mark)
                add_ended(self.ended, mark.ended)
            elif mark.frame_id in live or mark.suspendable:
                keep.append(mark)
            else:
                mark.withdraw()  # its frame returned inside the iteration: nothing to end
        self.pending = keep
        return reached

    def on_stack(self, budget: str) -> list[Mark]:
        """Pending marks of ``budget`` whose frames are running now (not suspended
        generators)."""
        live = stack_ids()
        return [m for m in self.pending if m.frame_id in live and m.ended.budget == budget]

    def find(self, frame: FrameType, loop: Loop) -> Mark | None:
        return next((m for m in self.pending if m.loop == loop and m.is_in(frame)), None)

    def withdraw_all(self) -> None:
        """The job ends: no loop is told to end any more, no frame is kept alive."""
        for mark in self.pending:
            mark.withdraw()
        self.pending = []


def stack_ids() -> set[int]:
    """The ids of the frames running now, this thread's whole stack."""
    return set(running_frames(2))


def running_frames(depth: int = 1) -> dict[int, FrameType]:
    """The frames running now by id, from ``depth`` frames above this call outward."""
    frames = {}
    frame: FrameType | None = sys._getframe(depth)
    while frame is not None:
        frames[id(frame)] = frame
        frame = frame.f_back
    return frames


def add_ended(ended: list[EndedLoop], new: EndedLoop) -> None:
    """One entry per loop and budget; a loop ended again (an evaluation loop called each
    epoch) counts its times."""
    for entry in ended:
        if (entry.file, entry.line, entry.budget) == (new.file, new.line, new.budget):
            entry.times += 1
            return
    ended.append(new)

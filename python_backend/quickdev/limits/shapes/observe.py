"""What the recording transform's inserted code calls, and what it has seen.

Each file's guards are a list of counters (``PASSES`` each), one per recorded statement,
bound as a builtin the rewritten code reads. A look at a line counts its counter down;
a value not seen before on that line (another shape) sets it back to ``PASSES``. The
first ``MAX_VALUES`` distinct values of a name are kept, with their statistics (read once
each); those after them are counted, up to ``MORE_COUNTED``, from their signature alone.
At 0 the line is no longer looked at: the cost of recording is a few looks per distinct
value of a line, and one per probe (below).

The job starts in the ``setup`` phase; the first training forward of the model and the
first evaluation forward each start their phase and give every line ``PASSES`` looks
again, so the training step, the evaluation and each module's ``forward`` are recorded
the first time they run, whichever comes first.

A line that stopped being looked at may bind other shapes later. Every line gets one
look more (a probe) whenever the model's forward is called with inputs of a shape not
seen before (a sequence that grows in ``generate``; ``MAX_INPUT_SHAPES`` of them), and
at its 2nd, 4th, 8th … forward; a probe that finds a new value looks on as before. Where a
probe of the second kind finds one, shapes in between may have gone unseen: the record
says so (``LOOKS_STOPPED``). A ``for`` loop's first ``LOOP_ITEMS_LOOKED`` items are looked
at, and a loop that goes on past them is said to (``LOOP_WENT_ON``).

Where a budget ends a loop (``budget_cut``), what was being made from it is cut short:
the statements running in the callers of the loop's frame (``y = model.generate(x,
500)``), and the bindings after the loop that read what it accumulated
(``accumulated``), are looked at once more and their values marked with the cut.
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, islice
from types import FrameType
from typing import Any

import torch

from quickdev.limits.own_work import own_work
from quickdev.limits.shapes.accumulated import Span
from quickdev.limits.shapes.facts import signature, value_of
from quickdev.limits.shapes.transform import ITER, LOOP, SEE, SlotRow
from quickdev.rundir.shapes import (
    EVAL,
    LOOKS_STOPPED,
    LOOP_ITEMS_LOOKED,
    LOOP_WENT_ON,
    MORE_COUNTED,
    SETUP,
    Binding,
    Cut,
    FileRecord,
    NameRecord,
    Seen,
    ShapesRecord,
)

log = logging.getLogger(__name__)

PASSES = 3
MAX_VALUES = 8
# Distinct shapes of the model's inputs that each bring a probe of every line.
MAX_INPUT_SHAPES = 64
_MISSING = object()
# Iterators that never yield a tensor: a loop over one is not looked at again (``for ch in
# text``, ``for i in range(n)``), so a tight loop never pays for the look's wrapper.
_SCALAR_ITERATORS = frozenset(
    type(iter(empty)) for empty in (range(0), range(2**64, 2**64), "", "é", b"", bytearray())
)


@dataclass
class Cost:
    """What recording took from the script, for the job's log."""

    looks: int = 0
    seconds: float = 0.0  # wall clock
    cpu_seconds: float = 0.0  # this thread's CPU time (a busy machine inflates the wall clock)


@dataclass
class _Name:
    name: str
    seen: list[Seen] = field(default_factory=list)
    index: dict[Any, int] = field(default_factory=dict)  # signature -> place in ``seen``
    others: set[Any] = field(default_factory=set)  # distinct values beyond MAX_VALUES
    times: int = 0
    partial: str | None = None  # LOOP_WENT_ON | LOOKS_STOPPED

    def observe(self, value: Any, phase: str, cut: Cut | None = None) -> bool:
        """Whether ``value`` is new here (counted; kept with its facts, statistics
        included, while fewer than MAX_VALUES are)."""
        key = signature(value)
        if key is None:
            return False
        self.times += 1
        known = self.index.get(key)
        if known is not None:
            seen = self.seen[known]
            if phase not in seen.phases:
                seen.phases.append(phase)
            if cut is not None and seen.cut is None:
                seen.cut = cut
            return False
        if len(self.seen) >= MAX_VALUES:
            if key in self.others or len(self.others) >= MORE_COUNTED:
                return False
            self.others.add(key)
            return True
        record = value_of(value)
        if record is None:
            return False
        self.index[key] = len(self.seen)
        self.seen.append(Seen(record, [phase], cut))
        return True


@dataclass
class _Slot:
    kind: str
    first_line: int
    line: int
    col: int
    names: list[_Name]
    pattern: Any
    after: tuple[Span, ...]  # loops whose accumulated names it reads
    stopped: bool = False  # no longer looked at, and no probe since that follows a change
    # A for loop's: whether the run whose items are being looked at began while stopped
    # (every item of a run is looked at, whatever the counter says in between).
    run_after_stop: bool = False


@dataclass
class _File:
    path: str
    hashes: tuple[int, ...]
    slots: list[_Slot]
    guards: list[int]
    cuts: dict[int, Cut] = field(default_factory=dict)  # slot -> the cut its next look sees


class RecordedFiles:
    """Every rewritten file's statements and what was seen on them."""

    def __init__(self) -> None:
        self.files: dict[str, _File] = {}  # by guard name
        self._by_path: dict[str, _File] = {}  # by the file name its code was compiled with
        self.forwards = 0  # of the model (its top module)
        self._inputs: set[Any] = set()  # the signatures of the model's inputs, up to a bound
        self.phase = SETUP  # of the model's last forward (none yet: setup)
        self._phases_started = {SETUP}
        self._busy = False  # a look that runs user code (a tensor subclass) looks no further
        self._disarmed = False  # the job is over: nothing brings a line a look again
        self._failed = False
        self.cost = Cost()
        setattr(builtins, SEE, self.see)
        setattr(builtins, LOOP, self.loop)
        setattr(builtins, ITER, iter)

    def add(
        self, filename: str, guard: str, hashes: tuple[int, ...], rows: tuple[SlotRow, ...]
    ) -> None:
        if guard in self.files:
            return  # the same file compiled again (imported under two names): one record
        slots = [
            _Slot(kind, first, line, col, [_Name(n) for n in names], pattern, after)
            for kind, first, line, col, names, pattern, after in rows
        ]
        guards = [PASSES] * len(slots)
        self.files[guard] = self._by_path[filename] = _File(filename, hashes, slots, guards)
        setattr(builtins, guard, guards)

    # --- called from the user's code ------------------------------------------------------

    def see(self, guard: str, slot: int, values: tuple[Any, ...]) -> None:
        file = self.files.get(guard)
        if file is None or self._busy:
            return
        self._busy = True
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            with own_work():  # the script's modes (the NaN hunt's) must not see the look
                self._look(file, slot, values)
        except Exception as exc:
            file.guards[slot] = 0
            if not self._failed:
                self._failed = True
                log.warning(
                    "tensor shapes: a value could not be recorded (%s: %s)", type(exc).__name__, exc
                )
        finally:
            self._busy = False
            self.cost.looks += 1
            self.cost.seconds += time.perf_counter() - started
            self.cost.cpu_seconds += time.thread_time() - cpu_started

    def _look(self, file: _File, slot: int, values: tuple[Any, ...]) -> None:
        record = file.slots[slot]
        # Code under no_grad is evaluation, whichever forward came last (a test loop's
        # own lines run before its first forward).
        phase = self.phase if torch.is_grad_enabled() else EVAL
        cut = file.cuts.pop(slot, None)
        new = False
        stopped = record.run_after_stop if record.kind == "for" else record.stopped
        for name, value in zip(record.names, values, strict=False):
            if value is not _MISSING and name.observe(value, phase, cut):
                new = True
                if stopped:
                    name.partial = name.partial or LOOKS_STOPPED
        if new:
            file.guards[slot] = PASSES
            record.stopped = False
        else:
            file.guards[slot] = max(file.guards[slot] - 1, 0)
            record.stopped = file.guards[slot] == 0

    def loop(self, guard: str, slot: int, iterator: Iterator[Any]) -> Iterator[Any]:
        """The loop's items, the first ``LOOP_ITEMS_LOOKED`` looked at as the loop takes
        them; the one after them, if any, tells that the loop went on."""
        file = self.files.get(guard)
        if file is not None and type(iterator) in _SCALAR_ITERATORS:
            file.guards[slot] = 0
            return iterator
        if file is not None:
            record = file.slots[slot]
            record.run_after_stop, record.stopped = record.stopped, False
        look = partial(self._see_item, guard, slot)
        went_on = partial(self._loop_went_on, guard, slot)
        return chain(
            map(look, islice(iterator, LOOP_ITEMS_LOOKED)),
            map(went_on, islice(iterator, 1)),
            iterator,
        )

    def _loop_went_on(self, guard: str, slot: int, item: Any) -> Any:
        file = self.files.get(guard)
        if file is not None:
            for name in file.slots[slot].names:
                name.partial = LOOP_WENT_ON
        return item

    def _see_item(self, guard: str, slot: int, item: Any) -> Any:
        file = self.files.get(guard)
        if file is not None:
            record = file.slots[slot]
            bound: dict[str, Any] = {}
            try:
                with own_work():
                    _unpack(record.pattern, item, bound)
            except Exception:
                bound = {}
            self.see(guard, slot, tuple(bound.get(n.name, _MISSING) for n in record.names))
        return item

    # --- called by the job ----------------------------------------------------------------

    def phase_started(self, phase: str) -> None:
        """The model's forwards switched to ``phase`` (train, eval); the first time, every
        line is looked at again."""
        self.phase = phase
        if phase in self._phases_started or self._disarmed:
            return
        self._phases_started.add(phase)
        for file in self.files.values():
            file.guards[:] = [PASSES] * len(file.guards)
            for record in file.slots:
                record.stopped = False

    def forward_starting(self, args: Any) -> None:
        """The model's forward is called with ``args``: a probe of every line where their
        shapes are new, or at its 2nd, 4th, 8th … call."""
        if self._disarmed:
            return
        self.forwards += 1
        try:
            key = signature(args)
        except Exception:
            key = None
        if key is not None and key not in self._inputs and len(self._inputs) < MAX_INPUT_SHAPES:
            self._inputs.add(key)
            self._probe(follows_a_change=True)
        elif self.forwards & (self.forwards - 1) == 0:
            self._probe(follows_a_change=False)

    def _probe(self, follows_a_change: bool) -> None:
        for file in self.files.values():
            guards = file.guards
            for index, guard in enumerate(guards):
                if not guard:
                    guards[index] = 1
            if follows_a_change:
                for record in file.slots:
                    record.stopped = False

    def budget_cut(self, frame: FrameType, loop_line: int, cut: Cut) -> None:
        """A budget ended the loop at ``loop_line`` of ``frame`` (or cut a pass over a
        loader that it iterates): the next look at each statement made from it sees
        ``cut``."""
        if self._disarmed:
            return
        file = self._by_path.get(frame.f_code.co_filename)
        if file is not None:
            for index, record in enumerate(file.slots):
                if any(first <= loop_line <= last for first, last in record.after):
                    self._expect_cut(file, index, cut)
        caller = frame.f_back
        while caller is not None:
            file = self._by_path.get(caller.f_code.co_filename)
            line = caller.f_lineno
            if file is not None and line is not None:
                for index, record in enumerate(file.slots):
                    if record.kind == "assign" and record.first_line <= line <= record.line:
                        self._expect_cut(file, index, cut)
            caller = caller.f_back

    def _expect_cut(self, file: _File, slot: int, cut: Cut) -> None:
        file.cuts.setdefault(slot, cut)
        file.guards[slot] = max(file.guards[slot], 1)
        file.slots[slot].stopped = False

    def disarm(self) -> None:
        """The job is over: no line is looked at any more (code compiled for the job stays
        loaded in the in-process API; its guards read 0 from now on)."""
        self._disarmed = True
        for file in self.files.values():
            file.guards[:] = [0] * len(file.guards)

    def record(self, run_id: str, started: str) -> ShapesRecord:
        files = []
        for file in self.files.values():
            bindings = [
                Binding(
                    first_line=slot.first_line,
                    line=slot.line,
                    col=slot.col,
                    kind=slot.kind,
                    names=[
                        NameRecord(n.name, n.seen, n.times, len(n.others), n.partial)
                        for n in slot.names
                        if n.seen
                    ],
                )
                for slot in file.slots
                if any(n.seen for n in slot.names)
            ]
            if bindings:
                files.append(FileRecord(file.path, list(file.hashes), bindings))
        return ShapesRecord(run_id=run_id, started=started, files=files)


def _unpack(pattern: Any, item: Any, bound: dict[str, Any]) -> None:
    """Bind ``item`` to the names of a ``for`` target's ``pattern`` as Python would, without
    consuming anything that is not already a tuple, list or tensor."""
    if pattern is None:
        return
    if isinstance(pattern, str):
        bound[pattern.removeprefix("*")] = item
        return
    if isinstance(item, (tuple, list)):
        elements = list(item)
    elif isinstance(item, torch.Tensor) and item.dim() > 0 and len(item) == len(pattern):
        elements = list(item.unbind(0))
    else:
        return
    starred = [i for i, p in enumerate(pattern) if isinstance(p, str) and p.startswith("*")]
    if not starred:
        if len(elements) == len(pattern):
            for part, element in zip(pattern, elements, strict=True):
                _unpack(part, element, bound)
        return
    star = starred[0]
    after = len(pattern) - star - 1
    if len(elements) < star + after:
        return
    for part, element in zip(pattern[:star], elements[:star], strict=True):
        _unpack(part, element, bound)
    bound[pattern[star][1:]] = elements[star : len(elements) - after]
    for part, element in zip(pattern[star + 1 :], elements[len(elements) - after :], strict=True):
        _unpack(part, element, bound)

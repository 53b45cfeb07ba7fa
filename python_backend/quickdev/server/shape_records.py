"""The newest tensor-shape record of each file over the runs directories, and where its
lines are in the file's current text. No LSP here (``shape_hints`` serves it).

A run's record (``SHAPES_FILE``) is read once, when the run is first seen with it; a runs
directory is listed again only when its own mtime changed (a run was created or deleted),
and runs still going are looked at until their record or their end shows. Only the newest
run's record of each file is kept; "clear" forgets the records seen so far (the next run
brings new ones).
"""

from __future__ import annotations

import os
import sys
import threading
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.analysis.line_map import follow_edit, map_lines
from quickdev.analysis.source import line_hash, split_lines
from quickdev.rundir.jsonio import read_json_object
from quickdev.rundir.layout import RESULT_FILE, SHAPES_FILE, rank_dir_name
from quickdev.rundir.shapes import Binding, FileRecord, read_shapes
from quickdev.server.types import Key


@dataclass(frozen=True)
class RunOfRecord:
    run_id: str
    started: str  # ISO-8601 UTC: newer runs compare greater
    run_dir: Path


@dataclass(frozen=True)
class FileShapes:
    """One file's record, from the newest run that recorded it."""

    run: RunOfRecord
    file: FileRecord
    # Each name's hint label, made once (id of its NameRecord -> label): a request for a
    # whole file would make hundreds.
    labels: dict[int, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Placed:
    """A binding where it is in the current text: 0-based line, character column."""

    line: int
    col: int
    binding: Binding


@dataclass
class _RunsDir:
    mtime_ns: int = -1
    done: set[str] = field(default_factory=set)  # run directory names read (or without record)
    pending: set[str] = field(default_factory=set)  # running: no record yet


class ShapeIndex:
    def __init__(self) -> None:
        self._by_path: dict[str, FileShapes] = {}
        self._dirs: dict[Path, _RunsDir] = {}
        self._cleared: set[Path] = set()  # run directories whose records were cleared
        self._lock = threading.Lock()  # refreshed on worker threads
        self.generation = 0  # changes whenever a record is added or dropped

    def refresh(self, runs_dirs: Iterable[Path]) -> bool:
        """Pick up runs created, ended or deleted since the last look; True if any record
        changed."""
        with self._lock:
            before = self.generation
            for runs_dir in runs_dirs:
                self._refresh(runs_dir)
            return self.generation != before

    def add_run(self, run_dir: Path) -> bool:
        """A run that just ended (the server's own): its record, without listing its folder."""
        with self._lock:
            state = self._dirs.get(run_dir.parent)
            if state is not None:
                state.pending.discard(run_dir.name)
                state.done.add(run_dir.name)
            return self._read(run_dir)

    def for_path(self, path: str) -> FileShapes | None:
        return self._by_path.get(os.path.realpath(path))

    def clear(self) -> int:
        """Forget every record seen so far; returns how many files had one."""
        with self._lock:
            cleared = len(self._by_path)
            self._cleared.update(shapes.run.run_dir for shapes in self._by_path.values())
            self._by_path.clear()
            self.generation += 1
            return cleared

    def _refresh(self, runs_dir: Path) -> None:
        try:
            mtime = runs_dir.stat().st_mtime_ns
        except OSError:
            return
        state = self._dirs.setdefault(runs_dir, _RunsDir())
        if mtime != state.mtime_ns:
            try:
                names = {e.name for e in os.scandir(runs_dir) if e.is_dir(follow_symlinks=False)}
            except OSError:
                return
            if state.done - names:  # a run was deleted: the newest of the others again
                self._drop_dir(runs_dir)
                state = self._dirs[runs_dir] = _RunsDir()
            state.mtime_ns = mtime
            state.pending |= names - state.done
        for name in sorted(state.pending):
            run_dir = runs_dir / name
            if self._read(run_dir) or _ended(run_dir):
                state.pending.discard(name)
                state.done.add(name)

    def _read(self, run_dir: Path) -> bool:
        """Take the run's record where it is the newest of a file; False if it has none."""
        folder = run_dir if (run_dir / SHAPES_FILE).is_file() else run_dir / rank_dir_name(0)
        if run_dir in self._cleared or not (folder / SHAPES_FILE).is_file():
            return False
        record = read_shapes(folder)
        if record is None:
            return True  # unreadable: not looked at again
        run = RunOfRecord(record.run_id, record.started, run_dir)
        for file in record.files:
            path = os.path.realpath(file.path)
            known = self._by_path.get(path)
            if known is None or (known.run.started, known.run.run_id) < (run.started, run.run_id):
                self._by_path[path] = FileShapes(run, file)
                self.generation += 1
        return True

    def _drop_dir(self, runs_dir: Path) -> None:
        for path, shapes in list(self._by_path.items()):
            if shapes.run.run_dir.parent == runs_dir:
                del self._by_path[path]
                self.generation += 1


def _ended(run_dir: Path) -> bool:
    """Whether the run has ended (or is not a run at all): no record will come."""
    result = read_json_object(run_dir / RESULT_FILE)
    return result is None or result.get("status") != "running"


class Placement:
    """Where a file's record is in one version of its text: each recorded line's line now
    (``where``), and the bindings placed from it a range of lines at a time, as an inlay
    hint request asks for the lines on the screen."""

    def __init__(
        self,
        version: int | None,
        text: str,
        generation: int,
        shapes: FileShapes,
        where: list[int],
        by_end: list[Binding] | None = None,
    ) -> None:
        self.version = version
        self.text = text
        self.generation = generation
        self.shapes = shapes
        self.where = where
        # The record's bindings in the order of their last lines: the order of where they
        # are now (``where`` keeps the lines' order).
        self.by_end = by_end or sorted(shapes.file.bindings, key=lambda b: b.line)
        self._lines: list[str] | None = None
        self._all: list[Placed] | None = None

    @property
    def lines(self) -> list[str]:
        """The text's lines, endings kept (split once per version)."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    def all(self) -> list[Placed]:
        if self._all is None:
            self._all = self._placed(0, len(self.by_end), sys.maxsize)
        return self._all

    def within(self, first: int, last: int) -> list[Placed]:
        """The bindings whose hint goes on lines ``first`` to ``last`` (0-based)."""
        if self._all is not None:
            return [p for p in self._all if first <= p.line <= last]
        where, by_end = self.where, self.by_end

        def now(index: int) -> int:  # the binding's last line now, or the next placed one's
            for binding in by_end[index:]:
                line = binding.line - 1
                if line < len(where) and where[line] >= 0:
                    return where[line]
            return sys.maxsize

        start = bisect_left(range(len(by_end)), first, key=now)
        return self._placed(start, len(by_end), last)

    def _placed(self, start: int, stop: int, last: int) -> list[Placed]:
        where, count, lines = self.where, len(self.where), self.lines
        placed = []
        for binding in self.by_end[start:stop]:
            first, end = binding.first_line - 1, binding.line - 1
            if not 0 <= first <= end < count or where[end] < 0:
                continue
            line = where[end]
            if line > last:
                break
            if any(where[k] != line - (end - k) for k in range(first, end)):
                continue  # its lines no longer all there, together and in order
            col = min(binding.col, len(lines[line].rstrip("\r\n")))
            placed.append(Placed(line, col, binding))
        placed.sort(key=lambda p: (p.line, p.col))
        return placed


class DocumentShapes:
    """The index, and each open document's placement for its current version."""

    def __init__(self) -> None:
        self.index = ShapeIndex()
        self.runs_dirs: set[Path] = set()  # runs directories of this session's jobs
        self._documents: dict[str, Placement | None] = {}  # the most recently asked last
        self._generations: dict[str, int] = {}  # a document's index generation when placed
        self._lock = threading.Lock()  # requests are answered on worker threads

    # Documents whose placements are kept (a closed one may come back with its version
    # numbers starting again: its text tells it apart).
    KEEP_DOCUMENTS = 64

    def placed(
        self, uri: str, path: str, version: int | None, text: str, runs_dirs: Iterable[Path]
    ) -> Placement | None:
        """On a worker thread: where the file's record is in ``text``; None without one."""
        with self._lock:
            return self._placed(uri, path, version, text, runs_dirs)

    def refresh(self, runs_dirs: Iterable[Path]) -> bool:
        """On a worker thread: pick up runs created, ended or deleted in ``runs_dirs`` and
        this session's; True if any record changed."""
        return self.index.refresh([*runs_dirs, *self.runs_dirs])

    def _placed(
        self, uri: str, path: str, version: int | None, text: str, runs_dirs: Iterable[Path]
    ) -> Placement | None:
        self.index.refresh([*runs_dirs, *self.runs_dirs])
        generation = self.index.generation
        cached = self._documents.pop(uri, None)
        if self._generations.get(uri) != generation:
            cached = _place(version, text, generation, self.index.for_path(path), None)
        elif cached is not None and (cached.version != version or cached.text != text):
            cached = _place(version, text, generation, cached.shapes, cached)
        self._documents[uri] = cached
        self._generations[uri] = generation
        while len(self._documents) > self.KEEP_DOCUMENTS:
            del self._generations[next(iter(self._documents))]
            del self._documents[next(iter(self._documents))]
        return cached


def _place(
    version: int | None,
    text: str,
    generation: int,
    shapes: FileShapes | None,
    before: Placement | None,
) -> Placement | None:
    """Where the record's lines are in ``text``: from the placement of the version before,
    looking only at what the edit changed, where there is one (an edit costs what it
    changed, not the file); else from scratch."""
    if shapes is None:
        return None
    if before is not None:
        where = follow_edit(before.where, shapes.file.lines, before.text, text)
        if where is not None:
            return Placement(version, text, generation, shapes, where, before.by_end)
    where = map_lines(shapes.file.lines, [line_hash(line) for line in split_lines(text)])
    return Placement(version, text, generation, shapes, where)


SHAPES = Key("shapes", DocumentShapes)

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
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.analysis.line_map import map_lines
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


def place(file: FileRecord, text: str) -> list[Placed]:
    """The bindings whose lines are all still there, unchanged and together, where they
    are now; a binding whose statement was edited is left out."""
    lines = split_lines(text)
    where = map_lines(file.lines, [line_hash(line) for line in lines])
    placed = []
    for binding in file.bindings:
        first = binding.first_line - 1
        span = binding.line - binding.first_line
        if not 0 <= first < len(where) or first + span >= len(where) or where[first] < 0:
            continue
        start = where[first]
        if any(where[first + k] != start + k for k in range(1, span + 1)):
            continue
        line = start + span
        col = min(binding.col, len(lines[line].rstrip("\r\n")))
        placed.append(Placed(line, col, binding))
    placed.sort(key=lambda p: (p.line, p.col))
    return placed


@dataclass(frozen=True)
class _Placement:
    text: tuple[int | None, int]  # the document's version and its text's hash
    generation: int
    shapes: FileShapes | None
    placed: list[Placed]


class DocumentShapes:
    """The index, and each open document's placed bindings for its current version."""

    def __init__(self) -> None:
        self.index = ShapeIndex()
        self.runs_dirs: set[Path] = set()  # runs directories of this session's jobs
        self._documents: dict[str, _Placement] = {}  # the most recently asked last
        self._lock = threading.Lock()  # requests are answered on worker threads

    # Documents whose placements are kept (a closed one may come back with its version
    # numbers starting again: the text's hash tells it apart).
    KEEP_DOCUMENTS = 64

    def placed(
        self, uri: str, path: str, version: int | None, text: str, runs_dirs: Iterable[Path]
    ) -> tuple[FileShapes, list[Placed]] | None:
        """On a worker thread: the file's record and where its bindings are in ``text``."""
        with self._lock:
            return self._placed(uri, path, version, text, runs_dirs)

    def _placed(
        self, uri: str, path: str, version: int | None, text: str, runs_dirs: Iterable[Path]
    ) -> tuple[FileShapes, list[Placed]] | None:
        self.index.refresh([*runs_dirs, *self.runs_dirs])
        key = (version, hash(text))
        cached = self._documents.pop(uri, None)
        if cached is None or cached.text != key or cached.generation != self.index.generation:
            generation = self.index.generation
            shapes = self.index.for_path(path)
            placed = place(shapes.file, text) if shapes is not None else []
            cached = _Placement(key, generation, shapes, placed)
        self._documents[uri] = cached
        while len(self._documents) > self.KEEP_DOCUMENTS:
            del self._documents[next(iter(self._documents))]
        return (cached.shapes, cached.placed) if cached.shapes else None


SHAPES = Key("shapes", DocumentShapes)

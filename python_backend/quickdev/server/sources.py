"""``quickdev.resolveSource``: the file on this machine behind a profiler stack frame.

Frames in traces name files relative to the job's ``sys.path`` ("train.py", "torch/nn/
modules/linear.py"); each profiled run records those roots (``SOURCE_ROOTS_FILE``: the
script's folder, the job interpreter's site-packages). The run the frame came from is tried
first, then the workspace folders, then every other run's roots, newest first: a frame of a
second folder's script and a torch frame resolve wherever the run came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.rundir.jsonio import read_json_object
from quickdev.rundir.layout import SOURCE_ROOTS_FILE
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, problem, register
from quickdev.server.protocol import SourceAnswer
from quickdev.server.runs import runs_of


@dataclass(frozen=True)
class ResolveSource:
    filename: str = field(metadata=problem('"filename" must be a path, got {value!r}'))
    runId: str | None = field(default=None, metadata=problem('"runId" must be a run id'))


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.resolveSource", ResolveSource, resolve_source)


async def resolve_source(ls: QuickdevServer, wanted: ResolveSource) -> SourceAnswer:
    if not wanted.filename:
        raise CommandError('"filename" is empty: the frame names no file')
    relative = Path(wanted.filename)
    if relative.is_absolute():
        if relative.is_file():
            return {"path": str(relative)}
        relative = Path(relative.name)
    for root in _roots(ls, wanted.runId):
        candidate = root / relative
        if candidate.is_file():
            return {"path": str(candidate.resolve())}
    raise CommandError(
        f"{wanted.filename} is in none of the run's source roots or the workspace folders"
    )


def _roots(ls: QuickdevServer, run_id: str | None) -> Iterator[Path]:
    runs = runs_of(ls)
    own: Path | None = None
    if run_id is not None:
        try:
            own = runs.find(run_id).run_dir
        except CommandError:
            own = None  # a run deleted since the panel opened: the other places still help
    if own is not None:
        yield from recorded_roots(own)
    yield from ls.workspace_folders()
    others = [
        run_dir
        for runs_dir in runs.known_runs_dirs()
        if runs_dir.is_dir()
        for run_dir in runs_dir.iterdir()
        if run_dir != own and (run_dir / SOURCE_ROOTS_FILE).is_file()
    ]
    # Run ids begin with their start time: the newest run's roots are the likeliest.
    for run_dir in sorted(others, key=lambda d: d.name, reverse=True):
        yield from recorded_roots(run_dir)


def recorded_roots(run_dir: Path) -> list[Path]:
    """The roots a run recorded, as written; none when the file is missing or malformed."""
    data = read_json_object(run_dir / SOURCE_ROOTS_FILE)
    roots = data.get("roots") if data is not None else None
    if not isinstance(roots, list):
        return []
    return [Path(root) for root in roots if isinstance(root, str) and root]

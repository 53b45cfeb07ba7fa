"""The tensors the user's code binds, line by line, in the job's first passes: recorded for
the editor's inlay hints and hovers (``quickdev.rundir.shapes``, ``SHAPES_FILE``).

The user's files (the main script and the project's modules, never installed packages)
are compiled by the job's one rewriter (``quickdev.limits.job_rewriter``) with a look after
each statement that binds names (``transform``); the looks call into ``observe``, which
keeps, per line and name, the distinct values seen (dtype, shape, device, grad,
statistics; a structure's items) and stops looking at a line after its first passes.
Since it is compiled in rather than traced, it works under a debugger (whose trace
function it leaves alone), in warm-started jobs and under the profiler alike.

Not recorded: code compiled before the job started (the in-process API's callable), class
bodies, comprehension variables, attribute and item targets (``self.x = …``), values that
hold no tensor.
"""

from __future__ import annotations

import logging
from pathlib import Path

from quickdev.events import BaseObserver
from quickdev.limits.patching import Patcher
from quickdev.limits.shapes.observe import RecordedFiles
from quickdev.limits.shapes.transform import ShapeRecording
from quickdev.rundir.result import JobResult

__all__ = ["RecordedFiles", "ShapeRecording", "ShapesWriter", "install"]

log = logging.getLogger(__name__)


def install(patcher: Patcher) -> tuple[RecordedFiles, ShapeRecording]:
    """What is seen, and the transform that lets the job see it (for the rewriter)."""
    files = RecordedFiles()
    patcher.on_undo(files.disarm)
    return files, ShapeRecording(files)


class ShapesWriter(BaseObserver, feature="the tensor shape record"):
    """Writes the record into the run directory once the script is done, before the
    result's final write (the language server reads it when the run has ended)."""

    def __init__(self, seen: RecordedFiles, run_dir: Path) -> None:
        self.seen = seen
        self.run_dir = run_dir

    def on_job_end(self) -> None:
        self.seen.disarm()

    def on_result(self, result: JobResult) -> None:
        record = self.seen.record(result.id, result.started)
        record.write(self.run_dir)
        cost = self.seen.cost
        log.info(
            "tensor shapes: %d line(s) in %d file(s); %d look(s) in %.1f ms (CPU %.1f ms)",
            sum(len(f.bindings) for f in record.files),
            len(record.files),
            cost.looks,
            cost.seconds * 1000,
            cost.cpu_seconds * 1000,
        )

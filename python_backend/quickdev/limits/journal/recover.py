"""After a job was killed (SIGKILL, a power cut): finish its restore, and say so in one line.

The next ``quickdev`` command and the language server at start look for logs that
were never finished (``journal.log`` still there) whose job is no longer running
(its lock is free), and restore from them exactly as the job would have. Torch-free:
the language server runs this.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from quickdev.limits.journal import safety
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.edits import alive_until
from quickdev.limits.journal.manifest import Manifest
from quickdev.limits.journal.records import read_records, writer_alive
from quickdev.limits.journal.restore import Restored, restore
from quickdev.rundir.killed import settle_killed
from quickdev.rundir.layout import JOURNAL_DONE, JOURNAL_FILE, MANIFEST_FILE
from quickdev.rundir.result import read_result


def recover(runs_root: Path) -> list[str]:
    """Restore every killed job's changes under ``runs_root``; one line per job restored.
    Never raises for the file system (a full disk): what could not be done is in the line,
    and a log not finished is tried again by the next command."""
    lines = []
    try:
        logs = sorted(runs_root.glob(f"*/{JOURNAL_FILE}"))
    except OSError:
        return []
    for log in logs:
        if writer_alive(log):
            continue
        try:
            line = _recover_one(log)
        except OSError as exc:
            line = (
                f"quickdev: could not finish putting back the files of the killed run "
                f"{log.parent.name} ({exc.strerror or exc}); the next quickdev command "
                f"tries again"
            )
        if line is not None:
            lines.append(line)
    return lines


def finish_killed_runs(runs_roots: Iterable[Path]) -> list[str]:
    """Before a command: a job killed mid-run left its result at ``running`` and the user's
    files changed; settle the one and put back the others, in one line each. A failure (a
    full disk) is one line too: the command goes on, and the next one tries again. The
    files are put back whether or not the result could be settled."""
    lines = []
    for root in runs_roots:
        not_settled = None
        try:
            lines += settle_killed(root)
        except OSError as exc:  # a full disk: said by recover's line where it has one
            not_settled = (
                f"quickdev: could not record how a killed run under {root} ended "
                f"({exc.strerror or exc}); the next quickdev command tries again"
            )
        restored = recover(root)  # never raises for the file system
        lines += restored or ([not_settled] if not_settled else [])
    return lines


def _recover_one(log: Path) -> str | None:
    run_dir = log.parent
    claims = Claims(run_dir)
    with claims.locked():
        if not log.exists() or writer_alive(log):
            return None  # another command got there first
        records = read_records(log)
        done = restore(run_dir, records, claims)
        manifest_path = run_dir / MANIFEST_FILE
        since = manifest_path.stat().st_mtime if manifest_path.exists() else 0.0
        until = alive_until(log)
        safety.check(done, Manifest.read(manifest_path), records, run_dir, since, until)
        try:
            _note_in_result(run_dir, done)
        except OSError as exc:  # a full disk: the files are back all the same
            done.notes.append(f"its result.json could not be updated ({exc.strerror or exc})")
        if not done.problems:
            os.replace(log, run_dir / JOURNAL_DONE)
    return _line(run_dir, done)


def _line(run_dir: Path, done: Restored) -> str:
    line = (
        f"quickdev: put back {done.originals} file(s) that the killed run {run_dir.name} "
        f"had changed; its own {len(done.outputs)} file(s) are in {run_dir}"
    )
    if done.your_edits:
        line += f"; kept your own edits of {', '.join(e.path for e in done.your_edits)}"
    unseen = done.safety.not_restored if done.safety else []
    if unseen:
        line += f"; not put back (no copy was kept): {', '.join(u.path for u in unseen)}"
    if done.notes:
        more = f"; and {len(done.notes) - 2} more like it" if len(done.notes) > 2 else ""
        line += "; " + "; ".join(done.notes[:2]) + more
    if done.problems:
        line += f" ({len(done.problems)} could not be restored: {done.problems[0]})"
    return line


def _note_in_result(run_dir: Path, done: Restored) -> None:
    result = read_result(run_dir)
    if result is None:
        return
    if result.status == "running":
        result.status = "killed"
        result.stop_reason = "killed; a later quickdev command restored the files"
    result.outputs += done.outputs
    result.file_safety = done.safety
    result.write(run_dir)

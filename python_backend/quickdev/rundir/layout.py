"""Every name inside a runs root and a run directory, in one place.

``RUNS_ROOT/<run id>/`` holds what one job wrote. Readers (the language server, the
extension through the server, TensorBoard, tests) poll these files; writers replace
them atomically (``quickdev.rundir.jsonio``).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_RUNS_DIR = Path(".quickdev") / "runs"  # under the job's working directory
GITIGNORE = ".gitignore"  # "*" in the runs root's parent, so git never sees run history

RESULT_FILE = "result.json"  # the contract: quickdev.rundir.result.JobResult
PROGRESS_FILE = "progress.json"  # {"stage": str, "batches": int, "steps": int}, while running
DEBUGPY_FILE = "debugpy.json"  # {"host": str, "port": int, "pid": int}, once debugpy listens
# {"signal": "SIGUSR1"}: the job accepts a debugger on that signal (its identity is in
# PROCESS_FILE).
ATTACH_FILE = "attach.json"
# {"pid": int, "start": int (ticks since boot, /proc/PID/stat field 22), "command": [str],
# "pgid": int}: the process writing this run (a job, a rank, a torchrun parent), written
# first; tells a live run from a reused PID (rundir/process.py) and which process group to
# end when the run is cancelled, by any server.
PROCESS_FILE = "process.json"
# The tensors the user's code bound on each line in the job's first passes, for the editor's
# inlay hints and hovers: quickdev.rundir.shapes.ShapesRecord.
SHAPES_FILE = "shapes.json"
LOG_FILE = "job.log"  # the job's own log (not the script's output)
STDOUT_FILE = "output.log"  # the script's stdout and stderr, as the terminal saw them
LAUNCH_LOG = "launch.log"  # what the language server saw of the job process's start
# Stack frames in traces name files relative to the job's sys.path; to open one, the
# editor tries these roots in order: {"roots": [absolute directory, ...]}.
SOURCE_ROOTS_FILE = "source_roots.json"
PY_PROFILE_FILE = "py_profile.pstats"  # cProfile statistics (--py-profile)
TRACE_SUFFIX = ".pt.trace.json.gz"  # torch-tb-profiler's <worker>.<ns>.pt.trace.json[.gz]
TRACE_GLOB = "*.pt.trace.json*"
OUTPUTS_DIR = "outputs"  # files the script saved, redirected from where it asked
# A framework's own folder (Lightning's "lightning", Hugging Face's "hf") is named by its
# adapter: quickdev.frameworks.

# The file journal (quickdev.limits.journal): an append-only log of every change the job
# made outside its run directory, renamed to JOURNAL_DONE once the user's tree is restored.
JOURNAL_FILE = "journal.log"
JOURNAL_DONE = "journal.done.log"
BACKUPS_DIR = "journal-backups"  # the user's originals while the job runs
# Originals of files the person saved over while the job ran: their version stays.
ORIGINALS_DIR = "originals"
# The working folder's files at the job's start (size, mtime, inode), to name at the end
# the changes no journal saw.
MANIFEST_FILE = "manifest.json"
RUNS_LOCK = ".journal.lock"  # in the runs root: one job at a time restores or claims a path
LOGGERS_DIR = "loggers"  # W&B offline and MLflow file stores of plain scripts


# Processes the script started (multiprocessing, torch.multiprocessing) run as jobs of
# their own in RUN_DIR/children/<pid>/: a result.json each, and CHILD_FILE
# {"pid": int, "name": str} naming the process as the script did ("Process-1").
CHILDREN_DIR = "children"
CHILD_FILE = "child.json"


def rank_dir_name(rank: int) -> str:
    """A distributed job's rank ``R`` runs as a job of its own in ``RUN_DIR/rank<R>/``."""
    return f"rank{rank}"

"""Names of the files a job writes into its run directory, beside ``result.json``.

Readers (the language server, the extension, tests) poll these; writers replace
them atomically.
"""

PROGRESS_FILE = (
    "progress.json"  # {"stage": str, "batches": int, "steps": int}, updated while running
)
DEBUGPY_FILE = "debugpy.json"  # {"host": str, "port": int, "pid": int}, once debugpy listens
LOG_FILE = "job.log"  # the job's own log (not the script's output)
STDOUT_FILE = "output.log"  # the script's stdout and stderr, as the terminal saw them

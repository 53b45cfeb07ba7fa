"""Processes the script starts for its work are part of the job.

A ``multiprocessing`` process, however the script starts it (``Process``, a ``Pool``'s
workers, ``torch.multiprocessing.spawn``, a ``ProcessPoolExecutor``) and whatever the
start method (fork, spawn, forkserver), runs ``BaseProcess._bootstrap`` in the child.
The job wraps it (``ChildJob``, from ``following``): each such process runs under the
same limits as the job, the same objects even (a fork child inherits the job's patches,
recorder and budget; a spawn or forkserver child builds them at start-up from the job's
options, ``setup`` and ``spawned``), counts its own steps, losses and loaders from zero,
ends at the job's deadline, writes ``RUN_DIR/children/<pid>/result.json``, and its output
joins the run's ``output.log``. When the script ends, the job waits for the processes
Python would wait for, ends the rest (``lifetime``) and merges their results into its own
(``results``). DataLoader workers are not among them: the limits run loaders without
workers.

Nothing is imported here: every Python the job starts imports ``spawned`` from this
package, and one that is no worker must not pay for the job's side.
"""

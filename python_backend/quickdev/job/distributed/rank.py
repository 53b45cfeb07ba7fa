"""One rank of a distributed job: ``python -m quickdev.job.distributed.rank``, started by torchrun.

Every rank turns into an ordinary quick-dev job with its own run directory
``RUN_DIR/rank<R>/``; the options travel from the supervisor as JSON.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from quickdev.options import RunOptions, options_from_json
from quickdev.processes import EXIT_PASSED
from quickdev.rundir.layout import rank_dir_name
from quickdev.rundir.retention import KEEP_ALL
from quickdev.rundir.verdict import made_by_problems

OPTIONS_ENV = "QUICKDEV_RANK_OPTIONS"  # the job's options as JSON, for every rank
RUN_DIR_ENV = "QUICKDEV_PARENT_RUN_DIR"


def rank_options(options: RunOptions, rank: int, parent_run_dir: Path) -> RunOptions:
    """The options of one rank's own quick-dev job."""
    debugged = options.debug_rank == rank
    return dataclasses.replace(
        options,
        runs_dir=parent_run_dir,
        run_id=rank_dir_name(rank),
        name=None,
        nproc=1,
        debug_rank=None,
        # Its runs_dir is the job's own run directory: the siblings are the other ranks.
        retention=KEEP_ALL,
        print_json=False,
        listen=(options.listen or ("127.0.0.1", 0)) if debugged else None,
        # The debugged rank waits for the editor; its peers wait at their first collective.
        wait_for_client=debugged,
    )


def rank_main() -> int:
    rank = int(os.environ["RANK"])
    options = rank_options(
        options_from_json(os.environ[OPTIONS_ENV]), rank, Path(os.environ[RUN_DIR_ENV])
    )
    from quickdev.job.job import run_job, target_from_options

    # The job itself, without run_from_cli's summary: the parent prints one for all ranks.
    outcome = run_job(options, target_from_options(options), in_process=False)
    if outcome.usage_message:
        print(outcome.usage_message, file=sys.stderr)
    if made_by_problems(outcome.result):
        # The script ended well here: a failing exit would make torchrun stop the other
        # ranks, maybe in their restore. The parent's merge gives the job its verdict.
        return EXIT_PASSED
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(rank_main())

"""The command line: parsing, then each command's module, which does the work. Before any
command but ``serve``, the files a killed job left changed are put back
(``limits/journal/recover.py``); ``run`` restarts first with the file interposer.

    quickdev run [options] SCRIPT [-- ARGS...]
    quickdev run [options] -m MODULE [-- ARGS...]
    quickdev attach --run RUN_DIR | --pid PID
    quickdev serve
    quickdev tensorboard --logdir DIR
    quickdev runs prune [--runs-dir DIR] [--keep N] [--max-size-mb MB]

Exit status: 0 passed or stopped at a budget, 1 the user's code failed (or its loss became
NaN/Inf, or it trained nothing: rundir/verdict.py), 2 usage error, 3 Quickdev's own error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from quickdev import __version__
from quickdev.cli_types import (
    device_name,
    non_negative_int,
    parse_address,
    positive_int,
    seconds,
)
from quickdev.forecast.devices import add_memory_forecast_option, memory_forecast_alone
from quickdev.limits.journal.interposer import preload as preload_interposer
from quickdev.options import HUNT_HELP, ProfileOptions, RunOptions, WarmStart
from quickdev.processes import EXIT_USAGE
from quickdev.rundir import option_table
from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.retention import RETENTION, Retention


class UsageError(Exception):
    """Bad command-line input; the message is one line that names the fix."""


class _Parser(argparse.ArgumentParser):
    """argparse prints a usage block; we want one line that names the problem and the fix."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="quickdev",
        description="Quick-dev runs, profiling and debugging for PyTorch training scripts.",
    )
    parser.add_argument("--version", action="version", version=f"quickdev {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser(
        "run",
        help="run a training script for a few batches and write a structured result",
        usage=(
            "quickdev run [options] SCRIPT [ARGS...] | quickdev run [options] -m MODULE [ARGS...]"
        ),
    )
    run.add_argument("script", nargs="?", help="the training script, run as __main__")
    # As with python itself, what follows the script is the script's (`--` also works).
    run.add_argument("script_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    limits = run.add_argument_group("limits")
    for limit in option_table.LIMITS:
        # No argparse default: a limit not given takes the default Budget.for_options decides.
        limits.add_argument(
            limit.flag,
            dest=limit.name,
            type=limit.parse,
            metavar=limit.metavar,
            help=limit.command_help(),
        )
    limits.add_argument(
        "--full-batch",
        action="store_true",
        help="compute every step at the script's own batch size, whatever it costs",
    )
    limits.add_argument(
        "--device",
        type=device_name,
        default="auto",
        metavar="{auto,cpu,cuda,cuda:N}",
        help="where the script's tensors go: CUDA requests are mapped here (default auto)",
    )
    limits.add_argument(
        "--no-limits",
        action="store_true",
        help="run the script in full (no batch limit); results and attach still work",
    )
    out = run.add_argument_group("output")
    out.add_argument(
        "--runs-dir",
        type=Path,
        default=DEFAULT_RUNS_DIR,
        help="where run directories go (default %(default)s)",
    )
    out.add_argument("--name", help="a name for the run; part of its id")
    out.add_argument(
        "--keep-outputs",
        action="store_true",
        help="leave the files the script writes where it writes them (no file journal)",
    )
    out.add_argument(
        "--no-shapes", dest="record_shapes", action="store_false", help="no editor shape hints"
    )
    out.add_argument(
        "--runs-keep",
        type=non_negative_int,
        default=RETENTION.keep_runs,
        metavar="N",
        help="runs kept in --runs-dir; older finished ones are removed at start (0: all)",
    )
    out.add_argument(
        "--runs-max-size-mb",
        type=non_negative_int,
        default=RETENTION.max_size_mb,
        metavar="MB",
        help="the run history's size cap; the oldest finished runs beyond it go (0: none)",
    )
    out.add_argument(
        "--run-id",
        help="the exact run id (a caller that must know the run directory in advance sets it)",
    )
    out.add_argument(
        "--json", action="store_true", help="print the result JSON as the last line of stdout"
    )
    out.add_argument(
        "--sample-interval",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="CPU/GPU/memory sampling interval; 0 switches sampling off (default %(default)s)",
    )
    prof = run.add_argument_group("profiling")
    prof.add_argument("--profile", action="store_true", help="record a torch.profiler trace")
    prof.add_argument("--profile-wait", type=non_negative_int, default=ProfileOptions.wait)
    prof.add_argument("--profile-warmup", type=non_negative_int, default=ProfileOptions.warmup)
    prof.add_argument("--profile-active", type=positive_int, default=ProfileOptions.active)
    prof.add_argument("--profile-repeat", type=non_negative_int, default=ProfileOptions.repeat)
    prof.add_argument("--profile-memory", action="store_true", help="record tensor memory")
    prof.add_argument("--no-record-shapes", action="store_true")
    prof.add_argument("--no-with-stack", action="store_true")
    prof.add_argument(
        "--py-profile", action="store_true", help="also write cProfile stats to the run directory"
    )
    dbg = run.add_argument_group("debugging")
    dbg.add_argument(
        "--listen",
        type=parse_address,
        metavar="[HOST:]PORT",
        help="start debugpy on this address (127.0.0.1 unless a host is given)",
    )
    dbg.add_argument(
        "--wait-for-client", action="store_true", help="wait for the debugger before running"
    )
    dbg.add_argument(
        "--client-timeout",
        type=seconds,
        default=RunOptions.client_timeout_s,
        metavar="SECONDS",
        help="with --wait-for-client: stop if no debugger attached by then (default %(default)s)",
    )
    dbg.add_argument("--find-nonfinite", action="store_true", help=HUNT_HELP)
    dbg.add_argument(
        "--debug-rank",
        type=non_negative_int,
        metavar="R",
        help="with --nproc: run rank R under debugpy, waiting for the debugger",
    )
    add_memory_forecast_option(run)
    dist = run.add_argument_group("distributed")
    dist.add_argument(
        "--nproc",
        type=positive_int,
        default=1,
        metavar="N",
        help="run N local ranks under torch.distributed.run (torchrun)",
    )

    attach = commands.add_parser(
        "attach",
        help="let a debugger attach to a running job or Python process; prints its address",
        usage="quickdev attach --run RUN_DIR | quickdev attach --pid PID",
    )
    target = attach.add_mutually_exclusive_group(required=True)
    target.add_argument("--run", type=Path, metavar="RUN_DIR", help="a running quick-dev job")
    target.add_argument("--pid", type=positive_int, help="any running Python process (gdb)")
    attach.add_argument("--timeout", type=seconds, default=30.0, metavar="SECONDS")

    commands.add_parser("serve", help="the language server over stdio")

    runs = commands.add_parser("runs", help="manage the run history")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True, parser_class=_Parser)
    prune = runs_commands.add_parser("prune", help="delete old runs (never running ones)")
    prune.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR)
    prune.add_argument("--keep", type=non_negative_int, default=RETENTION.keep_runs, metavar="N")
    prune.add_argument(
        "--max-size-mb", type=non_negative_int, default=RETENTION.max_size_mb, metavar="MB"
    )

    tb = commands.add_parser("tensorboard", help="start or reuse TensorBoard for a logdir")
    tb.add_argument("--logdir", type=Path, required=True)
    tb.add_argument("--stop", action="store_true", help="stop the server for this logdir")
    return parser


def _split_script_args(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """What comes before the first ``--``, and what after it (None: no ``--``)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, None


def _script_args(ns: argparse.Namespace, after_separator: list[str] | None) -> list[str]:
    """The script's arguments. ``SCRIPT -- ARGS``: the ``--`` right after the script is
    quickdev's, and ARGS are the script's as they are, a ``--`` among them included
    (``SCRIPT -- -- --x`` gives ``['--', '--x']``, as ``python SCRIPT -- --x`` does).
    ``SCRIPT ARGS``, as with python: everything is the script's, so a ``--`` after the
    script's first argument is passed on too."""
    before = list(ns.script_args)
    if ns.script and ns.module:
        # python -m MODULE ARGS: the first positional is the module's first argument.
        before, ns.script = [ns.script, *before], None
    if after_separator is None:
        return before
    return [*before, "--", *after_separator] if before else after_separator


def run_options(ns: argparse.Namespace, after_separator: list[str] | None = None) -> RunOptions:
    script_args = _script_args(ns, after_separator)
    if not ns.script and not ns.module:
        raise UsageError("quickdev run: missing SCRIPT (or -m MODULE) to run")
    if ns.wait_for_client and not ns.listen:
        raise UsageError("quickdev run: --wait-for-client needs --listen [HOST:]PORT")
    if ns.debug_rank is not None and ns.debug_rank >= ns.nproc:
        raise UsageError(
            f"quickdev run: --debug-rank {ns.debug_rank} needs --nproc {ns.debug_rank + 1} or more"
        )
    if ns.nproc > 1 and ns.listen and ns.debug_rank is None:
        raise UsageError("quickdev run: with --nproc, name the rank to debug with --debug-rank R")
    profile = None
    if ns.profile:
        profile = ProfileOptions(
            wait=ns.profile_wait,
            warmup=ns.profile_warmup,
            active=ns.profile_active,
            repeat=ns.profile_repeat,
            record_shapes=not ns.no_record_shapes,
            with_stack=not ns.no_with_stack,
            profile_memory=ns.profile_memory,
            py_profile=ns.py_profile,
        )
    elif ns.py_profile:
        profile = ProfileOptions(py_profile=True, torch_trace=False)
    return RunOptions(
        script=ns.script,
        module=ns.module,
        args=script_args,
        limits={
            limit.name: value
            for limit in option_table.LIMITS
            if (value := getattr(ns, limit.name)) is not None
        },
        device=ns.device,
        runs_dir=ns.runs_dir,
        name=ns.name,
        run_id=ns.run_id,
        profile=profile,
        sample_interval_s=ns.sample_interval if ns.sample_interval > 0 else None,
        listen=ns.listen,
        wait_for_client=ns.wait_for_client,
        client_timeout_s=ns.client_timeout,
        print_json=ns.json,
        no_limits=ns.no_limits,
        keep_outputs=ns.keep_outputs,
        record_shapes=ns.record_shapes,
        retention=Retention(ns.runs_keep, ns.runs_max_size_mb),
        nproc=ns.nproc,
        debug_rank=ns.debug_rank,
        memory_forecast=ns.memory_forecast,
        find_nonfinite=ns.find_nonfinite,
        full_batch=ns.full_batch,
    )


def main(argv: Sequence[str] | None = None, warm: WarmStart | None = None) -> int:
    """``warm``: set in a job forked from a warm process (``quickdev.warm``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        own, script_args = _split_script_args(args)
        ns = build_parser().parse_args(memory_forecast_alone(own))
        if ns.command == "run" and not ns.keep_outputs and warm is None:
            preload_interposer()  # every process of the job interposed: it restarts with it
        if ns.command != "serve":
            # The server does it itself once the editor is connected, so that the person
            # reads it there (window/showMessage), not in a log nobody opens.
            from quickdev.limits.journal.recover import finish_killed_runs

            runs_dir = getattr(ns, "runs_dir", None) or DEFAULT_RUNS_DIR
            for line in finish_killed_runs({DEFAULT_RUNS_DIR.resolve(), runs_dir.resolve()}):
                print(line, file=sys.stderr)
        if ns.command == "run":
            options = run_options(ns, script_args)
            options.warm = warm
            if options.nproc > 1:
                from quickdev.job.distributed.supervisor import run_distributed

                return run_distributed(options)
            from quickdev.job.job import run_from_cli

            return run_from_cli(options)
        if ns.command == "attach":
            from quickdev.attach import main as attach_main

            return attach_main(run_dir=ns.run, pid=ns.pid, timeout_s=ns.timeout)
        if ns.command == "runs":
            from quickdev.rundir.retention import prune_runs

            removed = prune_runs(ns.runs_dir, Retention(ns.keep, ns.max_size_mb))
            print(f"quickdev: removed {len(removed)} run(s) from {ns.runs_dir}", file=sys.stderr)
            return 0
        if ns.command == "serve":
            from quickdev.server.main import serve

            serve()
            return 0
        if ns.command == "tensorboard":
            from quickdev.tensorboard.cli import main as tensorboard_main

            return tensorboard_main(ns.logdir, stop=ns.stop)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    return EXIT_USAGE

"""The job's side of the processes the script starts (``quickdev.job.children``): each
``multiprocessing`` process is wrapped into a ``ChildJob``, fork and spawn alike, and at the
script's end the job ends the ones left and merges their results."""

from __future__ import annotations

import multiprocessing
import multiprocessing.process
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from quickdev.job import output_tee
from quickdev.job.children import lifetime
from quickdev.job.children.child import ChildJob
from quickdev.job.children.results import merge_children
from quickdev.job.children.setup import PARENT_ENV, SETUP_ENV, Setup
from quickdev.limits.budget import Budget
from quickdev.limits.journal.children import site_environment
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.rundir.result import JobResult

# After the script, for processes the job ends: time for the ones that reached the
# deadline with the job to end by themselves, then after SIGTERM before SIGKILL.
SETTLE_S = 1.0
KILL_GRACE_S = 3.0


@dataclass
class _Following:
    setup: Setup
    recorder: Recorder
    budget: Budget


# What the fork hooks and the wrapped _bootstrap consult: fork hooks cannot be removed,
# so they do nothing once the job's patches are undone (the in-process API).
_following: _Following | None = None
_parent_before_fork = 0
_fork_hooks_registered = False


class FollowedChildren:
    """The job's side: the processes to end when the script is done, and their results."""

    def __init__(self, setup: Setup, budget: Budget) -> None:
        self.setup = setup
        self.budget = budget
        self.root = os.getpid()
        self.before = lifetime.descendants(self.root)  # not the job's (the in-process API)

    def end(self, *, script_passed: bool) -> None:
        """End every process the job started that still runs. After a script that ran to
        its end, first what Python itself does at exit: terminate daemonic processes, wait
        for the others (each bounded by the job's deadline)."""
        if script_passed:
            for process in multiprocessing.active_children():
                if process.pid in self.before:
                    continue  # the in-process API's host had it before the job
                if process.daemon:
                    process.terminate()
                else:
                    process.join(self._time_left())
        ours = self._started_by_job()
        if not ours:
            return
        if not script_passed:
            ours = lifetime.wait_gone(ours, SETTLE_S)
        lifetime.end(ours, KILL_GRACE_S)

    def merge(self, result: JobResult) -> bool:
        """Add the children's work to ``result``; True when a child's failure failed it."""
        return merge_children(result, self.setup.run_dir)

    def _time_left(self) -> float | None:
        if self.budget.deadline is None:
            return None
        return max(self.budget.deadline - time.monotonic(), 0.0)

    def _started_by_job(self) -> set[int]:
        return lifetime.descendants(self.root) - self.before - _helpers()


def follow(
    patcher: Patcher, setup: Setup, recorder: Recorder, budget: Budget, *, job_process: bool
) -> FollowedChildren:
    """Make the processes the script starts from now on part of the job. ``job_process``:
    this process is the job's own (not the in-process API's host, nor a child)."""
    global _following
    patcher.set_environ(
        {SETUP_ENV: setup.to_json(budget), PARENT_ENV: str(os.getpid()), **site_environment()}
    )
    _wrap_start(patcher)
    _wrap_bootstrap(patcher)
    _register_fork_hooks()
    _following = _Following(setup, recorder, budget)
    patcher.on_undo(_stop_following)
    if job_process:
        lifetime.adopt_orphans()
    return FollowedChildren(setup, budget)


def _stop_following() -> None:
    global _following
    _following = None


def _wrap_start(patcher: Patcher) -> None:
    """In the parent: a spawned child reads the job's budgets as they are now."""
    base = multiprocessing.process.BaseProcess
    original = base.start

    def start(process: Any) -> None:
        following = _following
        if following is not None:
            os.environ[SETUP_ENV] = following.setup.to_json(following.budget)
        original(process)

    patcher.set(base, "start", start)


def _wrap_bootstrap(patcher: Patcher) -> None:
    base = multiprocessing.process.BaseProcess
    original = base._bootstrap  # type: ignore[attr-defined]

    def _bootstrap(process: Any, *args: Any, **kwargs: Any) -> Any:
        following = _following
        if following is None:
            return original(process, *args, **kwargs)
        setup = following.setup
        child = ChildJob(
            setup.options,
            setup.run_dir,
            following.recorder,
            following.budget,
            process.name,
            setup.script,
        )
        child.begin()
        run = process.run
        process.run = lambda: child.run(run)
        try:
            return original(process, *args, **kwargs)
        finally:
            child.end()

    patcher.set(base, "_bootstrap", _bootstrap)


def _register_fork_hooks() -> None:
    global _fork_hooks_registered
    if _fork_hooks_registered or not hasattr(os, "register_at_fork"):
        return
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    _fork_hooks_registered = True


def _before_fork() -> None:
    global _parent_before_fork
    if _following is not None:
        _parent_before_fork = os.getpid()
        output_tee.flush_log()


def _after_fork_in_child() -> None:
    if _following is not None:
        lifetime.die_with_parent(_parent_before_fork)
        os.environ[PARENT_ENV] = str(os.getpid())


def _helpers() -> set[int]:
    """Processes that serve the job until it exits, then end by themselves: the
    multiprocessing resource tracker (it cleans up after the job, so it must outlive
    it), the forkserver, and debugpy's adapter. Their pids are known only to the
    modules that started them."""
    found = set()
    for module, holder, attribute in (
        ("multiprocessing.resource_tracker", "_resource_tracker", "_pid"),
        ("multiprocessing.forkserver", "_forkserver", "_forkserver_pid"),
        ("debugpy.server.api", "_adapter_process", "pid"),
    ):
        owner = getattr(sys.modules.get(module), holder, None)
        pid = getattr(owner, attribute, None)
        if isinstance(pid, int):
            found.add(pid)
    return found

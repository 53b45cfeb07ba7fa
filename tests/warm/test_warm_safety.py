"""What a warm start must never get wrong: stale packages, threads before the fork,
processes left behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import execute, final, server_pid, wait_for
from tests.warm.support import (
    SCRIPT,
    library,
    result,
    run,
    run_until_warm,
    training_script,
)

pytestmark = pytest.mark.asyncio


async def test_a_package_changed_between_runs_is_seen_by_the_next(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    changes, script, mark = training_script(client, workspace, SCRIPT)
    env = library(tmp_path / "site", "fakelib", "VALUE = 1\n")
    _, seen = await run_until_warm(client, changes, script, mark, env=env)
    assert seen["value"] == 1 and seen["preloaded"] == ["fakelib"]
    library(tmp_path / "site", "fakelib", "VALUE = 2  # upgraded\n")
    _, seen = await run(client, changes, script, mark, env=env)
    assert seen["value"] == 2
    _, seen = await run_until_warm(client, changes, script, mark, env=env)
    assert seen["value"] == 2 and seen["preloaded"] == ["fakelib"]


async def test_a_warm_job_runs_to_its_end_when_its_warm_process_is_dropped_meanwhile(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    # A package upgraded in a terminal while a warm job runs, then another run: the warm
    # process is dropped (stale), and it once took the running job with it (killed, exit -9:
    # in the editor, a debug session waiting for a debugger that never listened).
    changes, script, mark = training_script(client, workspace, SCRIPT)
    env = library(tmp_path / "site", "fakelib", "VALUE = 1\n")
    await run_until_warm(client, changes, script, mark, env=env)
    pid_file = workspace / "pid"
    script.write_text(
        SCRIPT.replace(
            '    print("hello',
            f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    print(\"hello",
        )
    )
    args = {"script": str(script), "args": ["--mark", str(mark), "--delay", "5"], "env": env}
    long = await execute(client, "quickdev.startJob", args)
    pid = int(await wait_for(lambda: pid_file.exists() and pid_file.read_text(), "the job's pid"))
    library(tmp_path / "site", "fakelib", "VALUE = 2  # upgraded\n")
    other, seen = await run(client, changes, script, workspace / "other.json", env=env)
    assert not seen["warm"] and seen["value"] == 2  # the stale warm process served no one
    ended = await wait_for(lambda: final(changes, long["runId"]), "the long run to end")
    assert (ended["status"], other["status"]) == ("passed", "passed"), ended
    (written,) = [o["written"] for o in result(ended)["outputs"] if Path(o["requested"]) == mark]
    warm_process = json.loads(Path(written).read_text())["ppid"]
    assert warm_process != server_pid(client), "the long run did not start warm"
    assert not alive(pid)
    await wait_for(lambda: not alive(warm_process), "the dropped warm process to end")


async def test_a_library_that_starts_a_thread_at_import_is_never_preloaded(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    changes, script, mark = training_script(client, workspace, SCRIPT)
    source = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    env = library(tmp_path / "site", "threadlib", source)
    first, _ = await run(client, changes, script, mark, env=env)
    # The warm process prepared after the first run imported threadlib: not safe to fork.
    second, seen = await run(client, changes, script, mark, env=env)
    assert not seen["warm"]
    ended, seen = await run_until_warm(client, changes, script, mark, env=env)
    assert seen["preloaded"] == []  # the job imported it itself
    assert [r["status"] for r in (first, second, ended)] == ["passed"] * 3


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


@pytest.mark.parametrize("how", ["cancel", "SIGKILL"])
async def test_a_warm_job_cancelled_or_killed_leaves_nothing_behind(
    client: LanguageClient, workspace: Path, how: str
) -> None:
    changes, script, mark = training_script(client, workspace, SCRIPT)
    await run_until_warm(client, changes, script, mark)
    pid_file = workspace / "pid"
    slow = SCRIPT.replace(
        '    print("hello',
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    print(\"hello",
    )
    script.write_text(slow)
    answer = await execute(
        client,
        "quickdev.startJob",
        {"script": str(script), "args": ["--mark", str(mark), "--delay", "5"]},
    )
    pid = int(await wait_for(lambda: pid_file.exists() and pid_file.read_text(), "the job's pid"))
    if how == "cancel":
        assert (await execute(client, "quickdev.cancelJob", {"runId": answer["runId"]}))[
            "cancelled"
        ]
    else:
        os.killpg(pid, signal.SIGKILL)
    ended = await wait_for(lambda: final(changes, answer["runId"]), "the run to end")
    assert ended["status"] == ("cancelled" if how == "cancel" else "killed")
    await wait_for(lambda: not alive(pid) and not group_members(pid), "the job's processes to go")
    await asyncio.sleep(0)

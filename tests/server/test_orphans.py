"""Jobs without their server, and servers with runs they did not start.

A killed server leaves no training behind: its jobs notice and end as ``killed``. A server
started later finds live runs on disk and can cancel them, children included.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient as PlainClient
from pytest_lsp import LanguageClient

from tests.support.server import TRAIN_SCRIPT, execute, uri, wait_for

pytestmark = pytest.mark.asyncio

# Starts a child that ignores SIGTERM (a data tool, a rank whose parent died), records
# both PIDs, then trains slowly.
FORKING_SCRIPT = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
import torch
for _ in range(600):
    time.sleep(0.1)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def read_pids(path: Path) -> tuple[int, int] | None:
    with contextlib.suppress(OSError, ValueError):
        job, child = path.read_text().split()
        return int(job), int(child)
    return None


def result_of(run_dir: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        result: dict[str, Any] = json.loads((run_dir / "result.json").read_text())
        return result
    return None


@contextlib.asynccontextmanager
async def plain_server(workspace: Path) -> AsyncIterator[tuple[PlainClient, int]]:
    """The real server, with a client that survives the server being killed."""
    client = PlainClient("orphans-test", "1")
    await client.start_io(sys.executable, "-m", "quickdev", "serve")
    process = client._server
    assert process is not None
    try:
        await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name="ws")],
            )
        )
        client.initialized(types.InitializedParams())
        yield client, process.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), 10)


async def test_a_killed_server_leaves_no_job_behind(workspace: Path, tmp_path: Path) -> None:
    script = workspace / "train me.py"
    script.write_text(TRAIN_SCRIPT)
    pid_file = tmp_path / "job.pid"
    async with plain_server(workspace) as (client, server_pid):
        answer = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="quickdev.startJob",
                arguments=[
                    {"script": str(script), "args": ["--delay", "60", "--pid-file", str(pid_file)]}
                ],
            )
        )
        run_dir = Path(answer["runDir"])
        job_pid = int(await wait_for(lambda: pid_file.is_file() and pid_file.read_text(), "pid"))
        os.kill(server_pid, signal.SIGKILL)
        killed_at = time.monotonic()
        await wait_for(lambda: not alive(job_pid), "the job to end after its server")
        assert time.monotonic() - killed_at < 15
        result = result_of(run_dir)
        assert result is not None
        assert (result["status"], result["stop_reason"]) == ("killed", "server gone")


async def test_a_debug_job_stops_waiting_for_a_client(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    started = time.monotonic()
    proc = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable, "-m", "quickdev", "run", "--runs-dir", str(tmp_path / "runs"),
            "--run-id", "waited", "--listen", "127.0.0.1:0", "--wait-for-client",
            "--client-timeout", "2", str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert time.monotonic() - started < 60, "the job kept waiting for a debugger"
    result = result_of(tmp_path / "runs" / "waited")
    assert result is not None, proc.stderr[-2000:]
    assert (result["status"], result["stop_reason"]) == ("stopped", "no debugger attached")
    assert result["optimizer_steps"] == 0  # the script never ran


async def test_cancel_kills_the_whole_group_after_its_leader_ended(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    """The job ends on SIGTERM; the child that ignores it is killed too."""
    script = workspace / "forks.py"
    script.write_text(FORKING_SCRIPT)
    pid_file = tmp_path / "pids"
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "args": [str(pid_file)]}
    )
    assert "error" not in answer, answer
    job_pid, child_pid = await wait_for(lambda: read_pids(pid_file), "the job's pids")
    assert await execute(client, "quickdev.cancelJob", {"runId": answer["runId"]}) == {
        "cancelled": True
    }
    await wait_for(lambda: not alive(job_pid) and not alive(child_pid), "job and child to end")


async def test_a_new_server_lists_and_cancels_a_run_it_did_not_start(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    """A run from a terminal (or another window) is live on disk: listed running, cancelled
    through its recorded process group, its child included."""
    script = workspace / "forks.py"
    script.write_text(FORKING_SCRIPT)
    pid_file = tmp_path / "pids"
    job = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "--run-id", "elsewhere", str(script),
         "--", str(pid_file)],
        cwd=workspace,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        job_pid, child_pid = await wait_for(lambda: read_pids(pid_file), "the job's pids")
        assert job_pid == job.pid
        listed = await execute(client, "quickdev.listRuns", {})
        (summary,) = [r for r in listed["runs"] if r["runId"] == "elsewhere"]
        assert summary["status"] == "running"
        assert await execute(client, "quickdev.cancelJob", {"runId": "elsewhere"}) == {
            "cancelled": True
        }
        await wait_for(lambda: job.poll() is not None and not alive(child_pid), "the run to end")
        listed = await execute(client, "quickdev.listRuns", {})
        (summary,) = [r for r in listed["runs"] if r["runId"] == "elsewhere"]
        assert summary["status"] == "killed"
        assert await execute(client, "quickdev.cancelJob", {"runId": "elsewhere"}) == {
            "cancelled": False
        }
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()


async def test_a_killed_server_leaves_no_training_process_behind(
    workspace: Path, tmp_path: Path
) -> None:
    """The processes a job's script started (a hogwild trainer's) end with the job."""
    from quickdev.job.children.lifetime import descendants

    script = workspace / "hogwild.py"
    script.write_text(
        (Path(__file__).parents[1] / "job" / "children_scripts" / "hogwild.py").read_text()
    )
    async with plain_server(workspace) as (client, server_pid):
        answer = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="quickdev.startJob",
                arguments=[{"script": str(script), "args": ["--epochs", "1000"]}],
            )
        )
        run_dir = Path(answer["runDir"])
        output = run_dir / "output.log"
        await wait_for(
            lambda: output.is_file() and "Train Epoch" in output.read_text(), "training children"
        )
        job_pid = json.loads((run_dir / "process.json").read_text())["pid"]
        tree = {job_pid, *descendants(job_pid)}
        assert len(tree) >= 3, tree  # the job and its two trainers at least
        os.kill(server_pid, signal.SIGKILL)
        await wait_for(lambda: not any(alive(pid) for pid in tree), "the job and its children")
        result = result_of(run_dir)
        assert result is not None
        assert (result["status"], result["stop_reason"]) == ("killed", "server gone")
        assert len(result["children"]) == 2, result["children"]


# Records its PID, then trains slowly: long enough to be killed mid-run.
PID_THEN_TRAINS = """\
import os, sys, time
import torch
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
for _ in range(600):
    time.sleep(0.1)
"""


async def test_a_job_killed_from_outside_gets_its_final_status_from_the_server(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    """SIGKILL (as the kernel's OOM killer sends) leaves result.json at running; the server
    that waited for the job writes what it saw: killed, by which signal, for how long."""
    script = workspace / "killed.py"
    script.write_text(PID_THEN_TRAINS)
    pid_file = tmp_path / "pid"
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "args": [str(pid_file)]}
    )
    assert "error" not in answer, answer
    job_pid = int(await wait_for(lambda: pid_file.is_file() and pid_file.read_text(), "pid"))
    os.kill(job_pid, signal.SIGKILL)
    run_dir = Path(answer["runDir"])
    result = await wait_for(
        lambda: (r := result_of(run_dir)) and r["status"] != "running" and r, "a final status"
    )
    assert result["status"] == "killed"
    # "out of memory?" instead only where the OOM killer ran in this cgroup meanwhile.
    assert (
        result["stop_reason"] == "killed by SIGKILL" or "out of memory?" in result["stop_reason"]
    ), result["stop_reason"]
    assert result["duration_s"] > 0

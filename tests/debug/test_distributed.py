"""quickdev run --nproc N: real torchrun, real gloo, the limits in every rank."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import line_of, quickdev_env
from tests.support.paths import REPO

DDP_TRAIN = REPO / "examples" / "ddp_train.py"


def quickdev_run(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quickdev", "run", *args],
        cwd=cwd,
        env=quickdev_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def plugin_get(base: str, path: str) -> object:
    # The loopback server must not go through any HTTP proxy set in the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(base.rstrip("/") + path, timeout=10) as response:
        return json.loads(response.read())


def test_two_ranks_each_limited_with_traces_the_profiler_plugin_lists(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = quickdev_run(
        "--nproc", "2", "--profile", "--json", "--runs-dir", str(runs), "--run-id", "ddp",
        str(DDP_TRAIN), "--", "--epochs", "2",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    merged = json.loads(proc.stdout.strip().splitlines()[-1])
    run_dir = runs / "ddp"
    assert merged == json.loads((run_dir / "result.json").read_text())
    assert merged["status"] == "passed"
    assert [(r["rank"], r["status"]) for r in merged["ranks"]] == [(0, "passed"), (1, "passed")]

    for rank in (0, 1):
        result = json.loads((run_dir / f"rank{rank}" / "result.json").read_text())
        assert result["status"] == "passed"
        # Two epochs of two batches: the limit holds in every rank, for every loader.
        assert result["optimizer_steps"] == 4
        assert len(result["loaders"]) == 3
        for loader in result["loaders"]:
            assert loader["batches"] == 2 * loader["passes"] and loader["passes"] >= 1

    # One trace per rank, side by side in the job's directory: one plugin run, two workers.
    traces = merged["profile"]["trace_files"]
    assert len(traces) == 2 and all((run_dir / name).is_file() for name in traces)
    assert not list(run_dir.glob("rank*/*.pt.trace.json*"))

    started = subprocess.run(
        [sys.executable, "-m", "quickdev", "tensorboard", "--logdir", str(runs)],
        capture_output=True, text=True, timeout=120, env=quickdev_env(), check=True,
    )  # fmt: skip
    url = json.loads(started.stdout.strip().splitlines()[-1])["url"]
    try:
        deadline = time.monotonic() + 60
        while "ddp" not in plugin_get(url, "/data/plugin/pytorch_profiler/runs")["runs"]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the profiler plugin never listed the run"
            time.sleep(0.2)
        views = plugin_get(url, "/data/plugin/pytorch_profiler/views?run=ddp")
        assert "Distributed" in views  # type: ignore[operator]
        workers = plugin_get(url, "/data/plugin/pytorch_profiler/workers?run=ddp&view=Overview")
        assert len(workers) == 2  # type: ignore[arg-type]
    finally:
        subprocess.run(
            [sys.executable, "-m", "quickdev", "tensorboard", "--logdir", str(runs), "--stop"],
            capture_output=True, timeout=60, env=quickdev_env(),
        )  # fmt: skip


FAILING = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DistributedDataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100_000):
        if rank == 1 and step == 1:
            raise ValueError("rank one broke its batch")  # FAILS
        optimizer.zero_grad()
        model(torch.randn(8, 4)).sum().backward()  # rank 0 waits here for rank 1
        optimizer.step()
    """
)


def test_a_failing_rank_ends_the_job_with_its_error(tmp_path: Path) -> None:
    script = tmp_path / "failing_rank.py"
    script.write_text(FAILING, encoding="utf-8")
    runs = tmp_path / "runs"
    proc = quickdev_run(
        "--nproc", "2", "--max-steps", "50000", "--json", "--runs-dir", str(runs),
        "--run-id", "broken", str(script),
        cwd=tmp_path,
    )  # fmt: skip
    ended = time.time()
    assert proc.returncode == 1, proc.stderr[-3000:]
    merged = json.loads(proc.stdout.strip().splitlines()[-1])
    assert merged["status"] == "failed"
    error = merged["error"]
    assert error["message"] == "rank 1: rank one broke its batch"
    assert (error["type"], error["line"]) == ("ValueError", line_of(script, "# FAILS"))
    assert Path(error["file"]) == script
    # Rank 0 was blocked in a collective; the job still ended soon after rank 1 failed.
    failed_at = (runs / "broken" / "rank1" / "result.json").stat().st_mtime
    assert ended - failed_at < 20


def test_debug_rank_runs_one_rank_under_debugpy(tmp_path: Path, processes: list) -> None:
    runs = tmp_path / "runs"
    output = tmp_path / "output.log"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--nproc", "2", "--debug-rank", "1",
            "--runs-dir", str(runs), "--run-id", "dbg", str(DDP_TRAIN), "--", "--epochs", "1",
        ],
        cwd=tmp_path, env=quickdev_env(), stdout=output.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    run_dir = runs / "dbg"
    # Published in the job's own directory, where the editor looks for it.
    address = wait_for_json_file(run_dir / "debugpy.json", timeout_s=180)
    assert address == json.loads((run_dir / "rank1" / "debugpy.json").read_text())
    assert json.loads((run_dir / "result.json").read_text())["status"] == "running"

    step = line_of(DDP_TRAIN, "loss = loss_fn(model(inputs), labels)")
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False)
        dap.set_breakpoints(DDP_TRAIN, [step])
        dap.configuration_done()
        stopped = dap.wait_for_stopped(timeout_s=180)
        frame = dap.stack_trace(stopped["threadId"])[0]
        assert frame["line"] == step
        assert dap.evaluate("dist.get_rank()", frame["id"]) == "1"
        dap.set_breakpoints(DDP_TRAIN, [])
        dap.continue_(stopped["threadId"])
        assert proc.wait(timeout=240) == 0, output.read_text(errors="replace")[-3000:]
    merged = json.loads((run_dir / "result.json").read_text())
    assert merged["status"] == "passed"


def test_debug_rank_outside_the_world_is_a_usage_error(tmp_path: Path) -> None:
    proc = quickdev_run("--nproc", "2", "--debug-rank", "2", "train.py", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert "--debug-rank 2 needs --nproc 3 or more" in proc.stderr


def test_missing_script_is_one_line_before_any_rank_starts(tmp_path: Path) -> None:
    proc = quickdev_run(
        "--nproc", "2", "--runs-dir", str(tmp_path / "runs"), "missing.py", cwd=tmp_path, timeout=60
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"quickdev run: no such script: missing.py (check the path; it is relative to {tmp_path})"
    ]
    [result] = (tmp_path / "runs").glob("*/result.json")
    assert json.loads(result.read_text())["error"]["type"] == "UsageError"


WAITING_RANKS = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    Path(sys.argv[1], f"ready{dist.get_rank()}").touch()
    while True:
        stop = torch.tensor([float(Path(sys.argv[1], "stop").exists())])
        dist.all_reduce(stop)
        if stop.item() > 0:
            break
        time.sleep(0.05)
    dist.destroy_process_group()
    """
)


def _process_tree(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(children.get(pid, []))
    return tree


def test_distributed_job_listens_on_loopback_only(tmp_path: Path, processes: list) -> None:
    """torchrun's stores and gloo would otherwise accept connections from the network."""
    script = tmp_path / "ranks.py"
    script.write_text(WAITING_RANKS, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "--nproc", "2", "--runs-dir",
         str(tmp_path / "runs"), str(script), "--", str(tmp_path)],
        cwd=tmp_path, env=quickdev_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    processes.append(proc)
    deadline = time.monotonic() + 180
    while not all((tmp_path / f"ready{rank}").exists() for rank in (0, 1)):
        assert proc.poll() is None and time.monotonic() < deadline, "the ranks did not start"
        time.sleep(0.1)
    job = _process_tree(proc.pid)
    table = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    ours = [
        row.split()[3] for row in table.splitlines() if any(f"pid={pid}," in row for pid in job)
    ]
    (tmp_path / "stop").touch()
    assert proc.wait(timeout=120) == 0
    assert ours, "the job's stores and gloo listen somewhere"
    assert all(address.startswith(("127.0.0.1:", "[::1]:")) for address in ours), ours

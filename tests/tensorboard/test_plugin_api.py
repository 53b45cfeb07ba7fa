"""The PyTorch Profiler plugin's HTTP API answers for a real quick-dev run."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from quickdev.tensorboard.manager import TensorBoardServer

from tests.support.tensorboard import PLUGIN, get, get_json, listed_runs, poll


def query(server: TensorBoardServer, route: str, **params: str) -> str:
    return server.url + PLUGIN + route + "?" + urlencode(params)


def ran_on_gpu(example_runs: Path, run: str) -> bool:
    """Whether the example's job ran on CUDA (it does wherever CUDA is present)."""
    result = json.loads((example_runs / run / "result.json").read_text())
    return str(result["device"]["actual"]).startswith("cuda")


def test_the_run_is_listed_with_its_views(
    example_server: TensorBoardServer, example_run_name: str
) -> None:
    poll("the run to be listed", lambda: example_run_name in listed_runs(example_server))
    views = get_json(query(example_server, "views", run=example_run_name))
    assert {"Overview", "Operator", "Trace", "Memory", "Module"} <= set(views)


def test_traces_are_parsed_without_forking_the_server(
    example_server: TensorBoardServer, example_run_name: str
) -> None:
    """A fork of TensorBoard's threaded process can inherit a held lock and hang: the
    plugin's cache and trace parsing stay in the server process."""
    import psutil

    poll("the run to be listed", lambda: example_run_name in listed_runs(example_server))
    server = psutil.Process(example_server.pid)
    # Only TensorBoard's own data server, a program of its own (fork and exec), may run.
    forks = []
    for child in server.children(recursive=True):
        try:
            command = child.cmdline()
        except psutil.ZombieProcess:
            command = ["(a fork that ended: a trace parser)"]
        if command == server.cmdline() or "data_server" not in " ".join(command):
            forks.append(command)
    assert forks == []


def test_every_view_answers_for_the_run(
    example_server: TensorBoardServer, example_run_name: str, example_runs: Path
) -> None:
    run = example_run_name
    poll("the run to be listed", lambda: run in listed_runs(example_server))
    (worker,) = get_json(query(example_server, "workers", run=run, view="Overview"))
    spans = get_json(query(example_server, "spans", run=run, worker=worker))
    assert spans, "one trace file is one span"
    q = {"run": run, "worker": worker, "span": spans[0]}

    overview = get_json(query(example_server, "overview", **q))
    assert overview["steps"]["rows"], "the step-time breakdown has the recorded step"
    env = {e["title"]: e["value"] for e in overview["environments"]}
    assert env["Device Type"] == ("GPU" if ran_on_gpu(example_runs, run) else "CPU")

    ops = get_json(query(example_server, "operation/table", group_by="Operation", **q))
    names = {row["name"] for row in ops["data"]}
    assert "aten::addmm" in names  # the example's Linear layers

    pie = get_json(query(example_server, "operation", group_by="Operation", **q))
    assert pie["host_self_time"]["rows"]

    status, body = get(query(example_server, "trace", **q))
    assert status == 200
    trace = json.loads(body if body.lstrip().startswith(b"{") else gzip.decompress(body))
    assert any(e.get("name") == "aten::addmm" for e in trace["traceEvents"])

    memory = get_json(query(example_server, "memory", **q))
    assert memory["rows"], "--profile-memory recorded allocations"
    curve = get_json(query(example_server, "memory_curve", **q))
    assert curve["rows"]

    module = get_json(query(example_server, "module", **q))
    assert module["data"], "the example's nn.Modules"


def test_operators_have_call_stacks_into_the_script(
    example_server: TensorBoardServer, example_run_name: str
) -> None:
    """Stacks that name the user's file and line: what jump-to-source needs."""
    run = example_run_name
    poll("the run to be listed", lambda: run in listed_runs(example_server))
    (worker,) = get_json(query(example_server, "workers", run=run, view="Operator"))
    (span, *_) = get_json(query(example_server, "spans", run=run, worker=worker))
    q = {"run": run, "worker": worker, "span": span, "group_by": "Operation"}
    table = get_json(query(example_server, "operation/table", **q))
    addmm = next(row for row in table["data"] if row["name"] == "aten::addmm")
    assert addmm["has_call_stack"] is True
    stacks = get_json(query(example_server, "operation/stack", op_name="aten::addmm", **q))
    frames = [f for row in stacks["data"] for f in row["call_stack"].split(";")]
    assert any(f.startswith("torch/nn/modules/linear.py(") for f in frames)
    assert any("train_loop.py(" in f and "): forward" in f for f in frames)


def test_a_gpu_run_has_the_gpu_kernel_view_with_its_kernels(
    example_server: TensorBoardServer, example_run_name: str, example_runs: Path
) -> None:
    """On a GPU the trace holds the kernels: the plugin lists its Kernel view (shown as
    "GPU Kernel") and the view's table has a row per kernel the step launched."""
    run = example_run_name
    if not ran_on_gpu(example_runs, run):
        pytest.skip("the example ran on the CPU (no CUDA device): no kernels to show")
    poll("the run to be listed", lambda: run in listed_runs(example_server))
    assert "Kernel" in get_json(query(example_server, "views", run=run))
    (worker,) = get_json(query(example_server, "workers", run=run, view="Kernel"))
    (span, *_) = get_json(query(example_server, "spans", run=run, worker=worker))
    q = {"run": run, "worker": worker, "span": span}
    table = get_json(query(example_server, "kernel/table", group_by="Kernel", **q))
    assert table["data"]["rows"], "the GPU Kernel view lists no kernels"
    by_op = get_json(query(example_server, "kernel/table", group_by="OpName", **q))
    # Each kernel row names the operator that launched it (Name, Operator, ...).
    assert any(row[1] == "aten::addmm" for row in by_op["data"]["rows"]), by_op["data"]["rows"]

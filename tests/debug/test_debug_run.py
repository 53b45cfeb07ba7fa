"""A debug job end to end: quickdev run --listen … --wait-for-client, the real debugpy, DAP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import line_of, quickdev_env
from tests.support.paths import REPO

TRAIN_LOOP = REPO / "examples" / "train_loop.py"
TRAINING_STEP = "loss = loss_fn(model(inputs), targets)"


def test_breakpoint_step_into_torch_and_read_a_tensor_shape(
    tmp_path: Path, processes: list
) -> None:
    runs = tmp_path / "runs"
    output = tmp_path / "output.log"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run",
            "--listen", "127.0.0.1:0", "--wait-for-client",
            "--runs-dir", str(runs), "--run-id", "debugged",
            str(TRAIN_LOOP), "--", "--batch-size", "16", "--epochs", "1",
        ],
        cwd=tmp_path,
        env=quickdev_env(),
        # A file, not a pipe: debugpy's adapter inherits the job's output and lives as
        # long as a client is connected, so a pipe would not reach EOF when the job ends.
        stdout=output.open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    run_dir = runs / "debugged"
    address = wait_for_json_file(run_dir / "debugpy.json", timeout_s=120)
    assert address["host"] == "127.0.0.1" and address["port"] > 0
    assert address["pid"] == proc.pid

    step_line = line_of(TRAIN_LOOP, TRAINING_STEP)
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False)
        [breakpoint_] = dap.set_breakpoints(TRAIN_LOOP, [step_line])
        assert breakpoint_["verified"]
        dap.configuration_done()

        stopped = dap.wait_for_stopped(timeout_s=120)
        assert stopped["reason"] == "breakpoint"
        thread = stopped["threadId"]
        [user_frame, *_] = dap.stack_trace(thread)
        assert Path(user_frame["source"]["path"]) == TRAIN_LOOP.resolve()
        assert (user_frame["name"], user_frame["line"]) == ("train_one_epoch", step_line)

        # The batch is a real tensor, limited by nothing but the script's own batch size.
        inputs = dap.locals(user_frame["id"])["inputs"]
        shape = next(v for v in dap.variables(inputs["variablesReference"]) if v["name"] == "shape")
        assert shape["value"] == "torch.Size([16, 32])"

        # justMyCode is off: stepping in lands inside torch.nn.Module, in site-packages.
        dap.step_in(thread)
        inner = dap.stack_trace(thread)[0]
        inner_path = Path(inner["source"]["path"]).as_posix()
        assert "site-packages/torch/nn/modules/" in inner_path, inner

        dap.set_breakpoints(TRAIN_LOOP, [])
        dap.continue_(thread)
        proc.wait(timeout=300)
    assert proc.returncode == 0, output.read_text(errors="replace")[-3000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "passed"
    assert result["optimizer_steps"] == 2  # the quick-dev limits still hold under the debugger


def test_listen_on_a_taken_port_fails_with_a_clear_message(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable, "-m", "quickdev", "run", "--listen", f"127.0.0.1:{port}",
                "--runs-dir", str(tmp_path / "runs"), str(TRAIN_LOOP),
            ],
            cwd=tmp_path, env=quickdev_env(), capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert proc.returncode != 0
    assert f"127.0.0.1:{port}" in proc.stderr


LIGHTNING_METRIC = """
import lightning.pytorch  # a Lightning script: the debug job imports Lightning early
from torchmetrics.functional.text.wer import tensor  # torchmetrics' own `from torch import tensor`

print("metric tensor on", tensor(1.0, device="cuda").device)
"""


def test_a_debug_job_limits_libraries_it_imported_before_the_limits(tmp_path: Path) -> None:
    """A debug job imports Lightning before the limits (debugpy's tracing makes imports
    slow); names Lightning's libraries bound then still get the CUDA-to-CPU remap, as in a
    plain run."""
    script = tmp_path / "metric.py"
    script.write_text(LIGHTNING_METRIC)
    job = subprocess.run(
        [
            sys.executable, "-m", "quickdev", "run", "--listen", "127.0.0.1:0",
            "--device", "cpu", "--runs-dir", str(tmp_path / "runs"), str(script),
        ],
        cwd=tmp_path, env=quickdev_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert job.returncode == 0, job.stderr
    assert "metric tensor on cpu" in job.stdout

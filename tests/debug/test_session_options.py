"""What the editor's quickdev sessions ask of the job's debugpy (extension/debug/configuration.ts
SESSION_OPTIONS): the script's output as DAP output events, Quickdev's frames out of the call
stack; and tensors in Variables summarized by dtype, shape and device.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from quickdev.rundir.shapes import TensorFacts, read_shapes, tensor_text

from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import SESSION_OPTIONS, line_of, quickdev_env

SCRIPT = textwrap.dedent(
    """
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Images(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            image = torch.ones(3, 4, 4)
            return image, i  # IN_DATASET


    print("hello from the training script", flush=True)
    bad = torch.tensor([1.0, float("nan")])
    for images, labels in DataLoader(Images(), batch_size=8):
        total = images.sum()  # IN_LOOP
    """
)


def test_output_reaches_the_debug_console_and_quickdev_frames_are_hidden(
    tmp_path: Path, processes: list
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--listen", "127.0.0.1:0",
            "--wait-for-client", "--runs-dir", str(runs), "--run-id", "r", str(script),
        ],
        cwd=tmp_path,
        env=quickdev_env(),
        stdout=(tmp_path / "job.out").open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    address = wait_for_json_file(runs / "r" / "debugpy.json", timeout_s=120)
    in_dataset = line_of(script, "IN_DATASET")
    in_loop = line_of(script, "IN_LOOP")
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False, **SESSION_OPTIONS)
        dap.set_breakpoints(script, [in_dataset, in_loop])
        dap.configuration_done()

        # In the dataset, the DataLoader called from the user's loop: torch's frames stay,
        # Quickdev's loader limit around it does not.
        stopped = dap.wait_for_stopped(timeout_s=120)
        frames = dap.stack_trace(stopped["threadId"])
        assert (frames[0]["name"], frames[0]["line"]) == ("__getitem__", in_dataset)
        paths = [Path(f["source"]["path"]).as_posix() for f in frames if f.get("source")]
        assert any("/torch/utils/data/" in p for p in paths), paths
        assert not [p for p in paths if "/quickdev/" in p], paths
        output = dap.wait_event(
            "output", lambda e: "hello from the training script" in e["body"].get("output", "")
        )
        assert output["category"] == "stdout"

        dap.set_breakpoints(script, [in_loop])
        dap.continue_(stopped["threadId"])
        stopped = dap.wait_for_stopped(timeout_s=120)
        frame = dap.stack_trace(stopped["threadId"])[0]
        assert frame["line"] == in_loop
        variables = dap.locals(frame["id"])
        assert variables["images"]["value"].startswith("f32[8, 3, 4, 4] cpu"), variables
        assert variables["bad"]["value"].startswith("f32[2] cpu NaN"), variables["bad"]
        # The tensor still unfolds into its attributes.
        children = dap.variables(variables["images"]["variablesReference"])
        assert any(child["name"] == "shape" for child in children)

        dap.set_breakpoints(script, [])
        dap.continue_(stopped["threadId"])
        proc.wait(timeout=300)
    assert proc.returncode == 0, (tmp_path / "job.out").read_text(errors="replace")[-3000:]

    # The debugged run recorded the editor's shape hints too, and a tensor reads the same in
    # the hover as in Variables.
    record = read_shapes(runs / "r")
    assert record is not None
    (file,) = record.files
    loop = line_of(script, "for images, labels in DataLoader")
    names = {n.name: n for b in file.bindings if b.line == loop for n in b.names}
    (images,) = names["images"].seen
    assert isinstance(images.value, TensorFacts)
    assert tensor_text(images.value) == variables["images"]["value"]


FAILING = textwrap.dedent(
    """
    import torch
    from torch import nn

    model = nn.Linear(16, 4)
    batch = torch.ones(8, 15)
    logits = model(batch)  # FAILS
    """
)


def test_a_failure_stops_at_the_users_line_and_the_sampler_thread_is_hidden(
    tmp_path: Path, processes: list
) -> None:
    script = tmp_path / "train.py"
    script.write_text(FAILING)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--listen", "127.0.0.1:0",
            "--wait-for-client", "--runs-dir", str(runs), "--run-id", "r",
            "--sample-interval", "0.05", str(script),
        ],
        cwd=tmp_path,
        env=quickdev_env(),
        stdout=(tmp_path / "job.out").open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    address = wait_for_json_file(runs / "r" / "debugpy.json", timeout_s=120)
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False, **SESSION_OPTIONS)
        # VS Code's default for Python: break on uncaught exceptions only.
        dap.request("setExceptionBreakpoints", {"filters": ["uncaught"]})
        dap.configuration_done()

        stopped = dap.wait_for_stopped(timeout_s=120)
        assert stopped["reason"] == "exception", stopped
        frames = dap.stack_trace(stopped["threadId"])
        # The user's line that called torch, not torch's linear() nor the job's exit.
        assert Path(frames[0]["source"]["path"]).name == "train.py", frames[0]
        assert frames[0]["line"] == line_of(script, "FAILS")
        info = dap.request("exceptionInfo", {"threadId": stopped["threadId"]})
        assert "mat1 and mat2 shapes cannot be multiplied" in info["description"], info
        names = [thread["name"] for thread in dap.threads()]
        assert "MainThread" in names
        assert not [name for name in names if "quickdev" in name], names

        dap.continue_(stopped["threadId"])
        # No second stop at the job's own exit ("SystemExit 1" in quickdev's __main__).
        proc.wait(timeout=120)
        # (wait_for_stopped took the first stop off the list)
        assert [e for e in dap.events if e.get("event") == "stopped"] == []
    assert proc.returncode == 1, (tmp_path / "job.out").read_text(errors="replace")[-3000:]

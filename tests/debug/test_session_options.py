"""What the editor's quickdev sessions ask of the job's debugpy (extension/debug/configuration.ts
SESSION_OPTIONS): the script's output as DAP output events, Quickdev's frames out of the call
stack; and tensors in Variables summarized by dtype, shape and device.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import line_of, quickdev_env

# As the extension sends them (extension/debug/configuration.ts).
SESSION_OPTIONS: dict[str, Any] = {
    "redirectOutput": True,
    "rules": [
        {"module": "quickdev", "include": False},
        {"path": "**/quickdev/__main__.py", "include": False},
    ],
}

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
        assert variables["images"]["value"].startswith("float32[8, 3, 4, 4] cpu"), variables
        assert variables["bad"]["value"].startswith("float32[2] cpu NaN"), variables["bad"]
        # The tensor still unfolds into its attributes.
        children = dap.variables(variables["images"]["variablesReference"])
        assert any(child["name"] == "shape" for child in children)

        dap.set_breakpoints(script, [])
        dap.continue_(stopped["threadId"])
        proc.wait(timeout=300)
    assert proc.returncode == 0, (tmp_path / "job.out").read_text(errors="replace")[-3000:]

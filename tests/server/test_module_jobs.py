"""Training code that runs only as ``python -m`` (a package importing itself, as open_clip's
``python -m open_clip_train.main`` or torchtitan's ``-m torchtitan.train`` do): the lens says
so, the workspace scan says so, and startJob runs the module through the real server."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient
from quickdev.server.run_summary import summaries_on_disk

from tests.support.server import (
    collect_run_changes,
    execute,
    final,
    lenses,
    open_document,
    wait_for,
)

pytestmark = pytest.mark.asyncio

MODEL = "import torch\n\n\nclass Net(torch.nn.Linear):\n    def __init__(self):\n"
MODEL += "        super().__init__(4, 1)\n"
DATA = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def pairs():
    return DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
"""
TRAIN = """\
import argparse

import torch

from proj.model import Net
from .data import pairs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in pairs():
            loss = torch.nn.functional.mse_loss(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print("trained as", __name__, "in package", __package__)


if __name__ == "__main__":
    main()
"""


@pytest.fixture
def train(workspace: Path) -> Path:
    package = workspace / "src" / "proj"
    (package / "training").mkdir(parents=True)
    for init in (package / "__init__.py", package / "training" / "__init__.py"):
        init.write_text("")
    (package / "model.py").write_text(MODEL)
    (package / "training" / "data.py").write_text(DATA)
    path = package / "training" / "train.py"
    path.write_text(TRAIN)
    return path


async def test_a_module_lens_runs_the_module_as_python_m_would(
    client: LanguageClient, workspace: Path, train: Path
) -> None:
    found = await lenses(client, open_document(client, train))
    run_lens = next(lens for lens in found if lens.command and lens.command.title == "Debug")
    assert run_lens.command is not None
    argument = dict((run_lens.command.arguments or [{}])[0])
    assert argument == {
        "script": str(train),
        "module": "proj.training.train",
        "cwd": str(workspace / "src"),
    }

    # What the extension sends for it: the module and its folder, not the file.
    changes = collect_run_changes(client)
    start = {"module": argument["module"], "cwd": argument["cwd"], "mode": "run"}
    answer = await execute(client, "quickdev.startJob", start)
    assert "error" not in answer, answer
    ended = await wait_for(lambda: final(changes, answer["runId"]), "the module run to end")
    assert ended["status"] in ("passed", "stopped"), ended
    assert ended["module"] == "proj.training.train"
    assert ended["script"] == str(train)
    output = Path(ended["outputFile"]).read_text()
    assert "trained as __main__ in package proj.training" in output
    # The run's files live under the workspace folder, as a script's would.
    assert Path(ended["runDir"]).is_relative_to(workspace / ".quickdev" / "runs")

    # Read back from disk (as a restarted server lists it), it is still a module run.
    (on_disk,) = summaries_on_disk(Path(ended["runDir"]).parent)
    assert on_disk["module"] == "proj.training.train"


async def test_the_workspace_scan_names_the_module_and_where_to_run_it(
    client: LanguageClient, workspace: Path, train: Path
) -> None:
    answer = await execute(client, "quickdev.scanWorkspace", {})
    (folder,) = answer["folders"]
    scanned = {s["path"]: s for s in folder["entryScripts"]}
    assert scanned[str(train)]["module"] == "proj.training.train"
    assert scanned[str(train)]["cwd"] == str(workspace / "src")
    # A plain script is still a script.
    assert "module" not in scanned[str(workspace / "loop.py")]


async def test_a_module_start_the_job_cannot_run_answers_one_line(
    client: LanguageClient, workspace: Path, train: Path
) -> None:
    both = await execute(
        client, "quickdev.startJob", {"module": "proj.training.train", "script": str(train)}
    )
    assert "not both" in both["error"]
    neither = await execute(client, "quickdev.startJob", {"mode": "run"})
    assert neither["error"].startswith('give "script"')
    # Run from the wrong folder, as `python -m` would fail: the answer names the fix.
    missing = await execute(
        client, "quickdev.startJob", {"module": "proj.training.train", "cwd": str(workspace)}
    )
    assert "proj/training/train.py" in missing["error"]
    assert 'set "cwd"' in missing["error"]

"""The limits replace module attributes (``torch.load``, ``torch.device``, DataLoader's
methods, the native writers the journal wraps) in a job whose libraries a warm process
imported before the limits existed: a warm job and a cold job must see the same limits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.stand_in import CUDA
from tests.warm.support import library, printed, result, run, run_until_warm, training_script

# Where the limits put the script's tensors: this machine's GPU, or the CPU standing in for it.
JOB_DEVICE = "cuda:0" if CUDA else "cpu"

pytestmark = pytest.mark.asyncio

# Names bound at the script's top, as public training code does; a CUDA-style script on a
# CPU machine; checkpoints saved into the user's folder (torch's and safetensors' native
# writers) and loaded back to "cuda".
PLAIN = """\
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from torch import load
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mark", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    model = torch.nn.Linear(4, 1).to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches, devices = 0, set()
    for epoch in range(3):
        for x, y in DataLoader(data, batch_size=8):
            x, y = x.to("cuda"), y.to("cuda")
            devices.add(str(x.device))
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batches += 1
    torch.save(model.state_dict(), "checkpoint.pt")
    save_file(model.state_dict(), "weights.safetensors")
    state = load("checkpoint.pt", map_location="cuda:0")
    with open(args.mark, "w") as f:
        json.dump({
            "ppid": os.getppid(), "batches": batches, "devices": sorted(devices),
            "loaded": sorted({str(t.device) for t in state.values()}),
            "device_0": str(torch.device(0)),
        }, f)


if __name__ == "__main__":
    main()
"""

LIGHTNING = """\
import argparse
import json
import os

import lightning as L
import torch
from torch import load, nn
from torch.utils.data import DataLoader, TensorDataset

SEEN = {"batches": 0, "devices": set()}


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        SEEN["batches"] += 1
        SEEN["devices"].add(str(torch.zeros(1).to("cuda").device))
        return nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mark", required=True)
    args = parser.parse_args()
    L.seed_everything(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    model = Regressor()
    trainer = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False)
    trainer.fit(model, DataLoader(data, batch_size=8))
    torch.save(model.state_dict(), "checkpoint.pt")
    state = load("checkpoint.pt", map_location="cuda")
    with open(args.mark, "w") as f:
        json.dump({
            "ppid": os.getppid(), "batches": SEEN["batches"], "devices": sorted(SEEN["devices"]),
            "loaded": sorted({str(t.device) for t in state.values()}),
            "device_0": str(torch.device(0)),
        }, f)


if __name__ == "__main__":
    main()
"""


# Hugging Face's Trainer, its output directory, a model saved through safetensors' native
# writer; a tiny GPT-2 built from its config (no download).
HF_TRAINER = """\
import argparse
import json
import os

import torch
from torch import load
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.arange(16) % 64
        return {"input_ids": ids, "labels": ids}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mark", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    training = TrainingArguments(
        output_dir="out", num_train_epochs=3, per_device_train_batch_size=4, report_to=[],
        save_strategy="no",
    )
    trainer = Trainer(model=model, args=training, train_dataset=Tokens())
    trainer.train()
    trainer.save_model("final")
    torch.save(model.state_dict(), "checkpoint.pt")
    state = load("checkpoint.pt", map_location="cuda")
    with open(args.mark, "w") as f:
        json.dump({
            "ppid": os.getppid(), "batches": trainer.state.global_step,
            "devices": [str(torch.zeros(1).to("cuda").device)],
            "loaded": sorted({str(t.device) for t in state.values()}),
            "device_0": str(torch.device(0)),
        }, f)


if __name__ == "__main__":
    main()
"""


WRITTEN = ("checkpoint.pt", "weights.safetensors", "mark.json", "final", "out")


def limits_seen(summary: dict[str, Any], seen: dict[str, Any], workspace: Path) -> dict[str, Any]:
    """What the limits did to one run, as a user reads it from the result and the script."""
    job = result(summary)
    return {
        "status": job["status"],
        "stop_reason": job["stop_reason"],
        "loaders": [lo["batches"] for lo in job["loaders"]],
        "optimizer_steps": job["optimizer_steps"],
        # The loops the budgets ended: the user's code is rewritten in a forked job too.
        "loops_ended": [
            (Path(e["file"]).name, e["line"], e["role"], e["budget"]) for e in job["loops_ended"]
        ],
        "device": job["device"],
        "outputs": sorted(
            (Path(o["requested"]).relative_to(workspace).as_posix(), o["change"])
            for o in job["outputs"]
            if Path(o["requested"]).is_relative_to(workspace)
        ),
        "script": {k: v for k, v in seen.items() if k not in ("warm", "ppid")},
        "left_in_user_folder": sorted(name for name in WRITTEN if (workspace / name).exists()),
    }


@pytest.mark.parametrize(
    "source", [PLAIN, LIGHTNING, HF_TRAINER], ids=["plain", "lightning", "hf-trainer"]
)
async def test_limits_hold_the_same_in_a_warm_job_as_in_a_cold_one(
    client: LanguageClient, workspace: Path, source: str
) -> None:
    changes, script, mark = training_script(client, workspace, source)
    warm, warm_seen = await run_until_warm(client, changes, script, mark)
    warm_limits = limits_seen(warm, warm_seen, workspace)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"quickdev": {"warmStart": False}})
    )
    cold, cold_seen = await run(client, changes, script, mark)
    assert not cold_seen["warm"]
    cold_limits = limits_seen(cold, cold_seen, workspace)
    assert warm_limits == cold_limits
    # And the limits did their work (a comparison of two runs without them would pass too).
    assert cold_limits["status"] == "passed"
    assert cold_limits["script"]["devices"] == [JOB_DEVICE]
    assert cold_limits["script"]["loaded"] == [JOB_DEVICE]
    assert cold_limits["script"]["device_0"] == "cuda:0"
    assert 0 < cold_limits["script"]["batches"] <= 2 * len(cold_limits["loaders"])
    assert all(batches <= 2 for batches in cold_limits["loaders"])
    assert ("checkpoint.pt", "created") in cold_limits["outputs"]
    assert cold_limits["left_in_user_folder"] == []
    if "save_file" in source:
        assert ("weights.safetensors", "created") in cold_limits["outputs"]
    if source is PLAIN:  # its epoch loop ends after one pass; the saves after it run
        epoch_line = source.splitlines().index("    for epoch in range(3):") + 1
        assert cold_limits["loops_ended"] == [("train.py", epoch_line, "epoch", "train_passes")]


# An installed library that binds torch's names when it is imported: a warm process
# imports it before the limits exist, a cold job after.
CKPTLIB = """\
from torch import device, load


def restore(path):
    return load(path, map_location="cuda")


def first_gpu():
    return str(device(0))
"""

USES_CKPTLIB = """\
import argparse
import json
import os

import ckptlib
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mark", required=True)
    args = parser.parse_args()
    torch.save(torch.nn.Linear(4, 1).state_dict(), "checkpoint.pt")
    state = ckptlib.restore("checkpoint.pt")
    with open(args.mark, "w") as f:
        json.dump({
            "ppid": os.getppid(), "loaded": sorted({str(t.device) for t in state.values()}),
            "device_0": ckptlib.first_gpu(),
        }, f)


if __name__ == "__main__":
    main()
"""


async def test_names_a_library_bound_before_the_limits_are_limited_too(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    changes, script, mark = training_script(client, workspace, USES_CKPTLIB)
    env = library(tmp_path / "site", "ckptlib", CKPTLIB)
    cold, cold_seen = await run(client, changes, script, mark, env=env)
    warm, warm_seen = await run_until_warm(client, changes, script, mark, env=env)
    assert [cold["status"], warm["status"]] == ["passed", "passed"], printed(warm)
    expected = {"loaded": [JOB_DEVICE], "device_0": "cuda:0"}
    assert {k: cold_seen[k] for k in expected} == expected
    assert {k: warm_seen[k] for k in expected} == expected

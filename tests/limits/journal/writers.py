"""Ways real training code writes files, each run in a folder of the user's files.

Each writer changes the tree and then checks that it reads its own writes back; the
tests assert that afterwards the tree is as it was. Used in-process and as a script
(``python writers.py NAME``) by the job-level tests.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# The user's folder before the job: name -> bytes.
USER_FILES = {
    "model.pt": b"a week of training" * 100,
    "logs/train.log": b"epoch 1 loss 0.5\n",
    "runs/old/events.out.tfevents.1": b"old events",
    "checkpoints/last.ckpt": b"the last checkpoint",
    "notes.txt": b"keep me",
}


def make_user_tree(root: Path) -> None:
    for name, data in USER_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def open_w() -> None:
    with open("model.pt", "w") as f:
        f.write("overwritten")
    assert Path("model.pt").read_text() == "overwritten"


def open_a() -> None:
    with open("logs/train.log", "a") as f:
        f.write("epoch 2\n")
    assert Path("logs/train.log").read_text().endswith("epoch 2\n")


def open_x() -> None:
    with open("new.txt", "x") as f:
        f.write("new")
    assert Path("new.txt").read_text() == "new"


def open_r_plus() -> None:
    with open("notes.txt", "r+b") as f:
        f.write(b"XX")
    assert Path("notes.txt").read_bytes().startswith(b"XXep")


def torch_save_file_object() -> None:
    import torch

    model = torch.nn.Linear(2, 2)
    with open("model.pt", "wb") as f:
        torch.save(model, f)
    assert isinstance(torch.load("model.pt", weights_only=False), torch.nn.Linear)


def torch_save_path() -> None:
    import torch

    torch.save({"w": torch.ones(3)}, "model.pt")
    torch.save({"w": torch.ones(1)}, "checkpoints/epoch-0.pt")
    assert torch.load("model.pt")["w"].shape == (3,)


def atomic_save() -> None:
    import torch

    torch.save({"w": torch.zeros(2)}, "model.pt.tmp")
    os.replace("model.pt.tmp", "model.pt")
    assert torch.load("model.pt")["w"].shape == (2,)


def numpy_save() -> None:
    import numpy as np

    np.save("features.npy", np.arange(4))
    np.save("model.pt", np.arange(3))  # np.save adds .npy: model.pt.npy
    assert np.load("features.npy").tolist() == [0, 1, 2, 3]


def path_write() -> None:
    Path("notes.txt").write_text("replaced")
    Path("fresh.bin").write_bytes(b"\x00\x01")
    assert Path("notes.txt").read_text() == "replaced"


def remove() -> None:
    os.remove("notes.txt")
    assert not Path("notes.txt").exists()


def rmtree_outputs() -> None:
    shutil.rmtree("checkpoints")
    os.makedirs("checkpoints")
    Path("checkpoints/new.ckpt").write_bytes(b"new")
    assert sorted(os.listdir("checkpoints")) == ["new.ckpt"]


def makedirs() -> None:
    os.makedirs("out/a/b", exist_ok=True)
    Path("out/a/b/c.txt").write_text("c")
    assert Path("out/a/b/c.txt").read_text() == "c"


def rename() -> None:
    os.rename("notes.txt", "renamed.txt")
    os.rename("logs", "old_logs")
    assert Path("renamed.txt").read_bytes() == USER_FILES["notes.txt"]
    with open("renamed.txt", "ab") as f:  # in place, on an inode the backup shares
        f.write(b"!")


def safetensors_save() -> None:
    import torch
    from safetensors.torch import load_file, save_file

    save_file({"w": torch.ones(2)}, "model.pt")
    save_file({"w": torch.ones(5)}, "model.safetensors")
    assert load_file("model.pt")["w"].shape == (2,)


def summary_writer() -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter("runs/exp1")
    writer.add_scalar("loss", 0.5, 0)
    writer.close()
    default = SummaryWriter()  # runs/<date>_<host>
    default.add_scalar("loss", 0.5, 0)
    default.close()
    assert any(Path("runs/exp1").iterdir())


WRITERS = {
    f.__name__: f
    for f in (
        open_w, open_a, open_x, open_r_plus, torch_save_file_object, torch_save_path,
        atomic_save, numpy_save, path_write, remove, rmtree_outputs, makedirs, rename,
        safetensors_save, summary_writer,
    )
}  # fmt: skip

if __name__ == "__main__":
    for name in sys.argv[1:]:
        WRITERS[name]()
    print("read its own writes")

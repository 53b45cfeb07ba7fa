"""Every writer, through ``quickdev run``: the C library's file calls of the job and of every
process it starts are interposed, so torch's own C++ writer, native libraries the registry
never listed (OpenCV's VideoWriter), C's fopen and mkstemp, and programs that are not Python
(cp, a shell's >>) leave the folder byte-identical, not merely named. A direct system call,
which no interposer sees, is still named by the end-of-job check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from quickdev.limits.journal import interposer

from tests.limits.journal.test_writers import snapshot

WRITERS = """
import ctypes, os, subprocess, sys
from pathlib import Path
import torch

# torch's own C++ writer (not in the registry): an export over the user's file, and a new one.
model = torch.nn.Linear(3, 2)
traced = torch.jit.trace(model, torch.ones(1, 3))
traced.save("exported.pt")
os.makedirs("exports")
traced.save("exports/new.pt")
assert torch.jit.load("exported.pt")(torch.ones(1, 3)).shape == (1, 2)

# A native library's writer the registry never listed.
import cv2, numpy as np
video = cv2.VideoWriter("clip.avi", cv2.VideoWriter_fourcc(*"MJPG"), 5, (8, 8))
for _ in range(3):
    video.write(np.zeros((8, 8, 3), np.uint8))
video.release()
assert os.path.getsize("clip.avi") > 0

# C's own calls: fopen to append, mkstemp then a rename over the user's file.
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
stream = libc.fopen(b"train.log", b"a")
libc.fputs(b"native line\\n", stream)
libc.fclose(stream)
template = ctypes.create_string_buffer(b"notes.txt.XXXXXX")
fd = libc.mkstemp(template)
os.write(fd, b"rewritten natively")
os.close(fd)
os.rename(template.value.decode(), "notes.txt")

# Programs that are not Python.
subprocess.run("cp model.pt model-copy.pt && echo shell >> train.log && rm data.csv",
               shell=True, check=True)
subprocess.run(["sh", "-c", "mkdir -p made/by/shell && echo x > made/by/shell/f.txt"], check=True)
assert Path("train.log").read_text().endswith("native line\\nshell\\n")
assert Path("notes.txt").read_text() == "rewritten natively"
print("read its own writes", flush=True)
"""


def _interposer_or_skip() -> None:
    built = interposer.build()
    if built.library is None:
        pytest.skip(f"the file interposer cannot be built here: {built.why_not}")


def _tree(root: Path) -> None:
    root.mkdir()
    (root / "exported.pt").write_bytes(b"the user's export")
    (root / "clip.avi").write_bytes(b"the user's clip")
    (root / "train.log").write_text("epoch 1\n")
    (root / "notes.txt").write_text("keep me\n")
    (root / "model.pt").write_bytes(b"weights" * 100)
    (root / "data.csv").write_text("x,y\n")
    (root / "writers.py").write_text(WRITERS)


def test_every_writer_and_every_process_is_put_back(run_quickdev: Any, tmp_path: Path) -> None:
    _interposer_or_skip()
    root = tmp_path / "project"
    _tree(root)
    before = snapshot(root)
    run = run_quickdev("writers.py", cwd=root, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed", run.result.get("error")
    assert "read its own writes" in run.stdout
    assert snapshot(root) == before
    safety = run.result["file_safety"]
    assert safety["not_restored"] == []
    assert safety["writers"].startswith("every process of the job")
    kept = {Path(o["requested"]).relative_to(root).as_posix() for o in run.result["outputs"]}
    expected = {"exported.pt", "exports", "clip.avi", "train.log", "notes.txt",
                "model-copy.pt", "data.csv", "made"}  # fmt: skip
    assert expected <= {k.split("/")[0] for k in kept}, kept
    outputs = run.run_dir / "outputs"
    assert (outputs / "train.log").read_text() == "native line\nshell\n"


def test_without_the_interposer_the_result_says_which_writers_were_followed(
    run_quickdev: Any, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    _tree(root)
    (root / "cp.py").write_text(
        "import subprocess\nsubprocess.run(['cp', 'model.pt', 'copy.pt'], check=True)\n"
    )
    run = run_quickdev("cp.py", cwd=root, env={interposer.OFF_ENV: "1"})
    assert run.returncode == 0, run.stderr
    safety = run.result["file_safety"]
    assert safety["writers"] == (
        "Python code and the native writers quickdev knows (the interposer is switched off "
        f"({interposer.OFF_ENV}=1))"
    )
    # What cp made is not put back, but it is named.
    assert [(Path(c["path"]).name, c["change"]) for c in safety["not_restored"]] == [
        ("copy.pt", "created")
    ]


RAW_SYSCALL = """
import ctypes, os
# A direct system call: no C library function runs, so no interposer sees it.
number = {"x86_64": 257, "aarch64": 56}[os.uname().machine]  # openat
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(number, -100, b"raw.bin", os.O_WRONLY | os.O_CREAT, 0o644)
assert fd >= 0, ctypes.get_errno()
os.close(fd)
"""


def test_a_direct_system_call_escapes_and_is_named(run_quickdev: Any, tmp_path: Path) -> None:
    _interposer_or_skip()
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the test's system call number is known for x86_64 and aarch64 only")
    root = tmp_path / "project"
    root.mkdir()
    (root / "raw.py").write_text(RAW_SYSCALL)
    run = run_quickdev("raw.py", cwd=root)
    assert run.returncode == 0, run.stderr
    (unseen,) = run.result["file_safety"]["not_restored"]
    assert (Path(unseen["path"]).name, unseen["change"]) == ("raw.bin", "created")
    assert (root / "raw.bin").exists()


THROUGH_LINKS = """
import subprocess
from pathlib import Path
subprocess.run("echo shell >> metrics.log && printf X | dd of=metrics.log conv=notrunc 2>/dev/null",
               shell=True, check=True)
with open("metrics.log", "a") as f:
    f.write("python\\n")
Path("latest.txt").write_text("overwritten through the link")
print("done", flush=True)
"""


def test_writes_through_links_out_of_the_folder_are_put_back_whoever_writes(
    run_quickdev: Any, tmp_path: Path
) -> None:
    _interposer_or_skip()
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "shared"  # in the temporary directory, which is otherwise left alone
    outside.mkdir()
    (outside / "metrics.log").write_text("the user's metrics\n")
    (outside / "latest.txt").write_text("the user's latest\n")
    (root / "metrics.log").symlink_to(outside / "metrics.log")
    (root / "latest.txt").symlink_to(outside / "latest.txt")
    (root / "links.py").write_text(THROUGH_LINKS)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in outside.iterdir()}
    run = run_quickdev("links.py", cwd=root)
    assert run.returncode == 0, run.stderr
    assert "done" in run.stdout
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in outside.iterdir()}
    assert after == before
    assert (root / "metrics.log").is_symlink() and (root / "latest.txt").is_symlink()
    assert run.result["file_safety"]["not_restored"] == []

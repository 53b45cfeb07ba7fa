"""Native writers through ``quickdev run``: SQLite, Arrow/Parquet/Feather (pyarrow and pandas),
HDF5, zarr, LMDB, ``ndarray.tofile``, PIL and OpenCV images, soundfile. Each job changes the
user's existing files and reads back what it wrote; the folder is byte-identical after it.
A job killed during a SQLite transaction or a Parquet write is restored by the next command."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.limits.journal import native_writers
from tests.limits.journal.test_writers import snapshot

GROUPS = {
    "sqlite-arrow": [
        "sqlite_insert", "parquet_write_table", "pandas_to_parquet", "arrow_feather",
    ],
    "hdf5-zarr-lmdb-numpy-images-sound": [
        "h5py_append", "zarr_update", "lmdb_put", "ndarray_tofile", "images", "soundfile_write",
    ],
}  # fmt: skip


def _native_tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    native_writers.make_native_tree(root)
    shutil.copy(native_writers.__file__, root / "native_writers.py")
    (root / "noop.py").write_text("print('hello')\n")  # the next command's script
    return root


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_native_writers_leave_the_folder_byte_identical(
    run_quickdev: Any, tmp_path: Path, group: str
) -> None:
    root = _native_tree(tmp_path)
    before = snapshot(root)
    run = run_quickdev("native_writers.py", "--", *GROUPS[group], cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed", run.result.get("error")
    assert "read its own writes" in run.stdout
    assert snapshot(root) == before
    kept = {Path(o["requested"]).relative_to(root).as_posix() for o in run.result["outputs"]}
    for writer in GROUPS[group]:
        assert set(native_writers.CHANGED[writer]) <= kept, writer
    safety = run.result["file_safety"]
    assert safety["method"] == "journal" and safety["not_restored"] == []
    assert safety["checked_files"] >= len(before) - 10


SQLITE_TRANSACTION = """
import sqlite3
db = sqlite3.connect("metrics.db")
db.execute("PRAGMA cache_size = 1")  # pages spill into the database before the commit
db.execute("BEGIN")
db.executemany("INSERT INTO metrics VALUES (?, ?)", [(i, 0.5) for i in range(20000)])
db.execute("UPDATE metrics SET loss = -1")
print("holding", flush=True)
import time
time.sleep(120)
"""

PARQUET_WRITE = """
import pyarrow as pa, pyarrow.parquet as pq
writer = pq.ParquetWriter("data.parquet", pa.schema([("x", pa.int64())]))
for _ in range(3):
    writer.write_table(pa.table({"x": list(range(1000))}))
print("holding", flush=True)
import time
time.sleep(120)
"""


def _kill_while_holding(root: Path, processes: list[subprocess.Popen[bytes]]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "killed.py"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    processes.append(proc)
    assert proc.stdout is not None
    deadline = time.monotonic() + 90
    while b"holding" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _next_command_restores(run_quickdev: Any, root: Path, before: dict[str, str]) -> None:
    assert snapshot(root) != before, "the killed job had changed the folder"
    run = run_quickdev("noop.py", cwd=root)
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "put back" in line]
    assert "killed run" in line and "not put back" not in line
    assert snapshot(root) == before


def test_sigkill_during_a_sqlite_transaction_then_the_next_command_restores(
    run_quickdev: Any, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    root = _native_tree(tmp_path)
    (root / "killed.py").write_text(SQLITE_TRANSACTION)
    before = snapshot(root)
    _kill_while_holding(root, processes)
    assert (root / "metrics.db-journal").exists(), "killed inside the transaction"
    _next_command_restores(run_quickdev, root, before)
    assert not (root / "metrics.db-journal").exists()
    with sqlite3.connect(root / "metrics.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = db.execute("SELECT step, loss FROM metrics ORDER BY step").fetchall()
        assert rows == [(0, 1.0), (1, 0.5), (2, 1 / 3)], "the rows before the job, unchanged"
    db.close()


def test_sigkill_during_a_parquet_write_then_the_next_command_restores(
    run_quickdev: Any, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    import pyarrow.parquet as pq

    root = _native_tree(tmp_path)
    (root / "killed.py").write_text(PARQUET_WRITE)
    before = snapshot(root)
    _kill_while_holding(root, processes)
    _next_command_restores(run_quickdev, root, before)
    assert pq.read_table(root / "data.parquet").column("x").to_pylist() == [1, 2, 3]

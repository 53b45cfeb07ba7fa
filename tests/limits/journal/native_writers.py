"""Libraries that write the user's files from native code, as data and training code calls them.

``make_native_tree`` gives the user's folder one existing file per format; each writer
changes its file the way scripts do and reads back what it wrote. Used in-process and as
a script (``python native_writers.py NAME``) by the job-level tests.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path


def make_native_tree(root: Path) -> None:
    import h5py
    import lmdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq
    import soundfile
    import zarr
    from PIL import Image

    with sqlite3.connect(root / "metrics.db") as db:
        db.execute("CREATE TABLE metrics (step INTEGER, loss REAL)")
        db.executemany("INSERT INTO metrics VALUES (?, ?)", [(i, 1.0 / (i + 1)) for i in range(3)])
    db.close()
    table = pa.table({"x": [1, 2, 3], "label": ["a", "b", "c"]})
    pq.write_table(table, root / "data.parquet")
    pq.write_table(table, root / "frame.parquet")
    feather.write_feather(table, root / "table.feather")
    with h5py.File(root / "features.h5", "w") as f:
        f["x"] = np.arange(6)
    zarr.save(str(root / "arr.zarr"), np.arange(4))
    env = lmdb.open(str(root / "cache.lmdb"), map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"old", b"value")
    env.close()
    np.arange(8, dtype=np.int32).tofile(root / "raw.bin")
    Image.new("RGB", (4, 4), "blue").save(root / "img.png")
    Image.new("RGB", (4, 4), "red").save(root / "cv.png")
    soundfile.write(root / "clip.wav", np.zeros(100), 8000)


def sqlite_insert() -> None:
    db = sqlite3.connect("metrics.db")
    db.executemany("INSERT INTO metrics VALUES (?, ?)", [(10, 0.1), (11, 0.05)])
    db.commit()
    db.execute("CREATE TABLE runs (name TEXT)")
    db.commit()
    assert db.execute("SELECT COUNT(*) FROM metrics").fetchone() == (5,)
    db.close()


def parquet_write_table() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [7, 8]}), "data.parquet")
    assert pq.read_table("data.parquet").column("x").to_pylist() == [7, 8]


def pandas_to_parquet() -> None:
    import pandas as pd

    pd.DataFrame({"y": [0.5, 0.25]}).to_parquet("frame.parquet")
    assert pd.read_parquet("frame.parquet")["y"].tolist() == [0.5, 0.25]


def arrow_feather() -> None:
    import pyarrow as pa
    import pyarrow.feather as feather

    feather.write_feather(pa.table({"z": [1]}), "table.feather")
    assert feather.read_table("table.feather").column("z").to_pylist() == [1]


def h5py_append() -> None:
    import h5py
    import numpy as np

    with h5py.File("features.h5", "a") as f:
        f["y"] = np.ones(3)
        f["x"][0] = 100
    with h5py.File("features.h5", "r") as f:
        assert sorted(f) == ["x", "y"] and f["x"][0] == 100


def zarr_update() -> None:
    import numpy as np
    import zarr

    array = zarr.open_array("arr.zarr", mode="r+")
    array[:] = 7
    zarr.save("new.zarr", np.ones(2))
    assert zarr.open_array("arr.zarr", mode="r")[:].tolist() == [7, 7, 7, 7]


def lmdb_put() -> None:
    import lmdb

    env = lmdb.open("cache.lmdb", map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"new", b"entry")
    with env.begin() as txn:
        assert txn.get(b"new") == b"entry" and txn.get(b"old") == b"value"
    env.close()
    reader = lmdb.open("cache.lmdb", readonly=True)  # a data set's loader: the lock changes
    reader.close()


def ndarray_tofile() -> None:
    import numpy as np

    np.arange(3, dtype=np.int32).tofile("raw.bin")
    assert np.fromfile("raw.bin", dtype=np.int32).tolist() == [0, 1, 2]


def images() -> None:
    import cv2
    import numpy as np
    from PIL import Image

    Image.new("RGB", (2, 2), "green").save("img.png")
    assert Image.open("img.png").size == (2, 2)
    assert cv2.imwrite("cv.png", np.full((3, 3, 3), 255, np.uint8))
    assert cv2.imread("cv.png").shape == (3, 3, 3)


def soundfile_write() -> None:
    import numpy as np
    import soundfile

    soundfile.write("clip.wav", np.ones(50) * 0.5, 16000)
    data, rate = soundfile.read("clip.wav")
    assert rate == 16000 and len(data) == 50


WRITERS = {
    f.__name__: f
    for f in (
        sqlite_insert, parquet_write_table, pandas_to_parquet, arrow_feather, h5py_append,
        zarr_update, lmdb_put, ndarray_tofile, images, soundfile_write,
    )
}  # fmt: skip

# Each writer's user file, relative to the folder, that the job changed.
CHANGED = {
    "sqlite_insert": ["metrics.db"],
    "parquet_write_table": ["data.parquet"],
    "pandas_to_parquet": ["frame.parquet"],
    "arrow_feather": ["table.feather"],
    "h5py_append": ["features.h5"],
    "zarr_update": ["arr.zarr/c/0"],
    "lmdb_put": ["cache.lmdb/data.mdb", "cache.lmdb/lock.mdb"],
    "ndarray_tofile": ["raw.bin"],
    "images": ["img.png", "cv.png"],
    "soundfile_write": ["clip.wav"],
}

if __name__ == "__main__":
    for name in sys.argv[1:]:
        WRITERS[name]()
    print("read its own writes")

"""Libraries that open the user's files in native code, where Python's audit hook sees nothing.

One registry, read by one mechanism (``native`` wraps the Python function that still
holds the path; ``hook`` handles the audit events a library raises itself). Each entry
says where the path is among the call's arguments, which argument tells a read from a
write (h5py's and soundfile's ``mode``, LMDB's ``readonly``), and the side files the
library keeps beside the path (SQLite's ``-journal``, ``-wal``, ``-shm``; LMDB's
``data.mdb`` and ``lock.mdb``). The journal then puts the original aside before the
library opens it, exactly as for Python's ``open``.

What each action means for the journal:

- ``replace``: the library truncates or creates the file anew (the original is
  renamed aside, no bytes copied).
- ``update``: it changes the file in place, anywhere (the original is copied, or
  cloned where the file system can); a path that does not exist yet is the job's.
- ``append``: it opens the file with ``O_APPEND`` (the original length is kept, no copy).
- ``create``: it fails on an existing file (``"x"``, ``"w-"``): only a new name counts.
- ``read``: nothing to do.

Libraries that write through Python's ``open`` (NumPy's ``save``, ``tofile`` and
``memmap``, PIL, pandas' CSV and Feather, zarr's local store, matplotlib, TensorBoard)
need no entry. Not covered, and left to the end-of-job check (``manifest``): writers
not listed here (OpenCV's ``VideoWriter``, Arrow's ``write_dataset``, ``lmdb.Environment``
called by that name), and programs that are not Python.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlparse

Action = Literal["replace", "update", "append", "create", "read"]


@dataclass(frozen=True)
class Arg:
    """One argument of the call: its place among the positional ones, and its keyword."""

    position: int
    keyword: str
    default: Any = None

    def of(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        if self.keyword in kwargs:
            return kwargs[self.keyword]
        if len(args) > self.position:
            return args[self.position]
        return self.default


@dataclass(frozen=True)
class NativeWriter:
    library: str
    path: Arg
    # Where the call is seen: a function or method to wrap (module, owner class or None,
    # attribute), or an audit event the library raises with the path as its arguments.
    module: str = ""
    owner: str | None = None
    name: str = ""
    event: str = ""
    # The argument that says what the call does; absent: ``always``.
    mode: Arg | None = None
    modes: Mapping[Any, Action] = field(default_factory=dict)
    always: Action = "replace"
    # Side files the library changes in place beside the path, given the path and the
    # call's arguments; one that does not exist yet is the job's when it appears.
    sides: Callable[[str, Action, tuple[Any, ...], Mapping[str, Any]], list[str]] | None = None


def _sqlite_sides(
    path: str, action: Action, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[str]:
    return [path + suffix for suffix in ("-journal", "-wal", "-shm")]


def _lmdb_sides(
    path: str, action: Action, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[str]:
    # An environment is a folder of two files, or a file and its lock beside it. The lock
    # (a few KB) changes whenever the environment is opened, even read-only; the data
    # only when it is opened to write.
    if Arg(2, "subdir", True).of(args, kwargs):
        data, lock = os.path.join(path, "data.mdb"), os.path.join(path, "lock.mdb")
    else:
        data, lock = path, path + "-lock"
    if not Arg(15, "lock", True).of(args, kwargs):
        return [data] if action != "read" else []
    return [data, lock] if action != "read" else [lock]


_H5_MODES: dict[Any, Action] = {
    "r": "read", None: "read", "r+": "update", "a": "update", "w": "replace",
    "w-": "create", "x": "create",
}  # fmt: skip
_SF_MODES: dict[Any, Action] = {"r": "read", "r+": "update", "w": "replace", "x": "create"}

WRITERS: tuple[NativeWriter, ...] = (
    NativeWriter("torch.save", Arg(1, "name"), "torch.serialization", "_open_zipfile_writer_file",
                 "__init__"),
    NativeWriter("torch.from_file", Arg(0, "filename"), "torch", None, "from_file",
                 mode=Arg(1, "shared", False), modes={True: "update", False: "read"}),
    NativeWriter("safetensors", Arg(1, "filename"), "safetensors.torch", None, "serialize_file"),
    NativeWriter("safetensors", Arg(1, "filename"), "safetensors.numpy", None, "serialize_file"),
    NativeWriter("SQLite", Arg(0, "database"), event="sqlite3.connect", always="update",
                 sides=_sqlite_sides),
    NativeWriter("Parquet", Arg(1, "where"), "pyarrow.parquet.core", "ParquetWriter", "__init__"),
    NativeWriter("Feather", Arg(1, "dest"), "pyarrow._feather", None, "write_feather"),
    NativeWriter("Arrow IPC", Arg(1, "sink"), "pyarrow.ipc", "RecordBatchFileWriter", "__init__"),
    NativeWriter("Arrow IPC", Arg(1, "sink"), "pyarrow.ipc", "RecordBatchStreamWriter",
                 "__init__"),
    NativeWriter("Arrow CSV", Arg(1, "output_file"), "pyarrow.csv", None, "write_csv"),
    NativeWriter("Arrow", Arg(0, "path"), "pyarrow", None, "output_stream"),
    # pandas' to_parquet opens local paths with pa.OSFile (C++), a class: a subclass of it
    # takes its place, announcing in __new__ (where the file opens).
    NativeWriter("Arrow", Arg(0, "path"), "pyarrow", None, "OSFile", mode=Arg(1, "mode", "r"),
                 modes={"r": "read", "rb": "read", "w": "replace", "wb": "replace",
                        "a": "append", "ab": "append"}),
    NativeWriter("HDF5", Arg(1, "name"), "h5py._hl.files", "File", "__init__",
                 mode=Arg(2, "mode", "r"), modes=_H5_MODES),
    NativeWriter("LMDB", Arg(0, "path"), "lmdb", None, "open",
                 mode=Arg(3, "readonly", False), modes={True: "read", False: "update"},
                 sides=_lmdb_sides),
    NativeWriter("soundfile", Arg(1, "file"), "soundfile", "SoundFile", "__init__",
                 mode=Arg(2, "mode", "r"), modes=_SF_MODES),
    NativeWriter("OpenCV", Arg(0, "filename"), "cv2", None, "imwrite"),
    NativeWriter("OpenCV", Arg(0, "filename"), "cv2", None, "imwritemulti"),
)  # fmt: skip


def local_path(value: Any) -> str | None:
    """The local path a call names: a string, ``os.PathLike`` or ``file://`` URI; None for an
    open file, a buffer, a remote URI (``s3://``) or SQLite's in-memory names."""
    if isinstance(value, int) or value is None:
        return None
    try:
        name = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if name in ("", ":memory:"):
        return None
    if name.startswith("file:"):  # a URI (SQLite's uri=True, Arrow's file://)
        parsed = urlparse(name)
        if "mode=memory" in parsed.query or "mode=ro" in parsed.query:
            return None
        name = unquote(parsed.path)
    elif "://" in name:
        return None
    return os.path.abspath(name) if name else None


def targets(
    writer: NativeWriter, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[tuple[str, Action]]:
    """The paths the call is about to change, each with what it does to them."""
    path = local_path(writer.path.of(args, kwargs))
    if path is None:
        return []
    action = writer.always
    if writer.mode is not None:
        value = writer.mode.of(args, kwargs)
        action = writer.modes.get(value, "update")  # an unknown mode: assume it writes
    found: list[tuple[str, Action]] = [] if action == "read" else [(path, action)]
    if writer.sides is not None:
        sides = writer.sides(path, action, args, kwargs)
        found += [(side, "update") for side in sides if side != path]
    return found

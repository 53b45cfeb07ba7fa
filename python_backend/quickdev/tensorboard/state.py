"""Where live TensorBoard servers are recorded, so any process can find and reuse them.

One small JSON record per logdir in the user's cache directory (never in the logdir,
which TensorBoard reads and which may be read-only), guarded by a lock file so two
processes asking at once start one server, not two.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from quickdev.cache import user_cache_dir
from quickdev.rundir.jsonio import read_json_object, write_json

try:
    import fcntl
except ImportError:  # Windows: no cross-process lock; a rare double start is harmless
    fcntl = None  # type: ignore[assignment]


@dataclass
class ServerRecord:
    logdir: str
    url: str
    port: int
    pid: int
    log_file: str


def state_dir() -> Path:
    return user_cache_dir() / "tensorboard"


def _key(logdir: Path) -> str:
    return hashlib.sha256(str(logdir).encode()).hexdigest()[:16]


def record_path(logdir: Path) -> Path:
    return state_dir() / f"{_key(logdir)}.json"


def log_path(logdir: Path) -> Path:
    return state_dir() / f"{_key(logdir)}.log"


def read_record(logdir: Path) -> ServerRecord | None:
    data = read_json_object(record_path(logdir))
    try:
        return ServerRecord(**data) if data is not None else None
    except TypeError:
        return None


def write_record(record: ServerRecord) -> None:
    path = record_path(Path(record.logdir))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, asdict(record))


def remove_record(logdir: Path) -> None:
    record_path(logdir).unlink(missing_ok=True)


@contextlib.contextmanager
def locked(logdir: Path) -> Iterator[None]:
    """Holds the logdir's lock: one process at a time checks, starts or stops its server."""
    path = state_dir() / f"{_key(logdir)}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)

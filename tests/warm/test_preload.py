"""What a warm process watches: each imported library's files, stamped before the import,
so a library changed while (or right after) the warm process imported it is never served
stale to a job."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from quickdev.warm import preload, protocol

# Its import rewrites its own file, as an upgrade landing while the warm process imports.
UPGRADING = """\
import os, pathlib
_here = pathlib.Path(__file__)
_here.write_text(_here.read_text().replace("VALUE = 1", "VALUE = 2"))
os.utime(_here, ns=(os.stat(_here).st_atime_ns, os.stat(_here).st_mtime_ns + 10**9))
VALUE = 1
"""


def test_a_library_changed_during_its_import_shows_as_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "upgrading_lib").mkdir(parents=True)
    init = site / "upgrading_lib" / "__init__.py"
    init.write_text(UPGRADING)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))  # an installed library's folder
    monkeypatch.setattr(preload, "JOB_MODULES", ())  # the job's own modules: not this test's
    monkeypatch.delitem(sys.modules, "upgrading_lib", raising=False)
    done = preload.Preloaded()
    preload.preload([("upgrading_lib", [])], [str(tmp_path / "workspace")], done)
    assert done.loaded == ["upgrading_lib"], done.skipped
    recorded = done.stamps[os.path.realpath(init)]
    assert recorded is not None and protocol.stamp(os.path.realpath(init)) != recorded
    assert os.path.realpath(site) in done.stamps  # the library folder is watched too


def test_a_bytecode_cache_written_beside_a_library_is_no_change_and_a_new_module_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An interpreter that imports a library writes __pycache__ beside its modules; a new
    # __pycache__ changes the folder's time. The warm process once took that for an upgrade
    # and was dropped with the job it had just forked.
    site = tmp_path / "site"
    (site / "cached_lib").mkdir(parents=True)
    (site / "cached_lib" / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setattr(preload, "JOB_MODULES", ())
    monkeypatch.delitem(sys.modules, "cached_lib", raising=False)
    done = preload.Preloaded()
    preload.preload([("cached_lib", [])], [], done)
    assert done.loaded == ["cached_lib"], done.skipped
    folders = [os.path.realpath(site), os.path.realpath(site / "cached_lib")]
    assert set(folders) <= set(done.stamps)
    for folder in folders:
        cache = Path(folder) / "__pycache__"
        cache.mkdir(exist_ok=True)
        (cache / "module.cpython-311.pyc").write_bytes(b"bytecode")
    changed = [path for path, recorded in done.stamps.items() if protocol.stamp(path) != recorded]
    assert changed == []
    (site / "cached_lib" / "added.py").write_text("VALUE = 2\n")  # an upgrade adds a module
    assert protocol.stamp(folders[1]) != done.stamps[folders[1]]

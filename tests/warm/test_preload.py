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

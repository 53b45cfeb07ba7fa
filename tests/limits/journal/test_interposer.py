"""Building the file interposer: once per machine into the cache, reused after; without a
compiler, or with one that fails, the reason is what the result says (``Status``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from quickdev.limits.journal import interposer


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CC", raising=False)
    return tmp_path / "cache"


def test_it_is_built_once_into_the_cache_and_reused(cache: Path) -> None:
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        pytest.skip("no C compiler on this machine")
    built = interposer.build()
    assert built.library is not None, built.why_not
    assert Path(built.library).is_relative_to(cache / "quickdev" / "interposer")
    started = time.perf_counter()
    again = interposer.build()
    assert again.library == built.library
    assert time.perf_counter() - started < 0.05, "found in the cache, not built again"
    # What it exports is what service.py and the job call.
    symbols = subprocess.run(["nm", "-D", "--defined-only", built.library],
                             capture_output=True, text=True)  # fmt: skip
    if symbols.returncode == 0:
        exported = {line.split()[-1] for line in symbols.stdout.splitlines()}
        assert {"quickdev_journal_activate", "quickdev_journal_pause", "open", "openat",
                "fopen", "rename", "unlink", "mkstemp"} <= exported  # fmt: skip
        assert "normalize" not in exported and "ask" not in exported, "helpers stay hidden"


def test_without_a_compiler_the_reason_is_said(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    built = interposer.build()
    assert built.library is None
    assert built.why_not == "no C compiler (cc) to build quickdev's file interposer"
    assert not list(cache.rglob("build-failed*")), (
        "nothing kept: a compiler installed later is used"
    )


def test_a_compiler_that_fails_is_said_and_not_tried_again_with_the_same_compiler(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken-cc"
    broken.write_text("#!/bin/sh\necho 'broken-cc: error: cannot run' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("CC", str(broken))
    built = interposer.build()
    assert built.library is None
    assert built.why_not == (
        f"{broken} could not build quickdev's file interposer: broken-cc: error: cannot run"
    )
    broken.write_text("#!/bin/sh\necho called >> " + str(tmp_path / "calls") + "\nexit 1\n")
    assert interposer.build().why_not == built.why_not
    assert not (tmp_path / "calls").exists(), "the failure is remembered for that compiler"
    if shutil.which("cc"):
        monkeypatch.delenv("CC")
        assert interposer.build().library is not None, "another compiler is tried"


def test_status_says_which_writers_are_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    # This test process was not started with the library.
    monkeypatch.setenv(interposer.OFF_ENV, "1")
    status = interposer.Status.now()
    assert not status.interposed
    assert status.writers == (
        "Python code and the native writers quickdev knows "
        f"(the interposer is switched off ({interposer.OFF_ENV}=1))"
    )


def test_a_process_started_with_it_is_interposed(cache: Path) -> None:
    built = interposer.build()
    if built.library is None:
        pytest.skip(f"the interposer cannot be built here: {built.why_not}")
    code = (
        "from quickdev.limits.journal import interposer; "
        "s = interposer.Status.now(); print(s.interposed, s.writers)"
    )
    env = {**os.environ, "LD_PRELOAD": built.library}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.stdout.strip() == f"True {interposer.INTERPOSED}", proc.stderr

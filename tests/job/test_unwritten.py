"""The job's own files on a full disk, for real (``/dev/full`` answers every write with
ENOSPC): the script's print goes on, logging prints no traceback, one line says it."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pytest
from quickdev import unwritten
from quickdev.job.output_tee import _Log, _Tee

pytestmark = pytest.mark.skipif(
    not os.path.exists("/dev/full"), reason="no /dev/full on this system"
)
FULL = Path("/dev/full")


def test_the_scripts_print_goes_on_when_its_copy_cannot_be_written() -> None:
    unwritten.reset()
    terminal = io.StringIO()
    tee = _Tee(terminal, _Log(FULL))
    for i in range(3):
        print(f"epoch {i}", file=tee)
    tee.flush()
    assert terminal.getvalue() == "epoch 0\nepoch 1\nepoch 2\n"
    line = unwritten.line("/runs/r")
    assert line is not None and "could not write full in /runs/r" in line
    assert "No space left on device" in line and "\n" not in line


def test_the_jobs_log_drops_what_it_cannot_write_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    unwritten.reset()
    handler = unwritten.LogFile(FULL)
    logger = logging.getLogger("quickdev.test_unwritten")
    logger.addHandler(handler)
    try:
        for i in range(3):
            logger.warning("record %d", i)
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert capsys.readouterr().err == ""
    assert unwritten.line("/runs/r") is not None
    unwritten.reset()
    assert unwritten.line("/runs/r") is None

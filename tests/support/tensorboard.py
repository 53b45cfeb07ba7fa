"""Helpers for the TensorBoard tests: polling, HTTP, and a real profiled quick-dev job."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from quickdev.tensorboard.manager import TensorBoardServer

from tests.support.paths import EXAMPLES

EXAMPLE = EXAMPLES / "train_loop.py"
PLUGIN = "data/plugin/pytorch_profiler/"

T = TypeVar("T")


def poll(what: str, check: Callable[[], T | None], timeout_s: float = 60.0) -> T:
    """``check()``'s first truthy answer; fails naming ``what`` after the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


def get(url: str, timeout_s: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            body = r.read()
            if r.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            return r.status, body
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def get_json(url: str) -> Any:
    status, body = get(url)
    assert status == 200, f"{url} answered {status}: {body[:300]!r}"
    return json.loads(body)


def listed_runs(server: TensorBoardServer) -> list[str]:
    runs: list[str] = get_json(server.url + PLUGIN + "runs")["runs"]
    return runs


def profile_example(runs_dir: Path, name: str, *extra: str) -> Path:
    """``quickdev run --profile`` on the example script: a real job, a real trace."""
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "quickdev", "run", "--profile", *extra),
            *("--runs-dir", str(runs_dir), "--name", name, "--json", str(EXAMPLE)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    run_dir = Path(result["run_dir"]) if result.get("run_dir") else runs_dir / result["id"]
    assert result["profile"]["trace_files"], result
    return run_dir

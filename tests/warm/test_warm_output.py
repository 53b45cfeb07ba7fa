"""A warm-started job's output reaches output.log (the editor's live output) as it is
printed, not at the job's end.

The copy of the script's output used to be flushed at a line's end only once a second had
passed since the last flush. A cold job spends that second importing torch, so its first
line went out at once; a warm job prints within the second, and a line followed by a long
quiet step stayed in the buffer until the next line, or the end.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import execute, final, server_pid, wait_for
from tests.warm.support import result, run_until_warm, training_script

pytestmark = pytest.mark.asyncio

# Prints one line, then waits (a long step) until the test has seen that line or a minute
# has passed.
SCRIPT = """\
import argparse, json, os, time
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--mark", required=True)
parser.add_argument("--go")
args = parser.parse_args()
with open(args.mark, "w") as f:
    json.dump({"ppid": os.getppid()}, f)
print("the first epoch begins")
deadline = time.time() + 60
while args.go and not os.path.exists(args.go) and time.time() < deadline:
    time.sleep(0.05)
"""


async def test_a_warm_jobs_line_reaches_output_log_while_it_runs(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    changes, script, mark = training_script(client, workspace, SCRIPT)
    await run_until_warm(client, changes, script, mark)  # the warm process is ready
    for attempt in range(4):
        go = tmp_path / f"go-{attempt}"
        answer = await execute(
            client, "quickdev.startJob", {"script": str(script), "args": ["--mark", str(mark),
                                                                           "--go", str(go)]}
        )  # fmt: skip
        assert "error" not in answer, answer
        seen_at = await _line_seen(Path(answer["runDir"]) / "output.log", timeout_s=20)
        go.touch()
        ended = await wait_for(partial(final, changes, answer["runId"]), "the run to end")
        (written,) = [
            o["written"] for o in result(ended)["outputs"] if Path(o["requested"]) == mark
        ]
        if json.loads(Path(written).read_text())["ppid"] == server_pid(client):
            continue  # started cold after all: try again
        assert seen_at is not None, "the line reached output.log only at the job's end"
        return
    pytest.fail("no warm start in 4 runs")


async def _line_seen(output: Path, timeout_s: float) -> float | None:
    """Seconds until the script's line is in output.log while the job still runs (it
    waits for the test); None when it is not there within ``timeout_s``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < timeout_s:
        if output.exists() and "the first epoch begins" in output.read_text(errors="replace"):
            return loop.time() - started
        await asyncio.sleep(0.05)
    return None

"""A debug run started warm: the breakpoint in the training loop is hit, and the job's log
says it started warm (the point: the first breakpoint without paying torch's import)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.support.dap import DapClient
from tests.support.debug import SESSION_OPTIONS, line_of
from tests.support.server import execute, final, wait_for
from tests.warm.support import SCRIPT, run_until_warm, training_script

pytestmark = pytest.mark.asyncio

TRAINING_STEP = "loss = torch.nn.functional.mse_loss(model(x), y)"


def how_started(job_log: Path) -> str | None:
    text = job_log.read_text() if job_log.exists() else ""
    return next((line for line in text.splitlines() if " started " in line), None)


def stop_at(attach: dict[str, Any], script: Path, line: int) -> tuple[str, int, str]:
    """Attach as the editor does, stop at ``line``: (reason, line, shape of ``x``). The
    Call Stack holds the script's frames only: nothing of Quickdev's (the warm process's
    ``warm/__main__.py``, the job's runner)."""
    with DapClient.connect(str(attach["host"]), int(attach["port"])) as dap:
        dap.initialize()
        dap.attach(just_my_code=False, **SESSION_OPTIONS)
        [breakpoint_] = dap.set_breakpoints(script, [line])
        assert breakpoint_["verified"]
        dap.configuration_done()
        stopped = dap.wait_for_stopped(timeout_s=120)
        frames = dap.stack_trace(stopped["threadId"])
        where = [(f["name"], f.get("source", {}).get("path", "")) for f in frames]
        assert {Path(path).name for _, path in where} == {script.name}, where
        frame = frames[0]
        shape = dap.evaluate("tuple(x.shape)", frame["id"])
        dap.set_breakpoints(script, [])
        dap.continue_(stopped["threadId"])
        dap.disconnect()
    return stopped["reason"], frame["line"], shape


async def test_a_warm_debug_run_stops_at_a_breakpoint_in_the_training_loop(
    client: LanguageClient, workspace: Path
) -> None:
    changes, script, mark = training_script(client, workspace, SCRIPT)
    await run_until_warm(client, changes, script, mark)
    for _ in range(4):  # the warm process re-imports after each run: it may not be ready yet
        answer = await execute(
            client,
            "quickdev.startJob",
            {"script": str(script), "mode": "debug", "args": ["--mark", str(mark)]},
        )
        assert "error" not in answer, answer
        run_id = answer["runId"]
        started = await wait_for(
            lambda log=Path(answer["runDir"]) / "job.log": how_started(log),
            "the job's log to say how it started",
        )
        if "started warm: forked from warm process" in started:
            break
        assert "started cold" in started, started
        await execute(client, "quickdev.cancelJob", {"runId": run_id})
        await wait_for(lambda run=run_id: final(changes, run), "the cold debug run to end")
    else:
        raise AssertionError("no debug run started warm")
    line = line_of(script, TRAINING_STEP)
    reason, stopped_line, shape = await asyncio.to_thread(stop_at, answer["attach"], script, line)
    assert (reason, stopped_line, shape) == ("breakpoint", line, "(8, 4)")
    ended = await wait_for(lambda: final(changes, run_id), "the debug run to end")
    assert ended["status"] == "passed"

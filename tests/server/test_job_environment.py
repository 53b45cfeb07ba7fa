"""What a launch configuration passes to a job through ``quickdev.startJob``: the user's
environment variables (over the server's), and the limits a configuration may set.

The real server starts the real job; the script fails unless it gets what it needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import collect_run_changes, execute, final, wait_for

pytestmark = pytest.mark.asyncio

# Needs a variable and a module found only through the PYTHONPATH the user gives, as a
# LightningCLI script with a src/ layout does.
NEEDS_ENV = """\
import os
import torch
from helpers import scale

assert os.environ["QD_GREETING"] == "hello from launch.json", os.environ.get("QD_GREETING")
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(50):
    loss = model(torch.ones(4, 2) * scale()).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done", step)
"""


@pytest.fixture
def script(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "helpers.py").write_text("def scale():\n    return 2.0\n")
    path = workspace / "needs env.py"
    path.write_text(NEEDS_ENV)
    return path


async def test_env_reaches_the_job_and_limits_apply(
    client: LanguageClient, script: Path, workspace: Path
) -> None:
    changes = collect_run_changes(client)
    env = {"QD_GREETING": "hello from launch.json", "PYTHONPATH": str(workspace / "src")}
    answer = await execute(
        client,
        "quickdev.startJob",
        {"script": str(script), "mode": "run", "args": [], "env": env, "maxSteps": 3},
    )
    assert "error" not in answer, answer
    run = await wait_for(lambda: final(changes, answer["runId"]), "the run to end")
    assert run["status"] == "passed", run
    result = json.loads(Path(run["resultFile"]).read_text())
    assert [e["budget"] for e in result["loops_ended"]] == ["max_steps"]
    assert result["optimizer_steps"] == 3


async def test_without_the_env_the_same_job_fails(client: LanguageClient, script: Path) -> None:
    changes = collect_run_changes(client)
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "mode": "run", "args": []}
    )
    run = await wait_for(lambda: final(changes, answer["runId"]), "the run to end")
    assert run["status"] == "failed"
    assert "helpers" in run["error"]["message"]


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ({"env": {"A": 1}}, '"env" must be an object of strings'),
        ({"env": ["A=1"]}, '"env" must be an object of strings'),
        ({"device": "cuda:0"}, '"device" must be "auto" or "cpu"'),
        ({"maxSteps": 0}, '"maxSteps" must be a whole number'),
        ({"timeout": -1}, '"timeout" must be seconds > 0'),
        ({"python": 3}, '"python" must be an interpreter path'),
    ],
)
async def test_bad_launch_attributes_answer_one_line(
    client: LanguageClient, script: Path, argument: dict[str, Any], expected: str
) -> None:
    answer = await execute(client, "quickdev.startJob", {"script": str(script), **argument})
    assert expected in answer["error"], answer
    assert "\n" not in answer["error"]

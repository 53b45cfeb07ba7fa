"""The NaN hunt through the real server: the lens, startJob's ``findNonfinite``, the
diagnostic at the line that made the first NaN, and results with NaN losses the editor
can read (JSON has no NaN)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import (
    collect_run_changes,
    execute,
    final,
    lenses,
    open_document,
    wait_for,
)

pytestmark = pytest.mark.asyncio

SCRIPTS = Path(__file__).parent.parent / "limits" / "nonfinite" / "scripts"


@pytest.fixture
def script(workspace: Path) -> Path:
    path = workspace / "log loss.py"
    shutil.copy(SCRIPTS / "log_zero_loss.py", path)
    return path


async def test_find_first_nan_lens_hunts_and_marks_the_line(
    client: LanguageClient, script: Path
) -> None:
    changes = collect_run_changes(client)
    document_uri = open_document(client, script)
    found = await lenses(client, document_uri)
    hunt = [lens for lens in found if lens.command and lens.command.title == "Find first NaN"]
    assert len(hunt) == 1 and hunt[0].command is not None
    assert hunt[0].command.command == "quickdev.lens.findNonfinite"
    entry = next(lens for lens in found if lens.command and lens.command.title == "Quick-dev run")
    assert hunt[0].range == entry.range, "on the script's entry point, beside Quick-dev run"
    argument = dict((hunt[0].command.arguments or [{}])[0])
    assert argument == {"script": str(script)}

    answer = await execute(client, "quickdev.startJob", {**argument, "findNonfinite": True})
    assert "error" not in answer, answer
    ended = await wait_for(lambda: final(changes, answer["runId"]), "the hunt to end")
    assert ended["status"] == "failed"
    origin_line = script.read_text().splitlines().index("    log_probs = torch.log(probs)")
    assert ended["error"]["line"] == origin_line + 1
    assert ended["error"]["message"].startswith("NonFiniteValue: -inf from torch.log")

    (diagnostic,) = await wait_for(lambda: client.diagnostics.get(document_uri), "a diagnostic")
    assert diagnostic.range.start.line == origin_line
    assert "reached the loss" in diagnostic.message
    assert diagnostic.code == answer["runId"]

    # The run's losses end with the infinite one: sent as null, as JSON can hold it.
    assert ended["losses"][-1] is None and all(math.isfinite(v) for v in ended["losses"][:-1])
    detail = await execute(client, "quickdev.getRun", {"runId": answer["runId"]})
    json.dumps(detail, allow_nan=False)
    assert detail["result"]["losses"][-1] is None
    origin = detail["result"]["first_nonfinite"]
    assert (origin["op"], origin["line"], origin["phase"]) == (
        "torch.log",
        origin_line + 1,
        "forward",
    )
    listed = await execute(client, "quickdev.listRuns", {})
    json.dumps(listed, allow_nan=False)


async def test_find_nonfinite_must_be_a_boolean(client: LanguageClient, script: Path) -> None:
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "findNonfinite": "yes"}
    )
    assert answer == {"error": "\"findNonfinite\" must be true or false, got 'yes'"}

"""Quick-dev jobs through the real server and the real ``quickdev run`` (torch in the job).

Lens → startJob → runChanged (stage, batches) → result → diagnostic, then a good run clears it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.paths import EXAMPLES
from tests.support.server import (
    TRAIN_SCRIPT as SCRIPT,
)
from tests.support.server import (
    collect_run_changes,
    execute,
    final,
    lenses,
    open_document,
    server_pid,
    torch_loaded_in,
    uri,
    wait_for,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
def script(workspace: Path) -> Path:
    path = workspace / "train me.py"
    path.write_text(SCRIPT)
    return path


async def test_failed_run_becomes_a_diagnostic_and_a_good_run_clears_it(
    client: LanguageClient, script: Path
) -> None:
    changes = collect_run_changes(client)
    document_uri = open_document(client, script)
    run_lens = next(
        lens
        for lens in await lenses(client, document_uri)
        if lens.command and lens.command.command == "quickdev.lens.run"
    )
    assert run_lens.command is not None
    lens_argument = dict((run_lens.command.arguments or [{}])[0])

    answer = await execute(
        client, "quickdev.startJob", {**lens_argument, "mode": "run", "args": ["--crash"]}
    )
    assert "error" not in answer, answer
    run_id = answer["runId"]
    failed = await wait_for(lambda: final(changes, run_id), "the failed run to end")
    assert failed["status"] == "failed"
    assert "loss exploded on purpose" in failed["error"]["message"]
    assert failed["args"] == ["--crash"]  # the Runs view tells runs apart by them

    crash_line = SCRIPT.splitlines().index(
        '                raise ValueError("loss exploded on purpose")'
    )
    diagnostics = await wait_for(lambda: client.diagnostics.get(document_uri), "a diagnostic")
    (diagnostic,) = diagnostics
    assert diagnostic.range.start.line == crash_line
    assert diagnostic.source == "quickdev"
    assert "ValueError: loss exploded on purpose" in diagnostic.message

    # The extension shows its own progress from runChanged, and opens the run's result.
    assert next(c["status"] for c in changes if c["runId"] == run_id) == "running"
    assert failed["stage"] == "done"
    assert Path(failed["resultFile"]) == Path(answer["runDir"]) / "result.json"
    assert json.loads(Path(failed["resultFile"]).read_text())["status"] == "failed"

    # Without "args", the server passes none: the job itself sets the script's --epochs to
    # 1, as from a terminal, and says so in the result.
    answer = await execute(client, "quickdev.startJob", {"script": str(script)})
    assert answer["args"] == []
    passed = await wait_for(lambda: final(changes, answer["runId"]), "the good run to end")
    assert passed["status"] == "passed", passed
    good = json.loads(Path(passed["resultFile"]).read_text())
    assert good["limits"]["one_epoch_options"] == ["--epochs"]
    assert passed["batches"] >= 2
    assert len(passed["losses"]) >= 1
    await wait_for(lambda: len(client.diagnostics[document_uri]) == 0, "the diagnostic to clear")

    listed = await execute(client, "quickdev.listRuns", {})
    statuses = {r["runId"]: r["status"] for r in listed["runs"]}
    assert statuses[run_id] == "failed" and statuses[answer["runId"]] == "passed"
    detail = await execute(client, "quickdev.getRun", {"runId": run_id})
    assert detail["result"]["status"] == "failed"
    assert detail["result"]["error"]["type"] == "ValueError"
    assert not torch_loaded_in(server_pid(client))


async def test_a_diagnostic_moves_with_edits_above_and_goes_when_its_line_is_edited(
    client: LanguageClient, script: Path
) -> None:
    changes = collect_run_changes(client)
    document_uri = open_document(client, script)
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "args": ["--crash"]}
    )
    await wait_for(lambda: final(changes, answer["runId"]), "the failed run to end")
    (diagnostic,) = await wait_for(lambda: client.diagnostics.get(document_uri), "a diagnostic")
    line = diagnostic.range.start.line

    def edit(version: int, start: int, end: int, text: str) -> None:
        span = types.Range(
            start=types.Position(line=start, character=0), end=types.Position(line=end, character=0)
        )
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=document_uri, version=version
                ),
                content_changes=[types.TextDocumentContentChangePartial(range=span, text=text)],
            )
        )

    edit(2, 0, 0, "# one\n# two\n")  # two lines typed at the top: it moves with its line
    await wait_for(
        lambda: [d.range.start.line for d in client.diagnostics[document_uri]] == [line + 2],
        "the diagnostic to move with its line",
    )
    edit(3, line + 1, line + 2, "")  # the line above deleted (it ends at the failing line)
    await wait_for(
        lambda: [d.range.start.line for d in client.diagnostics[document_uri]] == [line + 1],
        "the diagnostic to move up with its line",
    )
    edit(4, line + 1, line + 1, "# three\n")  # a line typed at the failing line's column 0
    await wait_for(
        lambda: [d.range.start.line for d in client.diagnostics[document_uri]] == [line + 2],
        "the diagnostic to move down with its line",
    )
    edit(5, line + 2, line + 2, "# ")  # the failing line commented out: edited, not moved
    await wait_for(lambda: len(client.diagnostics[document_uri]) == 0, "the diagnostic to go")


async def test_a_running_job_reports_its_stage_and_batches(
    client: LanguageClient, script: Path, tmp_path: Path
) -> None:
    """runChanged carries what the extension's progress notification shows."""
    changes = collect_run_changes(client)
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "args": ["--delay", "0.3"]}
    )
    run_id = answer["runId"]

    def batches_reported() -> bool:
        return any(
            c["runId"] == run_id and c["stage"] == "running" and c["batches"] >= 1 for c in changes
        )

    await wait_for(batches_reported, "a runChanged with the running stage and a batch done")
    assert await execute(client, "quickdev.cancelJob", {"runId": run_id}) == {"cancelled": True}
    cancelled = await wait_for(lambda: final(changes, run_id), "the cancelled run")
    assert cancelled["status"] == "cancelled"


async def test_cancel_job_command(client: LanguageClient, script: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "job.pid"
    answer = await execute(
        client,
        "quickdev.startJob",
        {"script": str(script), "args": ["--delay", "60", "--pid-file", str(pid_file)]},
    )
    job_pid = int(await wait_for(lambda: pid_file.is_file() and pid_file.read_text(), "pid"))
    assert await execute(client, "quickdev.cancelJob", {"runId": answer["runId"]}) == {
        "cancelled": True
    }
    await wait_for(lambda: not Path(f"/proc/{job_pid}").exists(), "the job process to exit")
    assert await execute(client, "quickdev.cancelJob", {"runId": answer["runId"]}) == {
        "cancelled": False
    }
    detail = await execute(client, "quickdev.getRun", {"runId": answer["runId"]})
    assert detail["run"]["status"] == "cancelled"


async def test_debug_job_answers_where_to_attach(client: LanguageClient, script: Path) -> None:
    answer = await execute(
        client,
        "quickdev.startJob",
        {"script": str(script), "mode": "debug"},
    )
    assert "error" not in answer, answer
    attach = answer["attach"]
    assert attach["host"] == "127.0.0.1"
    with socket.create_connection((attach["host"], attach["port"]), timeout=10):
        pass  # debugpy is listening where the server said
    assert await execute(client, "quickdev.cancelJob", {"runId": answer["runId"]}) == {
        "cancelled": True
    }


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ({}, 'give "script" (a file to run) or "module"'),
        ({"script": "train.py"}, "must be an absolute path"),
        ({"script": "/no/such/dir/train.py"}, "not found; save it to disk first"),
        ({"script": "SCRIPT", "mode": "fast"}, '"mode" must be one of run, profile, debug'),
        ({"script": "SCRIPT", "batches": 0}, '"batches" must be a whole number'),
        ({"script": "SCRIPT", "args": "--epochs 1"}, '"args" must be a list of strings'),
    ],
)
async def test_bad_start_requests_answer_one_line(
    client: LanguageClient, script: Path, argument: dict[str, Any], expected: str
) -> None:
    if argument.get("script") == "SCRIPT":
        argument = {**argument, "script": str(script)}
    answer = await execute(client, "quickdev.startJob", argument)
    assert expected in answer["error"]
    assert "\n" not in answer["error"]


async def test_unknown_runs_and_malformed_arguments(client: LanguageClient) -> None:
    for command in ("quickdev.cancelJob", "quickdev.getRun"):
        answer = await execute(client, command, {"runId": "nope"})
        assert "no run nope" in answer["error"]
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="quickdev.listRuns", arguments=[1, 2])
    )
    assert "takes one JSON object argument" in answer["error"]


async def test_interpreter_without_torch(
    client: LanguageClient, script: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "no torch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"quickdev": {"python": str(python)}})
    )
    answer = await execute(client, "quickdev.startJob", {"script": str(script)})
    assert answer["error"] == (
        f"the job interpreter {python} has no torch; set quickdev.python to an interpreter "
        "with torch installed"
    )
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"quickdev": {"python": str(tmp_path / "missing" / "python")}}
        )
    )
    answer = await execute(client, "quickdev.startJob", {"script": str(script)})
    assert "cannot run the job interpreter" in answer["error"]


async def test_unwritable_runs_directory(client: LanguageClient, script: Path) -> None:
    blocker = script.parent / "a file"
    blocker.write_text("not a folder")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"quickdev": {"runsDir": "a file/runs"}})
    )
    answer = await execute(client, "quickdev.startJob", {"script": str(script)})
    assert "cannot write the runs directory" in answer["error"]
    assert "set quickdev.runsDir to a writable folder" in answer["error"]
    # The server is still fine.
    assert (await execute(client, "quickdev.listRuns", {}))["runs"] == []


async def test_failure_deep_in_a_helper_module_points_at_the_helper(
    client: LanguageClient, workspace: Path
) -> None:
    for name in ("crash_deep.py", "crash_helpers.py"):
        shutil.copy(EXAMPLES / name, workspace / name)
    changes = collect_run_changes(client)
    answer = await execute(
        client, "quickdev.startJob", {"script": str(workspace / "crash_deep.py")}
    )
    failed = await wait_for(lambda: final(changes, answer["runId"]), "the run to fail")
    assert failed["status"] == "failed"
    helpers = workspace / "crash_helpers.py"
    helper_uri = uri(helpers)
    (diagnostic,) = await wait_for(lambda: client.diagnostics.get(helper_uri), "a diagnostic")
    failing_line = next(
        i for i, line in enumerate(helpers.read_text().splitlines()) if "return layer(x)" in line
    )
    assert diagnostic.range.start.line == failing_line
    assert diagnostic.range.start.character == 4  # the statement, not its indentation
    assert diagnostic.message.startswith("RuntimeError: ")
    assert diagnostic.code == answer["runId"]


async def test_runs_from_a_terminal_are_listed(client: LanguageClient, script: Path) -> None:
    """A run started with ``quickdev run`` in the folder shows in the Runs view too."""
    proc = subprocess.run(
        [sys.executable, "-m", "quickdev", "run", "--json", str(script), "--", "--epochs", "1"],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    run_id = json.loads(proc.stdout.strip().splitlines()[-1])["id"]
    listed = await execute(client, "quickdev.listRuns", {})
    (summary,) = [r for r in listed["runs"] if r["runId"] == run_id]
    assert summary["status"] == "passed"
    assert summary["script"].endswith("train me.py")
    assert summary["batches"] >= 2
    detail = await execute(client, "quickdev.getRun", {"runId": run_id})
    assert detail["result"]["id"] == run_id


async def test_a_broken_torch_install_fails_the_run_with_its_message(
    client: LanguageClient, script: Path, tmp_path: Path
) -> None:
    """An environment whose torch cannot be imported: the run fails and says why."""
    venv = tmp_path / "broken env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("raise ImportError('this torch is broken')\n")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"quickdev": {"python": str(venv / "bin" / "python")}}
        )
    )
    changes = collect_run_changes(client)
    answer = await execute(client, "quickdev.startJob", {"script": str(script)})
    assert "error" not in answer, answer
    failed = await wait_for(lambda: final(changes, answer["runId"]), "the run to fail")
    assert failed["status"] == "failed"
    assert "this torch is broken" in failed["error"]["message"]
    assert "\n" not in failed["error"]["message"]


async def test_shutdown_while_a_start_is_pending_answers_and_kills_the_job(
    workspace: Path, script: Path
) -> None:
    """The editor restarts the server (a settings change) while a debug start still waits for
    its debugger: shutdown must answer, not fail, no job may outlive it, and the server must
    exit cleanly. A plain pygls client, since this test ends the session itself."""
    import asyncio

    import psutil
    from pygls.lsp.client import LanguageClient as PlainClient

    client = PlainClient("shutdown-test", "1")
    await client.start_io(sys.executable, "-m", "quickdev", "serve")
    process = client._server
    assert process is not None
    try:
        await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name="ws")],
            )
        )
        client.initialized(types.InitializedParams())
        server = psutil.Process(process.pid)
        start = asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="quickdev.startJob",
                    arguments=[{"script": str(script), "mode": "debug"}],
                )
            )
        )

        def job_processes() -> list[psutil.Process] | None:
            found = []
            for child in server.children(recursive=True):
                # The interpreter check's child may have just ended (a zombie): skip it.
                with contextlib.suppress(psutil.Error):
                    if "run" in child.cmdline():
                        found.append(child)
            return found or None

        jobs = await wait_for(job_processes, "the job process")
        assert not start.done()
        await client.shutdown_async(None)  # raises if the server answers with an error
        with pytest.raises(Exception, match="cancel"):
            await start  # the pending start ends too, it does not hang
        _gone, alive = psutil.wait_procs(jobs, timeout=30)
        assert not alive, f"jobs outlived the server's shutdown: {alive}"
        client.exit(None)
        assert await asyncio.wait_for(process.wait(), timeout=30) == 0
    finally:
        if process.returncode is None:
            process.kill()
        await client.stop()

"""The server and what it starts never import the workspace's modules or lend it theirs.

The editor starts ``python -m quickdev serve`` in the first workspace folder, and with
the libraries it bundles for the server on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typing_extensions

from tests.support.debug import assert_injection_refusal_text, host_injection_problem
from tests.support.server import collect_run_changes, execute, final, server_in, wait_for

pytestmark = pytest.mark.asyncio

SHADOW = 'raise ImportError("the workspace\'s {name} was imported")\n'


def hostile_workspace(folder: Path) -> Path:
    """A workspace whose files shadow what the server itself imports."""
    folder.mkdir()
    for name in ("logging", "json", "typing", "argparse"):
        (folder / f"{name}.py").write_text(SHADOW.format(name=name), encoding="utf-8")
    (folder / "attrs").mkdir()
    (folder / "attrs" / "__init__.py").write_text(SHADOW.format(name="attrs"), encoding="utf-8")
    (folder / "train.py").write_text("if __name__ == '__main__':\n    pass\n", encoding="utf-8")
    return folder


async def test_server_starts_in_a_workspace_that_shadows_its_modules(tmp_path: Path) -> None:
    workspace = hostile_workspace(tmp_path / "shadows")
    async with server_in(workspace, workspace) as client:
        answer = await execute(client, "quickdev.scanWorkspace", {})
        assert answer["folders"][0]["entryScripts"] == [
            {"path": str(workspace / "train.py"), "kind": "main_guard"}
        ], answer
        # The helper that injects debugpy (quickdev attach --pid) is a process of its own.
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        try:
            answer = await execute(client, "quickdev.attachPid", {"pid": sleeper.pid})
            if host_injection_problem() is None:
                assert answer["attach"]["pid"] == sleeper.pid, answer
            else:
                assert_injection_refusal_text(answer["error"])
        finally:
            sleeper.kill()
            sleeper.wait()


PRINT_PATH = textwrap.dedent(
    """
    import json, sys
    import typing_extensions
    print("SYS_PATH=" + json.dumps({
        "path": sys.path,
        "bundled": getattr(typing_extensions, "BUNDLED_COPY", False),
    }))
    """
)


async def test_a_job_sees_the_users_libraries_not_the_servers(tmp_path: Path) -> None:
    bundled = tmp_path / "bundled libs"
    bundled.mkdir()
    # The server's own copy: a working typing_extensions (the server imports it) that
    # says where it came from.
    shutil.copy(typing_extensions.__file__, bundled / "typing_extensions.py")
    with (bundled / "typing_extensions.py").open("a", encoding="utf-8") as f:
        f.write("\nBUNDLED_COPY = True\n")
    user_libs = tmp_path / "user libs"
    user_libs.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = workspace / "show_path.py"
    script.write_text(PRINT_PATH, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(bundled), str(user_libs)]),
        # What the extension sets: the PYTHONPATH before it added its libraries.
        "QUICKDEV_USER_PYTHONPATH": str(user_libs),
    }
    async with server_in(workspace, workspace, env) as client:
        changes = collect_run_changes(client)
        started = await execute(client, "quickdev.startJob", {"script": str(script), "args": []})
        assert "error" not in started, started
        done = await wait_for(lambda: final(changes, started["runId"]), "the job's end")
        assert done["status"] == "passed", done
    run_dir = Path(started["runDir"])
    # Private on a shared machine: arguments, output, a debug port nobody else may use.
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(run_dir.parent.stat().st_mode) == 0o700
    output = (run_dir / "output.log").read_text(encoding="utf-8")
    seen = json.loads(output.split("SYS_PATH=", 1)[1].splitlines()[0])
    assert seen["bundled"] is False, "the job imported the server's typing_extensions"
    assert str(bundled) not in seen["path"]
    assert str(user_libs) in seen["path"]

"""``quickdev.scanWorkspace``: the entry scripts a launch configuration can be made for."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.server import execute, lenses, open_document, uri

pytestmark = pytest.mark.asyncio


async def test_scan_finds_entry_scripts_and_skips_the_rest(
    client: LanguageClient, workspace: Path
) -> None:
    (workspace / ".venv" / "lib").mkdir(parents=True)
    (workspace / ".venv" / "lib" / "tool.py").write_text("if __name__ == '__main__':\n    pass\n")
    (workspace / "broken.py").write_text("if __name__ == '__main__':\n    def (\n")
    (workspace / "binary.py").write_bytes(b"if __name__ == '__main__': \xff\xfe\n")
    (workspace / "models" / "cli.py").write_text("from x import main\n\nmain()\n")
    answer = await execute(client, "quickdev.scanWorkspace", {})
    (folder,) = answer["folders"]
    assert folder["folder"] == str(workspace)
    assert folder["entryScripts"] == [
        {"path": str(workspace / "loop.py"), "kind": "top_level_loop"},
        {"path": str(workspace / "models" / "cli.py"), "kind": "main_call"},
        {"path": str(workspace / "train lit.py"), "kind": "lightning"},
    ]


async def test_scan_of_given_folders(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other project"
    other.mkdir()
    (other / "run.py").write_text("if __name__ == '__main__':\n    print('hi')\n")
    missing = tmp_path / "missing"
    answer = await execute(
        client, "quickdev.scanWorkspace", {"folders": [str(other), str(missing)]}
    )
    assert answer["folders"] == [
        {
            "folder": str(other),
            "entryScripts": [{"path": str(other / "run.py"), "kind": "main_guard"}],
        },
        {"folder": str(missing), "entryScripts": [], "error": "folder not found"},
    ]
    answer = await execute(client, "quickdev.scanWorkspace", {"folders": "not a list"})
    assert answer == {"error": '"folders" must be a list of folder paths'}


async def test_settings_pulled_when_the_client_only_says_they_changed(
    client: LanguageClient, workspace: Path
) -> None:
    """VS Code's newer clients send an empty didChangeConfiguration and answer a pull."""
    document_uri = open_document(client, workspace / "train lit.py")
    assert len(await lenses(client, document_uri)) > 3
    client.set_configuration(
        {
            "lenses": {
                "run": True,
                "debug": False,
                "profile": False,
                "nonfinite": False,
                "step": False,
                "memory": False,
            }
        },
        section="quickdev",
    )
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def only_run_lens() -> bool:
        titles = [lens.command.title for lens in await lenses(client, document_uri) if lens.command]
        return titles == ["Quick-dev run", "Run with Arguments…"]

    deadline = time.monotonic() + 30
    while not await only_run_lens():
        assert time.monotonic() < deadline, "the pulled settings never took effect"
        await asyncio.sleep(0.05)


async def test_a_saved_new_script_becomes_the_one_a_module_step_runs(
    client: LanguageClient, workspace: Path
) -> None:
    await execute(client, "quickdev.scanWorkspace", {})
    module_uri = open_document(client, workspace / "models" / "backbone.py")

    async def step_script() -> str:
        (lens,) = await lenses(client, module_uri)
        assert lens.command is not None
        return str((lens.command.arguments or [{}])[0]["script"])

    assert not (await step_script()).endswith("train_backbone.py")
    script = workspace / "models" / "train_backbone.py"
    script.write_text(
        "from backbone import Backbone\n\nif __name__ == '__main__':\n    Backbone()\n"
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri(script)))
    )
    deadline = time.monotonic() + 30
    while await step_script() != str(script):
        assert time.monotonic() < deadline, "the saved script was never picked up"
        await asyncio.sleep(0.05)


async def test_an_added_workspace_folder_is_scanned(client: LanguageClient, tmp_path: Path) -> None:
    added = tmp_path / "second folder"
    added.mkdir()
    (added / "train.py").write_text("if __name__ == '__main__':\n    pass\n")
    module = added / "data.py"
    module.write_text(
        "from torch.utils.data import Dataset\n\nclass D(Dataset):\n"
        "    def __getitem__(self, i):\n        return i\n"
    )
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=uri(added), name=added.name)], removed=[]
            )
        )
    )
    module_uri = open_document(client, module)
    deadline = time.monotonic() + 30
    while True:
        (lens,) = await lenses(client, module_uri)
        assert lens.command is not None
        if (lens.command.arguments or [{}])[0]["script"] == str(added / "train.py"):
            break
        assert time.monotonic() < deadline, "the added folder was never scanned"
        await asyncio.sleep(0.05)


async def test_scan_goes_on_past_a_file_too_deep_to_parse(
    client: LanguageClient, workspace: Path
) -> None:
    # A generated file (400 KB, one long expression): the parser recurses past its limit.
    deep = "x = " + "1 + " * 100_000 + "1\nif __name__ == '__main__':\n    pass\n"
    (workspace / "aa_generated.py").write_text(deep)
    answer = await execute(client, "quickdev.scanWorkspace", {})
    (folder,) = answer["folders"]
    assert [Path(s["path"]).name for s in folder["entryScripts"]] == ["loop.py", "train lit.py"]
    # Lenses for it: none, and the server answers the next request.
    assert await lenses(client, open_document(client, workspace / "aa_generated.py")) == []
    assert await lenses(client, open_document(client, workspace / "loop.py"))

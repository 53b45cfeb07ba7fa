"""Code lenses from the real server: what the editor shows above entry points and steps."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.server import lenses, open_document, server_pid, torch_loaded_in, uri

pytestmark = pytest.mark.asyncio


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


def summary(found: list[types.CodeLens]) -> list[tuple[int, str, str]]:
    return [
        (lens.range.start.line, lens.command.title, lens.command.command)
        for lens in found
        if lens.command is not None
    ]


async def test_entry_and_step_lenses(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "train lit.py"
    text = path.read_text()
    found = await lenses(client, open_document(client, path))
    guard = line_of(text, 'if __name__ == "__main__":')
    shown = summary(found)
    assert shown[:6] == [
        (guard, "Quick-dev run", "quickdev.lens.run"),
        (guard, "Run with Arguments…", "quickdev.lens.runWithArguments"),
        (guard, "Debug", "quickdev.lens.debug"),
        (guard, "Profile", "quickdev.lens.profile"),
        (guard, "Find first NaN", "quickdev.lens.findNonfinite"),
        (guard, "Memory forecast", "quickdev.lens.memoryForecast"),
    ]
    assert found[0].command is not None
    assert list(found[0].command.arguments or []) == [{"script": str(path)}]
    # Every lens says what it will do when hovered.
    assert all(lens.command and lens.command.tooltip for lens in found)
    titles = {lens.range.start.line: lens.command.title for lens in found if lens.command}
    assert titles[line_of(text, "def training_step")] == "Debug this step"
    assert titles[line_of(text, "def __getitem__")] == "Debug __getitem__"
    steps = {
        lens.range.start.line: (lens.command.arguments or [None])[0]
        for lens in found
        if lens.command and lens.command.command == "quickdev.lens.debugStep"
    }
    training = line_of(text, "def training_step")
    assert training in steps
    # The breakpoint goes on the first statement after the docstring.
    assert steps[training] == {
        "script": str(path),
        "file": str(path),
        "line": line_of(text, "x, y = batch"),
    }
    assert line_of(text, "def __getitem__") in steps
    assert line_of(text, "def validation_step") in steps
    assert not torch_loaded_in(server_pid(client))


async def test_step_in_a_module_runs_the_nearest_entry_script(
    client: LanguageClient, workspace: Path
) -> None:
    path = workspace / "models" / "backbone.py"
    # The start-up scan finds the entry scripts; ask explicitly to not race it.
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="quickdev.scanWorkspace", arguments=[{}])
    )
    found = await lenses(client, open_document(client, path))
    (lens,) = found
    assert lens.command is not None and lens.command.command == "quickdev.lens.debugStep"
    argument = (lens.command.arguments or [None])[0]
    assert argument["file"] == str(path)
    assert argument["script"] in {str(workspace / "train lit.py"), str(workspace / "loop.py")}


async def test_installed_libraries_get_no_lenses(client: LanguageClient, tmp_path: Path) -> None:
    """Stepping into torch opens its files; their forward methods are not the user's steps."""
    library = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "torch" / "nn"
    library.mkdir(parents=True)
    module = library / "container.py"
    module.write_text(
        "import torch.nn as nn\n\n\nclass Sequential(nn.Module):\n"
        "    def forward(self, x):\n        return x\n"
    )
    assert await lenses(client, open_document(client, module)) == []


async def test_lenses_follow_edits_and_survive_syntax_errors(
    client: LanguageClient, workspace: Path
) -> None:
    path = workspace / "train lit.py"
    text = path.read_text()
    document_uri = open_document(client, path)
    before = summary(await lenses(client, document_uri))

    def change(version: int, new_text: str) -> None:
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=document_uri, version=version
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )

    change(2, "import os\nimport sys\n" + text)
    after = summary(await lenses(client, document_uri))
    assert after == [(line + 2, title, command) for line, title, command in before]

    # Typing an unclosed parenthesis: lenses stay (shifted by the edit), nothing crashes.
    broken = "import os\nimport sys\n" + text.replace("def main() -> None:", "def main(")
    change(3, broken)
    assert summary(await lenses(client, document_uri)) == after

    change(4, "")
    assert await lenses(client, document_uri) == []


async def test_lens_switches_from_configuration(client: LanguageClient, workspace: Path) -> None:
    document_uri = open_document(client, workspace / "train lit.py")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={
                "quickdev": {
                    "lenses": {"debug": False, "step": False, "nonfinite": False, "memory": False}
                }
            }
        )
    )
    titles = {title for _, title, _ in summary(await lenses(client, document_uri))}
    # "Run with Arguments…" goes with the run switch.
    assert titles == {"Quick-dev run", "Run with Arguments…", "Profile"}


@pytest.mark.parametrize(
    "document_uri",
    [
        "untitled:Untitled-1",
        "vscode-notebook-cell:/home/u/nb.ipynb#W0sZmlsZQ%3D%3D",
    ],
)
async def test_unsaved_buffers_and_notebook_cells_get_no_lenses(
    client: LanguageClient, document_uri: str
) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=document_uri,
                language_id="python",
                version=1,
                text='if __name__ == "__main__":\n    pass\n',
            )
        )
    )
    assert await lenses(client, document_uri) == []


async def test_closed_files_with_odd_encodings(client: LanguageClient, workspace: Path) -> None:
    latin = workspace / "latin.py"
    latin.write_bytes(
        "# -*- coding: latin-1 -*-\n# é\nif __name__ == '__main__':\n    pass\n".encode("latin-1")
    )
    assert [lens.range.start.line for lens in await lenses(client, uri(latin))] == [2] * 6
    garbage = workspace / "garbage.py"
    garbage.write_bytes(b"\xff\xfe\x00 not python \x80\x81")
    assert await lenses(client, uri(garbage)) == []
    assert await lenses(client, uri(workspace / "missing.py")) == []


async def test_fifty_thousand_line_file(client: LanguageClient, workspace: Path) -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(16_000))
    text = body + "\nif __name__ == '__main__':\n    f1(1)\n"
    assert text.count("\n") > 48_000
    started = time.monotonic()
    found = await lenses(client, open_document(client, workspace / "huge.py", text))
    assert time.monotonic() - started < 30
    assert {lens.range.start.line for lens in found} == {text.count("\n") - 2}


async def test_other_requests_are_answered_while_a_huge_file_is_analysed(
    client: LanguageClient, workspace: Path
) -> None:
    """The first analysis of a generated 50,000-line file takes about a second; meanwhile
    the server answers the editor's other requests (lenses for the file being edited)."""
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(17_000))
    text = body + "\nif __name__ == '__main__':\n    f1(1)\n"
    huge = open_document(client, workspace / "generated.py", text)
    small = open_document(client, workspace / "train lit.py")
    answered: list[str] = []
    pending = asyncio.ensure_future(lenses(client, huge))
    pending.add_done_callback(lambda _: answered.append("huge"))
    await asyncio.sleep(0)  # the huge file's request goes out first
    assert await lenses(client, small)
    answered.append("small")
    assert len(await pending) == 6  # run, with arguments, debug, profile, first NaN, memory
    assert answered == ["small", "huge"]


async def test_a_file_over_the_bound_gets_no_lenses(
    client: LanguageClient, workspace: Path
) -> None:
    from quickdev.server.documents import MAX_DOCUMENT_CHARS

    line = "x = 1  # generated\n"
    text = "if __name__ == '__main__':\n    pass\n" + line * (MAX_DOCUMENT_CHARS // len(line))
    started = time.monotonic()
    assert await lenses(client, open_document(client, workspace / "data.py", text)) == []
    assert time.monotonic() - started < 30


async def test_bad_settings_are_reported_not_fatal(client: LanguageClient, workspace: Path) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"quickdev": {"batches": "many"}})
    )
    document_uri = open_document(client, workspace / "train lit.py")
    assert await lenses(client, document_uri)  # the server still answers
    messages: list[Any] = [m.message for m in client.messages]
    assert any("quickdev.batches" in m for m in messages), messages


async def test_edit_in_a_huge_class_answers_at_once_then_refreshes(
    client: LanguageClient, workspace: Path
) -> None:
    """A class too big to re-parse per keystroke: shifted lenses now, exact ones after a pause."""
    methods = "".join(f"    def helper_{i}(self, x):\n        return x\n\n" for i in range(400))
    text = "import torch.nn as nn\n\n\nclass Huge(nn.Module):\n" + methods
    path = workspace / "huge_model.py"
    path.write_text(text)
    document_uri = open_document(client, path)
    assert await lenses(client, document_uri) == []
    edited = text + "    def forward(self, x):\n        return x\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=document_uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    refreshes = client.lens_refreshes  # type: ignore[attr-defined]
    # Answered at once from the last good analysis, which has no forward yet.
    assert await lenses(client, document_uri) == []
    forward_line = edited.count("\n") - 2
    deadline = time.monotonic() + 30
    while [lens.range.start.line for lens in await lenses(client, document_uri)] != [forward_line]:
        assert time.monotonic() < deadline, "the settled analysis never showed the new step"
        await asyncio.sleep(0.05)
    assert client.lens_refreshes > refreshes  # type: ignore[attr-defined]


async def test_a_module_level_script_gets_its_lenses_at_the_top_and_its_loop(
    client: LanguageClient, workspace: Path
) -> None:
    """nanoGPT's layout: run lenses above the first line, "Debug this step" above the
    training loop (not above an if/elif chain that happens to hold a loop)."""
    sample = Path(__file__).parents[1] / "analysis" / "samples" / "module_level_gpt.py"
    path = workspace / "train_gpt.py"
    text = sample.read_text()
    path.write_text(text)
    shown = summary(await lenses(client, open_document(client, path)))
    loop = line_of(text, "while True:")
    assert shown == [
        (0, "Quick-dev run", "quickdev.lens.run"),
        (0, "Run with Arguments…", "quickdev.lens.runWithArguments"),
        (0, "Debug", "quickdev.lens.debug"),
        (0, "Profile", "quickdev.lens.profile"),
        (0, "Find first NaN", "quickdev.lens.findNonfinite"),
        (0, "Memory forecast", "quickdev.lens.memoryForecast"),
        (line_of(text, "def forward"), "Debug forward", "quickdev.lens.debugStep"),
        (loop, "Debug this step", "quickdev.lens.debugStep"),
    ]

"""Tensor shapes in the editor, through the real server after real quick-dev runs.

A GPT-style model file trained by a single-file script (``shape_scripts/gpt``), and a CNN
training script with a larger test batch (``shape_scripts/cnn``), both with synthetic data:
after a run, ``textDocument/inlayHint`` over ``forward`` gives each assignment its shapes,
computed here from the scripts' own configuration; an edit above moves them, an edit of
a line drops its hint, the hover shows statistics and the run, one command clears them.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.server import (
    DEADLINE_S,
    collect_run_changes,
    execute,
    final,
    lenses,
    open_document,
    wait_for,
)

pytestmark = pytest.mark.asyncio

SCRIPTS = Path(__file__).parent / "shape_scripts"


def module_constants(path: Path) -> dict[str, Any]:
    """The script's configuration: its module-level ``name = literal`` assignments."""
    constants: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return constants


def argparse_default(path: Path, option: str) -> int:
    match = re.search(rf'"{option}", type=int, default=(\d+)', path.read_text())
    assert match, option
    return int(match.group(1))


def line_of(path: Path, text: str, after: int = 0) -> int:
    """0-based line of the first line holding ``text`` at or after line ``after``."""
    lines = path.read_text().splitlines()
    return next(i for i in range(after, len(lines)) if text in lines[i])


async def hints(client: LanguageClient, uri: str, first: int, last: int) -> dict[int, list[str]]:
    answer = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(first, 0), types.Position(last, 0)),
        )
    )
    by_line: dict[int, list[str]] = {}
    for hint in answer or []:
        assert isinstance(hint.label, str)
        by_line.setdefault(hint.position.line, []).append(hint.label)
    return by_line


async def run_to_end(client: LanguageClient, script: Path, mode: str = "run") -> dict[str, Any]:
    changes = getattr(client, "run_changes", None)
    if changes is None:
        changes = client.run_changes = collect_run_changes(client)  # type: ignore[attr-defined]
    answer = await execute(client, "quickdev.startJob", {"script": str(script), "mode": mode})
    assert "error" not in answer, answer
    ended = await wait_for(lambda: final(changes, answer["runId"]), f"the {mode} run to end")
    assert ended["status"] == "passed", ended
    return ended


async def edit(
    client: LanguageClient,
    uri: str,
    version: int,
    line: int,
    new_text: str,
    end_line: int | None = None,
) -> None:
    """Replace lines ``line``..``end_line`` (0-based, end excluded; None: insert) by
    ``new_text``."""
    end = line if end_line is None else end_line
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(line, 0), types.Position(end, 0)),
                    text=new_text,
                )
            ],
        )
    )


@pytest.fixture
def gpt(workspace: Path) -> Path:
    folder = workspace / "gpt model"
    shutil.copytree(SCRIPTS / "gpt", folder)
    return folder


@pytest.fixture
def mingpt(workspace: Path) -> Path:
    folder = workspace / "min gpt"
    shutil.copytree(SCRIPTS / "mingpt", folder)
    return folder


@pytest.fixture
def cnn(workspace: Path) -> Path:
    folder = workspace / "cnn"
    shutil.copytree(SCRIPTS / "cnn", folder)
    return folder


async def test_gpt_attention_shapes_follow_edits_and_hover_shows_statistics(
    client: LanguageClient, gpt: Path
) -> None:
    config = module_constants(gpt / "train.py")
    b, t, c, nh = (config[k] for k in ("batch_size", "block_size", "n_embd", "n_head"))
    model = gpt / "model.py"
    uri = open_document(client, model)
    ended = await run_to_end(client, gpt / "train.py")

    start = line_of(model, "class CausalSelfAttention")
    forward = line_of(model, "def forward(self, x):", start)
    end = line_of(model, "return y", forward)
    qkv = line_of(model, "q, k, v = self.c_attn(x)", forward)
    sdpa_end = line_of(model, ")", line_of(model, "F.scaled_dot_product_attention(", forward))
    heads = [f"f32[{b}, {nh}, {t}, {c // nh}]"]
    expected = {
        forward: [f"x: f32[{b}, {t}, {c}]"],
        qkv: [f"q: f32[{b}, {t}, {c}]", f"k: f32[{b}, {t}, {c}]", f"v: f32[{b}, {t}, {c}]"],
        qkv + 1: [f"k: {heads[0]}"],
        qkv + 2: [f"q: {heads[0]}"],
        qkv + 3: [f"v: {heads[0]}"],
        sdpa_end: [f"y: {heads[0]}"],
        sdpa_end + 1: [f"y: f32[{b}, {t}, {c}]"],
        sdpa_end + 2: [f"y: f32[{b}, {t}, {c}]"],
    }
    found = await wait_for_hints(client, uri, start, end)
    assert found == expected  # `B, T, C = x.size()` binds no tensor: no hint

    # Two lines typed above the class: every hint moves down two lines, unchanged.
    await edit(client, uri, 2, start, "# a comment\n# another\n")
    moved = await hints(client, uri, start, end + 2)
    assert moved == {line + 2: labels for line, labels in expected.items()}

    # The q/k/v line edited: its hints go (the next run brings them back); the others stay.
    await edit(
        client, uri, 3, qkv + 2, "        q, k, v = self.c_attn(x).chunk(3, dim=2)\n", qkv + 3
    )
    edited = await hints(client, uri, start, end + 2)
    assert edited == {line + 2: labels for line, labels in expected.items() if line != qkv}

    # The hover on a bound name: its full text, statistics and the run it came from.
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(qkv + 1 + 2, 9),  # on `k` of `k = k.view(...)`
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert f"`k: {heads[0]} cpu grad` — training" in text
    assert re.search(r"min -?\d.* · max -?\d.* · mean -?\d.* · NaN 0 · Inf 0", text), text
    assert ended["runId"] in text

    # The whole run: the training loop's lines in the script, and the evaluation's.
    train = gpt / "train.py"
    train_uri = open_document(client, train)
    loop = line_of(train, "logits, loss = model(X, Y)", line_of(train, "while True:"))
    script_hints = await hints(client, train_uri, 0, loop + 1)
    vocab = 65
    assert script_hints[loop] == [f"logits: f32[{b}, {t}, {vocab}]", "loss: f32[]"]
    assert script_hints[line_of(train, "losses = torch.zeros(eval_iters)")] == [
        f"losses: f32[{config['eval_iters']}]"
    ]


async def wait_for_hints(
    client: LanguageClient, uri: str, first: int, last: int
) -> dict[int, list[str]]:
    """The hints once the ended run's record is read (the server reads it off its loop)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = await hints(client, uri, first, last)
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("no inlay hints came after the run")


async def test_cnn_forward_shows_the_train_and_test_batches_of_a_profiled_run(
    client: LanguageClient, cnn: Path
) -> None:
    script = cnn / "train.py"
    train_batch = argparse_default(script, "--batch-size")
    test_batch = argparse_default(script, "--test-batch-size")
    uri = open_document(client, script)
    ended = await run_to_end(client, script, mode="profile")
    assert any(Path(ended["runDir"]).rglob("*.pt.trace.json*")), "not a profiled run"

    forward = line_of(script, "def forward(self, x):")
    end = line_of(script, "return output", forward)

    def both(*dims: int) -> str:
        shape = ", ".join(str(d) for d in dims)
        return f"f32[{train_batch}, {shape}] | f32[{test_batch}, {shape}]"

    found = await wait_for_hints(client, uri, forward, end)
    lines = script.read_text().splitlines()
    shown = {
        lines[line].strip(): labels
        for line, labels in found.items()
        if lines[line].strip() != "x = F.relu(x)"
    }
    # 28x28 images; 3x3 convolutions without padding, then a 2x2 pool.
    assert shown == {
        "def forward(self, x):": [f"x: {both(1, 28, 28)}"],
        "x = self.conv1(x)": [f"x: {both(32, 26, 26)}"],
        "x = self.conv2(x)": [f"x: {both(64, 24, 24)}"],
        "x = F.max_pool2d(x, 2)": [f"x: {both(64, 12, 12)}"],
        "x = self.dropout1(x)": [f"x: {both(64, 12, 12)}"],
        "x = torch.flatten(x, 1)": [f"x: {both(9216)}"],
        "x = self.fc1(x)": [f"x: {both(128)}"],
        "x = self.dropout2(x)": [f"x: {both(128)}"],
        "x = self.fc2(x)": [f"x: {both(10)}"],
        "output = F.log_softmax(x, dim=1)": [f"output: {both(10)}"],
    }
    # Three lines of the same text, each with its own shapes.
    relus = [i for i in range(forward, end) if lines[i].strip() == "x = F.relu(x)"]
    assert [found[i] for i in relus] == [
        [f"x: {both(32, 26, 26)}"],
        [f"x: {both(64, 24, 24)}"],
        [f"x: {both(128)}"],
    ]
    # The loops' batches, in train() and in test() under no_grad.
    train_loop = line_of(script, "for batch_idx, (data, target) in enumerate(train_loader):")
    test_loop = line_of(script, "for data, target in test_loader:")
    loops = await hints(client, uri, train_loop, test_loop)
    assert loops[train_loop] == [
        f"data: f32[{train_batch}, 1, 28, 28]",
        f"target: i64[{train_batch}]",
    ]
    assert loops[test_loop] == [f"data: f32[{test_batch}, 1, 28, 28]", f"target: i64[{test_batch}]"]


async def test_one_click_clears_the_hints_until_the_next_run(
    client: LanguageClient, cnn: Path
) -> None:
    script = cnn / "train.py"
    uri = open_document(client, script)
    ended = await run_to_end(client, script)
    everything = (0, len(script.read_text().splitlines()))
    assert await wait_for_hints(client, uri, *everything)

    (lens,) = [
        lens
        for lens in await lenses(client, uri)
        if lens.command and lens.command.command == "quickdev.lens.clearShapes"
    ]
    assert lens.command is not None and ended["runId"] in lens.command.title
    assert lens.range.start.line == line_of(script, "def forward(self, x):")

    assert await execute(client, "quickdev.clearShapes", {}) == {"cleared": 1}
    assert await hints(client, uri, *everything) == {}
    assert not [
        lens
        for lens in await lenses(client, uri)
        if lens.command and "clearShapes" in lens.command.command
    ]
    await run_to_end(client, script)
    assert await wait_for_hints(client, uri, *everything)


async def test_the_setting_off_records_nothing_and_shows_nothing(
    client: LanguageClient, cnn: Path
) -> None:
    script = cnn / "train.py"
    uri = open_document(client, script)
    await run_to_end(client, script)
    assert await wait_for_hints(client, uri, 0, 200)

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"quickdev": {"tensorShapes": False}})
    )
    assert await hints(client, uri, 0, 200) == {}
    ended = await run_to_end(client, script)
    run_dir = Path(ended["runDir"])
    assert "--no-shapes" in json.loads((run_dir / "process.json").read_text())["command"]
    assert not (run_dir / "shapes.json").exists()


async def test_a_run_finished_in_a_terminal_refreshes_the_hints_and_they_say_what_was_left_out(
    client: LanguageClient, workspace: Path, mingpt: Path
) -> None:
    """``quickdev run`` in a terminal at the workspace's root (its default runs directory,
    the server's): once its record is written the editor is asked for hints again, with
    no keystroke. minGPT's attention saw the training batch and every length generate()
    fed it; the hint shows three and counts the rest. The sample generate() returned when
    the evaluation budget ended its loop is marked as cut short."""
    model = mingpt / "mingpt" / "model.py"
    uri = open_document(client, model)
    script_uri = open_document(client, mingpt / "chargpt.py")
    everything = (0, len(model.read_text().splitlines()))
    assert await hints(client, uri, *everything) == {}  # no run yet
    refreshes = client.hint_refreshes  # type: ignore[attr-defined]

    terminal = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "quickdev", "run", str(mingpt / "chargpt.py"),
        cwd=workspace, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(terminal.communicate(), DEADLINE_S)
    assert terminal.returncode == 0, output.decode()
    assert list((workspace / ".quickdev" / "runs").glob("*/shapes.json"))
    await wait_for(
        lambda: client.hint_refreshes > refreshes or None,  # type: ignore[attr-defined]
        "the editor to be asked for inlay hints again",
    )

    found = await hints(client, uri, *everything)
    qkv = line_of(model, "q, k ,v  = self.c_attn(x).split(self.n_embd, dim=2)")
    # gpt-nano: 48 wide; batch 8 of 32 characters; 20 evaluation forwards from 13 characters.
    lengths = [f"f32[1, {n}, 48]" for n in range(13, 33)]
    assert found[qkv][0] == f"q: f32[8, 32, 48] | {lengths[0]} | {lengths[1]} | +18 more"
    sample = line_of(mingpt / "chargpt.py", "y = model.generate(x, 500")
    script_hints = await hints(client, script_uri, sample, sample + 1)
    assert script_hints[sample] == ["y: i64[33] (cut by budget)"]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=script_uri),
            position=types.Position(sample, 16),  # on `y`
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    loop = line_of(model, "for _ in range(max_new_tokens):") + 1
    assert (
        f"**Cut short by a budget**: the loop at model.py:{loop} was ended by the "
        "eval_forwards budget after 20 forwards" in hover.contents.value
    )

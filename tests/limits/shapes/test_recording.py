"""What a real quick-dev run records of the user's code (``quickdev.limits.shapes``), on
training-code idioms of several styles, read as the editor shows it (``shape_text``): the
shapes each line bound, by phase; structures; the user's files only; a bounded cost."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from quickdev.limits.shapes.observe import MAX_VALUES, PASSES
from quickdev.rundir.shapes import NameRecord, ShapesRecord, read_shapes, shape_text

from tests.support.idioms import copy_idioms, run_idiom

SCRIPTS = Path(__file__).parent / "scripts"

Lines = dict[str, dict[str, NameRecord]]  # a line's text → its names


def recorded(run: Any) -> tuple[ShapesRecord, dict[str, Lines]]:
    """The run's record, and per file (by name) each recorded line's names."""
    record = read_shapes(run.run_dir)
    assert record is not None, f"no shapes.json in {run.run_dir}"
    files: dict[str, Lines] = {}
    for file in record.files:
        text = Path(file.path).read_text().splitlines()
        lines = files.setdefault(Path(file.path).name, {})
        for binding in file.bindings:
            lines[text[binding.line - 1].strip()] = {n.name: n for n in binding.names}
    return record, files


def shapes(name: NameRecord) -> list[str]:
    return [shape_text(seen.value) for seen in name.seen]


def phases(name: NameRecord) -> list[list[str]]:
    return [seen.phases for seen in name.seen]


def default(script: Path, option: str) -> int:
    match = re.search(rf'"{option}", type=int, default=(\d+)', script.read_text())
    assert match, option
    return int(match.group(1))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = copy_idioms(tmp_path)
    shutil.copytree(SCRIPTS, folder, dirs_exist_ok=True)
    return folder


def test_word_lm_records_each_batch_size_by_phase_and_the_lstm_state_tuple(
    run_quickdev: Any, project: Path
) -> None:
    script = project / "word_lm.py"
    bptt, batch = default(script, "--bptt"), default(script, "--batch_size")
    eval_batch = 10  # batchify(..., 10) for the validation and test data
    run = run_idiom(run_quickdev, project, "word_lm.py")
    _, files = recorded(run)
    lines = files["word_lm.py"]

    out = lines["out, _ = self.rnn(self.encoder(x))"]
    assert shapes(out["out"]) == [f"f32[{bptt}, {batch}, 64]", f"f32[{bptt}, {eval_batch}, 64]"]
    assert phases(out["out"]) == [["train"], ["eval"]]
    # The LSTM's (h, c): a tuple of tensors, as Python would print its structure.
    assert shapes(out["_"]) == [
        f"(f32[1, {batch}, 64], f32[1, {batch}, 64])",
        f"(f32[1, {eval_batch}, 64], f32[1, {eval_batch}, 64])",
    ]
    # A function's parameters, seen at its def line; an unpacked return value.
    assert shapes(lines["def forward(self, x):"]["x"]) == [
        f"i64[{bptt}, {batch}]",
        f"i64[{bptt}, {eval_batch}]",
    ]
    evaluation = lines["data, targets = get_batch(source, i)"]
    assert shapes(evaluation["data"]) == [f"i64[{bptt}, {eval_batch}]"]
    assert shapes(evaluation["targets"]) == [f"i64[{bptt * eval_batch}]"]
    assert phases(evaluation["data"]) == [["eval"]]
    assert shapes(lines["loss = criterion(model(data), targets)"]["loss"]) == ["f32[]"]
    # The first item a loop takes: here a parameter, the encoder's weight.
    assert shapes(lines["for p in model.parameters():"]["p"]) == ["f32[500, 64]"]
    assert "for epoch in range(1, args.epochs + 1):" not in lines  # no tensor bound


def test_a_project_module_is_recorded_and_installed_packages_are_not(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "project_trainer.py")
    record, files = recorded(run)
    assert sorted(Path(f.path).relative_to(project).as_posix() for f in record.files) == [
        "project_lib/trainer.py",
        "project_trainer.py",
    ]
    trainer = files["trainer.py"]
    step = trainer["def train_step(self, inputs, targets):"]
    assert (shapes(step["inputs"]), shapes(step["targets"])) == (["f32[32, 6]"], ["f32[32, 1]"])
    assert shapes(
        trainer["loss = torch.nn.functional.mse_loss(self.model(inputs), targets)"]["loss"]
    ) == ["f32[]"]
    assert shapes(files["project_trainer.py"]["x = torch.randn(1024, 6)"]["x"]) == ["f32[1024, 6]"]


def test_dict_batches_and_dict_outputs_keep_their_keys(run_quickdev: Any, project: Path) -> None:
    run = run_idiom(run_quickdev, project, "dict_batches.py")
    _, files = recorded(run)
    lines = files["dict_batches.py"]
    batch = "{input_ids: i64[8, 16], attention_mask: i64[8, 16], labels: i64[8]}"
    assert shapes(lines["for batch in DataLoader(Tokens(), batch_size=BATCH):"]["batch"]) == [batch]
    assert shapes(lines["batch = {k: v.to(device) for k, v in batch.items()}"]["batch"]) == [batch]
    assert shapes(lines["outputs = model(**batch)"]["outputs"]) == [
        "{loss: f32[], logits: f32[8, 2]}"
    ]
    forward = lines["def forward(self, input_ids, attention_mask, labels=None):"]
    assert {name: shapes(n) for name, n in forward.items()} == {
        "input_ids": ["i64[8, 16]"],
        "attention_mask": ["i64[8, 16]"],
        "labels": ["i64[8]"],
    }
    hidden = lines["hidden = self.embed(input_ids) * attention_mask.unsqueeze(-1)"]["hidden"]
    assert shapes(hidden) == ["f32[8, 16, 32]"]
    (seen,) = hidden.seen
    assert seen.value.requires_grad and seen.value.nan == 0  # type: ignore[union-attr]


def test_a_line_run_many_times_is_looked_at_a_few_times_and_keeps_a_bounded_set_of_shapes(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "many_shapes.py")
    (ran,) = re.findall(r"UNROLLED (\d+)", run.stdout)
    _, files = recorded(run)
    lines = files["many_shapes.py"]

    # The cell's line ran once per time step; after PASSES looks that saw nothing new, it
    # was no longer looked at.
    step = lines["h = self.cell(x[:, t], h)"]["h"]
    assert int(ran) >= 200
    assert shapes(step) == ["f32[2, 8]"]
    assert step.times <= PASSES + 1

    # Twelve sequence lengths: the first MAX_VALUES are kept; beyond them the line is looked
    # at PASSES more times (those values are counted, not kept), then no more.
    seq = lines["seq = torch.randn(1, n, 4)"]["seq"]
    assert shapes(seq) == [f"f32[1, {n}, 4]" for n in range(3, 3 + MAX_VALUES)]
    assert (seq.more, seq.times) == (PASSES, MAX_VALUES + PASSES)

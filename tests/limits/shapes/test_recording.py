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
from quickdev.rundir.option_table import BY_NAME, EVAL_FORWARDS
from quickdev.rundir.shapes import LOOKS_STOPPED, NameRecord, ShapesRecord, read_shapes, shape_text
from quickdev.server.shape_words import hint_label

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
    # Each item a loop takes: every parameter, in the model's order (Embedding(500, 64),
    # LSTM(64, 64): four gates a weight, Linear(64, 500)), each shape once.
    p = lines["for p in model.parameters():"]["p"]
    assert shapes(p) == ["f32[500, 64]", "f32[256, 64]", "f32[256]", "f32[500]"]
    assert p.times >= 7 and p.partial is None  # seven parameters: all of them looked at
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

    # Twelve sequence lengths: the first MAX_VALUES are kept; each one beyond them is new, so
    # the line is looked at on: those values are counted, not kept.
    seq = lines["seq = torch.randn(1, n, 4)"]["seq"]
    assert shapes(seq) == [f"f32[1, {n}, 4]" for n in range(3, 3 + MAX_VALUES)]
    assert (seq.more, seq.times) == (12 - MAX_VALUES, 12)


MINGPT = Path(__file__).parents[2] / "server" / "shape_scripts" / "mingpt"


def test_mingpt_keeps_every_length_generate_ran_and_every_parameter_shape_of_a_loop(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """minGPT's chargpt: lines inside the attention run once per layer per forward, and
    generate() feeds a sequence one token longer each forward (13 characters of context,
    then 14, …). Each new input length brings the lines a look: every length that ran is
    recorded, not only the first. The loop over named_parameters() in GPT.__init__ is
    looked at for each parameter, not only the first."""
    project = tmp_path / "project"
    shutil.copytree(MINGPT, project)
    script = project / "chargpt.py"
    run = run_idiom(run_quickdev, project, "chargpt.py", deadline_s=120)
    assert run.result["optimizer_steps"] >= 1  # the trainer trained, then sampled
    # gpt-nano (3 layers, 3 heads, 48 wide) over a 32-character block, batch 8.
    text = script.read_text()
    assert "C.model.model_type = 'gpt-nano'" in text and "C.trainer.batch_size = 8" in text
    layers, heads, width, block, batch = 3, 3, 48, 32, 8
    context = len("O God, O God!")
    forwards = BY_NAME[EVAL_FORWARDS].default  # generate() asks 500; the evaluation budget ends it
    lengths = list(range(context, context + forwards))
    _, files = recorded(run)
    model = files["model.py"]

    q = model["q, k ,v  = self.c_attn(x).split(self.n_embd, dim=2)"]["q"]
    every = [f"f32[{batch}, {block}, {width}]", *(f"f32[1, {n}, {width}]" for n in lengths)]
    assert shapes(q) == every[:MAX_VALUES]
    assert q.more == len(every) - MAX_VALUES and q.partial is None
    assert hint_label(q) == f"q: {' | '.join(every[:3])} | +{len(every) - 3} more"
    att = model["att = F.softmax(att, dim=-1)"]["att"]
    assert shapes(att)[1:3] == [f"f32[1, {heads}, {n}, {n}]" for n in lengths[:2]]
    assert len(att.seen) + att.more == len(every)

    # Every parameter, each distinct shape once, in the model's order; all looked at.
    p = model["for pn, p in self.named_parameters():"]["p"]
    vocab = 23  # the characters of the synthetic text
    per_block = [
        [width], [width],  # ln_1
        [3 * width, width], [3 * width], [width, width], [width],  # attn
        [width], [width],  # ln_2
        [4 * width, width], [4 * width], [width, 4 * width], [width],  # mlp
    ]  # fmt: skip
    parameters = [[vocab, width], [block, width], *per_block * layers, [width], [width]]
    parameters.append([vocab, width])  # lm_head
    distinct = list(dict.fromkeys(f"f32[{', '.join(map(str, s))}]" for s in parameters))
    assert shapes(p) == distinct[:MAX_VALUES] and p.more == len(distinct) - MAX_VALUES
    assert p.times == len(parameters) and p.partial is None
    assert hint_label(p) == f"p: {' | '.join(distinct[:3])} | +{len(distinct) - 3} more"

    # The sample generate() returned when the budget ended its loop: cut short, and said so.
    generated = files["chargpt.py"][
        "y = model.generate(x, 500, temperature=1.0, do_sample=True, top_k=10)[0]"
    ]["y"]
    (seen,) = generated.seen
    assert shape_text(seen.value) == f"i64[{context + forwards}]"  # a full run: i64[513]
    assert seen.cut is not None
    loop = model_line(project / "mingpt" / "model.py", "for _ in range(max_new_tokens):")
    assert (seen.cut.line, seen.cut.budget, seen.cut.count, seen.cut.unit) == (
        loop,
        "eval_forwards",
        forwards,
        "forwards",
    )
    assert Path(seen.cut.file).name == "model.py"
    assert hint_label(generated) == f"y: i64[{context + forwards}] (cut by budget)"
    # Each step inside the loop is a whole step: not cut.
    assert all(s.cut is None for s in model["idx = torch.cat((idx, idx_next), dim=1)"]["idx"].seen)


def model_line(path: Path, text: str) -> int:
    """1-based line of the first statement that starts with ``text``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith(text))


def test_what_a_loop_cut_by_the_batch_budget_accumulated_is_marked_cut(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "collect_preds.py")
    assert "PREDICTIONS 32 of 160" in run.stdout
    _, files = recorded(run)
    lines = files["collect_preds.py"]
    loop = model_line(project / "collect_preds.py", "for (x,) in test_loader:")
    joined = lines["preds = torch.cat(preds)"]["preds"]
    (seen,) = joined.seen
    assert shape_text(seen.value) == "f32[32, 3]"  # two batches of 16, of ten
    assert seen.cut is not None
    assert (seen.cut.line, seen.cut.budget, seen.cut.count, seen.cut.unit) == (
        loop,
        "batches",
        2,
        "batches",
    )
    assert lines["probs = preds.softmax(-1)"]["probs"].seen[0].cut is not None  # made from it
    # A batch's own values, and the last one kept after the loop, are a batch's: not cut.
    assert lines["out = model(x)"]["out"].seen[0].cut is None
    assert lines["last = out"]["last"].seen[0].cut is None
    assert lines["for (x,) in test_loader:"]["x"].seen[0].cut is None


def test_a_shape_that_changed_while_a_line_was_not_looked_at_is_found_and_said(
    run_quickdev: Any, project: Path
) -> None:
    """The state grows at step 5; the line was last looked at in step 3. A later probe (at
    the model's 8th forward) finds the new shape, and the record says shapes may be
    missing in between."""
    run = run_idiom(run_quickdev, project, "shape_drift.py", "--batches", "12")
    assert run.result["optimizer_steps"] == 12
    _, files = recorded(run)
    memory = files["shape_drift.py"]["memory = torch.zeros(2 if step < 5 else 3)"]["memory"]
    assert shapes(memory) == ["f32[2]", "f32[3]"]
    assert memory.partial == LOOKS_STOPPED
    assert hint_label(memory) == "memory: f32[2] | f32[3] | …"


def test_what_a_librarys_loop_ended_by_a_budget_returned_is_marked_cut(
    run_quickdev: Any, project: Path
) -> None:
    """denoising-diffusion's ``diffusion.sample()``: its library's 1,000-step loop is ended
    after the evaluation budget's forwards, and the images the script binds from it are
    partly denoised: marked as cut, naming the library's loop."""
    libraries = Path(__file__).parents[2] / "job" / "libraries"
    run = run_idiom(
        run_quickdev, project, "diffusion_sample.py", env={"PYTHONPATH": str(libraries)}
    )
    assert "FINAL: sampled (4, 8)" in run.stdout
    _, files = recorded(run)
    line = files["diffusion_sample.py"]["sampled_images = diffusion.sample(batch_size=4)"]
    (seen,) = line["sampled_images"].seen
    library = libraries / "tinydiffusion" / "__init__.py"
    assert seen.cut is not None and Path(seen.cut.file) == library
    assert (seen.cut.line, seen.cut.budget, seen.cut.count) == (
        model_line(library, "for t in tqdm("),
        "eval_forwards",
        BY_NAME[EVAL_FORWARDS].default,
    )

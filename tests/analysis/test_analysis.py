"""Static analysis on realistic training scripts: what a user sees as lenses and knobs."""

from pathlib import Path

import pytest
from quickdev.analysis import analyze_file, analyze_text
from quickdev.analysis.knobs import suggested_args

SAMPLES = Path(__file__).parent / "samples"


def line_of(path: Path, needle: str) -> int:
    """0-based line of the first line containing ``needle``."""
    return next(i for i, line in enumerate(path.read_text().splitlines()) if needle in line)


def test_lightning_module_steps_entry_and_knobs() -> None:
    path = SAMPLES / "lit_mnist.py"
    result = analyze_file(path)
    assert result is not None and result.parsed
    assert result.main_entry is not None
    assert result.main_entry.kind == "main_guard"
    assert result.main_entry.line == line_of(path, 'if __name__ == "__main__":')
    assert result.framework_label == "lightning"
    assert result.script_kind == "lightning"

    steps = {s.qualname: s for s in result.steps}
    # LitClassifier derives from LightningModule through a local base class.
    assert steps["LitClassifier.training_step"].kind == "framework_step"
    assert steps["LitClassifier.validation_step"].kind == "framework_step"
    assert steps["LitClassifier.test_step"].kind == "framework_step"
    assert steps["LitClassifier.forward"].kind == "forward"
    assert steps["Backbone.forward"].kind == "forward"
    assert steps["RandomImages.__getitem__"].kind == "getitem"
    assert "LitClassifier.__init__" not in steps
    assert "BaseLit.configure_optimizers" not in steps
    # The breakpoint line skips the docstring: it stops on the first statement.
    training = steps["LitClassifier.training_step"]
    assert training.line == line_of(path, "def training_step")
    assert training.body_line == line_of(path, "x, y = batch")

    # Only an explicit batch size setting passes an argument; the job keeps one epoch.
    assert suggested_args(result.knobs, batch_size=8) == ["--batch-size", "8"]


def test_plain_loop_without_main_guard() -> None:
    path = SAMPLES / "plain_loop.py"
    result = analyze_file(path)
    assert result is not None
    assert result.main_entry is not None
    assert result.main_entry.kind == "top_level_loop"
    # The script runs from its top: its lenses go there, not at its first loop.
    assert result.main_entry.line == 0
    kinds = {s.qualname: s.kind for s in result.steps}
    assert kinds == {
        "Pairs.__getitem__": "getitem",
        "Regressor.forward": "forward",
        "train_one_epoch": "loop_step",
    }
    # A step that loops stops in its loop, once per batch, not once per call.
    (step,) = [s for s in result.steps if s.qualname == "train_one_epoch"]
    assert step.body_line == line_of(path, "opt.zero_grad()")
    assert result.framework_label is None
    assert result.knobs == ()


def test_a_module_level_training_script_runs_from_its_top_and_its_loop_is_the_step() -> None:
    """nanoGPT's layout: globals, an if/elif chain with a loop of its own before the model
    exists, then ``while True:`` with micro steps: no lens at the if/elif's loop."""
    path = SAMPLES / "module_level_gpt.py"
    result = analyze_file(path)
    assert result is not None
    assert [(e.kind, e.line) for e in result.entry_points] == [("top_level_loop", 0)]
    training = [s for s in result.steps if s.kind == "train_loop"]
    assert [(s.qualname, s.line, s.body_line) for s in training] == [
        ("training loop", line_of(path, "while True:"), line_of(path, "# TRAINING STEP"))
    ]
    # estimate_loss() loops without training: not a step.
    assert "estimate_loss" not in {s.qualname for s in result.steps}


def test_the_function_that_trains_is_the_step_not_the_model_forward() -> None:
    """pytorch/examples' mnist layout: train(...) steps the optimizer in its loop."""
    path = SAMPLES / "mnist_functions.py"
    result = analyze_file(path)
    assert result is not None
    assert result.main_entry is not None and result.main_entry.kind == "main_guard"
    steps = {s.qualname: s for s in result.steps}
    assert steps["train"].kind == "train_loop"
    assert (steps["train"].line, steps["train"].body_line) == (
        line_of(path, "def train("),
        line_of(path, "# EACH STEP"),
    )
    assert steps["Net.forward"].kind == "forward"
    # Evaluation loops and main()'s epoch loop (it steps a scheduler) train nothing.
    assert "test" not in steps and "main" not in steps


def test_training_calls_are_told_from_look_alikes() -> None:
    def step_names(body: str) -> list[str]:
        source = f"import torch\n\ndef fn(loader):\n    for batch in loader:\n        {body}\n"
        return [s.qualname for s in analyze_text(source).steps]

    assert step_names("loss.backward()") == ["fn"]
    assert step_names("accelerator.backward(loss)") == ["fn"]
    assert step_names("self.optimizer.step()") == ["fn"]
    assert step_names("scaler.step(optimizer)") == ["fn"]
    assert step_names("scheduler.step()") == []
    assert step_names("env.step(action)") == []


def test_argparse_knobs_and_bare_main_call() -> None:
    path = SAMPLES / "argparse_knobs.py"
    result = analyze_file(path)
    assert result is not None
    assert result.main_entry is not None
    assert result.main_entry.kind == "main_call"
    flags = [k.flag for k in result.knobs]
    # --lr and --epochs-per-eval do not shorten a run.
    assert flags == ["--num_epochs", "--max-steps", "--workers", "--bs", "--smoke-test"]
    assert suggested_args(result.knobs, batch_size=2) == ["--bs", "2"]


def test_module_level_constants_are_knobs_for_advice() -> None:
    result = analyze_text(
        "eval_iters = 200\nmax_iters = 5000\nlr = 3\nfor i in range(9):\n    pass\n"
    )
    knobs = [(k.kind, k.flag, k.line, k.default, k.is_global) for k in result.knobs]
    assert knobs == [
        ("eval_iters", "eval_iters", 0, 200, True),
        ("steps", "max_iters", 1, 5000, True),
    ]
    assert suggested_args(result.knobs, batch_size=4) == []  # never passed as arguments


def test_trainer_fit_at_top_level_is_an_entry() -> None:
    source = (
        "import pytorch_lightning as pl\n"
        "from model import Lit\n"
        "trainer = pl.Trainer(max_epochs=3)\n"
        "trainer.fit(Lit())\n"
    )
    result = analyze_text(source)
    assert [(e.kind, e.line) for e in result.entry_points] == [("trainer_fit", 3)]
    assert result.script_kind == "lightning"


def test_fit_on_something_that_is_not_a_trainer_is_not_an_entry() -> None:
    result = analyze_text("from sklearn.svm import SVC\nmodel = SVC()\nmodel.fit(X, y)\n")
    assert result.entry_points == ()
    assert result.framework_label is None


def test_a_top_level_loop_is_an_entry_only_in_torch_code() -> None:
    loop = "for name in ['a', 'b']:\n    print(name)\n"
    assert analyze_text(loop).entry_points == ()
    (entry,) = analyze_text("import torch.nn as nn\n" + loop).entry_points
    assert (entry.kind, entry.line) == ("top_level_loop", 0)  # the file runs from its top


def test_calls_that_only_look_like_main_are_not_entries() -> None:
    source = "import subprocess\nsubprocess.run(['ls'])\nmodel.main()\n"
    assert analyze_text(source).entry_points == ()


def test_import_alias_of_lightning_module() -> None:
    source = (
        "from lightning.pytorch import LightningModule as LM\n"
        "class M(LM):\n"
        "    def training_step(self, batch, i):\n"
        "        return batch\n"
    )
    (step,) = analyze_text(source).steps
    assert (step.kind, step.qualname, step.line, step.body_line) == (
        "framework_step",
        "M.training_step",
        2,
        3,
    )


@pytest.mark.parametrize("source", ["", "\n\n", "# only a comment\n", '"""docstring"""'])
def test_empty_and_trivial_files(source: str) -> None:
    result = analyze_text(source)
    assert result.parsed
    assert result.entry_points == () and result.steps == () and result.knobs == ()


def test_syntax_error_without_a_previous_good_parse() -> None:
    result = analyze_text("def broken(:\n    pass\n")
    assert not result.parsed
    assert result.syntax_error is not None and "line 1" in result.syntax_error
    assert result.steps == ()


def test_non_utf8_file_with_coding_cookie(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    source = "# -*- coding: latin-1 -*-\n# Modèle\nif __name__ == '__main__':\n    pass\n"
    path.write_bytes(source.encode("latin-1"))
    result = analyze_file(path)
    assert result is not None and result.main_entry is not None
    assert result.main_entry.line == 2


def test_undecodable_file_gives_none(tmp_path: Path) -> None:
    path = tmp_path / "binary.py"
    path.write_bytes(b"x = '\xff\xfe\xfd'\n")
    assert analyze_file(path) is None
    assert analyze_file(tmp_path / "missing.py") is None


def test_lone_carriage_returns_and_form_feeds_count_lines_like_the_parser() -> None:
    source = "import torch\r\x0c\rif __name__ == '__main__':\r    pass\r"
    result = analyze_text(source)
    assert [(e.kind, e.line) for e in result.entry_points] == [("main_guard", 2)]


@pytest.mark.parametrize(
    "wrapper",
    [
        "try:\n{body}except KeyboardInterrupt:\n    print('stopped')\n",
        "with torch.autograd.detect_anomaly():\n{body}",
        "if TRAIN:\n{body}else:\n    pass\n",
    ],
    ids=["try", "with", "if"],
)
def test_a_loop_inside_a_top_level_block_is_an_entry(wrapper: str) -> None:
    body = "    for epoch in range(100):\n        loss.backward()\n"
    source = "import torch\nTRAIN = True\n" + wrapper.format(body=body)
    result = analyze_text(source)
    assert result.main_entry is not None
    assert (result.main_entry.kind, result.main_entry.line) == ("top_level_loop", 0)
    # The loop that trains is the step, also inside the block.
    assert [(s.kind, s.line, s.body_line) for s in result.steps] == [("train_loop", 3, 4)]


def test_the_try_wrapped_idiom_gets_its_entry() -> None:
    path = Path(__file__).parents[1] / "job" / "idioms" / "try_loop.py"
    result = analyze_file(path)
    assert result is not None and result.main_entry is not None
    assert result.main_entry.line == 0


@pytest.mark.parametrize(
    ("source", "lightning"),
    [
        ("from lightning.pytorch.cli import LightningCLI\nLightningCLI(Model, Data)\n", True),
        ("from transformers import Trainer\ntrainer = Trainer(model=m)\ntrainer.train()\n", False),
    ],
    ids=["LightningCLI", "hf-Trainer"],
)
def test_framework_entry_scripts(source: str, lightning: bool) -> None:
    result = analyze_text(source)
    assert result.main_entry is not None
    assert result.main_entry.kind == "trainer_fit"
    assert result.main_entry.line == source.count("\n") - 1
    assert (result.framework_label == "lightning") is lightning

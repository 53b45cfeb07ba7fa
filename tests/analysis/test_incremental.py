"""Incremental re-analysis must agree with a full parse after every edit that parses."""

import random
from pathlib import Path

from quickdev.analysis import IncrementalAnalyzer, analyze_text

SAMPLES = Path(__file__).parent / "samples"


def test_edit_inside_a_method_moves_later_lenses() -> None:
    source = (SAMPLES / "lit_mnist.py").read_text()
    analyzer = IncrementalAnalyzer()
    analyzer.update(source)
    edited = source.replace(
        '        self.log("train_loss", loss)\n',
        '        self.log("train_loss", loss)\n        self.log("extra", 1)\n',
    )
    result = analyzer.update(edited)
    assert result == analyze_text(edited)
    before = {s.qualname: s.line for s in analyze_text(source).steps}
    after = {s.qualname: s.line for s in result.steps}
    assert after["LitClassifier.validation_step"] == before["LitClassifier.validation_step"] + 1
    assert after["LitClassifier.training_step"] == before["LitClassifier.training_step"]


def test_unparsable_edit_keeps_last_good_result_shifted() -> None:
    source = (SAMPLES / "lit_mnist.py").read_text()
    analyzer = IncrementalAnalyzer()
    good = analyzer.update(source)
    broken = source.replace("def test_step(self, batch, batch_idx):", "def test_step(self, batch")
    result = analyzer.update(broken)
    assert not result.parsed
    assert result.syntax_error is not None
    assert {s.qualname for s in result.steps} == {s.qualname for s in good.steps}
    # An unrelated edit above the broken region moves every lens down one line.
    shifted = analyzer.update('"""header"""\n' + broken)
    assert not shifted.parsed
    assert [s.line for s in shifted.steps] == [s.line + 1 for s in good.steps]
    fixed = analyzer.update('"""header"""\n' + source)
    assert fixed.parsed
    assert fixed == analyze_text('"""header"""\n' + source)


def test_new_method_typed_after_the_last_one_in_a_class() -> None:
    source = "import torch.nn as nn\n\nclass M(nn.Module):\n    def a(self):\n        pass\n"
    analyzer = IncrementalAnalyzer()
    analyzer.update(source)
    result = analyzer.update(source + "    def forward(self, x):\n        return x\n")
    assert [(s.qualname, s.line) for s in result.steps] == [("M.forward", 5)]


def test_indenting_a_function_into_the_class_above() -> None:
    source = (
        "import torch.nn as nn\n\nclass M(nn.Module):\n    x = 1\n\n"
        "def forward(self, x):\n    return x\n"
    )
    analyzer = IncrementalAnalyzer()
    assert analyzer.update(source).steps == ()
    indented = source.replace(
        "def forward(self, x):\n    return x\n", "    def forward(self, x):\n        return x\n"
    )
    result = analyzer.update(indented)
    assert [(s.qualname, s.line) for s in result.steps] == [("M.forward", 5)]


def test_random_edits_agree_with_full_parse() -> None:
    """Random line edits, insertions and deletions; compare whenever the text parses."""
    rng = random.Random(1234)
    sources = [(SAMPLES / name).read_text() for name in ("lit_mnist.py", "plain_loop.py")]
    pool = [line for s in sources for line in s.splitlines(keepends=True)]
    pool += ["    def forward(self, x):\n", "class Extra(nn.Module):\n", "def broken(:\n", '"""\n']
    compared = 0
    for source in sources:
        lines = source.splitlines(keepends=True)
        analyzer = IncrementalAnalyzer()
        analyzer.update(source)
        for _ in range(300):
            i = rng.randrange(len(lines) + 1)
            action = rng.random()
            if action < 0.4 or not lines:
                lines.insert(i, rng.choice(pool))
            elif action < 0.7 and i < len(lines):
                del lines[i]
            elif i < len(lines):
                lines[i] = rng.choice(pool)
            text = "".join(lines)
            result = analyzer.update(text)
            full = analyze_text(text)
            if full.parsed:
                compared += 1
                assert result == full, text
            else:
                assert not result.parsed
            if rng.random() < 0.1:  # sometimes the user undoes everything
                lines = source.splitlines(keepends=True)
                assert analyzer.update(source) == analyze_text(source)
    assert compared > 50


def test_big_regions_wait_for_settle_with_lines_shifted() -> None:
    """A region over the limit is not parsed on the spot; its steps move with the edit."""
    methods = "".join(f"    def forward_{i}(self, x):\n        return x\n\n" for i in range(50))
    source = (
        "import torch.nn as nn\n\nclass Big(nn.Module):\n"
        + methods
        + "    def forward(self, x):\n        return x\n"
    )
    analyzer = IncrementalAnalyzer(max_region_lines=40)
    first = analyzer.update(source)
    (forward,) = first.steps
    edited = source.replace(
        "    def forward_3(self, x):\n", "    def forward_3(self, x):\n        y = 1\n"
    )
    pending = analyzer.update(edited)
    assert analyzer.has_pending
    assert pending.parsed
    assert [s.line for s in pending.steps] == [forward.line + 1]
    assert pending == analyze_text(edited)  # exact: the edit added no def
    settled = analyzer.settle()
    assert not analyzer.has_pending
    assert settled == analyze_text(edited)


def test_random_edits_with_a_region_limit_agree_after_settle() -> None:
    rng = random.Random(99)
    source = (SAMPLES / "lit_mnist.py").read_text()
    pool = [*source.splitlines(keepends=True), "    def forward(self, x):\n", "def broken(:\n"]
    lines = source.splitlines(keepends=True)
    analyzer = IncrementalAnalyzer(max_region_lines=8)
    analyzer.update(source)
    compared = 0
    for _ in range(300):
        i = rng.randrange(len(lines) + 1)
        if rng.random() < 0.5 or not lines:
            lines.insert(i, rng.choice(pool))
        elif i < len(lines):
            del lines[i]
        text = "".join(lines)
        analyzer.update(text)
        if rng.random() < 0.3:
            result = analyzer.settle()
            full = analyze_text(text)
            if full.parsed:
                compared += 1
                assert result == full, text
            else:
                assert not result.parsed
        if rng.random() < 0.15:  # the user undoes everything
            lines = source.splitlines(keepends=True)
            analyzer.update(source)
            assert analyzer.settle() == analyze_text(source)
            compared += 1
    assert compared > 10

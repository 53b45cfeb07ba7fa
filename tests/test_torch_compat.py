"""The torch releases quickdev is tested with, said the same everywhere, and the torch APIs
that differ across them."""

from __future__ import annotations

import re
import sys

import tomllib
import torch
from quickdev.job.terminal_summary import summarize
from quickdev.profiling.torch_profile import OpTotals
from quickdev.rundir.changes import changes
from quickdev.rundir.result import JobResult
from quickdev.torch_compat import TESTED_PYTHON, TESTED_TORCH, release, untested_environment
from torch.profiler import ProfilerActivity, profile

from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "tools" / "compat"))
import compat


def test_the_tested_range_is_declared_the_same_everywhere() -> None:
    (major, low), (_, high) = TESTED_TORCH
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["torch"] == [
        f"torch>={major}.{low},<{major}.{high + 1}"
    ]
    pythons = [
        tuple(int(n) for n in c.rsplit(" ", 1)[1].split("."))
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: \d+\.\d+", c)
    ]
    assert (min(pythons), max(pythons)) == TESTED_PYTHON
    compat_doc = (REPO / "docs" / "compat.md").read_text()
    assert f"torch {major}.{low}–{major}.{high}" in compat_doc
    (py_major, py_low), (_, py_high) = TESTED_PYTHON
    assert f"Python {py_major}.{py_low}–{py_major}.{py_high}" in compat_doc
    # `make compat` installs one release of every minor version of the range.
    assert sorted(release(v) for v in compat.RELEASES) == compat.tested_minors()
    assert "docs/compat.md" in (REPO / "README.md").read_text()


def test_a_torch_or_python_outside_the_range_is_one_line() -> None:
    assert untested_environment("2.11.0+cu130", (3, 11)) is None
    assert untested_environment("2.14.1", (3, 10)) is None
    old = untested_environment("2.7.1+cu126", (3, 11))
    assert old is not None and "\n" not in old
    assert old.startswith("untested here: torch 2.7.1+cu126 (tested: 2.8–2.14)")
    new_python = untested_environment("2.13.0", (3, 13))
    assert new_python is not None and "Python 3.13 (tested: 3.10–3.12)" in new_python
    assert "torch" not in new_python.split(";")[0]


def test_the_profilers_operator_totals_read_this_torchs_events() -> None:
    """The profile summary reads FunctionEvent fields that differ across releases
    (is_python_function exists from torch 2.12): on every release it lists operators and no
    Python frame. `make compat` runs the same reading in each release's --profile job."""
    model = torch.nn.Linear(8, 8)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for _ in range(2):
            model(torch.randn(4, 8)).sum().backward()
    totals = OpTotals()
    totals.add(prof)
    names = [op["name"] for op in totals.top(50)]
    assert "aten::addmm" in names
    assert not [n for n in names if ".py(" in n or n.startswith("<built-in")], names


def test_the_untested_line_reads_the_same_in_the_terminal_and_the_editor() -> None:
    line = untested_environment("2.7.1+cu126", (3, 11))
    result = JobResult(id="r1", status="passed", untested_environment=line)
    assert changes(result)[0] == line  # the result page and the end notification
    assert f"  {line}" in summarize(result).splitlines()  # the terminal

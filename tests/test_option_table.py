"""The option table (rundir/option_table.py) is the one declaration of each limit: the files
generated from it are current, and a limit added to it reaches the command line, the job's
budgets, the result's words and the editor's types without another edit."""

from __future__ import annotations

import importlib.util
import json
import typing
from types import ModuleType

import pytest
from quickdev.analysis.findings import KnobKind
from quickdev.cli import UsageError, build_parser, main, run_options
from quickdev.limits.budget import Budget
from quickdev.rundir import option_table
from quickdev.rundir.changes import changes
from quickdev.rundir.option_table import Limit
from quickdev.rundir.result import JobResult, Limits

from tests.support.paths import REPO


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "option_table_files", REPO / "tools" / "option_table.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


def test_the_generated_files_are_current() -> None:
    stale = sorted(GENERATOR.stale())
    assert not stale, f"{stale} differ from the option table: run `make options`"


def test_every_limit_is_in_the_generated_docs_table() -> None:
    # The budgets' page holds the table; the README links there.
    budgets = (REPO / "docs" / "budgets.md").read_text(encoding="utf-8")
    assert GENERATOR.limits_table() in budgets
    for limit in option_table.LIMITS:
        assert f"`{limit.flag} " in GENERATOR.limits_table()


def test_the_knobs_a_limit_names_are_knobs_the_analysis_finds() -> None:
    kinds = set(typing.get_args(KnobKind))
    for limit in option_table.LIMITS:
        assert set(limit.knobs) <= kinds, limit.name
        assert limit.stops or not limit.knobs, f"{limit.name} ends nothing: no advice"


THROWAWAY = Limit(
    "test_forwards",
    "--test-forwards",
    "count",
    minimum=1,
    off=True,
    default=5,
    help="forwards of the test loop",
    doc="forwards of the model after training, in a row",
    counts="test forwards in a row",
    knobs=("eval_iters",),
    setting="testForwards",
    launch="testForwards",
)


@pytest.fixture
def throwaway(monkeypatch: pytest.MonkeyPatch) -> Limit:
    monkeypatch.setattr(option_table, "LIMITS", (*option_table.LIMITS, THROWAWAY))
    monkeypatch.setattr(
        option_table, "BY_NAME", {**option_table.BY_NAME, THROWAWAY.name: THROWAWAY}
    )
    return THROWAWAY


def test_a_limit_added_to_the_table_reaches_the_command_line_and_the_budgets(
    throwaway: Limit, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = build_parser().parse_args(["run", "--test-forwards", "3", "train.py"])
    options = run_options(ns, [])
    assert options.limits["test_forwards"] == 3
    assert Budget.for_options(options).values["test_forwards"] == 3
    unset = run_options(build_parser().parse_args(["run", "train.py"]), [])
    assert Budget.for_options(unset).values["test_forwards"] == 5  # its default
    off = run_options(build_parser().parse_args(["run", "--test-forwards", "0", "train.py"]), [])
    assert Budget.for_options(off).values["test_forwards"] is None
    with pytest.raises(UsageError, match="--test-forwards: expected a whole number of at least 1"):
        build_parser().parse_args(["run", "--test-forwards", "-1", "train.py"])
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--test-forwards TEST_FORWARDS forwards of the test loop (default 5; 0: no bound)" in (
        help_text
    )


def test_a_limit_added_to_the_table_reaches_the_result_and_its_words(throwaway: Limit) -> None:
    limits = Limits(values={**Limits().values, "test_forwards": 3})
    result = JobResult(id="r", script="train.py", limits=limits)
    result.status, result.stop_reason = "stopped", "test_forwards"
    assert "stopped: test_forwards (3 test forwards in a row; --test-forwards changes it)" in (
        changes(result)
    )
    written = result.to_dict()
    assert written["limits"]["test_forwards"] == 3
    assert JobResult.from_dict(written).limits.values["test_forwards"] == 3


def test_a_limit_added_to_the_table_reaches_the_editor_s_types_and_docs(throwaway: Limit) -> None:
    typescript = GENERATOR.typescript()
    assert "  testForwards?: number;" in typescript  # a launch attribute, a startJob argument
    assert '  testForwards: "optional",' in typescript
    assert "  testForwards: number;" in typescript  # a setting
    manifest = json.loads(GENERATOR.package_json((REPO / "package.json").read_text()))
    setting = manifest["contributes"]["configuration"]["properties"]["quickdev.testForwards"]
    assert (setting["type"], setting["default"], setting["minimum"]) == ("integer", 5, 0)
    (debugger,) = manifest["contributes"]["debuggers"]
    assert "testForwards" in debugger["configurationAttributes"]["launch"]["properties"]
    protocol = GENERATOR.protocol_md((REPO / "docs" / "protocol.md").read_text())
    assert "| `testForwards`? | int ≥ 1 (0: no bound) | forwards of the test loop" in protocol
    assert "| `testForwards` | int ≥ 1 (0: no bound) |" in protocol
    assert "| `--test-forwards N` | 5 |" in GENERATOR.limits_table()

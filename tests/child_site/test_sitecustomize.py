"""The child start-up hook reads the environment the job sets: ``child_site/sitecustomize.py``
runs before quickdev is importable, so it spells the variable names itself; they must be the
names the job's modules set."""

from __future__ import annotations

import ast

from quickdev.job.children import setup
from quickdev.limits.journal import children

SITECUSTOMIZE = children.HOOK_DIR / "sitecustomize.py"


def _variables_read() -> set[str]:
    """The ``QUICKDEV_…`` names the file reads with ``os.environ.get(…)``."""
    tree = ast.parse(SITECUSTOMIZE.read_text(encoding="utf-8"))
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) == "os.environ.get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).startswith("QUICKDEV_")
    }


def test_sitecustomize_reads_the_variables_the_job_sets() -> None:
    assert _variables_read() == {
        children.ENV,
        children.PACKAGE_ENV,
        setup.SETUP_ENV,
    }

"""What a job runs: a script or a module as ``__main__``, or a callable (in-process API).

A script sees the argv, cwd and ``sys.path`` that ``python SCRIPT ARGS`` would give it,
and runs as ``runpy.run_path`` runs it; with a rewriter, its code is the rewritten one
(a module's comes through the import hook the rewriter installed).
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import runpy
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quickdev.limits.user_code import is_user_file
from quickdev.rewrite import Rewriter


class UsageProblem(Exception):
    """The job cannot start; the message is one line naming the problem and the fix."""


class Target:
    """Base of the three kinds; ``run`` executes the user's code."""

    label = "job"  # part of the run id
    description = ""  # result.json's "script"

    def check(self) -> None:
        """Raise UsageProblem when the target cannot run."""

    def mentions(self, word: str) -> bool:
        """A cheap guess whether the source uses ``word`` (e.g. an import of lightning)."""
        return False

    def argv(self) -> list[str]:
        return []

    def source(self) -> Path | None:
        """The file of the user's code the job runs first, where there is one."""
        return None

    def run(self, rewriter: Rewriter | None = None) -> None:
        raise NotImplementedError


class ScriptTarget(Target):
    def __init__(self, script: str, args: list[str]) -> None:
        self.script = script
        self.args = args
        self.path = Path(os.path.abspath(script))
        self.label = self.path.stem
        self.description = str(self.path)

    def check(self) -> None:
        if self.path.is_dir():
            raise UsageProblem(
                f"quickdev run: {self.script} is a directory; give the .py file to run "
                "(or -m PACKAGE for a package with __main__.py)"
            )
        if not self.path.is_file():
            raise UsageProblem(
                f"quickdev run: no such script: {self.script} "
                f"(check the path; it is relative to {os.getcwd()})"
            )

    def mentions(self, word: str) -> bool:
        try:
            return word in self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False

    def argv(self) -> list[str]:
        return [self.script, *self.args]

    def source(self) -> Path | None:
        return self.path

    def run(self, rewriter: Rewriter | None = None) -> None:
        sys.argv = self.argv()
        sys.path[0] = os.path.dirname(os.path.realpath(self.path))
        filename = str(self.path)
        code = None
        if rewriter is not None:
            with open(filename, "rb") as file:
                code = rewriter.code_for(file.read(), filename)
        if code is None:
            try:
                runpy.run_path(filename, run_name="__main__")
            except (SyntaxError, ValueError) as exc:
                raise _not_compiled(exc, filename) from None
        else:
            run_as_module(code, filename, "__main__")


def _not_compiled(exc: SyntaxError | ValueError, filename: str) -> BaseException:
    """The script's own SyntaxError, as ``python SCRIPT`` shows it, where compiling the
    script failed (no frame of the user's ran): named at the script's line, with no
    frames of ours or runpy's (``failure``). A binary file is one too: its null bytes
    are a SyntaxError at line 1 (a ValueError before Python 3.11.?, no file named).
    Anything the script raised itself is left as it is."""
    if any(is_user_file(frame.filename) for frame in traceback.extract_tb(exc.__traceback__)):
        return exc
    if isinstance(exc, ValueError):
        if "null bytes" not in str(exc):
            return exc
        exc = SyntaxError(str(exc))
    if exc.filename is None:
        exc.filename, exc.lineno = filename, 1
    return exc.with_traceback(None)


class ModuleTarget(Target):
    def __init__(self, module: str, args: list[str]) -> None:
        self.module = module
        self.args = args
        self.label = module.rsplit(".", 1)[-1]
        self.description = module
        self._origin: str | None = None

    def check(self) -> None:
        sys.path[0] = os.getcwd()  # as python -m does, so the user's packages are found
        try:
            spec = importlib.util.find_spec(self.module)
        except (ImportError, ValueError) as exc:
            raise UsageProblem(
                f"quickdev run: cannot find module {self.module!r} ({exc}); "
                "run from the directory that contains it"
            ) from None
        if spec is None:
            raise UsageProblem(
                f"quickdev run: no module named {self.module!r} "
                "(run from the directory that contains it, or install it)"
            )
        self._origin = spec.origin

    def mentions(self, word: str) -> bool:
        if not self._origin or not os.path.isfile(self._origin):
            return False
        try:
            return word in Path(self._origin).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False

    def argv(self) -> list[str]:
        return [self._origin or self.module, *self.args]

    def source(self) -> Path | None:
        if not self._origin or not os.path.isfile(self._origin):
            return None
        origin = Path(self._origin)
        # A package runs its __main__.py.
        main = origin.with_name("__main__.py")
        return main if origin.name == "__init__.py" and main.is_file() else origin

    def run(self, rewriter: Rewriter | None = None) -> None:
        sys.argv = [self.module, *self.args]
        sys.path[0] = os.getcwd()
        runpy.run_module(self.module, run_name="__main__", alter_sys=True)


class CallableTarget(Target):
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        self.label = name.replace("<", "").replace(">", "")
        module = getattr(fn, "__module__", None)
        self.description = f"{module}.{name}" if module else name

    def run(self, rewriter: Rewriter | None = None) -> None:
        self.fn()  # compiled already: runs as written


def run_as_module(
    code: types.CodeType,
    filename: str,
    run_name: str,
    init_globals: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``code`` as ``runpy.run_path(filename, init_globals, run_name)`` runs a script's
    (``__main__`` for the job, ``__mp_main__`` where multiprocessing re-runs it in a
    spawned process): a fresh module under ``run_name`` in ``sys.modules`` while it runs,
    ``sys.argv[0]`` the path; returns a copy of its globals, as runpy does."""
    module = types.ModuleType(run_name)
    if init_globals is not None:
        module.__dict__.update(init_globals)
    module.__dict__.update(
        __name__=run_name,
        __file__=filename,
        __cached__=None,
        __doc__=None,
        __loader__=None,
        __package__="",
        __spec__=None,
        __builtins__=builtins,
    )
    saved_module = sys.modules.get(run_name)
    saved_argv0 = sys.argv[0] if sys.argv else None
    sys.modules[run_name] = module
    if sys.argv:
        sys.argv[0] = filename
    try:
        exec(code, module.__dict__)
    finally:
        if saved_module is not None:
            sys.modules[run_name] = saved_module
        else:
            sys.modules.pop(run_name, None)
        if sys.argv and saved_argv0 is not None:
            sys.argv[0] = saved_argv0
    return module.__dict__.copy()

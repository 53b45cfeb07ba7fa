"""Ending a loop of a library the script drives (code the job did not rewrite) at its head.

A diffusion model's ``sample()`` runs a thousand denoising steps in its library's own
``for t in reversed(range(T))``, Hugging Face's ``generate()`` a token per round of its
``while``. The user's loops carry an exit (``transform``); a library's cannot, since its
modules are not compiled by the job. So the loop is ended as a debugger's "jump" would:
the library's frame gets a line trace (``frame.f_trace``) that, the next time the loop's
head is reached, sets the frame's line to the statement after the loop. The iterator is
dropped, ``with`` and ``try`` blocks around it are left as they are, the function goes on
with what the loop made (the partly denoised images, the tokens so far) and returns it.

Only where that is a plain jump: the statement after the loop is in the same block (or
after an ``if`` that holds the loop). A loop that is the last statement of a ``with``, a
``try`` or its function, a process under a debugger or another tracer, and a frame that
returns first are left alone: the budget then stops the script, as before.
"""

from __future__ import annotations

import ast
import linecache
import logging
import os
import sys
import sysconfig
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import FrameType
from typing import Any

from quickdev.processes import PACKAGE_DIR

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LibraryLoop:
    file: str
    line: int  # the loop statement's first line
    header_end: int  # its header's last line (``for … in …:`` / ``while …:``)
    end_line: int
    after: int | None  # the line a jump past it lands on; None: there is no such line
    function: str  # the name of the function it is in


def innermost(
    frame: FrameType | None, rewritten: Callable[[str], bool]
) -> tuple[FrameType, LibraryLoop] | None:
    """``(frame, LibraryLoop)`` of the innermost library loop running around ``frame``'s
    point, if the first code around it that has a loop is a library's: None where the
    user's rewritten code (``rewritten(filename)``) comes first, or no loop does."""
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if rewritten(filename):
            return None
        line = frame.f_lineno
        if line is not None and not _machinery(filename):
            loop = _loop_around(filename, code.co_firstlineno, code.co_name, line)
            if loop is not None:
                return frame, loop
        frame = frame.f_back
    return None


def tracing_free() -> bool:
    """Whether a line trace may be set: no debugger or other tracer is using it."""
    if sys.gettrace() is not None:
        return False
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is None or monitoring.get_tool(monitoring.DEBUGGER_ID) is None


class LibraryEnder:
    """At most one library loop told to end at a time (one frame traced)."""

    def __init__(self) -> None:
        self.armed: tuple[int, LibraryLoop] | None = None  # (frame id, loop)

    def end(self, frame: FrameType, loop: LibraryLoop, ended: Callable[[], None]) -> bool:
        """Jump past ``loop`` the next time ``frame`` reaches its head; ``ended()`` then.
        False where it cannot (see the module's docstring)."""
        if loop.after is None or self.armed is not None or not tracing_free():
            return False
        head = range(loop.line, loop.header_end + 1)
        target = loop.after
        ender = self

        def trace(traced: FrameType, event: str, arg: Any) -> Any:
            if event == "return":
                ender.disarm(traced)
                return None
            if event != "line" or traced.f_lineno not in head:
                return trace
            try:
                with warnings.catch_warnings():
                    # 3.12 warns that locals the skipped code never bound stay unbound.
                    warnings.simplefilter("ignore", RuntimeWarning)
                    traced.f_lineno = target  # type: ignore[misc]  # a jump, as pdb makes
            except ValueError as exc:
                log.info("cannot jump past %s:%d: %s", loop.file, loop.line, exc)
                ender.disarm(traced)
                return None
            ender.disarm(traced)
            ended()
            return None

        frame.f_trace = trace
        frame.f_trace_lines = True
        sys.settrace(_no_new_frames)
        self.armed = (id(frame), loop)
        return True

    def disarm(self, frame: FrameType | None = None) -> None:
        if self.armed is None:
            return
        sys.settrace(None)
        if frame is not None:
            frame.f_trace = None
        self.armed = None


def _no_new_frames(frame: FrameType, event: str, arg: Any) -> None:
    """The thread's trace while a library frame's own is set: no other frame is traced."""
    return None


SAMPLING_WORDS = ("sampl", "generat", "denois", "decod", "synthes")


def is_sampling(function: str) -> bool:
    """Whether a function's name says it makes samples (``generate``, ``p_sample_loop``,
    ``ddim_sample``, ``greedy_decode``) rather than computes figures over data."""
    name = function.lower()
    return any(word in name for word in SAMPLING_WORDS)


@lru_cache(maxsize=1)
def _machinery_roots() -> tuple[str, ...]:
    """The job's, torch's and the standard library's folders: their loops are not the
    script's to end (a hook's, ``Module._call_impl``'s, ``contextlib``'s)."""
    roots = {str(PACKAGE_DIR)}
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(str(Path(str(torch.__file__)).resolve().parent))
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    return tuple(root.rstrip(os.sep) + os.sep for root in roots)


@lru_cache(maxsize=1024)
def _machinery(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return True
    return os.path.realpath(filename).startswith(_machinery_roots())


def _loop_around(filename: str, first_line: int, function: str, line: int) -> LibraryLoop | None:
    """The innermost loop of the function starting at ``first_line`` whose body holds
    ``line``."""
    around = [
        loop
        for loop in _loops(filename)
        if loop.line >= first_line and loop.header_end < line <= loop.end_line
    ]
    if not around:
        return None
    best = max(around, key=lambda loop: loop.line)
    return LibraryLoop(best.file, best.line, best.header_end, best.end_line, best.after, function)


@lru_cache(maxsize=256)
def _loops(filename: str) -> tuple[LibraryLoop, ...]:
    """Every loop statement of a source file, with the line a jump past it lands on."""
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    found: list[LibraryLoop] = []

    def visit(block: list[ast.stmt], after: int | None) -> None:
        for index, statement in enumerate(block):
            following = block[index + 1].lineno if index + 1 < len(block) else after
            if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                head = statement.test if isinstance(statement, ast.While) else statement.iter
                found.append(
                    LibraryLoop(
                        filename,
                        statement.lineno,
                        head.end_lineno or statement.lineno,
                        statement.end_lineno or statement.lineno,
                        following,
                        "",
                    )
                )
            # The line after a block is a plain jump away only from an ``if``'s blocks;
            # from a loop, ``with`` or ``try`` block (or a function) it is not.
            inherited = following if isinstance(statement, ast.If) else None
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(statement, name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner, inherited)
            for handler in getattr(statement, "handlers", ()):
                visit(handler.body, None)
            for case in getattr(statement, "cases", ()):
                visit(case.body, None)

    visit(tree.body, None)
    return tuple(found)

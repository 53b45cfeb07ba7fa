"""Rewriting the user's code as it is compiled, as pytest rewrites assertions.

A ``Transform`` changes a file's syntax tree (``transform``); the ``Rewriter`` parses,
applies its transforms, compiles with the file's own name and keeps the result in a cache
outside the user's tree (``cache``); ``install_import_hook`` hands it the project's
modules as they are imported (``hook``), and the job compiles the main script with
``Rewriter.code_for`` itself. File names and line numbers stay the user's, so tracebacks,
breakpoints, coverage and profiler stacks point at the user's lines. The same import
finder hands a module named in advance to a function right after it executes
(``after_import``): the limits patch frameworks so.

Standard library only: the job installs it before the user's code runs, and a transform
(the loop exits of ``quickdev.limits.loops``) plugs in without this package knowing it.
"""

from __future__ import annotations

from quickdev.rewrite.hook import after_import, install_import_hook
from quickdev.rewrite.rewriter import Rewriter
from quickdev.rewrite.transform import (
    STATEMENT_BLOCKS,
    Transform,
    jit_compiled,
    located_at,
    no_location,
    source_key,
)

__all__ = [
    "STATEMENT_BLOCKS",
    "Rewriter",
    "Transform",
    "after_import",
    "install_import_hook",
    "jit_compiled",
    "located_at",
    "no_location",
    "source_key",
]

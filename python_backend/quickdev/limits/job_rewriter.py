"""The one ``Rewriter`` of a job: the transforms the limits want (the loop exits, the
tensor-shape recording), an import hook for the user's own modules, and the main script
compiled the same way (``job/target.py``). Each transform plugs in here; none installs a
hook of its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence

from quickdev.cachedir import quickdev_cache_dir
from quickdev.limits.patching import Patcher
from quickdev.limits.user_code import is_user_file
from quickdev.rewrite import Rewriter, Transform, install_import_hook
from quickdev.rewrite.cache import CodeCache

log = logging.getLogger(__name__)

CACHE_DIR_NAME = "rewrite"


def install(
    patcher: Patcher, transforms: Sequence[Transform], roots: Iterable[str]
) -> Rewriter | None:
    """The rewriter for the main script; None when no transform is wanted (the code runs
    as written)."""
    if not transforms:
        return None
    rewriter = Rewriter(transforms, CodeCache(quickdev_cache_dir(CACHE_DIR_NAME)))
    patcher.on_undo(lambda: _log_cost(rewriter))
    patcher.on_undo(install_import_hook(rewriter, project_files(roots)))
    return rewriter


def _log_cost(rewriter: Rewriter) -> None:
    stats = rewriter.stats
    log.info(
        "rewriting (%s): %d file(s) rewritten, %d from the cache, %d as written, in %.1f ms",
        ", ".join(t.key.split()[0] for t in rewriter.transforms),
        stats.rewritten,
        stats.cached,
        stats.as_written,
        stats.seconds * 1000,
    )


def project_files(roots: Iterable[str]) -> Callable[[str], bool]:
    """Whether a module's file is the user's own: under one of ``roots`` (the script's
    folder, the working directory) and not an installed library's."""
    prefixes = tuple(
        dict.fromkeys(os.path.realpath(root).rstrip(os.sep) + os.sep for root in roots)
    )

    def wanted(path: str) -> bool:
        real = os.path.realpath(path)
        return real.startswith(prefixes) and is_user_file(real)

    return wanted

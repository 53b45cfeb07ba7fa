"""What a warm process imports: the libraries a script imports that are installed for the
interpreter, never the user's own code.

A module is preloaded when it is found in one of the interpreter's library folders
(site-packages, and the PYTHONPATH folders outside the user's folders) and not under a
user folder (the script's folder, the workspace, the working directory). Importing it
must do nothing beyond importing: ``safety.problem`` is checked after each one, and the
first module that starts a thread ends the preload (the server remembers it and leaves
it out next time).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from quickdev.warm import safety
from quickdev.warm.protocol import stamp

# debugpy must start in the job (after the fork): its tracer and threads belong there.
NEVER = frozenset({"debugpy", "pydevd", "_pydevd_bundle", "_pydev_bundle", "quickdev"})
# The job's own machinery, which imports torch; loaded after the script's libraries (as a
# cold job loads the limits after them), with the static analysis that a budget's stop
# advice imports when it is needed. And torch._dynamo: the first optimizer.step()
# imports it, and it takes as long as torch.
JOB_MODULES = (
    "quickdev.cli",
    "quickdev.job.job",
    "quickdev.limits.install",
    "quickdev.job.observers",
    "quickdev.analysis",
    "torch._dynamo",
)


@dataclass
class Preloaded:
    loaded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # module: why
    unsafe: str | None = None  # why this process may not fork
    culprit: str | None = None  # the module whose import made it unsafe
    # Paths whose change means an imported module may be stale (each library folder, each
    # imported package's folder and first file: an install or upgrade touches them), with
    # their modification time taken before the import: a change while it ran is seen too.
    stamps: dict[str, int | None] = field(default_factory=dict)


def library_roots(user_roots: Sequence[str]) -> list[str]:
    roots = [*site.getsitepackages(), site.getusersitepackages()]
    roots += [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    roots += os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return [
        os.path.realpath(root)
        for root in dict.fromkeys(filter(None, roots))
        if not _under(os.path.realpath(root), user_roots)
    ]


def location(name: str) -> str | None:
    """Where a top-level module lives, found without running it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return os.path.realpath(spec.origin)
    locations = list(spec.submodule_search_locations or [])
    return os.path.realpath(locations[0]) if locations else None


def preload(
    wanted: Iterable[tuple[str, Sequence[str]]], user_roots: Sequence[str], done: Preloaded
) -> None:
    """Import ``wanted`` (module, names taken from it) that pass the rule, then the job's
    modules; stop at the first import that makes forking unsafe."""
    users = [os.path.realpath(root) for root in user_roots]
    libraries = library_roots(users)
    for root in library_roots([]):
        done.stamps.setdefault(root, stamp(root))
    for name, attributes in wanted:
        top = name.partition(".")[0]
        if name in done.loaded or name in done.skipped:
            continue
        where = location(top)
        if top in NEVER or top in sys.stdlib_module_names:
            done.skipped[name] = "not preloaded"
        elif where is None:
            done.skipped[name] = "not found"
        elif _under(where, users) or not _under(where, libraries):
            done.skipped[name] = "not an installed library"
        elif _import(name, attributes, done) is not None:
            return
    for name in JOB_MODULES:
        if name not in done.loaded and _import(name, (), done) is not None:
            return


def _import(name: str, attributes: Sequence[str], done: Preloaded) -> str | None:
    origin = location(name.partition(".")[0])
    if origin is not None:
        for path in (origin, os.path.dirname(origin)):
            done.stamps.setdefault(path, stamp(path))
    try:
        module = importlib.import_module(name)
        for attribute in attributes:  # `from x import Y` may load Y lazily (transformers)
            getattr(module, attribute, None)
    except BaseException as exc:
        done.skipped[name] = f"import failed: {type(exc).__name__}"
    else:
        done.loaded.append(name)
    problem = safety.problem()
    if problem is not None:
        done.unsafe = f"importing {name} {problem}"
        done.culprit = name.partition(".")[0]
    return done.unsafe


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)

"""The environments of the processes the server starts: a job (the user's environment, with
the quickdev package added) and a helper of the server's own (PID injection). No LSP here."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from quickdev.limits.journal import interposer
from quickdev.processes import DEBUGPY_PATH_ENV, PACKAGE_DIR, SERVER_PROCESS_ENV, process_token

# The PYTHONPATH the editor had before it added the server's bundled libraries; set by
# the extension (extension/server/server.ts). Unset (a server run from a terminal): PYTHONPATH.
USER_PYTHONPATH_ENV = "QUICKDEV_USER_PYTHONPATH"


def job_environment(extra: dict[str, str] | None = None, *, journal: bool = True) -> dict[str, str]:
    """The environment of a job: the user's, their launch configuration's variables over
    it, with only the quickdev package added, and the file interposer preloaded where the
    job keeps a journal (``journal``; not with --keep-outputs): a job started with it does
    not restart itself for it (an exec: an interpreter's start again, 15 ms of CPU and more
    where the environment's site-packages hold many ``.pth`` files).

    The server's own PYTHONPATH holds the libraries the extension bundles for it
    (pygls, attrs, typing_extensions, debugpy, ...); the user's script must import its
    own environment's copies, so a job gets the PYTHONPATH the editor had before the
    extension added its own (``USER_PYTHONPATH_ENV``), or the one the configuration
    sets, and debugpy only as a fallback.
    """
    env = dict(os.environ)
    user = env.pop(USER_PYTHONPATH_ENV, env.get("PYTHONPATH", ""))
    env.update(extra or {})
    user = (extra or {}).get("PYTHONPATH", user)
    paths = [str(PACKAGE_DIR.parent), *filter(None, user.split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.pop("PYTHONSAFEPATH", None)  # a job's script sees the sys.path python gives it
    debugpy = importlib.util.find_spec("debugpy")
    if debugpy is not None and debugpy.origin:
        env[DEBUGPY_PATH_ENV] = str(Path(debugpy.origin).parent.parent)
    env["PYTHONUNBUFFERED"] = "1"
    if journal:
        env.update(interposer.preloaded(env))
    # The job ends itself when this server is gone (quickdev.job.signals).
    env[SERVER_PROCESS_ENV] = process_token(os.getpid())
    return env


def helper_environment() -> dict[str, str]:
    """The environment of a process the server starts for itself (PID injection): the
    server's libraries, and quickdev, which the job interpreter need not have."""
    env = dict(os.environ)
    env.pop(USER_PYTHONPATH_ENV, None)
    paths = [
        str(PACKAGE_DIR.parent),
        *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)),
    ]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env

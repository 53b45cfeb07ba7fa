"""A script that records how it was started, and a runner that repeats it until a run
starts warm (the warm process is prepared in the background after a run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from tests.support.server import collect_run_changes, execute, final, server_pid, wait_for

# A cold job is the server's child, a warm one the warm process's. PRELOADED: libraries
# loaded before the script imported them (only a warm process preloads them).
SCRIPT = """\
import sys
PRELOADED = sorted(m for m in ("fakelib", "threadlib") if m in sys.modules)
import argparse
import json
import os
import signal
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    import fakelib
    VALUE = fakelib.VALUE
except ImportError:
    VALUE = None
try:
    import threadlib
except ImportError:
    pass


class Farewell:
    # The script's own garbage, finalized as the interpreter ends (a cycle: only the
    # collector frees it).
    def __del__(self):
        os.write(1, b"farewell from the script's garbage\\n")


FAREWELL = Farewell()
FAREWELL.cycle = FAREWELL


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mark", required=True)
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    with open(args.mark, "w") as f:
        json.dump({
            "ppid": os.getppid(), "preloaded": PRELOADED, "value": VALUE, "pid": os.getpid(),
            "argv": sys.argv, "cwd": os.getcwd(), "name": __name__, "path0": sys.path[0],
            "var": os.environ.get("MY_VAR"), "group_leader": os.getpgid(0) == os.getpid(),
            "session_leader": os.getsid(0) == os.getpid(),
            "sigint": signal.getsignal(signal.SIGINT).__qualname__,
            "sigterm": signal.getsignal(signal.SIGTERM).__qualname__,
            "sigchld": str(signal.getsignal(signal.SIGCHLD)),
            "sigpipe": str(signal.getsignal(signal.SIGPIPE)),
            "stdin": sys.stdin.read(),
        }, f)
    print("hello from the script")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in DataLoader(data, batch_size=8):
            time.sleep(args.delay)
            loss = torch.nn.functional.mse_loss(model(x), y)
            if args.crash:
                raise ValueError("loss exploded on purpose")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def training_script(
    client: LanguageClient, workspace: Path, source: str
) -> tuple[list[dict[str, Any]], Path, Path]:
    """`source` as the workspace's train.py: the run changes the client will collect, the
    script, and the file it records how it was started in (``--mark``)."""
    changes = collect_run_changes(client)
    script = workspace / "train.py"
    script.write_text(source)
    return changes, script, workspace / "mark.json"


def library(root: Path, name: str, source: str) -> dict[str, str]:
    """An installed library outside the workspace, on the job's path."""
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "__init__.py").write_text(source)
    return {"PYTHONPATH": str(root)}


async def run(
    client: LanguageClient,
    changes: list[dict[str, Any]],
    script: Path,
    mark: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run to its end: its final summary and what the script recorded."""
    mark.unlink(missing_ok=True)
    argument: dict[str, Any] = {"script": str(script), "args": ["--mark", str(mark), *args]}
    if env:
        argument["env"] = env
    answer = await execute(client, "quickdev.startJob", argument)
    assert "error" not in answer, answer
    ended = await wait_for(lambda: final(changes, answer["runId"]), "the run to end")
    # The job's files are kept in its run directory (the user's tree is left as it was).
    (written,) = [o["written"] for o in result(ended)["outputs"] if Path(o["requested"]) == mark]
    seen = json.loads(Path(written).read_text())
    seen["warm"] = seen.pop("ppid") != server_pid(client)
    return ended, seen


async def run_until_warm(
    client: LanguageClient,
    changes: list[dict[str, Any]],
    script: Path,
    mark: Path,
    *args: str,
    env: dict[str, str] | None = None,
    tries: int = 6,
) -> tuple[dict[str, Any], dict[str, Any]]:
    for _ in range(tries):
        ended, seen = await run(client, changes, script, mark, *args, env=env)
        if seen["warm"]:
            return ended, seen
    raise AssertionError(f"no warm start in {tries} runs")


def printed(summary: dict[str, Any]) -> str:
    run_dir = Path(summary["runDir"])
    return "".join(
        (run_dir / name).read_text()
        for name in ("launch.log", "output.log")
        if (run_dir / name).exists()
    )


def result(summary: dict[str, Any]) -> dict[str, Any]:
    return json.loads((Path(summary["resultFile"])).read_text())

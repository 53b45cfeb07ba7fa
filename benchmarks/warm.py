"""Warm start: request → final status of a repeat quick-dev run through the language server,
beside a cold ``python`` run of the same script limited by hand (plain loop, Lightning).

    .venv/bin/python benchmarks/warm.py

Each script is run through the server until its run starts warm (the warm process is
prepared after a run ends); the figure is the median of the warm repeats. Ratios last.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsp import Client, initialize
from overhead import EXAMPLES, measure

REPEATS = 3
SCRIPTS = {
    "plain": (
        "train_loop.py",
        ["--num-workers", "0", "--limit-batches", "2", "--epochs", "1"],
    ),
    "lightning": ("lightning_module.py", ["--num-workers", "0", "--fast-dev-run", "2"]),
}


def server_run(client: Client, script: Path) -> float:
    """Seconds from startJob to the run's final status (polled through getRun)."""
    started = time.perf_counter()
    answer = client.request(
        "workspace/executeCommand",
        {"command": "quickdev.startJob", "arguments": [{"script": str(script)}]},
    )
    run_id = answer["runId"]
    while True:
        got = client.request(
            "workspace/executeCommand",
            {"command": "quickdev.getRun", "arguments": [{"runId": run_id}]},
        )
        if got["run"]["status"] not in ("queued", "running"):
            return time.perf_counter() - started
        time.sleep(0.02)


def main() -> None:
    ratios = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        client = Client([sys.executable, "-m", "quickdev", "serve"])
        initialize(client, folder)
        for name, (file, hand_args) in SCRIPTS.items():
            script = EXAMPLES / file
            cold = statistics.median(
                measure([sys.executable, str(script), *hand_args], folder)[0]
                for _ in range(REPEATS)
            )
            server_run(client, script)  # cold; the warm process is prepared after it
            time.sleep(8)  # let it import (a user reads the result meanwhile)
            warm = statistics.median(server_run(client, script) for _ in range(REPEATS))
            ratios[name] = warm / cold
            print(json.dumps({"script": name, "server_repeat_s": warm, "cold_python_s": cold}))
        client.close()
    for name, ratio in ratios.items():
        print(f"{name}: repeat run through the server / cold python: {ratio:.3f} (goal <= 0.35)")


if __name__ == "__main__":
    main()

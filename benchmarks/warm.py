"""Warm start, side by side in one run:

- request → final status of a repeat quick-dev run through the language server, beside a
  cold ``python`` run of the same script limited by hand (plain loop, Lightning, Hugging
  Face Trainer); goal ≤ 0.35 each;
- launch → first breakpoint in the training loop of a debug run through the server, beside
  plain ``python -m debugpy``; goal ≤ 0.5.

    .venv/bin/python benchmarks/warm.py [--repeats N]

The server runs each script once first (the warm process is prepared after each run and
takes the script's libraries), and each run is followed by waiting for the server's log to
say the warm process is ready again (a user reads the result meanwhile). Every measured
run's job.log must say it started warm. Wall and CPU seconds (the server, the warm process
and the jobs they reaped; the cold runs' own processes) are printed, ratios last.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from debug_start import SCRIPT as DEBUG_SCRIPT
from debug_start import SCRIPT_ARGS as DEBUG_ARGS
from debug_start import start_plain_debugpy, step_line, time_to_breakpoint
from lsp import Client, initialize
from overhead import EXAMPLES, _children_cpu_s, measure

from tests.support.dap import DapClient

WORKLOADS = Path(__file__).resolve().parent / "workloads"
NO_WORKERS = ["--num-workers", "0"]  # both ways: start-up is compared, not worker processes
SCRIPTS = {  # script, its arguments, the arguments that limit it by hand (the cold baseline)
    "plain": (
        EXAMPLES / "train_loop.py",
        NO_WORKERS,
        ["--limit-batches", "2", "--epochs", "1"],
    ),
    "lightning": (EXAMPLES / "lightning_module.py", NO_WORKERS, ["--fast-dev-run", "2"]),
    "hf_trainer": (WORKLOADS / "hf_trainer.py", [], ["--max-steps", "2"]),
}
READY = re.compile(r"warm process (\d+) ready")
READY_TIMEOUT_S = 180.0
TICKS = os.sysconf("SC_CLK_TCK")


class Server(Client):
    """The language server with its log (level info) in a file, to see the warm process."""

    def __init__(self, log: Path) -> None:
        env = {**os.environ, "QUICKDEV_LOG_LEVEL": "info"}
        self.log = log
        with log.open("wb") as err:
            self._start([sys.executable, "-m", "quickdev", "serve"], env, err)

    def _start(self, command: list[str], env: dict[str, str], err: Any) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
        )
        self._next_id = 0

    def ready_count(self) -> int:
        return len(READY.findall(self.log.read_text(errors="replace")))

    def wait_ready(self, seen: int) -> int:
        """Wait for a "ready" line past the first ``seen``; returns the warm process's pid."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            found = READY.findall(self.log.read_text(errors="replace"))
            if len(found) > seen:
                return int(found[-1])
            time.sleep(0.05)
        sys.exit(f"the warm process was not ready in {READY_TIMEOUT_S:.0f} s; see {self.log}")

    def command(self, name: str, argument: dict[str, Any]) -> Any:
        answer = self.request(
            "workspace/executeCommand", {"command": name, "arguments": [argument]}
        )
        if isinstance(answer, dict) and "error" in answer:
            sys.exit(f"{name}: {answer['error']}")
        return answer

    def wait_final(self, run_id: str) -> dict[str, Any]:
        while True:
            run: dict[str, Any] = self.command("quickdev.getRun", {"runId": run_id})["run"]
            if run["status"] not in ("queued", "running"):
                return run
            time.sleep(0.02)


def cpu_s(pids: list[int]) -> float:
    """CPU seconds of ``pids`` and of the children they reaped (/proc)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def session_cpu_s(session: int) -> float:
    """CPU seconds of the live processes of ``session`` (a job and its debugpy adapter)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session:
                pids.append(int(entry.name))
    return cpu_s(pids)


def started_warm(run: dict[str, Any]) -> bool:
    log = Path(run["runDir"]) / "job.log"
    return "started warm" in log.read_text(errors="replace")


def server_run(
    server: Server, script: Path, args: list[str], warm_pid: int
) -> tuple[float, float, bool]:
    """Wall and CPU seconds from startJob to the run's final status; started warm?"""
    pids = [server.proc.pid, warm_pid]
    cpu_before, started = cpu_s(pids), time.perf_counter()
    answer = server.command("quickdev.startJob", {"script": str(script), "args": args})
    run = server.wait_final(answer["runId"])
    return time.perf_counter() - started, cpu_s(pids) - cpu_before, started_warm(run)


def server_debug(server: Server, warm_pid: int) -> tuple[float, float, bool]:
    """Wall and CPU seconds from startJob (mode debug) to the stop at the training step."""
    pids = [server.proc.pid, warm_pid]
    cpu_before, started = cpu_s(pids), time.perf_counter()
    answer = server.command(
        "quickdev.startJob",
        {"script": str(DEBUG_SCRIPT), "mode": "debug", "args": DEBUG_ARGS},
    )
    attach = answer["attach"]
    with DapClient.connect(attach["host"], attach["port"], timeout_s=120) as dap:
        dap.initialize()
        dap.attach(just_my_code=False)
        dap.set_breakpoints(DEBUG_SCRIPT, [step_line()])
        dap.configuration_done()
        dap.wait_for_stopped(timeout_s=120)
        elapsed = time.perf_counter() - started
        # The job is alive (not reaped yet): its session's own CPU, beside the server's.
        job = json.loads((Path(answer["runDir"]) / "debugpy.json").read_text())["pid"]
        cpu = cpu_s(pids) - cpu_before + session_cpu_s(int(job))
        dap.disconnect(terminate=True)
    run = server.wait_final(answer["runId"])
    return elapsed, cpu, started_warm(run)


def plain_debug() -> tuple[float, float]:
    cpu_before = _children_cpu_s()
    elapsed = time_to_breakpoint(start_plain_debugpy)
    return elapsed, _children_cpu_s() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the same quiet start for both
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = Server(folder / "server.log")
        initialize(server, folder)
        # Each run ends with the warm process preparing again: one "ready" line to wait for.
        seen = server.ready_count()
        server_run(server, DEBUG_SCRIPT, DEBUG_ARGS, server.proc.pid)  # cold; warm ones follow
        warm_pid = server.wait_ready(seen)
        for name, (script, args, hand_args) in SCRIPTS.items():
            seen = server.ready_count()
            server_run(server, script, args, warm_pid)  # its own libraries join the warm process
            warm_pid = server.wait_ready(seen)
            cold, warm = [], []
            for _ in range(options.repeats):  # interleaved, so load affects both alike
                cold.append(measure([sys.executable, str(script), *args, *hand_args], folder))
                seen = server.ready_count()
                wall, cpu, was_warm = server_run(server, script, args, warm_pid)
                warm_pid = server.wait_ready(seen)
                if not was_warm:
                    sys.exit(f"{name}: a measured run started cold; see {server.log}")
                warm.append((wall, cpu))
            rows[name] = summary(warm, cold)
            print(json.dumps({"script": name, **rows[name]}))
        plain, debug = [], []
        for _ in range(options.repeats):
            plain.append(plain_debug())
            seen = server.ready_count()
            wall, cpu, was_warm = server_debug(server, warm_pid)
            warm_pid = server.wait_ready(seen)
            if not was_warm:
                sys.exit(f"debug: a measured run started cold; see {server.log}")
            debug.append((wall, cpu))
        rows["debug"] = summary(debug, plain)
        print(json.dumps({"script": "debug → first breakpoint", **rows["debug"]}))
        server.close()
    for name, row in rows.items():
        versus = "python -m debugpy" if name == "debug" else "cold hand-limited python"
        goal = 0.5 if name == "debug" else 0.35
        print(
            f"{name}: warm through the server / {versus}: wall {row['wall_ratio']:.3f} "
            f"(goal <= {goal}), CPU {row['cpu_ratio']:.3f}"
        )


def summary(warm: list[tuple[float, float]], cold: list[tuple[float, float]]) -> dict[str, float]:
    warm_wall, warm_cpu = (statistics.median(values) for values in zip(*warm, strict=True))
    cold_wall, cold_cpu = (statistics.median(values) for values in zip(*cold, strict=True))
    return {
        "warm_wall_s": round(warm_wall, 3),
        "cold_wall_s": round(cold_wall, 3),
        "warm_cpu_s": round(warm_cpu, 3),
        "cold_cpu_s": round(cold_cpu, 3),
        "wall_ratio": round(warm_wall / cold_wall, 3),
        "cpu_ratio": round(warm_cpu / cold_cpu, 3),
    }


if __name__ == "__main__":
    main()

"""The smoke suite `make compat` runs against one environment a user made.

``smoke.py VENV OUT.json`` drives the ``quickdev`` installed in VENV (with that venv's torch)
as a person would, one check per feature, and writes one row: each check's verdict and, for a
failure, its reason in one line. The driver itself runs in the project's development venv,
which brings the debug adapter and language server clients; nothing from it is imported into
the environment under test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.dap import DapClient, wait_for_json_file  # noqa: E402

EXAMPLE = ROOT / "examples" / "train_loop.py"
DCGAN = Path(__file__).parent / "examples" / "dcgan_main.py"
JOB_TIMEOUT_S = 600

# A fault planted at one line: the loss is finite until a log of a negative number.
PLANTED_NAN = textwrap.dedent(
    """
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(20):
        x = torch.randn(8, 4)
        out = model(x)
        if step == 3:
            out = torch.log(out - 100.0)  # PLANTED
        loss = out.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """
)


class CheckFailed(AssertionError):
    pass


def expect(condition: object, why: str) -> None:
    if not condition:
        raise CheckFailed(why)


class Environment:
    """The venv under test and a scratch folder for its runs."""

    def __init__(self, venv: Path, work: Path) -> None:
        self.venv = venv
        self.work = work
        self.runs = work / "runs"
        self.quickdev = str(venv / "bin" / "quickdev")

    def run_job(self, *args: str, script: Path = EXAMPLE, script_args: tuple[str, ...] = ()) -> Any:
        """``quickdev run ARGS --json SCRIPT -- SCRIPT_ARGS``; the result JSON."""
        proc = subprocess.run(
            [self.quickdev, "run", "--runs-dir", str(self.runs), *args, "--json", str(script)]
            + (["--", *script_args] if script_args else []),
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=JOB_TIMEOUT_S,
        )
        lines = proc.stdout.strip().splitlines()
        try:
            return json.loads(lines[-1])
        except (IndexError, ValueError):
            raise CheckFailed(f"no result (exit {proc.returncode}): {_last(proc.stderr)}") from None

    def problems(self, result: Any) -> str:
        found = result.get("problems") or []
        return "; ".join(
            f"{p.get('feature') or p['kind']}: {p.get('detail') or p['message']}" for p in found
        )


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _last_error(log: Path) -> str:
    """The last exception line of the job's log: what the result did not say."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no job.log"
    errors = [line for line in lines if "Error: " in line or "Error " in line]
    return errors[-1][:300] if errors else "job.log names no error"


def passed(env: Environment, result: Any) -> None:
    error = (result.get("error") or {}).get("message", "")
    expect(result["status"] == "passed", f"{result['status']}: {error or env.problems(result)}")
    expect(result["optimizer_steps"] > 0, "no training step")


def check_demo(env: Environment) -> str:
    result = env.run_job()
    passed(env, result)
    return f"{result['optimizer_steps']} steps"


def check_profile(env: Environment) -> str:
    result = env.run_job("--profile", "--name", "profiled")
    passed(env, result)
    profile = result.get("profile") or {}
    why = env.problems(result) or _last_error(Path(result["run_dir"]) / "job.log")
    expect(profile.get("trace_files"), f"no trace written ({why})")
    expect(profile.get("top_ops"), "no operator in the profile summary")
    started = subprocess.run(
        [env.quickdev, "tensorboard", "--logdir", str(env.runs)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=env.work,
    )
    expect(started.returncode == 0, f"tensorboard: {_last(started.stderr)}")
    url = json.loads(started.stdout.strip().splitlines()[-1])["url"]
    try:
        deadline = time.monotonic() + 60
        runs: list[str] = []
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError, ValueError),
                urllib.request.urlopen(f"{url}data/plugin/pytorch_profiler/runs") as r,
            ):
                runs = json.loads(r.read())["runs"]
            if result["id"] in runs:
                return f"{len(profile['trace_files'])} trace(s), listed by the plugin"
            time.sleep(0.5)
        raise CheckFailed(f"the profiler plugin lists {runs}, not {result['id']}")
    finally:
        subprocess.run(
            [env.quickdev, "tensorboard", "--logdir", str(env.runs), "--stop"],
            capture_output=True,
            timeout=60,
        )


def check_nonfinite(env: Environment) -> str:
    script = env.work / "planted_nan.py"
    script.write_text(PLANTED_NAN)
    line = next(n for n, t in enumerate(PLANTED_NAN.splitlines(), 1) if "PLANTED" in t)
    result = env.run_job("--find-nonfinite", script=script)
    origin = result.get("first_nonfinite") or {}
    expect(result["status"] == "failed", f"{result['status']}, not failed at the planted NaN")
    expect(origin.get("line") == line, f"blamed line {origin.get('line')}, planted at {line}")
    return f"found at line {line}"


def check_forecast(env: Environment) -> str:
    result = env.run_job("--memory-forecast")
    passed(env, result)
    forecast = result.get("memory_forecast") or {}
    expect(forecast.get("peak"), f"no forecast: {forecast.get('error') or env.problems(result)}")
    return f"peak {forecast['peak']} bytes"


def check_debug(env: Environment) -> str:
    marker = "loss.backward()"
    line = next(n for n, t in enumerate(EXAMPLE.read_text().splitlines(), 1) if marker in t)
    output = env.work / "debug-output.log"
    with output.open("wb") as sink:
        proc = subprocess.Popen(
            [env.quickdev, "run", "--runs-dir", str(env.runs), "--run-id", "debugged",
             "--listen", "127.0.0.1:0", "--wait-for-client", str(EXAMPLE)],
            cwd=env.work, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        address = wait_for_json_file(env.runs / "debugged" / "debugpy.json", timeout_s=180)
        with DapClient.connect(address["host"], address["port"]) as dap:
            dap.initialize()
            dap.attach(just_my_code=False)
            dap.set_breakpoints(EXAMPLE, [line])
            dap.configuration_done()
            stopped = dap.wait_for_stopped(timeout_s=180)
            frame = dap.stack_trace(stopped["threadId"])[0]
            expect(frame["line"] == line, f"stopped at line {frame['line']}, not {line}")
            dap.set_breakpoints(EXAMPLE, [])
            dap.continue_(stopped["threadId"])
            dap.disconnect()
        expect(proc.wait(timeout=JOB_TIMEOUT_S) == 0, _last(output.read_text(errors="replace")))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return f"stopped at {EXAMPLE.name}:{line}"


def check_lenses(env: Environment) -> str:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    async def lens_titles() -> list[str]:
        client = LanguageClient("compat-smoke", "1")
        await client.start_io(env.quickdev, "serve")
        try:
            await asyncio.wait_for(
                client.initialize_async(
                    types.InitializeParams(
                        capabilities=types.ClientCapabilities(),
                        root_uri=env.work.as_uri(),
                    )
                ),
                120,
            )
            client.initialized(types.InitializedParams())
            uri = EXAMPLE.as_uri()
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=uri, language_id="python", version=1, text=EXAMPLE.read_text()
                    )
                )
            )
            found = await asyncio.wait_for(
                client.text_document_code_lens_async(
                    types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
                ),
                60,
            )
            return [lens.command.title for lens in found or [] if lens.command]
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_async(None), 10)
                client.exit(None)
            await client.stop()

    titles = asyncio.run(lens_titles())
    expect("Quick-dev run" in titles and "Profile" in titles, f"lenses: {titles}")
    return f"{len(titles)} lenses"


def check_torchvision(env: Environment) -> str:
    result = env.run_job(script=DCGAN, script_args=("--dataset", "fake", "--batchSize", "8"))
    passed(env, result)
    return f"dcgan --dataset fake: {result['optimizer_steps']} steps"


CHECKS: dict[str, Callable[[Environment], str]] = {
    "demo": check_demo,
    "profile+plugin": check_profile,
    "nonfinite": check_nonfinite,
    "forecast": check_forecast,
    "debug": check_debug,
    "lenses": check_lenses,
    "torchvision": check_torchvision,
}


def versions(venv: Path) -> dict[str, str]:
    code = (
        "import json, sys, torch, torchvision;"
        "print(json.dumps({'torch': torch.__version__, 'torchvision': torchvision.__version__,"
        "'python': sys.version.split()[0]}))"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    found: dict[str, str] = json.loads(out.stdout)
    return found


def main(venv: Path, out: Path, only: list[str]) -> int:
    try:
        row: dict[str, Any] = {**versions(venv), "checks": {}}
    except subprocess.CalledProcessError as exc:  # the environment itself is broken
        why = _last(exc.stderr or "")
        row = {"torch": venv.name, "torchvision": "?", "python": "?", "checks": {}}
        row["checks"]["import"] = {"ok": False, "detail": why, "seconds": 0.0}
        print(f"  import torch, torchvision FAIL  {why}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(row, indent=1) + "\n")
        return 1
    work = Path(tempfile.mkdtemp(prefix="quickdev-compat-"))
    env = Environment(venv, work)
    try:
        for name, check in CHECKS.items():
            if only and name not in only:
                continue
            began = time.monotonic()
            try:
                detail, ok = check(env), True
            except Exception as exc:  # a check's failure is its cell, the others still run
                ok = False
                detail = str(exc) if isinstance(exc, CheckFailed) else traceback.format_exc(-1)
                detail = " ".join(detail.split())[:400]
            seconds = round(time.monotonic() - began, 1)
            row["checks"][name] = {"ok": ok, "detail": detail, "seconds": seconds}
            print(f"  {name:<15} {'pass' if ok else 'FAIL'}  {seconds:6.1f} s  {detail}",
                  flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(row, indent=1) + "\n")
    return 0 if all(c["ok"] for c in row["checks"].values()) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]))

"""How fast the language server answers ``textDocument/inlayHint`` for tensor shapes on a
5,000-line file, right after each edit.

A 5,000-line file of many small modules (benchmarks/lsp.py's sample) whose ``main`` trains
all of them stacked, run once for real with ``quickdev run`` so the shapes come from a real
record. The server is then started on its folder; each round types one line inside a
method (an incremental ``didChange``: every hint below it moves) and times the inlay hint
request that follows: first rounds that ask for a screenful around the edit (what an
editor asks for), then rounds that ask for the whole file. Goal: a screen's p95 <= 20 ms;
the whole file's is printed beside it. The server's CPU time per round (the edit and the
request) is printed too: on a loaded machine the wall clock mostly measures the wait for a
core.

    python benchmarks/shape_hints.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsp import HEADER, SAMPLE_CLASS, Client, initialize, p95

GOAL_MS = 20
SCREEN = 60  # lines an editor shows, and asks hints for
TRAIN = """

def main():
    blocks = [globals()[f"Block{{i}}"](16) for i in range({n})]
    model = nn.Sequential(*blocks)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 16)
    for _ in range(3):
        loss = model(x).pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # 500 blocks deep
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


def model_file() -> str:
    blocks, n = [HEADER], 0
    while sum(b.count("\n") for b in blocks) < 4_980:
        blocks.append(SAMPLE_CLASS.format(n=n))
        n += 1
    return "".join(blocks) + TRAIN.format(n=n)


def record_shapes(folder: Path, script: Path) -> None:
    runs = folder / ".quickdev" / "runs"  # the server's default runs directory
    command = [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(runs), script.name]
    subprocess.run(command, cwd=folder, check=True, capture_output=True, timeout=600)
    assert list(runs.glob("*/shapes.json")), "the run recorded no shapes"


def hint_range(first: int, last: int) -> dict[str, Any]:
    return {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}}


def latencies(folder: Path, script: Path, rounds: int) -> dict[str, Any]:
    """Per kind of request (a screen, the whole file): each round's milliseconds, and the
    server's CPU milliseconds per round; the first request's milliseconds; the hints."""
    text = script.read_text()
    uri = script.as_uri()
    lines = text.splitlines()
    body_lines = [i for i, line in enumerate(lines) if line.startswith("        ")]
    client = Client([sys.executable, "-m", "quickdev", "serve"])
    initialize(client, folder)
    client.send(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        request=False,
    )
    started = time.perf_counter()
    whole = {"textDocument": {"uri": uri}, "range": hint_range(0, len(lines))}
    first = client.request("textDocument/inlayHint", whole)
    while not first and time.perf_counter() - started < 60:  # the record is read off the loop
        time.sleep(0.01)
        first = client.request("textDocument/inlayHint", whole)
    figures: dict[str, Any] = {"first_ms": (time.perf_counter() - started) * 1000}
    assert first, "no hints: the server did not find the run's record"
    rng = random.Random(7)
    version = 1
    for kind in ("screen", "whole"):
        times: list[float] = []
        figures[kind] = times
        cpu_before = server_cpu_s(client.proc.pid)
        for _ in range(rounds):
            version += 1
            line = rng.choice(body_lines)
            typed = f"y{version} = {version}\n        "
            at = {"line": line, "character": 8}
            change = {"range": {"start": at, "end": at}, "text": typed}
            client.send(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
                request=False,
            )
            lines[line] = lines[line][:8] + typed + lines[line][8:]
            lines = "\n".join(lines).splitlines()
            body_lines = [b + 1 if b >= line else b for b in body_lines]
            top = max(0, line - SCREEN // 2)
            shown = hint_range(top, top + SCREEN) if kind == "screen" else hint_range(0, len(lines))
            started = time.perf_counter()
            hints = client.request("textDocument/inlayHint", whole | {"range": shown})
            times.append((time.perf_counter() - started) * 1000)
            assert hints is not None
        figures[f"{kind}_cpu_ms"] = (server_cpu_s(client.proc.pid) - cpu_before) * 1000 / rounds
    final = client.request("textDocument/inlayHint", whole | {"range": hint_range(0, len(lines))})
    client.close()
    # Each edit changed one statement at most (a line typed before another: the line after
    # keeps its text): nearly every hint is still shown.
    assert len(final) >= len(first) - 2 * rounds, (len(first), len(final))
    figures["hints"] = len(first)
    return figures


def server_cpu_s(pid: int) -> float:
    """The process's user and system CPU seconds so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quickdev-hints-bench-") as tmp:
        folder = Path(tmp)
        script = folder / "many_modules.py"
        script.write_text(model_file())
        record_shapes(folder, script)
        figures = latencies(folder, script, options.rounds)
        n_lines = script.read_text().count("\n")
    print(f"{n_lines} lines, {figures['hints']} shape hints from a real run")
    print(f"first request (reads the run's record): {figures['first_ms']:.1f} ms")
    for kind, what in (("screen", f"a screen ({SCREEN} lines)"), ("whole", "the whole file")):
        values = figures[kind]
        print(
            f"inlay hints for {what} after an edit, {len(values)} rounds: median "
            f"{statistics.median(values):.2f} ms, p95 {p95(values):.2f} ms; server CPU "
            f"{figures[f'{kind}_cpu_ms']:.2f} ms per edit and request"
        )
    print(
        f"inlay hint request for a screen, p95 after an edit: {p95(figures['screen']):.2f} ms "
        f"(goal <= {GOAL_MS}); the whole file: {p95(figures['whole']):.2f} ms"
    )


if __name__ == "__main__":
    main()

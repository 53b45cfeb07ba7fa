"""Language server figures, measured side by side in one run.

- cold start: spawning ``python -m quickdev serve`` until it answers ``initialize``, beside
  ``python -c "import pygls.lsp.server"`` (what importing pygls means for any pygls server;
  the bare ``pygls`` package is empty and is printed too). Goal: ratio ≤ 1.2.
- resident memory of the server after it analysed a 5,000-line file (goal ≤ 60 MB), and
  whether torch got loaded (it must not).
- code lens latency right after an edit on that 5,000-line file: each round sends one
  ``didChange`` (a line typed inside a method) and times the ``codeLens`` request that
  follows. Goal: p95 ≤ 12 ms. Measured on a file of many classes and on one whose edits
  land in a single 3,000-line class (too big to re-parse per keystroke), each with the
  edit sent as a range (incremental sync) and as the whole new text (what a client sends
  for a formatter's or a checkout's change, or with full sync).

Usage: python benchmarks/lsp.py [--rounds 200] [--starts 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAMPLE_CLASS = '''
class Block{n}(nn.Module):
    """A residual block."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = self.b(h)
        return x + h


class Data{n}(Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        x = torch.randn(64)
        return x, x.sum()


def helper_{n}(values, scale=1.0):
    total = 0.0
    for v in values:
        total += v * scale
    return total

'''
HEADER = (
    "import argparse\n\nimport torch\nfrom torch import nn\n"
    "from torch.utils.data import Dataset\n\n"
)
FOOTER = """
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.parse_args()


if __name__ == "__main__":
    main()
"""


def five_thousand_lines(giant_class_lines: int = 0) -> str:
    """Many small classes; optionally one class of ``giant_class_lines`` lines first."""
    blocks, n = [HEADER], 0
    if giant_class_lines:
        blocks.append("class Giant(nn.Module):\n")
        for i in range(giant_class_lines // 5):
            blocks.append(f"    def layer_{i}(self, x):\n        y = x * {i}\n        return y\n\n")
    while sum(b.count("\n") for b in blocks) < 4_980:
        blocks.append(SAMPLE_CLASS.format(n=n))
        n += 1
    return "".join(blocks) + FOOTER


class Client:
    """A minimal JSON-RPC client over the server's stdio."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._next_id = 0

    def send(self, method: str, params: Any, request: bool = True) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        msg_id = None
        if request:
            self._next_id += 1
            msg_id = message["id"] = self._next_id
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return msg_id

    def wait(self, msg_id: int) -> Any:
        """Read messages until the response to ``msg_id``; answer the server's requests."""
        assert self.proc.stdout is not None
        while True:
            length = 0
            while (line := self.proc.stdout.readline().strip()) != b"":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(self.proc.stdout.read(length))
            if message.get("id") == msg_id and "method" not in message:
                return message.get("result")
            if "method" in message and "id" in message:  # a request from the server
                body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None})
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body.encode())
                self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        msg_id = self.send(method, params)
        assert msg_id is not None
        return self.wait(msg_id)

    def close(self) -> None:
        self.request("shutdown", None)
        self.send("exit", None, request=False)
        self.proc.wait(timeout=10)


def initialize(client: Client, folder: Path) -> None:
    client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": folder.as_uri(),
            "capabilities": {},
            "workspaceFolders": [{"uri": folder.as_uri(), "name": "bench"}],
        },
    )
    client.send("initialized", {}, request=False)


def time_import() -> tuple[float, float]:
    times = {}
    for module in ("pygls", "pygls.lsp.server"):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        times[module] = time.perf_counter() - started
    return times["pygls"], times["pygls.lsp.server"]


def time_cold_start(folder: Path) -> float:
    started = time.perf_counter()
    client = Client([sys.executable, "-m", "quickdev", "serve"])
    initialize(client, folder)
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def torch_loaded(pid: int) -> bool:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "libtorch" in maps or "torch/_C" in maps


def lens_latencies(
    folder: Path, rounds: int, text: str, name: str, full_text: bool = False
) -> tuple[list[float], float, bool, int]:
    """Per round: one line typed inside a method, sent as a range or (``full_text``) as
    the whole new document, then the lens request timed."""
    path = folder / name
    path.write_text(text)
    uri = path.as_uri()
    lines = text.splitlines()
    # Lines inside method bodies, where people type most.
    body_lines = [i for i, line in enumerate(lines) if line.startswith("        ")]
    client = Client([sys.executable, "-m", "quickdev", "serve"])
    initialize(client, folder)
    client.send(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        request=False,
    )
    params = {"textDocument": {"uri": uri}}
    first = client.request("textDocument/codeLens", params)
    rng = random.Random(7)
    latencies = []
    for version in range(2, rounds + 2):
        line = rng.choice(body_lines)
        typed = f"y{version} = {version}\n        "
        change: dict[str, Any] = {
            "range": {
                "start": {"line": line, "character": 8},
                "end": {"line": line, "character": 8},
            },
            "text": typed,
        }
        lines[line] = lines[line][:8] + typed + lines[line][8:]
        if full_text:
            change = {"text": "\n".join(lines) + "\n"}
        client.send(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
            request=False,
        )
        started = time.perf_counter()
        lenses = client.request("textDocument/codeLens", params)
        latencies.append((time.perf_counter() - started) * 1000)
        assert lenses and len(lenses) == len(first), "the edit must not change the lenses"
        lines = "\n".join(lines).splitlines()
        body_lines = [b + 1 if b >= line else b for b in body_lines]
    memory, loaded = rss_mb(client.proc.pid), torch_loaded(client.proc.pid)
    client.close()
    return latencies, memory, loaded, text.count("\n")  # as opened


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quickdev-lsp-bench-") as tmp:
        folder = Path(tmp)
        bare, pygls_server, starts = [], [], []
        for _ in range(options.starts):  # interleaved, so load affects both alike
            b, p = time_import()
            bare.append(b)
            pygls_server.append(p)
            starts.append(time_cold_start(folder))
        many, giant = five_thousand_lines(), five_thousand_lines(giant_class_lines=3000)
        latencies, memory, loaded, n_lines = lens_latencies(
            folder, options.rounds, many, "many_classes.py"
        )
        full, _, _, _ = lens_latencies(folder, options.rounds, many, "many_full.py", True)
        in_giant, _, _, _ = lens_latencies(folder, options.rounds, giant, "giant_class.py")
        giant_full, _, _, _ = lens_latencies(folder, options.rounds, giant, "giant_full.py", True)
    start_s, import_s = statistics.median(starts), statistics.median(pygls_server)
    print(f"import pygls (bare package):        {statistics.median(bare):.3f} s")
    print(f"import pygls.lsp.server:            {import_s:.3f} s")
    print(f"server cold start to initialize:    {start_s:.3f} s")
    print(f"server resident memory:             {memory:.1f} MB (goal <= 60)")
    print(f"torch loaded in the server:         {loaded}")
    for what, values in (
        (f"an edit, {n_lines} lines in many classes", latencies),
        (f"a full-text change, {n_lines} lines in many classes", full),
        ("an edit inside one 3,000-line class", in_giant),
        ("a full-text change inside one 3,000-line class", giant_full),
    ):
        print(
            f"code lens after {what}, {len(values)} rounds: median "
            f"{statistics.median(values):.2f} ms, p95 {p95(values):.2f} ms (goal <= 12)"
        )
    print(f"cold start / import pygls.lsp.server: {start_s / import_s:.2f} (goal <= 1.2)")


if __name__ == "__main__":
    main()

"""Drive headless Chromium over the DevTools protocol, through a pipe (no extra packages).

Chromium reads commands from its fd 3 and writes answers to its fd 4, each message JSON
ended by a NUL byte. Enough for tests: navigate, evaluate JavaScript, take screenshots.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def _above(fd: int, lowest: int = 20) -> int:
    """The fd moved out of the way of 3 and 4, which the child must get."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.close(fd)
    return moved


class Browser:
    def __init__(self, user_data_dir: Path, size: tuple[int, int] = (1400, 1000)) -> None:
        exe = shutil.which("chromium")
        if exe is None:
            pytest.fail("chromium is not installed; run `make system-deps`")
        commands_r, commands_w = os.pipe()
        answers_r, answers_w = os.pipe()
        child_in, child_out = _above(commands_r), _above(answers_w)

        def wire() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self._proc = subprocess.Popen(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={user_data_dir}",
                f"--window-size={size[0]},{size[1]}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            preexec_fn=wire,
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(child_in)
        os.close(child_out)
        self._send = os.fdopen(commands_w, "wb", buffering=0)
        self._receive = os.fdopen(answers_r, "rb", buffering=0)
        self._buffer = b""
        self._last_id = 0
        self.events: list[dict[str, Any]] = []  # what Chromium reported, oldest first
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)
        self._session: str = attached["sessionId"]
        self.page("Page.enable")
        self.page("Network.enable")

    def call(self, method: str, session: str | None = None, **params: Any) -> Any:
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._send.write(json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = self._receive.read(1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if "method" in answer:
                self.events.append(answer)
            elif answer.get("id") == self._last_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def page(self, method: str, **params: Any) -> Any:
        return self.call(method, session=self._session, **params)

    def before_each_page(self, script: str) -> None:
        self.page("Page.addScriptToEvaluateOnNewDocument", source=script)

    def goto(self, url: str) -> None:
        self.page("Page.navigate", url=url)

    def js(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (promises awaited)."""
        result = self.page(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("exception", result))
        return result["result"].get("value")

    def requested_urls(self) -> list[str]:
        """Every URL the pages asked for since the browser started, frames included."""
        self.js("0")  # read what arrived so far
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path) -> None:
        data = self.page("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        self._proc.kill()
        self._proc.wait()
        self._send.close()
        self._receive.close()

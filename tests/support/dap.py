"""A small Debug Adapter Protocol client over TCP, for tests against the real debugpy.

Synchronous on purpose: a test reads like the session it drives.

    with DapClient.connect("127.0.0.1", port) as dap:
        dap.initialize()
        dap.attach()  # justMyCode off, so torch internals can be stepped into
        dap.set_breakpoints("train.py", [42])
        dap.configuration_done()
        stopped = dap.wait_for_stopped()
        frames = dap.stack_trace(stopped["threadId"])
        ...
        dap.continue_(stopped["threadId"])

Every wait has a deadline; a timeout raises ``DapTimeout`` with what was seen so far.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

Message = dict[str, Any]

DEFAULT_TIMEOUT_S = 60.0


class DapError(RuntimeError):
    """The adapter answered a request with ``success: false``."""


class DapTimeout(TimeoutError):
    """Nothing matching arrived before the deadline."""


def wait_for_json_file(path: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> Message:
    """Poll until ``path`` holds a complete JSON object (writers replace files atomically)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                return data
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise DapTimeout(f"{path} did not appear within {timeout_s}s")
        time.sleep(0.05)


class DapClient:
    """One DAP session over a socket; a reader thread collects responses and events."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._seq = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._responses: dict[int, Message] = {}
        self.events: list[Message] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="dap-reader", daemon=True)
        self._reader.start()

    @classmethod
    def connect(cls, host: str, port: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> DapClient:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=5.0)
                sock.settimeout(None)
                return cls(sock)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __enter__(self) -> DapClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- wire ---------------------------------------------------------------------------

    def _read_loop(self) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = self._sock.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                header, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in header.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(buf) < length:
                    chunk = self._sock.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                self._dispatch(json.loads(body))
        except OSError:
            return
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def _dispatch(self, message: Message) -> None:
        with self._cond:
            if message.get("type") == "response":
                self._responses[message["request_seq"]] = message
            elif message.get("type") == "event":
                self.events.append(message)
            self._cond.notify_all()

    def send_request(self, command: str, arguments: Message | None = None) -> int:
        """Send without waiting; returns the sequence number for ``wait_response``."""
        with self._lock:
            self._seq += 1
            seq = self._seq
            body = json.dumps(
                {"seq": seq, "type": "request", "command": command, "arguments": arguments or {}}
            ).encode("utf-8")
            self._sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return seq

    def _wait(self, ready: Callable[[], Any], what: str, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                found = ready()
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    seen = [e.get("event") for e in self.events]
                    state = "connection closed" if self._closed else f"timed out ({timeout_s}s)"
                    raise DapTimeout(f"waiting for {what}: {state}; events seen: {seen}")
                self._cond.wait(min(left, 0.5))

    def wait_response(self, seq: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> Message:
        response: Message = self._wait(
            lambda: self._responses.pop(seq, None), f"response to request {seq}", timeout_s
        )
        if not response.get("success"):
            raise DapError(f"{response.get('command')}: {response.get('message')}")
        return response

    def request(
        self, command: str, arguments: Message | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> Message:
        body: Message = (
            self.wait_response(self.send_request(command, arguments), timeout_s).get("body") or {}
        )
        return body

    def wait_event(
        self,
        event: str,
        predicate: Callable[[Message], bool] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> Message:
        """The first not yet consumed event with this name (and predicate); it is consumed."""

        def find() -> Message | None:
            for i, e in enumerate(self.events):
                if e.get("event") == event and (predicate is None or predicate(e)):
                    del self.events[i]
                    body: Message = e.get("body") or {}
                    return body
            return None

        found: Message = self._wait(find, f"event {event!r}", timeout_s)
        return found

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    # --- the requests tests use ---------------------------------------------------------

    def initialize(self) -> Message:
        return self.request(
            "initialize",
            {
                "clientID": "quickdev-tests",
                "adapterID": "debugpy",
                "pathFormat": "path",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "supportsVariableType": True,
            },
        )

    def attach(self, just_my_code: bool = False, **extra: Any) -> int:
        """Start attaching; debugpy answers only after ``configuration_done``."""
        self._attach_seq = self.send_request("attach", {"justMyCode": just_my_code, **extra})
        self.wait_event("initialized")
        return self._attach_seq

    def set_breakpoints(self, path: str | Path, lines: list[int]) -> list[Message]:
        body = self.request(
            "setBreakpoints",
            {
                "source": {"path": str(Path(path).resolve())},
                "breakpoints": [{"line": line} for line in lines],
            },
        )
        breakpoints: list[Message] = body.get("breakpoints", [])
        return breakpoints

    def configuration_done(self) -> None:
        self.request("configurationDone")
        self.wait_response(self._attach_seq)

    def wait_for_stopped(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> Message:
        return self.wait_event("stopped", timeout_s=timeout_s)

    def threads(self) -> list[Message]:
        threads: list[Message] = self.request("threads").get("threads", [])
        return threads

    def stack_trace(self, thread_id: int) -> list[Message]:
        frames: list[Message] = self.request("stackTrace", {"threadId": thread_id}).get(
            "stackFrames", []
        )
        return frames

    def scopes(self, frame_id: int) -> list[Message]:
        scopes: list[Message] = self.request("scopes", {"frameId": frame_id}).get("scopes", [])
        return scopes

    def variables(self, reference: int) -> list[Message]:
        variables: list[Message] = self.request("variables", {"variablesReference": reference}).get(
            "variables", []
        )
        return variables

    def locals(self, frame_id: int) -> dict[str, Message]:
        """The frame's local variables by name."""
        scope = next(s for s in self.scopes(frame_id) if s["name"].lower().startswith("local"))
        return {v["name"]: v for v in self.variables(scope["variablesReference"])}

    def evaluate(self, expression: str, frame_id: int, context: str = "repl") -> str:
        result: str = self.request(
            "evaluate", {"expression": expression, "frameId": frame_id, "context": context}
        )["result"]
        return result

    def step_in(self, thread_id: int) -> Message:
        self.request("stepIn", {"threadId": thread_id})
        return self.wait_for_stopped()

    def next_(self, thread_id: int) -> Message:
        self.request("next", {"threadId": thread_id})
        return self.wait_for_stopped()

    def continue_(self, thread_id: int) -> None:
        self.request("continue", {"threadId": thread_id})

    def pause(self, thread_id: int) -> Message:
        self.request("pause", {"threadId": thread_id})
        return self.wait_for_stopped()

    def disconnect(self, terminate: bool = False) -> None:
        """Detach, leaving the debuggee running (unless ``terminate``)."""
        with contextlib.suppress(DapTimeout, OSError):
            self.request("disconnect", {"terminateDebuggee": terminate}, timeout_s=10)
        self.close()

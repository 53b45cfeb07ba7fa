"""Fixes that make torch-tb-profiler 0.4.3 (its last release) work for quick-dev runs.

Applied inside the TensorBoard process by our launcher, before TensorBoard starts.
Each fix answers a failure seen with tensorboard 2.21, pandas 3, numpy 2 and traces
from today's torch:

* The plugin scans the logdir every 10 s and loads a run directory exactly once.
  A run added after start took up to 10 s to appear, and a trace seen while empty or
  half written left its run broken (listed, with no views) for the server's lifetime.
  Our scan runs every second and reloads a run whenever its trace files change.
* A run none of whose traces parse was listed anyway, with no views, which the
  plugin's page cannot show; such a run now stays hidden until a trace parses.
* Torch no longer puts a "Call stack" on operator events; stacks come as separate
  python_function events. The plugin's "View CallStack" (and its jump-to-source
  message to the embedding editor) stayed empty; the stacks are rebuilt from those.
* The plugin's pages load scripts from the internet: Google Charts (without it every
  page spins forever) and the web components polyfill its Trace view needs (current
  browsers dropped HTML imports). Code from a CDN would run in the origin the editor
  trusts to open source files, and training machines often have no internet: the pages
  load local copies only, our small renderer of the same chart API and the same
  polyfill release.
* The plugin parses each trace in a process of its own, by default forked from
  TensorBoard's process, whose web server threads may hold locks at that moment (a
  fork inherits them held, and the child hangs); "spawn" instead re-imports TensorBoard
  (over a second per trace) without our fixes. Traces are parsed on threads of the
  server process, and its cache is a plain dict.
* pandas 3 warns on every GPU trace about a keyword the plugin passes; silenced.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESCAN_INTERVAL_S = 1.0

log = logging.getLogger(__name__)

TraceFiles = tuple[tuple[str, int, int], ...]

STATIC = Path(__file__).with_name("static")


@dataclass(frozen=True)
class LocalScript:
    """A plugin page's script from the internet, and our copy served in its place."""

    page: str
    remote: str  # the src of the page's own script tag
    local: str  # served beside the page, from our static directory

    def patch(self, html: bytes) -> bytes:
        remote, local = (
            f'<script src="{src}"></script>'.encode() for src in (self.remote, self.local)
        )
        if remote not in html:
            # Never serve a page that may still load the remote script.
            raise RuntimeError(f"torch-tb-profiler's {self.page} no longer loads {self.remote}")
        return html.replace(remote, local)


LOCAL_SCRIPTS = (
    LocalScript(
        page="index.html",
        remote="https://www.gstatic.com/charts/loader.js",
        local="charts_fallback.js",  # ours: Google Charts may not be hosted elsewhere
    ),
    LocalScript(
        page="trace_embedding.html",
        remote="https://cdnjs.cloudflare.com/ajax/libs/webcomponentsjs/0.7.24/webcomponents.min.js",
        local="webcomponents-0.7.24.min.js",  # the same release, from npm (BSD-3-Clause)
    ),
)


class _InProcess:
    """What the plugin's cache takes from multiprocessing, for one process."""

    Lock = threading.Lock

    class Manager:
        dict = dict

        def __exit__(self, *exc: object) -> None:
            pass


def add_call_stacks(trace: dict[str, Any]) -> None:
    """Give each operator the Python stack it ran under, innermost frame first.

    The plugin expects the old ``args["Call stack"]`` form: ``file(line): func`` frames
    joined by ``;``. Frames are the python_function events enclosing the operator on
    its thread.
    """
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        return
    by_thread: dict[tuple[Any, Any], list[tuple[float, int, float, dict[str, Any]]]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat not in ("python_function", "cpu_op"):
            continue
        args = e.get("args")
        if cat == "cpu_op" and (not isinstance(args, dict) or "Call stack" in args):
            continue
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            continue
        # Functions sort before operators at the same start, outer before inner.
        kind = 0 if cat == "python_function" else 1
        by_thread.setdefault((e.get("pid"), e.get("tid")), []).append((ts, kind, -dur, e))

    for items in by_thread.values():
        items.sort(key=lambda item: item[:3])
        open_functions: list[tuple[float, str]] = []  # (end, frame), outermost first
        for ts, kind, neg_dur, e in items:
            while open_functions and open_functions[-1][0] <= ts:
                open_functions.pop()
            if kind == 0:
                open_functions.append((ts - neg_dur, str(e.get("name", ""))))
            elif open_functions:
                e["args"]["Call stack"] = ";".join(f for _, f in reversed(open_functions))


def _trace_files(run_dir: str) -> TraceFiles:
    from torch_tb_profiler import utils

    found = []
    for name in os.listdir(run_dir):
        if utils.is_chrome_trace_file(name):
            try:
                st = os.stat(os.path.join(run_dir, name))
            except OSError:
                continue
            found.append((name, st.st_size, st.st_mtime_ns))
    return tuple(sorted(found))


def _monitor_runs(self: Any) -> None:
    """Replaces the plugin's scan: every second, (re)load runs whose traces changed."""
    seen: dict[str, TraceFiles] = {}
    while True:
        try:
            present = {d: _trace_files(d) for d in self._get_run_dirs()}
            for run_dir, files in present.items():
                if seen.get(run_dir) != files:
                    seen[run_dir] = files
                    thread = threading.Thread(target=self._load_run, args=(run_dir,), daemon=True)
                    with self._load_lock:
                        self._load_threads.append(thread)
                    thread.start()
            for gone in set(seen) - set(present):
                del seen[gone]
                with self._runs_lock:
                    self._runs.pop(self._get_run_name(gone), None)
        except Exception:
            log.warning("scanning the logdir for profiler runs failed", exc_info=True)
        time.sleep(RESCAN_INTERVAL_S)


def _load_run(self: Any, run_dir: str) -> None:
    """Replaces the plugin's loader: a run with no readable trace is not listed."""
    from torch_tb_profiler.profiler import RunLoader

    name = self._get_run_name(run_dir)
    try:
        run = RunLoader(name, run_dir, self._cache).load()
        if run.profiles:
            self._queue.put(run)
        else:
            log.warning("run %s has no readable trace yet; it will be listed once one parses", name)
            with self._runs_lock:
                self._runs.pop(name, None)
    except Exception:
        log.warning("loading run %s failed", name, exc_info=True)
    finally:
        with self._load_lock:
            current = threading.current_thread()
            if current in self._load_threads:
                self._load_threads.remove(current)


def _static_routes() -> dict[str, Any]:
    """The plugin's pages with local scripts in place of remote ones, and those scripts."""
    import torch_tb_profiler
    from werkzeug import Request, Response

    plugin_static = Path(torch_tb_profiler.__file__).with_name("static")
    headers = [("X-Content-Type-Options", "nosniff")]

    def serve(body: bytes, content_type: str) -> Any:
        @Request.application
        def route(request: Request) -> Response:
            return Response(body, content_type=content_type, headers=headers)

        return route

    routes: dict[str, Any] = {}
    for script in LOCAL_SCRIPTS:
        page = script.patch((plugin_static / script.page).read_bytes())
        routes["/" + script.page] = serve(page, "text/html")
        local = (STATIC / script.local).read_bytes()
        routes["/" + script.local] = serve(local, "application/javascript")
    return routes


def apply() -> None:
    """Patch the plugin in this process; must run before TensorBoard creates it."""
    warnings.filterwarnings("ignore", message="The copy keyword is deprecated")

    from torch_tb_profiler import consts
    from torch_tb_profiler.io import cache
    from torch_tb_profiler.plugin import TorchProfilerPlugin
    from torch_tb_profiler.profiler import loader
    from torch_tb_profiler.profiler.data import RunProfileData

    # No process: a trace is parsed on a thread (_load_run runs on one already).
    loader.Process = threading.Thread
    loader.Queue = queue.Queue
    cache.mp = _InProcess

    consts.MONITOR_RUN_REFRESH_INTERNAL_IN_SECONDS = int(RESCAN_INTERVAL_S)
    TorchProfilerPlugin._monitor_runs = _monitor_runs
    TorchProfilerPlugin._load_run = _load_run

    original_apps = TorchProfilerPlugin.get_plugin_apps
    static_routes = _static_routes()

    def get_plugin_apps(self: Any) -> dict[str, Any]:
        apps: dict[str, Any] = original_apps(self)
        apps.update(static_routes)
        return apps

    TorchProfilerPlugin.get_plugin_apps = get_plugin_apps

    original_from_json = RunProfileData.from_json

    def from_json(worker: Any, span: Any, trace_json: dict[str, Any]) -> Any:
        add_call_stacks(trace_json)
        return original_from_json(worker, span, trace_json)

    RunProfileData.from_json = staticmethod(from_json)

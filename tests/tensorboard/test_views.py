"""Every view of the profiler plugin renders a real run, driven in headless Chromium.

This machine has no internet, so this also shows the plugin's pages work offline:
charts through our Google Charts stand-in, the Trace view through the local polyfill.
Screenshots of each view are kept under tests/artifacts/.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from quickdev.tensorboard.manager import TensorBoardServer

from tests.support.devtools import Browser
from tests.support.paths import REPO
from tests.support.tensorboard import PLUGIN, listed_runs, poll

ARTIFACTS = REPO / "tests" / "artifacts"
COLLECT_ERRORS = (
    "window.__pageErrors = [];"
    "addEventListener('error', e => __pageErrors.push(String(e.message)));"
    "addEventListener('unhandledrejection', e => __pageErrors.push(String(e.reason)));"
)
# The plugin's drop-downs are Material UI selects: they open on mousedown.
CHOOSE = """
(async (current, wanted) => {
  const select = [...document.querySelectorAll('[role=button]')].find(e => e.innerText === current);
  select.dispatchEvent(new MouseEvent('mousedown', {bubbles: true}));
  for (let i = 0; i < 100; i++) {
    const options = [...document.querySelectorAll('li[role=option]')];
    const item = options.find(e => e.innerText === wanted);
    if (item) { item.click(); return true; }
    await new Promise(r => setTimeout(r, 50));
  }
  return false;
})
"""
TRACE_THREADS = """
(() => {
  const frame = document.querySelector('iframe');
  const page = frame && frame.contentDocument;
  const viewer = page && page.getElementById('trace-viewer');
  if (!viewer || !viewer.model) return null;
  return viewer.model.getAllThreads().map(t => t.sliceGroup.length);
})()
"""


@pytest.fixture
def plugin_page(
    example_server: TensorBoardServer, example_run_name: str, tmp_path: Path
) -> Iterator[Browser]:
    poll("the run to be listed", lambda: example_run_name in listed_runs(example_server))
    browser = Browser(tmp_path / "profile")
    try:
        browser.before_each_page(COLLECT_ERRORS)
        browser.goto(example_server.url + PLUGIN + "index.html")
        poll("the overview", lambda: text_shown(browser, "Step Time Breakdown"))
        yield browser
    finally:
        browser.close()


def text_shown(browser: Browser, text: str) -> bool:
    return bool(browser.js(f"!!document.body && document.body.innerText.includes({text!r})"))


def choose_view(browser: Browser, current: str, view: str) -> None:
    assert browser.js(f"{CHOOSE}({json.dumps(current)}, {json.dumps(view)})"), view


def keep(browser: Browser, view: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    browser.screenshot(ARTIFACTS / f"profiler_{view.lower()}.png")


@pytest.mark.parametrize(
    ("view", "shown"),
    [
        ("Operator", "View CallStack"),  # call stacks come from our compatibility fix
        ("Memory", "Peak Memory Usage"),
        ("Module", "Module View"),
    ],
)
def test_view_renders(plugin_page: Browser, view: str, shown: str) -> None:
    choose_view(plugin_page, "Overview", view)
    poll(f"the {view} view", lambda: text_shown(plugin_page, shown))
    poll(
        f"charts in the {view} view",
        lambda: plugin_page.js("document.querySelectorAll('svg').length"),
    )
    keep(plugin_page, view)
    assert plugin_page.js("window.__pageErrors") == []


def test_trace_view_loads_the_trace(plugin_page: Browser) -> None:
    choose_view(plugin_page, "Overview", "Trace")
    slices = poll("the trace viewer to load the trace", lambda: plugin_page.js(TRACE_THREADS))
    assert max(slices) > 100, "the training thread's operators and Python frames"
    keep(plugin_page, "Trace")
    assert plugin_page.js("window.__pageErrors") == []


def test_pages_load_nothing_from_the_internet(plugin_page: Browser) -> None:
    """Code from a CDN would run in the origin the editor trusts to open source files
    (and a training machine often has no internet): every view is served locally."""
    choose_view(plugin_page, "Overview", "Trace")
    poll("the trace viewer to load the trace", lambda: plugin_page.js(TRACE_THREADS))
    urls = plugin_page.requested_urls()
    assert any(url.endswith("trace_embedding.html") for url in urls), urls
    remote = [
        url
        for url in urls
        if urlsplit(url).scheme not in ("data", "blob", "about")
        and urlsplit(url).hostname not in ("127.0.0.1", "localhost")
    ]
    assert remote == []


def test_the_plugin_works_in_the_editor_s_sandboxed_frame(
    example_server: TensorBoardServer, example_run_name: str, tmp_path: Path
) -> None:
    """The webview frames TensorBoard with the sandbox the extension declares."""
    source = (REPO / "extension" / "tensorboard" / "tensorboardPage.ts").read_text()
    match = re.search(r'FRAME_SANDBOX = "([^"]*)"', source)
    assert match is not None
    poll("the run to be listed", lambda: example_run_name in listed_runs(example_server))
    frame = example_server.url + PLUGIN + "index.html"
    (tmp_path / "host.html").write_text(
        f'<iframe sandbox="{match[1]}" src="{frame}" style="width:1400px;height:900px"></iframe>'
    )
    # The host on another port of the same address: another origin, as the webview is,
    # and the same site, so the frame stays in the page's process where it can be read.
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    browser = Browser(tmp_path / "profile")
    try:
        browser.goto(f"http://127.0.0.1:{host.server_address[1]}/host.html")

        def frame_text() -> str:
            tree = browser.page("Page.getFrameTree")["frameTree"]
            children = tree.get("childFrames") or []
            if not children:
                return ""
            try:
                world = browser.page("Page.createIsolatedWorld", frameId=children[0]["frame"]["id"])
                result = browser.page(
                    "Runtime.evaluate",
                    expression="document.body ? document.body.innerText : ''",
                    contextId=world["executionContextId"],
                    returnByValue=True,
                )
            except RuntimeError as exc:
                # The frame navigated between the two calls (the plugin loads in steps):
                # its world went with it; the next poll asks the new one.
                if "Cannot find context" in str(exc):
                    return ""
                raise
            return str(result["result"].get("value", ""))

        poll("the overview in the sandboxed frame", lambda: "Step Time Breakdown" in frame_text())
    finally:
        browser.close()
        host.shutdown()

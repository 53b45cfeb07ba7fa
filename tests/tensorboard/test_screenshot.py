"""Headless Chromium renders the profiler plugin's Overview for a real run.

The PNG is kept under tests/artifacts/ for people to look at. This machine has no
internet, so the page draws its charts with our offline fallback for Google Charts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from quickdev.tensorboard.manager import TensorBoardServer

from tests.support.paths import REPO
from tests.support.tensorboard import PLUGIN, get_json, listed_runs, poll

ARTIFACTS = REPO / "tests" / "artifacts"
WINDOW = (1400, 1000)
SIDEBAR_AND_HEADER = (340, 70)  # TensorBoard's chrome around the plugin's content


def chromium(user_data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed; run `make system-deps`")
    return subprocess.run(
        [
            *(exe, "--headless", "--no-sandbox", "--disable-gpu"),
            *("--disable-background-networking", "--disable-component-update"),
            *("--disable-sync", "--no-first-run", f"--user-data-dir={user_data_dir}"),
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            # Virtual time waits for the page's own requests, so no fixed sleep is needed.
            "--virtual-time-budget=20000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


def saturated_share(png: Path) -> float:
    """Share of strongly coloured pixels in the plugin's area: charts, not a spinner."""
    image = Image.open(png).convert("RGB")
    content = image.crop((*SIDEBAR_AND_HEADER, *image.size))
    colours = content.getcolors(maxcolors=1 << 24) or []
    saturated = sum(n for n, rgb in colours if max(rgb) - min(rgb) > 60)
    return saturated / (content.size[0] * content.size[1])


def test_overview_page_renders(
    example_server: TensorBoardServer, example_run_name: str, tmp_path: Path
) -> None:
    poll("the run to be listed", lambda: example_run_name in listed_runs(example_server))
    get_json(example_server.url + PLUGIN + f"views?run={example_run_name}")

    ARTIFACTS.mkdir(exist_ok=True)
    png = ARTIFACTS / "profiler_overview.png"
    png.unlink(missing_ok=True)
    profiler_page = example_server.url + "#pytorch_profiler"  # the plugin's own tab
    chromium(tmp_path / "shot", f"--screenshot={png}", profiler_page)
    assert png.stat().st_size > 20_000
    with Image.open(png) as image:
        assert image.size == WINDOW
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 24) or []) > 200
    assert saturated_share(png) > 0.05, f"no charts drawn in {png}"

    # The same page on its own (TensorBoard shows it in an iframe), to read its text.
    dom = chromium(
        tmp_path / "dom", "--dump-dom", example_server.url + PLUGIN + "index.html"
    ).stdout
    for heading in ("Configuration", "Execution Summary", "Step Time Breakdown"):
        assert heading in dom
    assert example_run_name in dom
    assert "<svg" in dom


def test_trace_viewer_starts_without_internet(
    example_server: TensorBoardServer, tmp_path: Path
) -> None:
    """The Trace view's page needs a web components polyfill it loads from a CDN;
    here (no internet) the local copy must load, or the viewer is never created."""
    dom = chromium(
        tmp_path / "trace", "--dump-dom", example_server.url + PLUGIN + "trace_embedding.html"
    ).stdout
    assert "<tr-ui-timeline-view" in dom

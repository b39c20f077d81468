"""The merged cluster trace opened in a real trace viewer: speedscope in headless Chromium.

A real TF1 cluster on loopback (one ps, two workers, the ``between_graph``
fixture of ``tests/integration/test_cluster_tf.py``) is profiled per task and
merged with ``tfprof-lite cluster w0/ w1/ --trace cluster.json`` and with
``tfprof-lite timeline w0/ w1/ -o cluster.json``, as a user would. speedscope
1.25.0 (an offline web app; ``scripts/install-tools.sh`` installs it into
``.tools/speedscope``, or ``TFPROF_SPEEDSCOPE_DIR``) and the trace are served
from 127.0.0.1; Chromium opens
``index.html#profileURL=<trace>`` and the test checks that speedscope imported
it as a Trace Event Format profile without a console error, warning or page
error, that its profile selector lists exactly one profile per (task, device
lane) of the file, named ``<task> (pid N), <lane> (tid M)``, with the busy time
of that lane's events, that the straggler's device lane draws its ops, and
that no request leaves 127.0.0.1 (any other is aborted and fails the test).
Skips without speedscope, Chromium or Playwright; under ``CI=true`` fails.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import threading
from collections import defaultdict
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_cluster_tf import PS, W0, W1, between_graph
from tests.stepcols import skip_or_fail
from tfprof_lite.cli import main

pytestmark = pytest.mark.tf
__all__ = ["between_graph"]  # the loopback cluster fixture, used below

_ROOT = Path(__file__).resolve().parents[3]
_RELEASE = Path("node_modules", "speedscope", "dist", "release")
#: speedscope's duration format in its profile selector, e.g. ``928.00µs``, ``1.44s``.
_WEIGHT = re.compile(r"^(\d+(?:\.\d+)?)(ns|µs|ms|s)$")
_UNIT_US = {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}


@pytest.fixture(scope="module")
def release() -> Path:
    """speedscope's built web app (checked first, so that a skip needs no cluster run)."""
    folder = Path(os.environ.get("TFPROF_SPEEDSCOPE_DIR") or ".tools/speedscope")
    release = (folder if folder.is_absolute() else _ROOT / folder) / _RELEASE
    if not (release / "index.html").is_file():
        skip_or_fail(f"speedscope is not installed in {release} (run scripts/install-tools.sh)")
    return release


class _Quiet(SimpleHTTPRequestHandler):
    """Serves files without logging each request to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        """Drop the access log."""


@pytest.fixture(scope="module", params=["cluster", "timeline"])
def trace(
    request: pytest.FixtureRequest, between_graph: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The merged trace, written by ``cluster --trace`` or by ``timeline`` on both workers."""
    target = tmp_path_factory.mktemp(f"viewer_{request.param}") / "cluster.json"
    profiles = [str(between_graph / "w0"), str(between_graph / "w1")]
    flag = "--trace" if request.param == "cluster" else "-o"
    assert main([request.param, *profiles, flag, str(target)]) == 0
    return target


@pytest.fixture(scope="module")
def server(release: Path, trace: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``/speedscope/`` and ``/cluster.json``."""
    site = trace.parent / "site"
    site.mkdir()
    (site / "speedscope").symlink_to(release, target_is_directory=True)
    (site / "cluster.json").symlink_to(trace)
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    names = (os.environ.get("TFPROF_CHROMIUM", ""), "chromium", "chromium-browser")
    executable = next((shutil.which(n) for n in names if n and shutil.which(n)), None)
    if executable is None:
        skip_or_fail("chromium is not installed (run scripts/install-tools.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("the playwright package is not installed (the test extra)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


def _expected_profiles(doc: dict[str, Any]) -> dict[str, float]:
    """speedscope's name of each (pid, tid) lane with events -> its busy time in us."""
    events = doc["traceEvents"]
    tasks = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    lanes = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"
    }
    spans: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    expected = {}
    for (pid, tid), intervals in spans.items():
        busy, end = 0, None
        for start, stop in sorted(intervals):  # the union of the lane's events
            if end is None or start > end:
                busy, end = busy + stop - start, stop
            elif stop > end:
                busy, end = busy + stop - end, stop
        name = f"{tasks[pid]} (pid {pid}), {lanes[(pid, tid)]} (tid {tid})"
        expected[name] = float(busy)
    return expected


def _microseconds(shown: str) -> tuple[float, float]:
    """A selector weight (``27.71ms``) in us, and half its last digit (the rounding)."""
    match = _WEIGHT.match(shown)
    assert match, shown
    number, unit = match.groups()
    decimals = len(number.partition(".")[2])
    return float(number) * _UNIT_US[unit], 0.5 * 10.0**-decimals * _UNIT_US[unit]


def _colored_pixels(tab: Any, png: bytes) -> int:
    """Saturated pixels of a screenshot (the flame chart's boxes; grid and text are gray)."""
    import base64

    count: int = tab.evaluate(
        "async (data) => { const img = new Image(); img.src = 'data:image/png;base64,' + data;"
        " await img.decode(); const c = document.createElement('canvas');"
        " c.width = img.width; c.height = img.height; const g = c.getContext('2d');"
        " g.drawImage(img, 0, 0); const d = g.getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 0; i < d.length; i += 4) {"
        " const hi = Math.max(d[i], d[i + 1], d[i + 2]), lo = Math.min(d[i], d[i + 1], d[i + 2]);"
        " if (hi - lo > 40) n++; } return n; }",
        base64.b64encode(png).decode("ascii"),
    )
    return count


def test_speedscope_lists_one_profile_per_task_lane(
    release: Path, browser: Any, server: str, trace: Path, tmp_path: Path
) -> None:
    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 900})

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith(server + "/"):
            request_route.continue_()
        else:
            problems.append(f"request: {url}")
            request_route.abort()

    context.route("**/*", route)
    tab = context.new_page()
    tab.on("request", lambda r: None if r.url.startswith(server + "/") else problems.append(r.url))
    tab.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    tab.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            # SwiftShader's WebGL performance notes are no speedscope warnings
            if m.type in ("error", "warning") and "GL Driver Message" not in m.text
            else None
        ),
    )
    imported: list[str] = []
    tab.on("console", lambda m: imported.append(m.text) if m.type == "log" else None)
    tab.goto(f"{server}/speedscope/index.html#profileURL={server}/cluster.json")
    title = tab.locator("span", has_text=re.compile(r"^/job:.*\(1/\d+\)$")).first
    title.wait_for(timeout=60_000)
    assert "Importing as Trace Event Format profile" in imported, imported
    assert "Something went wrong" not in tab.inner_text("body")

    expected = _expected_profiles(json.loads(trace.read_text()))
    assert title.inner_text().endswith(f"(1/{len(expected)})")
    title.click()  # opens the profile selector
    rows = tab.evaluate(
        "() => Array.from(document.querySelectorAll('tbody tr[title]'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    shown = {name: weight for _, name, weight in rows}
    assert sorted(shown) == sorted(expected)
    for name, weight in shown.items():
        value, rounding = _microseconds(weight)
        assert abs(value - expected[name]) <= rounding + 1.0, (name, weight, expected[name])
    # One lane group per task: each task's profiles, its CPU device among them.
    for pid, task in enumerate([PS, W0, W1]):
        ours = [n for n in shown if n.startswith(f"{task} (pid {pid}), ")]
        assert f"{task} (pid {pid}), {task}/device:cpu:0 (tid 0)" in ours, ours
    assert {n.split(" (pid ")[0] for n in shown} == {PS, W0, W1}
    tab.screenshot(path=str(tmp_path / "selector.png"))

    straggler = f"{W1} (pid 2), {W1}/device:cpu:0 (tid 0)"
    tab.locator(f'tbody tr[title="{straggler}"]').click()
    tab.keyboard.press("Escape")
    title = tab.locator("span", has_text=re.compile(r"^/job:.*\(\d+/\d+\)$")).first
    assert title.inner_text().startswith(straggler + " (")
    shot = tmp_path / "straggler.png"
    for _ in range(20):  # the flame chart redraws on the next animation frames
        tab.wait_for_timeout(250)
        tab.screenshot(path=str(shot))
        colored = _colored_pixels(tab, shot.read_bytes())
        if colored > 5_000:
            break
    assert colored > 5_000
    assert problems == []
    context.close()

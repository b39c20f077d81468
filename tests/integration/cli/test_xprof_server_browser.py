"""A written XSpace opened for real: the XProf server and headless Chromium.

``tfprof-lite xspace`` writes a TF 2.21 session's profile (run ``tf1_session``)
and :meth:`Profiler.write_xspace` a TF 2.21-format GPU RunMetadata (run
``tf2_gpu_format``); ``xprof --logdir LOGDIR
--port P`` serves it (XProf 2.24.2 listens on every interface and has no
host flag; the test talks to 127.0.0.1 only). Chromium, with every host name
but 127.0.0.1 unresolvable (no network), loads the overview page and the
trace viewer and the test checks what renders; screenshots are saved under
the test's ``tmp_path`` (``TFPROF_XPROF_SHOTS`` names a folder to keep them).

What needs the internet and so does not render here: the overview's step-time
graph, the kernel-stats and op-stats tables and every other Google Charts chart
(``www.gstatic.com/charts/loader.js``) and the Google Sans fonts
(``fonts.googleapis.com``); the test requires that these are the only failed
requests, and reads the kernel stats from the server's data endpoint instead.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import xspace_oracle as xo
from tests.gpu_tf221 import KERNELS
from tests.integration.test_xspace_write_tf import _gpu_profiler, _profiler
from tfprof_lite.cli import main

pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

_START_TIMEOUT = 180
_INTERNET = ("www.gstatic.com", "www.gstatic.cn", "fonts.googleapis.com", "fonts.gstatic.com")


def chromium_path() -> str | None:
    """Chromium's path (``TFPROF_CHROMIUM`` first), or None."""
    for name in (os.environ.get("TFPROF_CHROMIUM", ""), "chromium", "chromium-browser"):
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _xprof() -> str:
    xo.require_xprof()
    found = shutil.which("xprof", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.skip("the xprof command is not installed beside this interpreter")
    return found


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("xprof_logs")
    prof = _profiler("dense_net")
    saved = root / "profile_2"
    saved.write_bytes(prof.serialize_to_string())
    code = main(["xspace", str(saved), "-o", str(root / "logs"), "--run-name", "tf1_session"])
    assert code == 0
    _gpu_profiler().write_xspace(root / "logs", run="tf2_gpu_format")
    return root / "logs"


@pytest.fixture(scope="module")
def server(logdir: Path) -> Iterator[str]:
    command = _xprof()
    port, grpc_port = _free_port(), _free_port()
    args = [command, "--logdir", str(logdir), "--port", str(port), "--grpc_port", str(grpc_port)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            assert proc.poll() is None, "the XProf server exited"
            try:
                with urllib.request.urlopen(f"{base}/data/plugin/profile/runs", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the XProf server did not start"
            time.sleep(1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (run scripts/install-tools.sh)")
    sync_api = pytest.importorskip("playwright.sync_api")
    offline = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu", offline]
        )
        yield launched
        launched.close()


def _shots(tmp_path: Path) -> Path:
    keep = os.environ.get("TFPROF_XPROF_SHOTS")
    folder = Path(keep) if keep else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(url)
    return page, failed


def _only_internet_failed(failed: list[str]) -> None:
    hosts = {u.split("/")[2] for u in failed}
    assert hosts <= set(_INTERNET), failed


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        body: bytes = r.read()
        return gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body


def test_runs_and_hosts_are_listed(server: str) -> None:
    runs = json.loads(_get(f"{server}/data/plugin/profile/runs"))
    assert sorted(runs) == ["tf1_session", "tf2_gpu_format"]
    hosts = _get(f"{server}/data/plugin/profile/hosts?run=tf1_session&tag=overview_page")
    assert b"localhost" in hosts


def test_kernel_stats_served(server: str) -> None:
    url = f"{server}/data/plugin/profile/data?run=tf2_gpu_format&tag=kernel_stats&host=localhost"
    rows = xo.kernel_rows(json.loads(_get(url)))
    assert {r.kernel for r in rows} >= {k.kernel for k in KERNELS}


def test_overview_page_renders(server: str, browser: Any, tmp_path: Path) -> None:
    url = f"{server}/data/plugin/profile/overview_page?run=tf1_session&host=localhost"
    page, failed = _open(browser, url)
    page.wait_for_selector("text=Performance Summary", timeout=120_000)
    page.wait_for_selector("text=Host Compute Time", timeout=60_000)
    text = page.inner_text("body")
    assert "Device type: CPU" in text
    assert "No step marker observed" not in text
    page.screenshot(path=str(_shots(tmp_path) / "xprof_overview.png"))
    page.close()
    _only_internet_failed(failed)
    assert any("gstatic" in u for u in failed)  # the step-time chart needs the internet


def test_trace_viewer_shows_steps_and_ops(server: str, browser: Any, tmp_path: Path) -> None:
    url = (
        f"{server}/data/plugin/profile/trace_viewer@?run=tf1_session"
        "&tag=trace_viewer%40&host=localhost&hosts=localhost"
    )
    page, failed = _open(browser, url)
    frame = None
    deadline = time.monotonic() + 120
    while frame is None and time.monotonic() < deadline:
        frame = next((f for f in page.frames if "trace_viewer_index" in f.url), None)
        page.wait_for_timeout(500)
    assert frame is not None, "no trace viewer frame"
    frame.wait_for_selector("text=Step markers", timeout=120_000)
    text = frame.inner_text("body")
    assert "/host:CPU" in text
    assert "device:cpu:0 #0" in text
    page.screenshot(path=str(_shots(tmp_path) / "xprof_trace_viewer.png"))
    page.close()
    _only_internet_failed(failed)


def test_gpu_overview_page_renders(server: str, browser: Any, tmp_path: Path) -> None:
    url = f"{server}/data/plugin/profile/overview_page?run=tf2_gpu_format&host=localhost"
    page, failed = _open(browser, url)
    page.wait_for_selector("text=Device Compute Time", timeout=120_000)
    page.wait_for_selector("text=Device type: GPU", timeout=60_000)
    assert "No step marker observed" not in page.inner_text("body")
    page.screenshot(path=str(_shots(tmp_path) / "xprof_gpu_overview.png"))
    page.close()
    _only_internet_failed(failed)

"""The HTML report's size and speed budget: a 21k-node, 5-step profile.

The profile is the generated TF1-style graph of the other benchmarks
(``_common.traced_model``: at least ``--ops`` ops, ``--steps`` FULL_TRACE steps
in a single-threaded session, TensorFlow's default op log so the code view has
traces), fed to ``tfprof_lite.Profiler`` as bytes. ``--profile PATH`` uses a
saved profile instead (no TensorFlow then). Measured:

* ``render_html`` (best of ``--repeat``) and the size of the page;
* in headless Chromium (Playwright; ``TFPROF_CHROMIUM`` or ``chromium`` on the
  PATH, ``--no-sandbox --disable-gpu`` as the browser test uses), for
  ``--loads`` fresh pages: the time from navigation start to the trace canvas'
  first draw (``window.tfprofTraceFirstDraw``, a ``performance.now()`` stamp),
  and to ``DOMContentLoaded`` and ``load`` for reference, and the time of one
  redraw of the whole timeline and of a 1% window (a zoom step); medians are
  checked.

Budgets: the page at most 3 MB, the trace drawn within 2 s, a redraw of the
whole timeline within 50 ms. The page must load
without console errors or network requests. Results are printed as a table and
written to ``bench_out/report.json``; the exit status is 1 when a budget is missed.

Run: ``python benchmarks/bench_report.py [--ops N] [--steps K] [--profile PATH]
[--repeat R] [--loads N] [--keep DIR] [--quick] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MB = 1024 * 1024
#: name -> budget (bytes for the size, milliseconds for the draws).
BUDGETS = {"size_bytes": 3 * MB, "first_draw_ms": 2000.0, "redraw_all_ms": 50.0}


def traced_profile(n_ops: int, steps: int) -> Any:
    """A ``tfprof_lite.Profiler`` of the generated graph and its traced steps."""
    from _common import traced_model
    from tensorflow.python.profiler import tfprof_logger

    import tfprof_lite

    model = traced_model(n_ops, steps)
    op_log = tfprof_logger.merge_default_with_oplog(model.graph, run_meta=model.run_metas[0])
    graph = model.graph.as_graph_def(add_shapes=True).SerializeToString()
    prof = tfprof_lite.Profiler(graph, op_log=op_log.SerializeToString())
    for step, meta in enumerate(model.run_metas):
        prof.add_step(step, meta.SerializeToString())
    return prof


def _chromium() -> str:
    for name in (os.environ.get("TFPROF_CHROMIUM", ""), "chromium", "chromium-browser"):
        found = shutil.which(name) if name else None
        if found:
            return found
    raise SystemExit("chromium is not installed (run scripts/install-tools.sh)")


_TIMES = (
    "() => { const n = performance.getEntriesByType('navigation')[0];"
    " return [window.tfprofTraceFirstDraw, n.domContentLoadedEventEnd, n.loadEventEnd]; }"
)
#: Milliseconds per redraw of the whole timeline and of a 1% window (20 each).
_REDRAW = (
    "() => { const t = window.tfprofTrace, r = t.range(), out = [];"
    " for (const f of [1, 0.01]) { const s = performance.now();"
    " for (let i = 0; i < 20; i++) t.zoomTo(r[0], r[0] + (r[1] - r[0]) * f);"
    " out.push((performance.now() - s) / 20); } t.zoomTo(r[0], r[1]); return out; }"
)


def browser_times(path: str, loads: int) -> list[list[float]]:
    """(first draw, DOMContentLoaded, load, redraw of everything, redraw of 1%)
    in ms for ``loads`` fresh pages."""
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    out: list[list[float]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
            page.on(
                "console",
                lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None,
            )
            page.on(
                "request",
                lambda r: problems.append(r.url) if not r.url.startswith("file:") else None,
            )
            page.goto("file://" + os.path.abspath(path), wait_until="load")
            page.wait_for_function("() => window.tfprofTraceFirstDraw !== undefined")
            times = [float(v) for v in page.evaluate(_TIMES)]
            out.append(times + [float(v) for v in page.evaluate(_REDRAW)])
            page.close()
        browser.close()
    if problems:
        raise SystemExit("the page had problems: " + "; ".join(problems[:5]))
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=21000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--profile", help="a saved profile to report on instead")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--keep", help="write the report into this directory")
    parser.add_argument("--quick", action="store_true", help="2k ops, 2 steps, 2 loads")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench_out", "report.json"))
    args = parser.parse_args(argv)
    if args.quick:
        args.ops, args.steps, args.loads, args.repeat = 2000, 2, 2, 1
    return args


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark; 1 when a budget is missed."""
    args = _args(argv)
    import tfprof_lite
    from tfprof_lite.report import render_html

    prof = tfprof_lite.Profiler.load(args.profile) if args.profile else None
    if prof is None:
        prof = traced_profile(args.ops, args.steps)
    renders = []
    page = ""
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        page = render_html(prof.model, source="bench")
        renders.append(time.perf_counter() - start)
    size = len(page.encode("utf-8"))
    directory = args.keep or tempfile.mkdtemp(prefix="bench_report_")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "report.html")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(page)
    times = browser_times(path, args.loads)
    if not args.keep:
        shutil.rmtree(directory, ignore_errors=True)
    first = statistics.median(t[0] for t in times)
    result = {
        "nodes": len(prof.model),
        "steps": len(prof.model.steps),
        "render_s": min(renders),
        "size_bytes": size,
        "first_draw_ms": first,
        "first_draw_ms_all": [t[0] for t in times],
        "dom_content_loaded_ms": statistics.median(t[1] for t in times),
        "load_ms": statistics.median(t[2] for t in times),
        "redraw_all_ms": statistics.median(t[3] for t in times),
        "redraw_1pct_ms": statistics.median(t[4] for t in times),
        "budgets": BUDGETS,
    }
    ok_size = size <= BUDGETS["size_bytes"]
    ok_draw = first <= BUDGETS["first_draw_ms"]
    ok_redraw = result["redraw_all_ms"] <= BUDGETS["redraw_all_ms"]
    result["ok"] = ok_size and ok_draw and ok_redraw
    print(f"profile: {result['nodes']} nodes, {result['steps']} steps")
    print(f"render_html             {result['render_s']:8.2f} s")
    print(
        f"page size               {size / MB:8.2f} MB   budget 3 MB   {'ok' if ok_size else 'OVER'}"
    )
    print(
        f"trace first drawn       {first:8.0f} ms   budget 2000 ms {'ok' if ok_draw else 'OVER'}"
        f"   (median of {len(times)}: {', '.join(f'{t[0]:.0f}' for t in times)})"
    )
    print(
        f"redraw, whole timeline  {result['redraw_all_ms']:8.1f} ms   budget 50 ms   "
        f"{'ok' if ok_redraw else 'OVER'}"
    )
    print(f"redraw, 1% of it        {result['redraw_1pct_ms']:8.1f} ms")
    print(f"DOMContentLoaded        {result['dom_content_loaded_ms']:8.0f} ms")
    print(f"load                    {result['load_ms']:8.0f} ms")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2)
        handle.write("\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

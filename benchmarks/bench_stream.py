"""Streaming trace writer benchmark: memory stays flat however many events are written.

``tfprof_lite.outputs.trace_writer.TraceWriter`` (what ``write_steps_trace`` and
the ``timeline``/``steps`` outputs stream through) writes ``--events`` op events
(and 10x fewer, to compare), each built lazily by a generator like the multi-step
trace's, to a ``.json`` and a ``.json.gz`` file in a temporary directory. Every
measurement runs in a fresh subprocess (no TensorFlow imported):

* **peak RSS growth**: ``ru_maxrss`` after writing minus ``ru_maxrss`` just before
  (the process has imported everything and built one event);
* **Python heap peak**: ``tracemalloc``'s peak during the write (a separate run,
  ``.json`` only: tracing slows the writer down);
* **events/s** and the file size, from the run without ``tracemalloc``.

Prints a table and writes ``bench_out/stream.json``. Run:
``python benchmarks/bench_stream.py [--events N] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_JSON = os.path.join(ROOT, "bench_out", "stream.json")
OPS = ("MatMul", "Add", "Relu", "Const", "Sum", "Identity")


def events(count: int) -> Iterator[dict[str, Any]]:
    """``count`` op events shaped like the multi-step trace's, built one at a time."""
    yield {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/device:CPU:0"}}
    ts = 1_700_000_000_000_000
    for i in range(count - 1):
        ts += 3
        yield {
            "name": f"block_{i // 50}/layer_{i % 10}/dense/{OPS[i % 6]}_{i}",
            "ph": "X",
            "pid": 1,
            "tid": i % 3,
            "ts": ts,
            "dur": 2 + i % 5,
            "cat": "Op",
            "args": {"op": OPS[i % 6], "step": i // 20000, "time": "cpu"},
        }


def _max_rss_kib() -> int:
    """Peak resident set size of this process so far (KiB on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def child(count: int, path: str, trace_heap: bool) -> dict[str, Any]:
    """Write ``count`` events to ``path`` in this process; what it cost."""
    from tfprof_lite.outputs.trace_writer import TraceWriter

    next(events(2))  # build one event: its code and constants are loaded
    if trace_heap:
        tracemalloc.start()
    before = _max_rss_kib()
    start = time.perf_counter()
    with TraceWriter(path) as writer:
        writer.write_all(events(count))
        written = writer.count
    seconds = time.perf_counter() - start
    result: dict[str, Any] = {
        "events": written,
        "seconds": seconds,
        "events_per_s": written / seconds,
        "rss_before_mb": before / 1024,
        "rss_growth_mb": (_max_rss_kib() - before) / 1024,
        "file_mb": os.path.getsize(path) / 1e6,
    }
    if trace_heap:
        result["heap_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    return result


def measure(count: int, suffix: str, tmp: str, heap: bool) -> dict[str, Any]:
    """Run :func:`child` in a fresh interpreter (and once more with tracemalloc)."""
    path = os.path.join(tmp, f"trace_{count}{suffix}")
    out: dict[str, Any] = {"heap_peak_mb": None}
    for trace_heap in (False, True) if heap else (False,):
        command = [sys.executable, os.path.abspath(__file__), "--child", str(count), path]
        if trace_heap:
            command.append("--trace-heap")
        done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
        result = json.loads(done.stdout)
        if trace_heap:  # tracing slows the writer down: keep only its heap peak
            out["heap_peak_mb"] = result["heap_peak_mb"]
        else:
            out.update(result)
        os.unlink(path)
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, write ``bench_out/stream.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="the large event count")
    parser.add_argument("--quick", action="store_true", help="10x fewer events")
    parser.add_argument("--child", nargs=2, metavar=("COUNT", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--trace-heap", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=OUT_JSON, help="JSON output path")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1], args.trace_heap)))
        return 0
    large = args.events // 10 if args.quick else args.events
    counts = (large // 10, large)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tfprof_bench-") as tmp:
        for suffix in (".json", ".json.gz"):
            for count in counts:
                heap = suffix == ".json"
                results.append({"format": suffix, **measure(count, suffix, tmp, heap)})
    print(
        f"{'file':<9}{'events':>10}{'RSS growth MB':>15}{'heap peak MB':>14}"
        f"{'events/s':>11}{'file MB':>9}"
    )
    for r in results:
        heap = "-" if r["heap_peak_mb"] is None else f"{r['heap_peak_mb']:.3f}"
        print(
            f"{r['format']:<9}{r['events']:>10}{r['rss_growth_mb']:>15.2f}{heap:>14}"
            f"{r['events_per_s']:>11.0f}{r['file_mb']:>9.1f}"
        )
    print(f"(process RSS before writing: {results[0]['rss_before_mb']:.1f} MB)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"python": sys.version.split()[0], "results": results}, handle, indent=2)
        handle.write("\n")
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

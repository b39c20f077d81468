"""Core benchmark: tfprof_lite against TensorFlow's own tfprof on one large graph.

Builds a generated TF1-style graph (``block_i/layer_j/dense/...`` scopes, each
layer a MatMul + Add + Relu on tiny tensors, one variable per block), runs
``--steps`` FULL_TRACE steps in a ``tf.compat.v1.Session`` and then times, in
this process and with the exact same calls, TensorFlow's
``tf.compat.v1.profiler.Profiler`` and ``tfprof_lite.Profiler``:

* ``Profiler(graph)`` construction (best of ``--repeat``; the profiler of the
  last one is used below);
* ``add_step`` for every traced step (one timing for all of them);
* every view (``profile_name_scope``, ``profile_graph``, ``profile_operations``,
  ``profile_python``) with the builder's default options and with
  ``time_and_memory()``, each written to a file in a temporary directory (best
  of ``--repeat`` runs).

It prints a table (TF seconds, ours seconds, ratio ours/TF), warns when our
report text differs from TF's, and writes everything to ``bench_out/core.json``.

Run: ``python benchmarks/bench_core.py [--ops N] [--steps K] [--quick]``
(``make bench`` runs the defaults); see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from _common import OUT_DIR, ROOT, Model, build_model, runs, tf, tf1, timed, trace_steps

import tfprof_lite

OUT_JSON = os.path.join(OUT_DIR, "core.json")

VIEWS = (
    ("scope", "profile_name_scope"),
    ("graph", "profile_graph"),
    ("op", "profile_operations"),
    ("code", "profile_python"),
)


# ------------------------------------------------------------------ timings
@dataclass
class Timing:
    """One benchmarked operation: best time and, except for add_step, the first call's time."""

    operation: str
    tf_s: float = float("nan")
    ours_s: float = float("nan")
    tf_first_s: float | None = None
    ours_first_s: float | None = None

    @property
    def ratio(self) -> float:
        return self.ours_s / self.tf_s if self.tf_s > 0 else float("nan")


@dataclass
class Side:
    """What one implementation's run produced."""

    best: dict[str, float] = field(default_factory=dict)
    first: dict[str, float] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


def _queries(builder: Any) -> list[tuple[str, Callable[[str], dict[str, Any]]]]:
    """Option sets by name; each takes the report file path."""
    return [
        ("default", lambda path: builder().with_file_output(path).build()),
        (
            "time_and_memory",
            lambda path: builder(builder.time_and_memory()).with_file_output(path).build(),
        ),
    ]


def _add_steps(prof: Any, run_metas: list[Any]) -> None:
    for step, meta in enumerate(run_metas):
        prof.add_step(step, meta)


def _time_views(prof: Any, name: str, builder: Any, tmp: str, repeat: int, side: Side) -> None:
    for qname, options in _queries(builder):
        for view, method in VIEWS:
            path = os.path.join(tmp, f"{name}_{view}_{qname}.txt")
            opts = options(path)
            key = f"{method}[{qname}]"
            times = runs(lambda m=method, o=opts: getattr(prof, m)(o), repeat)
            side.best[key], side.first[key] = min(times), times[0]
            side.texts[key] = _read(path)


def _read(path: str) -> str:
    """The report written to ``path`` ("" when none was written, as for an empty report)."""
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _constructions(
    factory: Callable[[Any], Any], graph: Any, repeat: int
) -> tuple[list[float], Any]:
    """Seconds of ``repeat`` constructions of a profiler for ``graph`` and the last
    profiler; each earlier one is released first (TF's is a process-wide singleton
    whose C++ side is freed with the Python object)."""
    times = []
    prof = None
    for _ in range(repeat):
        prof = None
        gc.collect()
        seconds, prof = timed(lambda: factory(graph))
        times.append(seconds)
    return times, prof


def run_side(
    name: str, factory: Callable[[Any], Any], builder: Any, model: Model, tmp: str, repeat: int
) -> Side:
    """Time one implementation: construction, all add_step calls, every view query."""
    side = Side()
    times, prof = _constructions(factory, model.graph, repeat)
    side.best["Profiler(graph)"], side.first["Profiler(graph)"] = min(times), times[0]
    gc.collect()
    steps = f"add_step x{len(model.run_metas)}"
    side.best[steps] = timed(lambda: _add_steps(prof, model.run_metas))[0]
    _time_views(prof, name, builder, tmp, repeat, side)
    prof = None  # TF's profiler is a process-wide singleton: release it here
    gc.collect()
    return side


# ------------------------------------------------------------------ report
def _seconds(value: float | None) -> str:
    return f"{value:>10.4f}" if value is not None else f"{'':>10}"


def print_table(rows: list[Timing]) -> None:
    width = max(len(r.operation) for r in rows) + 2
    print(
        f"{'operation':<{width}}{'TF s':>10}{'ours s':>10}{'ours/TF':>10}"
        f"{'TF 1st':>10}{'ours 1st':>10}"
    )
    for r in rows:
        print(
            f"{r.operation:<{width}}{r.tf_s:>10.4f}{r.ours_s:>10.4f}{r.ratio:>10.3f}"
            f"{_seconds(r.tf_first_s)}{_seconds(r.ours_first_s)}"
        )


def write_json(path: str, config: dict[str, Any], rows: list[Timing], diffs: list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = {
        "config": config,
        "results": [dict(asdict(r), ratio=r.ratio) for r in rows],
        "text_mismatches": diffs,
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000, help="minimum number of graph ops")
    parser.add_argument("--steps", type=int, default=5, help="number of FULL_TRACE steps")
    parser.add_argument(
        "--repeat", type=int, default=3, help="best of N runs per view and per construction"
    )
    parser.add_argument("--quick", action="store_true", help="small graph, 2 steps, 1 run")
    parser.add_argument(
        "--distinct-stacks",
        action="store_true",
        help="build every block from its own code object: far fewer ops share a call stack",
    )
    parser.add_argument("--out", default=OUT_JSON, help="JSON output path")
    args = parser.parse_args(argv)
    if args.quick:
        args.ops, args.steps, args.repeat = min(args.ops, 2000), min(args.steps, 2), 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    model = build_model(args.ops, args.distinct_stacks)
    n_ops = len(model.graph.get_operations())
    print(f"graph: {n_ops} ops, built in {time.perf_counter() - t0:.1f}s", flush=True)
    t0 = time.perf_counter()
    trace_steps(model, args.steps)
    print(f"traced {args.steps} FULL_TRACE steps in {time.perf_counter() - t0:.1f}s", flush=True)
    records = sum(len(d.node_stats) for d in model.run_metas[0].step_stats.dev_stats)
    print(f"RunMetadata: {records} node_stats per step", flush=True)

    with tempfile.TemporaryDirectory(prefix="tfprof_bench-") as tmp:
        # TF's Profiler is a process-wide singleton: all TF timings first, then drop it.
        tf_side = run_side(
            "tf", tf1.profiler.Profiler, tf1.profiler.ProfileOptionBuilder, model, tmp, args.repeat
        )
        ours = run_side(
            "ours", tfprof_lite.Profiler, tfprof_lite.ProfileOptionBuilder, model, tmp, args.repeat
        )

    rows = [
        Timing(op, tf_side.best[op], ours.best[op], tf_side.first.get(op), ours.first.get(op))
        for op in tf_side.best
    ]
    print()
    print_table(rows)
    print(
        "(construction and views: best of",
        args.repeat,
        "calls; '1st': the first construction, the first view call after add_step)",
    )
    diffs = [key for key in tf_side.texts if tf_side.texts[key] != ours.texts.get(key)]
    for key in diffs:
        print(f"WARNING: report text of {key} differs from TF's")
    if not diffs:
        print(f"\nreport texts equal TF's for all {len(tf_side.texts)} view queries")
    config = {
        "ops": n_ops,
        "distinct_stacks": args.distinct_stacks,
        "steps": args.steps,
        "repeat": args.repeat,
        "node_stats_per_step": records,
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "cpus": os.cpu_count(),
    }
    write_json(args.out, config, rows, diffs)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

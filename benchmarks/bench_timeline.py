"""Chrome trace benchmark: ``tfprof_lite.Timeline`` against TensorFlow's client ``Timeline``.

On the profile ``bench_core.py`` generates (a graph of ``--ops`` ops, ``--steps``
FULL_TRACE steps; see ``_common.py``), every step's ``StepStats`` is turned into a
Chrome trace by ``tensorflow.python.client.timeline.Timeline(step_stats,
graph).generate_chrome_trace_format(show_dataflow, show_memory)`` and by
``tfprof_lite.Timeline`` with the same arguments, for the four combinations of
``show_dataflow`` and ``show_memory``. Each call is timed from the constructor to
the returned text (a full garbage collection before each call), TF's and ours
alternating step by step. Every pair of traces is compared: the parsed JSON must
be equal (and so is the text, which is checked too).

It prints, per combination, the best and median seconds per step of both and the
ratio TF/ours of the best times, and writes ``bench_out/timeline.json``.

How many flows a dataflow trace has depends on the lanes, which follow the
recorded times (a single-threaded run puts most nodes on one lane). A fifth row,
``staggered``, makes flows the bulk of the work: the same steps with the times
rewritten so that every node starts before the previous one ends (nodes
alternate between two lanes, so an input from the node just before crosses
lanes), traced with ``show_dataflow`` only.

Run: ``python benchmarks/bench_timeline.py [--ops N] [--steps K] [--quick]``;
see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from _common import OUT_DIR, ROOT, Model, machine_info, traced_model, write_json
from tensorflow.python.client import timeline as tf_timeline

import tfprof_lite

OUT_JSON = os.path.join(OUT_DIR, "timeline.json")
#: (show_dataflow, show_memory), in the order they are reported.
FLAGS = [(False, False), (True, False), (False, True), (True, True)]
#: Start-to-start distance and duration (microseconds) of staggered nodes.
STAGGER_STEP, STAGGER_DUR = 2, 3


@dataclass
class Combination:
    """Timings and checks of one (show_dataflow, show_memory) combination."""

    show_dataflow: bool
    show_memory: bool
    times: str = "recorded"  # or "staggered"
    tf_s: list[float] = field(default_factory=list)
    ours_s: list[float] = field(default_factory=list)
    equal_json: bool = True
    equal_text: bool = True
    events: int = 0
    megabytes: float = 0.0

    @property
    def name(self) -> str:
        """``dataflow=.. memory=..`` (and ``staggered``) for the table."""
        name = f"dataflow={int(self.show_dataflow)} memory={int(self.show_memory)}"
        return name if self.times == "recorded" else f"{name} {self.times}"

    @property
    def ratio(self) -> float:
        """TF's best time over ours (above 1: ours is faster)."""
        return min(self.tf_s) / min(self.ours_s)

    def summary(self) -> dict[str, Any]:
        """The JSON record of this combination."""
        data = asdict(self)
        data.update(
            tf_best_s=min(self.tf_s),
            ours_best_s=min(self.ours_s),
            tf_median_s=statistics.median(self.tf_s),
            ours_median_s=statistics.median(self.ours_s),
            ratio_tf_over_ours=self.ratio,
        )
        return data


def _timed_text(make: Callable[[], str]) -> tuple[float, str]:
    """Seconds and result of ``make()``, after a full garbage collection."""
    gc.collect()
    start = time.perf_counter()
    text = make()
    return time.perf_counter() - start, text


def staggered(step_stats: Any) -> Any:
    """A copy of TF's ``StepStats`` where node ``i`` of each device starts
    ``STAGGER_STEP * i`` after the device's first and lasts ``STAGGER_DUR``."""
    stats = type(step_stats)()
    stats.CopyFrom(step_stats)
    for dev in stats.dev_stats:
        first = min((node.all_start_micros for node in dev.node_stats), default=0)
        for index, node in enumerate(dev.node_stats):
            node.all_start_micros = first + STAGGER_STEP * index
            node.all_end_rel_micros = STAGGER_DUR
    return stats


def run_combination(
    model: Model, show_dataflow: bool, show_memory: bool, times: str = "recorded"
) -> Combination:
    """Time TF's and our trace of every step with these flags; compare the traces."""
    result = Combination(show_dataflow, show_memory, times)
    for meta in model.run_metas:
        stats = meta.step_stats if times == "recorded" else staggered(meta.step_stats)

        def theirs(stats: Any = stats) -> str:
            text: str = tf_timeline.Timeline(stats, model.graph).generate_chrome_trace_format(
                show_dataflow, show_memory
            )
            return text

        def ours(stats: Any = stats) -> str:
            return tfprof_lite.Timeline(stats, model.graph).generate_chrome_trace_format(
                show_dataflow, show_memory
            )

        tf_seconds, expected = _timed_text(theirs)
        our_seconds, got = _timed_text(ours)
        result.tf_s.append(tf_seconds)
        result.ours_s.append(our_seconds)
        result.equal_text &= got == expected
        parsed = json.loads(got)
        result.equal_json &= parsed == json.loads(expected)
        result.events = len(parsed["traceEvents"])
        result.megabytes = len(got) / 1e6
        del parsed, got, expected
    return result


def print_table(rows: list[Combination]) -> None:
    """The results table on stdout."""
    print(
        f"{'combination':<32}{'events':>8}{'MB':>7}{'TF s':>9}{'ours s':>9}{'TF/ours':>9}"
        f"{'TF med':>9}{'ours med':>10}  equal"
    )
    for r in rows:
        print(
            f"{r.name:<32}{r.events:>8}{r.megabytes:>7.1f}{min(r.tf_s):>9.3f}"
            f"{min(r.ours_s):>9.3f}{r.ratio:>9.2f}{statistics.median(r.tf_s):>9.3f}"
            f"{statistics.median(r.ours_s):>10.3f}  {r.equal_json and r.equal_text}"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (``--quick``: 2,000 ops, 2 steps)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000, help="minimum number of graph ops")
    parser.add_argument("--steps", type=int, default=5, help="FULL_TRACE steps (traces per flag)")
    parser.add_argument("--quick", action="store_true", help="small graph, 2 steps")
    parser.add_argument("--out", default=OUT_JSON, help="JSON output path")
    args = parser.parse_args(argv)
    if args.quick:
        args.ops, args.steps = min(args.ops, 2000), min(args.steps, 2)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when a trace differs from TF's."""
    args = parse_args(argv)
    model = traced_model(args.ops, args.steps)
    records = sum(len(d.node_stats) for d in model.run_metas[0].step_stats.dev_stats)
    print(f"StepStats: {records} node_stats per step", flush=True)
    rows = []
    for show_dataflow, show_memory in FLAGS:
        rows.append(run_combination(model, show_dataflow, show_memory))
        print(f"  {rows[-1].name}: done", flush=True)
    rows.append(run_combination(model, True, False, "staggered"))
    print(f"  {rows[-1].name}: done", flush=True)
    print()
    print_table(rows)
    print(f"(seconds per step: best and median of {args.steps} steps; TF/ours from the best)")
    mismatches = [r.name for r in rows if not (r.equal_json and r.equal_text)]
    for name in mismatches:
        print(f"WARNING: the trace of {name} differs from TF's")
    if not mismatches:
        print(f"\nall {len(rows) * args.steps} traces equal TF's (parsed JSON and text)")
    config = {
        "ops": len(model.graph.get_operations()),
        "steps": args.steps,
        "node_stats_per_step": records,
        **machine_info(),
    }
    summary = {
        "all_equal": not mismatches,
        "min_ratio_tf_over_ours": min(r.ratio for r in rows),
    }
    data = {"config": config, "results": [r.summary() for r in rows], "summary": summary}
    write_json(args.out, data)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

"""Construction benchmark: ``Profiler(...)`` as a user pays for it, against TensorFlow.

Two ways in, each timed in fresh child interpreters, TensorFlow's and ours in
turn (``--rounds`` rounds, the order swapped every round), so that a slow spell
of the shared machine does not fall on one side only:

* **GraphDef + OpLogProto** (``--ops``, default 20,000): the parent's capture
  child writes ``graph.as_graph_def(add_shapes=True)`` and TF's default op log
  (``tfprof_logger.merge_default_with_oplog``) of the generated graph of
  ``bench_core.py``. Each child imports TensorFlow (a user holding these
  messages has), reads them as TensorFlow's messages, then times, in order:

  * ``messages``: ours ``Profiler(graph_def, op_log)``; TF's C++ profiler fed
    the same messages the way TF's own ``Profiler`` feeds it
    (``NewProfiler(graph_def.SerializeToString(), op_log.SerializeToString())``).
    The first call of the process is reported apart (``1st``): it is what a
    script that builds one profiler pays, first-use caches and fresh memory
    included, on both sides;
  * ``view``: ``messages`` plus the first view (the scope view of FLOPs, no
    output: TF's ``Profile(b"scope", ...)``, ours ``profile_name_scope``), so
    that work left for the first read is counted (target 0.25);
  * ``bytes``: both fed the serialized bytes (``NewProfiler(graph, op_log)``
    and ``Profiler(graph_bytes, op_log_bytes)``; what ``bench_scale.py`` times).

  Each call after a full garbage collection, the previous profiler released.

* **Live ``tf.Graph``** (``--live-ops``, default 59,000): each child builds
  the generated graph itself (~20 s for 59k ops) and times the first
  ``Profiler(graph)`` on it, ``tf.compat.v1.profiler.Profiler(graph)`` for TF:
  the first profiler on a fresh graph pays for TensorFlow's lazily resolved
  call stacks and shapes, on both sides. Then one FULL_TRACE run of the graph
  (not timed) and two ``add_step`` calls with its RunMetadata, timed apart;
  rows: the first profiler, the first profiler plus its first ``add_step``,
  the first and the second ``add_step``.

Targets (ours/TF): GraphDef + OpLogProto <= 0.2 (every row), live graph
<= 0.25. Prints one table (best of all samples, min-max, the ratio of each
round's pair) and writes ``bench_out/construct.json``.

Run: ``python benchmarks/bench_construct.py [--quick] [--ops N] [--live-ops N]
[--repeat R] [--rounds N] [--no-live] [--out PATH]``; see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

TARGET_GRAPHDEF = 0.2
#: Construction plus the first scope view (issue 22, item 7).
TARGET_VIEW = 0.25
TARGET_LIVE = 0.25
SIDES = ("tf", "ours")


# ================================================================== children
#: CPU seconds of this process per timed call, in the order timed (see ``_clock``).
CPU: list[float] = []


def _clock(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call of ``fn``, after a full collection; its CPU seconds
    (every thread of the process) go to ``CPU``."""
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    CPU.append(time.process_time() - cpu)
    return wall


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def capture(n_ops: int, data_dir: str) -> dict[str, Any]:
    """Write the GraphDef and default op log of the generated graph."""
    from _common import build_model
    from tensorflow.python.profiler import tfprof_logger

    graph = build_model(n_ops).graph
    graph_bytes = graph.as_graph_def(add_shapes=True).SerializeToString()
    op_log = tfprof_logger.merge_default_with_oplog(graph).SerializeToString()
    for name, data in (("graph.pb", graph_bytes), ("oplog.pb", op_log)):
        with open(os.path.join(data_dir, name), "wb") as handle:
            handle.write(data)
    return {
        "nodes": len(graph.get_operations()),
        "graph_bytes": len(graph_bytes),
        "op_log_bytes": len(op_log),
    }


def _view_options(builder_class: Any) -> dict[str, Any]:
    """The first view of the ``view`` row: the scope view of FLOPs, no output."""
    builder = builder_class(builder_class.float_operation())
    return builder.with_empty_output().build()


def graphdef_child(side: str, data_dir: str, repeat: int) -> dict[str, Any]:
    """Construction from TensorFlow's messages (first call apart) and from bytes."""
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.profiler import tfprof_log_pb2

    graph_bytes = _read(os.path.join(data_dir, "graph.pb"))
    log_bytes = _read(os.path.join(data_dir, "oplog.pb"))
    graph_def = graph_pb2.GraphDef.FromString(graph_bytes)
    op_log = tfprof_log_pb2.OpLogProto.FromString(log_bytes)
    if side == "tf":
        from tensorflow.python.profiler import model_analyzer, option_builder
        from tensorflow.python.util import _pywrap_tfprof as lib

        options = _view_options(option_builder.ProfileOptionBuilder)
        view_options = model_analyzer._build_options(options).SerializeToString()

        def from_messages() -> None:
            lib.NewProfiler(graph_def.SerializeToString(), op_log.SerializeToString())

        def with_view() -> None:
            from_messages()
            lib.Profile(b"scope", view_options)

        def from_bytes() -> None:
            lib.NewProfiler(graph_bytes, log_bytes)

        release: Callable[[], None] = lib.DeleteProfiler
    else:
        from tfprof_lite import ProfileOptionBuilder, Profiler

        held: list[Any] = []
        options = _view_options(ProfileOptionBuilder)

        def from_messages() -> None:
            held.append(Profiler(graph_def, op_log))

        def with_view() -> None:
            from_messages()
            held[-1].profile_name_scope(options)

        def from_bytes() -> None:
            held.append(Profiler(graph_bytes, log_bytes))

        release = held.clear
    out: dict[str, Any] = {"first": _clock(from_messages), "messages": [], "bytes": [], "view": []}
    out["first_cpu"] = CPU[-1]
    release()
    for _ in range(repeat):
        for key, fn in (("bytes", from_bytes), ("messages", from_messages), ("view", with_view)):
            out[key].append(_clock(fn))
            out.setdefault(f"{key}_cpu", []).append(CPU[-1])
            release()
    return out


def live_child(side: str, n_ops: int) -> dict[str, Any]:
    """The first profiler on a freshly built graph, then its first two steps.

    The user's path: ``Profiler(sess.graph)``, one FULL_TRACE run of the whole
    graph (not timed), ``add_step(1, run_meta)``, then ``add_step(2, run_meta)``
    (the same RunMetadata again: the second step's cost with the graph settled).
    """
    from _common import build_model, session_config, tf1

    model = build_model(n_ops)
    graph = model.graph
    if side == "tf":
        import tensorflow as tf

        make: Callable[[], Any] = lambda: tf.compat.v1.profiler.Profiler(graph)  # noqa: E731
    else:
        from tfprof_lite import Profiler

        make = lambda: Profiler(graph)  # noqa: E731
    sess = tf1.Session(graph=graph, config=session_config())
    held: list[Any] = []
    out: dict[str, Any] = {"live": _clock(lambda: held.append(make()))}
    out["live_cpu"] = CPU[-1]
    sess.run(model.init)
    meta = tf1.RunMetadata()
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    sess.run(model.fetches, options=options, run_metadata=meta)
    sess.close()
    for step in (1, 2):
        out[f"step{step}"] = _clock(lambda: held[0].add_step(step, meta))  # noqa: B023
        out[f"step{step}_cpu"] = CPU[-1]
    for suffix in ("", "_cpu"):
        out[f"live_step1{suffix}"] = out[f"live{suffix}"] + out[f"step1{suffix}"]
    out["nodes"] = len(graph.get_operations())
    out["run_meta_bytes"] = meta.ByteSize()
    return out


def child_main(args: argparse.Namespace) -> int:
    if args.child == "capture":
        result = capture(args.ops, args.dir)
    elif args.child == "graphdef":
        result = graphdef_child(args.side, args.dir, args.repeat)
    else:
        result = live_child(args.side, args.live_ops)
    result["tensorflow_imported"] = "tensorflow" in sys.modules
    with open(os.path.join(args.dir, "result.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


# ================================================================== parent
def run_child(kind: str, side: str, data_dir: str, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in a fresh interpreter; its result dict."""
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    command = [sys.executable, os.path.abspath(__file__), "--child", kind, "--side", side]
    command += ["--dir", data_dir, "--repeat", str(args.repeat), "--ops", str(args.ops)]
    command += ["--live-ops", str(args.live_ops)]
    print(f"-- {kind}: {side}", flush=True)
    status = subprocess.run(command, env=env, check=False).returncode
    if status != 0:
        raise SystemExit(f"the {kind} run of {side} failed with status {status}")
    with open(os.path.join(data_dir, "result.json"), encoding="utf-8") as handle:
        result: dict[str, Any] = json.load(handle)
    return result


def collect(kind: str, data_dir: str, args: argparse.Namespace, rounds: int) -> list[dict]:
    """``rounds`` rounds of (TF, ours) children, the order swapped every round."""
    out = []
    for index in range(rounds):
        pair = {}
        for side in SIDES if index % 2 == 0 else SIDES[::-1]:
            pair[side] = run_child(kind, side, data_dir, args)
        out.append(pair)
    return out


def _samples(pairs: list[dict], side: str, key: str) -> list[float]:
    values: list[float] = []
    for pair in pairs:
        value = pair[side][key]
        values.extend(value if isinstance(value, list) else [value])
    return values


def make_rows(graphdef: list[dict], live: list[dict]) -> list[dict[str, Any]]:
    """One row per measured call: best TF, best ours, ratio, per-round ratios."""
    rows = []
    specs = [
        ("GraphDef + OpLogProto messages, 1st call", graphdef, "first", TARGET_GRAPHDEF),
        ("GraphDef + OpLogProto messages, best", graphdef, "messages", TARGET_GRAPHDEF),
        ("GraphDef + OpLogProto bytes, best", graphdef, "bytes", TARGET_GRAPHDEF),
        ("messages + 1st scope view, best", graphdef, "view", TARGET_VIEW),
        ("live tf.Graph, 1st profiler", live, "live", TARGET_LIVE),
        ("live tf.Graph, 1st profiler + 1st add_step", live, "live_step1", TARGET_LIVE),
        ("live tf.Graph, 1st add_step", live, "step1", TARGET_LIVE),
        ("live tf.Graph, 2nd add_step", live, "step2", TARGET_LIVE),
    ]
    specs += [
        (f"{name} (CPU s)", pairs, f"{key}_cpu", target) for name, pairs, key, target in specs
    ]
    for name, pairs, key, target in specs:
        if not pairs:
            continue
        tf_all, ours_all = _samples(pairs, "tf", key), _samples(pairs, "ours", key)
        per_round = [min(_samples([p], "ours", key)) / min(_samples([p], "tf", key)) for p in pairs]
        ratio = min(ours_all) / min(tf_all)
        rows.append(
            {
                "operation": name,
                "tf": min(tf_all),
                "ours": min(ours_all),
                "ratio": ratio,
                "round_ratios": per_round,
                "tf_range": [min(tf_all), max(tf_all)],
                "ours_range": [min(ours_all), max(ours_all)],
                "target": target,
                "ok": max(per_round) <= target,
            }
        )
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    width = max(len(r["operation"]) for r in rows) + 2
    print(
        f"\n{'operation':<{width}}{'TF s':>9}{'ours s':>9}{'ours/TF':>9}{'target':>8}{'ok':>5}"
        f"   {'per round':<22}{'TF min-max':<16}ours min-max"
    )
    for r in rows:
        rounds = "/".join(f"{x:.3f}" for x in r["round_ratios"])
        spans = [f"{a:.3f}-{b:.3f}" for a, b in (r["tf_range"], r["ours_range"])]
        print(
            f"{r['operation']:<{width}}{r['tf']:>9.3f}{r['ours']:>9.3f}{r['ratio']:>9.3f}"
            f"{r['target']:>8.2f}{'yes' if r['ok'] else 'NO':>5}   {rounds:<22}"
            f"{spans[0]:<16}{spans[1]}"
        )
    print(
        "(ok: the ratio of every round's pair, best of each side within the round, meets it;"
        " CPU s: the process's CPU time during the call, all threads, steadier than wall"
        " time on a loaded machine)"
    )


def parent_main(args: argparse.Namespace) -> int:
    load_before = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="tfprof_construct-") as data_dir:
        config = run_child("capture", "tf", data_dir, args)
        graphdef = collect("graphdef", data_dir, args, args.rounds)
        live = [] if args.no_live else collect("live", data_dir, args, args.live_rounds)
    rows = make_rows(graphdef, live)
    print(
        f"\nGraphDef: {config['nodes']} nodes ({config['graph_bytes'] / 1e6:.1f} MB, op log "
        f"{config['op_log_bytes'] / 1e6:.1f} MB); live graph: "
        f"{live[0]['ours']['nodes'] if live else '-'} ops; {args.rounds} rounds x "
        f"{args.repeat} calls per child (GraphDef), {args.live_rounds} rounds (live)"
    )
    print_rows(rows)
    load_after = list(os.getloadavg())
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    from _common import OUT_DIR, ROOT, write_json

    out = args.out or os.path.join(OUT_DIR, "construct.json")
    write_json(
        out,
        {
            "config": dict(config, **{k: v for k, v in vars(args).items() if k != "child"}),
            "load_average": [load_before, load_after],
            "results": rows,
            "raw": {"graphdef": graphdef, "live": live},
        },
    )
    print(f"wrote {os.path.relpath(out, ROOT)}")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000, help="GraphDef graph: minimum ops")
    parser.add_argument("--live-ops", type=int, default=59000, help="live graph: minimum ops")
    parser.add_argument("--repeat", type=int, default=3, help="calls per GraphDef child")
    parser.add_argument("--rounds", type=int, default=3, help="GraphDef rounds (TF, ours)")
    parser.add_argument("--live-rounds", type=int, default=2, help="live-graph rounds")
    parser.add_argument("--no-live", action="store_true", help="skip the live-graph rows")
    parser.add_argument("--quick", action="store_true", help="2k / 5k ops, 1 round, 2 calls")
    parser.add_argument(
        "--out", default=None, help="JSON output (default bench_out/construct.json)"
    )
    hidden = argparse.SUPPRESS
    parser.add_argument("--child", choices=("capture", "graphdef", "live"), help=hidden)
    parser.add_argument("--side", choices=SIDES, help=hidden)
    parser.add_argument("--dir", help=hidden)
    args = parser.parse_args(argv)
    if min(args.rounds, args.repeat, args.live_rounds) < 1:
        parser.error("--rounds, --live-rounds and --repeat must be at least 1")
    if args.quick:
        args.ops, args.live_ops = min(args.ops, 2000), min(args.live_ops, 5000)
        args.rounds, args.live_rounds, args.repeat = 1, 1, min(args.repeat, 2)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())

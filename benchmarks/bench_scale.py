"""Scale benchmark: tfprof_lite against TensorFlow's C++ tfprof, both fed the same bytes.

The parent process builds the generated TF1-style graph of ``bench_core.py``
(``_common.build_model``, at least ``--ops`` ops), runs ``--steps`` FULL_TRACE
steps in a ``tf.compat.v1.Session`` (runtime shapes merged into the graph, as
tfprof's ``add_step`` would) and writes three kinds of bytes to a temporary
directory: the ``GraphDef`` (``as_graph_def(add_shapes=True)``, what TF's
profiler sends to C++), the default op log (TF's
``tfprof_logger.merge_default_with_oplog``, built once) and every step's
``RunMetadata``. Fresh child interpreters then time, side by side:

* TensorFlow's C++ profiler through its binding
  (``tensorflow.python.util._pywrap_tfprof``): ``NewProfiler(graph, op_log)``,
  ``AddStep(step, graph, run_meta, op_log)`` (the bytes TF's own
  ``Profiler.add_step`` sends; a second series sends the run metadata alone),
  ``Profile(view, options)``, ``SerializeToString()``, ``ProfilerFromFile(path)``;
* ``tfprof_lite.Profiler(graph=graph_bytes, op_log=op_log_bytes)``,
  ``add_step(step, run_meta_bytes)``, ``profile_name_scope`` and the other views,
  ``serialize_to_string()``, ``Profiler.load(path)``; this runs twice, with the
  default decoder and with ``TFPROF_LITE_PURE_PYTHON=1`` (the same code when no
  native decoder is built); these children never import TensorFlow.

Each of those children does construction (``--repeat`` times, each followed
by every step: "construct + K add_step" is one such run, and by the first call
of each of the four views, in turn: "1st" is the best of those), the four views
again on the last profiler (``--repeat`` times), all with the builder's
default options written to files, serialization, and the load of the profile TF
serialized. The children run in ``--rounds`` rounds (TF, ours, ours pure
Python; then again), so that each side's samples spread over the whole run and
a slow spell of the machine does not fall on one side only; every figure is the
best of ``--repeat`` x ``--rounds`` samples. Further children each build one
profiler, add ``--many-steps`` steps (the captured run metadata reused in
turn), query the scope view once and report their peak RSS. Every report file
of ours is compared with TF's byte for byte.

It then times the command line (`scope`, `overview`, `advise`, `memory`, `report`,
`timeline`, `diff`) on the profile TF serialized, each a fresh process, on both
decoder paths. It prints one table (operation, TF s, ours s, ours/TF, target, ok, spreads) and
writes ``bench_out/scale.json``.

Run: ``python benchmarks/bench_scale.py [--quick] [--ops N] [--steps K]
[--repeat R] [--many-steps N] [--out PATH]``; see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from typing import Any

from scale_children import (
    NATIVE_MODULE,
    PURE_ENV,
    VIEWS,
    _read_bytes,
    _report_path,
    _result_path,
    child_main,
)
from scale_rows import (
    Row,
    cli_rows,
    many_rows,
    print_table,
    suite_rows,
)

#: The two decoder paths of ours: (label, set TFPROF_LITE_PURE_PYTHON=1).
PATHS = (("default", False), ("pure", True))


#: Command-line runs on the profile TF serialized (``{p}``: its path, ``{o}``: an
#: output path), each timed end to end as a fresh process.
CLI_COMMANDS = (
    ("scope", ["scope", "{p}"]),
    ("overview", ["overview", "{p}"]),
    ("advise", ["advise", "{p}"]),
    ("memory", ["memory", "{p}"]),
    ("report", ["report", "{p}", "-o", "{o}.html"]),
    ("timeline", ["timeline", "{p}", "-o", "{o}.json"]),
    ("diff", ["diff", "{p}", "{p}"]),
)


# ================================================================== parent
def run_child(
    kind: str, side: str, label: str, pure: bool, data_dir: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its result dict."""
    env = dict(os.environ)
    env.pop(PURE_ENV, None)
    if pure:
        env[PURE_ENV] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    command = [sys.executable, os.path.abspath(__file__), "--child", kind, "--side", side]
    command += ["--label", label, "--dir", data_dir, "--repeat", str(args.repeat)]
    command += ["--many-steps", str(args.many_steps), "--ops", str(args.ops)]
    command += ["--steps", str(args.steps)]
    print(f"-- {kind}: {label}{f' ({PURE_ENV}=1)' if pure else ''}", flush=True)
    start = time.perf_counter()
    status = subprocess.run(command, env=env, check=False).returncode
    if status != 0:
        raise SystemExit(f"the {kind} run of {label} failed with status {status}")
    with open(_result_path(data_dir, kind, label), encoding="utf-8") as handle:
        result: dict[str, Any] = json.load(handle)
    result["wall_s"] = time.perf_counter() - start
    print(f"   {result['wall_s']:.1f}s", flush=True)
    return result


def merge_rounds(into: dict[str, Any] | None, more: dict[str, Any]) -> dict[str, Any]:
    """One more round's suite results added to ``into``: samples (lists) appended,
    nested results (per view, the lean series) merged alike, the best kept of a
    single timing and the sum of wall times; other values (sizes, flags) are the
    same every round."""
    if into is None:
        return more
    for key, value in more.items():
        have = into.get(key)
        if isinstance(value, list):
            into[key] = [*have, *value]
        elif isinstance(value, dict):
            into[key] = merge_rounds(have, value)
        elif key == "loaded_scope_first":
            into[key] = min(have, value)
        elif key == "wall_s":
            into[key] = have + value
    return into


def run_cli(data_dir: str, pure: bool, repeat: int) -> dict[str, list[float]]:
    """Seconds of each command-line run (best of ``repeat`` kept by the caller)."""
    env = dict(os.environ)
    env.pop(PURE_ENV, None)
    if pure:
        env[PURE_ENV] = "1"
    path = os.path.join(data_dir, "tf_profile.pb")
    out: dict[str, list[float]] = {}
    for name, argv in CLI_COMMANDS:
        words = [w.format(p=path, o=os.path.join(data_dir, f"cli_{name}")) for w in argv]
        times = []
        for _ in range(max(1, min(repeat, 2))):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "tfprof_lite", *words],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"tfprof-lite {name} failed: {done.stderr.strip()}")
        out[name] = times
    return out


def compare_reports(data_dir: str, label: str) -> list[str]:
    """Report files of ours (``label``) that differ from TF's, byte for byte."""
    diffs = []
    keys = [cmd for cmd, _ in VIEWS] + ["loaded_scope"]
    pairs = [(key, "tf", label) for key in keys] + [("many_scope", "tf-many", f"{label}-many")]
    for key, tf_label, ours_label in pairs:
        texts = []
        for who in (tf_label, ours_label):
            path = _report_path(data_dir, who, key)
            texts.append(_read_bytes(path) if os.path.exists(path) else b"")
        if texts[0] != texts[1]:
            diffs.append(f"{label}:{key}")
    return diffs


def parent_main(args: argparse.Namespace) -> int:
    # This process imports neither TensorFlow nor tfprof_lite until every child has
    # run: a child's ru_maxrss starts from its parent's peak RSS (Linux keeps it
    # across exec), so the parent must stay small.
    load_before = list(os.getloadavg())
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="tfprof_scale-") as data_dir:
        config = run_child("capture", "tf", "tf", False, data_dir, args)
        machine = config.pop("machine")
        for _ in range(args.rounds):
            results["tf"] = merge_rounds(
                results.get("tf"), run_child("suite", "tf", "tf", False, data_dir, args)
            )
            for label, pure in PATHS:
                more = run_child("suite", "ours", label, pure, data_dir, args)
                results[label] = merge_rounds(results.get(label), more)
        results["tf-many"] = run_child("many", "tf", "tf-many", False, data_dir, args)
        for label, pure in PATHS:
            results[f"{label}-many"] = run_child(
                "many", "ours", f"{label}-many", pure, data_dir, args
            )
        diffs = [d for label, _ in PATHS for d in compare_reports(data_dir, label)]
        for label, pure in PATHS:
            results[f"{label}-cli"] = run_cli(data_dir, pure, args.repeat)
    load_after = list(os.getloadavg())
    from _common import OUT_DIR, ROOT, write_json

    out = args.out or os.path.join(OUT_DIR, "scale.json")

    native = bool(results["default"]["native_available"])
    titles = {
        "default": "default decoder ("
        + ("native)" if native else "native decoder not importable: pure Python)"),
        "pure": f"{PURE_ENV}=1 (pure-Python decoder)",
    }
    rows: list[Row] = []
    for label, pure in PATHS:
        rows += suite_rows(label, results["tf"], results[label], native and not pure)
        rows += many_rows(label, results["tf-many"], results[f"{label}-many"])
        rows += cli_rows(label, results[f"{label}-cli"])
    print_table(rows, titles)
    samples = args.repeat * args.rounds
    print(
        f"\n(construct, views, serialize, load: best of {samples} ({args.rounds} rounds of "
        f"{args.repeat}, TF and ours in turn); min-max: over those calls, and over every step "
        f"for add_step; '1st': the first view call after the steps, on each of the {samples} "
        "fresh profilers, views in the order listed)"
    )
    for label, _ in PATHS:
        many, tf_many = results[f"{label}-many"], results["tf-many"]
        print(
            f"{label}: {args.many_steps} steps, RSS ours {many['rss_baseline_mb']:.0f} -> "
            f"{many['rss_peak_mb']:.0f} MB, TF {tf_many['rss_baseline_mb']:.0f} -> "
            f"{tf_many['rss_peak_mb']:.0f} MB (after imports and reading the bytes -> peak)"
        )
    ours_tf = any(results[label]["tensorflow_imported"] for label, _ in PATHS)
    print(
        f"native decoder ({NATIVE_MODULE}) importable: {native}; "
        f"TensorFlow imported by ours: {ours_tf}"
    )
    print(
        f"machine: {machine['cpus']} CPUs, load average before {_loads(load_before)}, "
        f"after {_loads(load_after)}"
    )
    for diff in diffs:
        print(f"WARNING: report text of {diff} differs from TF's")
    if not diffs:
        print("report texts equal TF's for every view, the loaded profile and the many-step run")
    config.update(
        steps=args.steps,
        repeat=args.repeat,
        rounds=args.rounds,
        many_steps=args.many_steps,
        quick=args.quick,
    )
    machine.update(load_average_before=load_before, load_average_after=load_after)
    write_json(
        out,
        {
            "config": config,
            "machine": machine,
            "native_available": native,
            "results": [
                dict(
                    asdict(r),
                    ratio=r.ratio if r.tf > 0 else None,
                    ok=r.ok,
                    decoder=titles[r.group],
                )
                for r in rows
            ],
            "text_mismatches": diffs,
            "raw": results,
        },
    )
    print(f"wrote {os.path.relpath(out, ROOT)}")
    return 0


def _loads(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000, help="minimum number of graph ops")
    parser.add_argument("--steps", type=int, default=5, help="number of FULL_TRACE steps")
    parser.add_argument(
        "--repeat", type=int, default=3, help="constructions, view calls, serializations, loads"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="rounds of the TF and ours children, in turn (samples: repeat x rounds)",
    )
    parser.add_argument(
        "--many-steps", type=int, default=50, help="steps of the many-step and RSS runs"
    )
    parser.add_argument(
        "--quick", action="store_true", help="~2k ops, 2 steps, --many-steps 5, 2 repeats, 1 round"
    )
    parser.add_argument("--out", default=None, help="JSON output (default bench_out/scale.json)")
    hidden = argparse.SUPPRESS
    parser.add_argument("--child", choices=("capture", "suite", "many"), help=hidden)
    parser.add_argument("--side", choices=("tf", "ours"), help=hidden)
    parser.add_argument("--label", help=hidden)
    parser.add_argument("--dir", help=hidden)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeat < 1:
        parser.error("--rounds and --repeat must be at least 1")
    if args.quick:
        args.ops, args.steps = min(args.ops, 2000), min(args.steps, 2)
        args.many_steps, args.repeat = min(args.many_steps, 5), min(args.repeat, 2)
        args.rounds = min(args.rounds, 1)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())

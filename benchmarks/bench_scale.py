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
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

PURE_ENV = "TFPROF_LITE_PURE_PYTHON"
NATIVE_MODULE = "tfprof_lite._native._stepdecode"

VIEWS = (
    ("scope", "profile_name_scope"),
    ("graph", "profile_graph"),
    ("op", "profile_operations"),
    ("code", "profile_python"),
)
METHODS = dict(VIEWS)

#: The two decoder paths of ours: (label, set TFPROF_LITE_PURE_PYTHON=1).
PATHS = (("default", False), ("pure", True))

# Targets, ours/TF unless marked absolute.
TARGET_ADD_STEP_NATIVE = 0.05
TARGET_ADD_STEP_PURE = 0.25
TARGET_CONSTRUCT = 0.3
TARGET_CONSTRUCT_STEPS = 0.1
TARGET_VIEW = 0.3
TARGET_LOAD = 0.3
TARGET_SERIALIZE = 0.3
TARGET_MANY_RSS_MB = 600.0
TARGET_MANY_SCOPE_S = 0.4
TARGET_CLI_SCOPE_S = 1.5
TARGET_CLI_OTHER_S = 5.0

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


# ================================================================== children
@dataclass
class Inputs:
    """The bytes both profilers are fed."""

    graph: bytes
    op_log: bytes
    run_metas: list[bytes]


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def read_inputs(data_dir: str) -> Inputs:
    count = sum(1 for name in os.listdir(data_dir) if name.startswith("run_meta_"))
    return Inputs(
        graph=_read_bytes(os.path.join(data_dir, "graph.pb")),
        op_log=_read_bytes(os.path.join(data_dir, "oplog.pb")),
        run_metas=[_read_bytes(os.path.join(data_dir, f"run_meta_{i}.pb")) for i in range(count)],
    )


def _clock(fn: Callable[[], Any]) -> float:
    """Seconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (Linux: ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class TfSide:
    """TensorFlow's C++ profiler (a process-wide singleton) through its binding."""

    name = "tf"

    def __init__(self, inputs: Inputs) -> None:
        from tensorflow.python.profiler import model_analyzer, option_builder
        from tensorflow.python.util import _pywrap_tfprof

        self._lib: Any = _pywrap_tfprof
        self._build_options: Callable[[dict[str, Any]], Any] = model_analyzer._build_options
        self._builder: Any = option_builder.ProfileOptionBuilder
        self._inputs = inputs
        self._live = False
        self.lean = False  # AddStep with the run metadata alone

    def construct(self) -> None:
        self._lib.NewProfiler(self._inputs.graph, self._inputs.op_log)
        self._live = True

    def add_step(self, step: int, run_meta: bytes) -> None:
        if self.lean:
            self._lib.AddStep(step, b"", run_meta, b"")
        else:
            self._lib.AddStep(step, self._inputs.graph, run_meta, self._inputs.op_log)

    def options(self, path: str) -> bytes:
        """The builder's default options writing to ``path``, as TF's Profiler sends them."""
        data: bytes = self._build_options(
            self._builder().with_file_output(path).build()
        ).SerializeToString()
        return data

    def view(self, cmd: str, options: Any) -> None:
        self._lib.Profile(cmd.encode("utf-8"), options)

    def serialize(self) -> bytes:
        data: bytes = self._lib.SerializeToString()
        return data

    def load(self, path: str) -> None:
        self._lib.ProfilerFromFile(path)
        self._live = True

    def release(self) -> None:
        if self._live:
            self._lib.DeleteProfiler()
            self._live = False


class OursSide:
    """``tfprof_lite.Profiler`` on the same bytes."""

    name = "ours"

    def __init__(self, inputs: Inputs) -> None:
        from tfprof_lite import ProfileOptionBuilder, Profiler
        from tfprof_lite.options import Options

        self._profiler: Any = Profiler
        self._builder: Any = ProfileOptionBuilder
        self._options_cls: Any = Options
        self._inputs = inputs
        self._prof: Any = None

    def construct(self) -> None:
        self._prof = self._profiler(graph=self._inputs.graph, op_log=self._inputs.op_log)

    def add_step(self, step: int, run_meta: bytes) -> None:
        self._prof.add_step(step, run_meta)

    def options(self, path: str) -> Any:
        """The builder's default options writing to ``path``, validated once up front."""
        built = self._builder().with_file_output(path).build()
        return self._options_cls.from_dict(built)

    def view(self, cmd: str, options: Any) -> None:
        getattr(self._prof, METHODS[cmd])(options)

    def serialize(self) -> bytes:
        data: bytes = self._prof.serialize_to_string()
        return data

    def load(self, path: str) -> None:
        self._prof = self._profiler.load(path)

    def release(self) -> None:
        self._prof = None


def _report_path(data_dir: str, label: str, what: str) -> str:
    return os.path.join(data_dir, "reports", f"{label}_{what}.txt")


def _construct_and_steps(
    side: Any, run_metas: list[bytes], repeat: int, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``repeat`` times: a fresh profiler (the previous one released first), then every
    step, then (given ``options`` per view) the first call of each view in turn; the
    last profiler stays live."""
    constructs: list[float] = []
    steps: list[list[float]] = []
    first: dict[str, list[float]] = {cmd: [] for cmd in options or {}}
    for _ in range(repeat):
        side.release()
        gc.collect()
        constructs.append(_clock(side.construct))
        steps.append(
            [
                _clock(lambda i=i, meta=meta: side.add_step(i, meta))
                for i, meta in enumerate(run_metas)
            ]
        )
        for cmd, opts in (options or {}).items():
            gc.collect()
            first[cmd].append(_clock(lambda c=cmd, o=opts: side.view(c, o)))
    return {"construct": constructs, "add_step": steps, "view_first": first}


def _view_options(side: Any, data_dir: str, label: str) -> dict[str, Any]:
    return {cmd: side.options(_report_path(data_dir, label, cmd)) for cmd, _ in VIEWS}


def _views(side: Any, options: dict[str, Any], repeat: int) -> dict[str, Any]:
    """Repeated calls of each view on the live profiler (after its first calls)."""
    again: dict[str, list[float]] = {}
    for cmd, _ in VIEWS:
        times = []
        for _ in range(repeat):
            gc.collect()
            times.append(_clock(lambda c=cmd, o=options[cmd]: side.view(c, o)))
        again[cmd] = times
    return {"view": again}


def run_suite(side: Any, inputs: Inputs, data_dir: str, label: str, repeat: int) -> dict[str, Any]:
    """Construction, steps, views, serialization and load, for one implementation."""
    out: dict[str, Any] = {}
    if isinstance(side, TfSide):
        side.lean = True
        out["lean"] = _construct_and_steps(side, inputs.run_metas, repeat)
        side.lean = False
    options = _view_options(side, data_dir, label)
    out.update(_construct_and_steps(side, inputs.run_metas, repeat, options))
    print(f"  [{label}] construct and {len(inputs.run_metas)} steps done", flush=True)
    out.update(_views(side, options, repeat))
    serialize: list[float] = []
    data = b""
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        data = side.serialize()
        serialize.append(time.perf_counter() - start)
    out["serialize"] = serialize
    out["serialized_bytes"] = len(data)
    saved = os.path.join(data_dir, "tf_profile.pb")
    if isinstance(side, TfSide):
        with open(saved, "wb") as handle:
            handle.write(data)
    del data
    load: list[float] = []
    for _ in range(repeat):
        side.release()
        gc.collect()
        load.append(_clock(lambda: side.load(saved)))
    out["load"] = load
    options = side.options(_report_path(data_dir, label, "loaded_scope"))
    out["loaded_scope_first"] = _clock(lambda: side.view("scope", options))
    side.release()
    return out


def run_many(side: Any, inputs: Inputs, data_dir: str, label: str, n: int) -> dict[str, Any]:
    """One profiler, ``n`` steps (run metadata reused in turn), one scope view; peak RSS."""
    gc.collect()
    baseline = _peak_rss_mb()
    construct = _clock(side.construct)
    metas = inputs.run_metas
    steps = [_clock(lambda i=i: side.add_step(i, metas[i % len(metas)])) for i in range(n)]
    options = side.options(_report_path(data_dir, label, "many_scope"))
    scope = _clock(lambda: side.view("scope", options))
    peak = _peak_rss_mb()
    return {
        "construct": construct,
        "add_step": steps,
        "scope_first": scope,
        "rss_baseline_mb": baseline,
        "rss_peak_mb": peak,
    }


def _native_available() -> bool:
    import importlib

    try:
        importlib.import_module(NATIVE_MODULE)
    except ImportError:
        return False
    return True


def child_main(args: argparse.Namespace) -> int:
    if args.child == "capture":
        info = capture(args.ops, args.steps, args.dir)
        with open(_result_path(args.dir, "capture", "tf"), "w", encoding="utf-8") as handle:
            json.dump(info, handle)
        return 0
    inputs = read_inputs(args.dir)
    side: Any = TfSide(inputs) if args.side == "tf" else OursSide(inputs)
    if args.child == "suite":
        result = run_suite(side, inputs, args.dir, args.label, args.repeat)
    else:
        result = run_many(side, inputs, args.dir, args.label, args.many_steps)
    result["tensorflow_imported"] = "tensorflow" in sys.modules
    result["pure_env"] = os.environ.get(PURE_ENV, "")
    if args.side == "ours":
        result["native_available"] = _native_available()
    with open(_result_path(args.dir, args.child, args.label), "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


def _result_path(data_dir: str, kind: str, label: str) -> str:
    return os.path.join(data_dir, f"result_{kind}_{label}.json")


def capture(n_ops: int, n_steps: int, data_dir: str) -> dict[str, Any]:
    """Build and trace the graph; write the GraphDef, op log and RunMetadata bytes.

    Returns the graph's sizes and the machine (Python and TensorFlow versions).
    """
    from _common import machine_info, traced_model
    from tensorflow.python.profiler import tfprof_logger

    model = traced_model(n_ops, n_steps)
    graph = model.graph.as_graph_def(add_shapes=True).SerializeToString()
    op_log = tfprof_logger.merge_default_with_oplog(
        model.graph, run_meta=model.run_metas[0]
    ).SerializeToString()
    metas = [meta.SerializeToString() for meta in model.run_metas]
    os.makedirs(os.path.join(data_dir, "reports"))
    for name, data in [("graph.pb", graph), ("oplog.pb", op_log)] + [
        (f"run_meta_{i}.pb", meta) for i, meta in enumerate(metas)
    ]:
        with open(os.path.join(data_dir, name), "wb") as handle:
            handle.write(data)
    info = {
        "machine": machine_info(),
        "ops": len(model.graph.get_operations()),
        "node_stats_per_step": sum(
            len(d.node_stats) for d in model.run_metas[0].step_stats.dev_stats
        ),
        "graph_bytes": len(graph),
        "op_log_bytes": len(op_log),
        "run_meta_bytes": [len(meta) for meta in metas],
    }
    mb = 1 << 20
    print(
        f"bytes: GraphDef {len(graph) / mb:.1f} MB, op log {len(op_log) / mb:.1f} MB, "
        f"RunMetadata {statistics.mean(info['run_meta_bytes']) / mb:.1f} MB per step",
        flush=True,
    )
    return info


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


@dataclass
class Row:
    """One line of the table; ``absolute``: the target bounds ours alone, not the ratio."""

    group: str
    operation: str
    tf: float
    ours: float
    target: float | None = None
    absolute: bool = False
    unit: str = "s"
    tf_range: tuple[float, float] | None = None
    ours_range: tuple[float, float] | None = None

    @property
    def ratio(self) -> float:
        return self.ours / self.tf if self.tf > 0 else float("nan")

    @property
    def ok(self) -> bool | None:
        if self.target is None:
            return None
        return (self.ours if self.absolute else self.ratio) <= self.target


def _span(values: list[float]) -> tuple[float, float]:
    return (min(values), max(values))


def _medians(steps: list[list[float]]) -> list[float]:
    return [statistics.median(rep) for rep in steps]


def _totals(result: dict[str, Any]) -> list[float]:
    return [c + sum(s) for c, s in zip(result["construct"], result["add_step"])]


def suite_rows(group: str, tf: dict[str, Any], ours: dict[str, Any], native: bool) -> list[Row]:
    k = len(tf["add_step"][0])
    step_target = TARGET_ADD_STEP_NATIVE if native else TARGET_ADD_STEP_PURE
    tf_steps = [t for rep in tf["add_step"] for t in rep]
    ours_steps = [t for rep in ours["add_step"] for t in rep]
    lean_steps = [t for rep in tf["lean"]["add_step"] for t in rep]
    rows = [
        Row(
            group,
            "construct",
            min(tf["construct"]),
            min(ours["construct"]),
            TARGET_CONSTRUCT,
            tf_range=_span(tf["construct"]),
            ours_range=_span(ours["construct"]),
        ),
        Row(
            group,
            f"add_step (median of {k})",
            min(_medians(tf["add_step"])),
            min(_medians(ours["add_step"])),
            step_target,
            tf_range=_span(tf_steps),
            ours_range=_span(ours_steps),
        ),
        Row(
            group,
            "add_step, TF fed run_meta only",
            min(_medians(tf["lean"]["add_step"])),
            min(_medians(ours["add_step"])),
            tf_range=_span(lean_steps),
            ours_range=_span(ours_steps),
        ),
        Row(
            group,
            f"construct + {k} add_step",
            min(_totals(tf)),
            min(_totals(ours)),
            TARGET_CONSTRUCT_STEPS,
            tf_range=_span(_totals(tf)),
            ours_range=_span(_totals(ours)),
        ),
    ]
    for cmd, _ in VIEWS:
        rows.append(
            Row(
                group,
                f"{cmd} view, 1st",
                min(tf["view_first"][cmd]),
                min(ours["view_first"][cmd]),
                TARGET_VIEW,
                tf_range=_span(tf["view_first"][cmd]),
                ours_range=_span(ours["view_first"][cmd]),
            )
        )
        rows.append(
            Row(
                group,
                f"{cmd} view, best",
                min(tf["view"][cmd]),
                min(ours["view"][cmd]),
                TARGET_VIEW,
                tf_range=_span(tf["view"][cmd]),
                ours_range=_span(ours["view"][cmd]),
            )
        )
    for key, name, target in (
        ("serialize", "serialize_to_string", TARGET_SERIALIZE),
        ("load", "load TF's saved profile", TARGET_LOAD),
    ):
        rows.append(
            Row(
                group,
                name,
                min(tf[key]),
                min(ours[key]),
                target,
                tf_range=_span(tf[key]),
                ours_range=_span(ours[key]),
            )
        )
    return rows


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


def cli_rows(group: str, cli: dict[str, list[float]]) -> list[Row]:
    """One row per command (no TF counterpart: the target bounds ours alone)."""
    return [
        Row(
            group,
            f"CLI {name} on TF's saved profile",
            0.0,
            min(times),
            TARGET_CLI_SCOPE_S if name == "scope" else TARGET_CLI_OTHER_S,
            absolute=True,
            ours_range=_span(times),
        )
        for name, times in cli.items()
    ]


def many_rows(group: str, tf: dict[str, Any], ours: dict[str, Any]) -> list[Row]:
    n = len(tf["add_step"])
    k = max(1, min(5, n // 2))
    rows = []
    for name, part in (
        (f"steps 0-{k - 1}", slice(0, k)),
        (f"steps {n - k}-{n - 1}", slice(-k, None)),
    ):
        tf_part, ours_part = tf["add_step"][part], ours["add_step"][part]
        rows.append(
            Row(
                group,
                f"{n} steps: add_step, {name} (median)",
                statistics.median(tf_part),
                statistics.median(ours_part),
                tf_range=_span(tf_part),
                ours_range=_span(ours_part),
            )
        )
    rows.append(
        Row(
            group,
            f"{n} steps: peak RSS",
            tf["rss_peak_mb"],
            ours["rss_peak_mb"],
            TARGET_MANY_RSS_MB,
            absolute=True,
            unit="MB",
        )
    )
    rows.append(
        Row(
            group,
            f"{n} steps: scope view, 1st",
            tf["scope_first"],
            ours["scope_first"],
            TARGET_MANY_SCOPE_S,
            absolute=True,
        )
    )
    return rows


def _fmt_range(span: tuple[float, float] | None) -> str:
    return f"{span[0]:.4f}-{span[1]:.4f}" if span else "-"


def _fmt_target(row: Row) -> str:
    if row.target is None:
        return "-"
    if row.absolute:
        return f"<={row.target:g} {row.unit}"
    return f"<={row.target:.2f}"


def _fmt_ok(row: Row) -> str:
    ok = row.ok
    return "-" if ok is None else ("yes" if ok else "NO")


def print_table(rows: list[Row], titles: dict[str, str]) -> None:
    width = max(len(r.operation) for r in rows) + 2
    header = (
        f"{'operation':<{width}}{'TF':>10}{'ours':>10}{'ours/TF':>9}{'target':>11}{'ok':>5}"
        f"   {'TF min-max':<15}  {'ours min-max':<15}"
    )
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            print(f"\n== ours: {titles[group]}")
            print(header)
        unit = "" if row.unit == "s" else f" {row.unit}"
        tf_value = f"{row.tf:.1f}{unit}" if unit else f"{row.tf:.4f}"
        ratio = f"{row.ratio:>9.3f}" if row.tf > 0 else f"{'-':>9}"
        if row.tf <= 0:  # no TF counterpart
            tf_value = "-"
        ours_value = f"{row.ours:.1f}{unit}" if unit else f"{row.ours:.4f}"
        print(
            f"{row.operation:<{width}}{tf_value:>10}{ours_value:>10}{ratio}"
            f"{_fmt_target(row):>11}{_fmt_ok(row):>5}"
            f"   {_fmt_range(row.tf_range):<15}  {_fmt_range(row.ours_range):<15}"
        )


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

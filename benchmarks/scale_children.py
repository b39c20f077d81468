"""The child processes of ``bench_scale.py``: TensorFlow's C++ tfprof (through
``_pywrap_tfprof``) and ``tfprof_lite`` fed the same bytes, each timed through
construction, ``add_step``, the four views, serialization and load (``run_suite``) or
through many steps with its peak RSS (``run_many``), and the capture that writes
those bytes (``capture``). ``bench_scale.py --child KIND`` runs ``child_main``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
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

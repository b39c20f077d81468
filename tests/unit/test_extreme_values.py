"""Extreme int64/uint64/int32 values in RunMetadata and op logs.

tfprof keeps its counters in C++ ``int64_t``: sums wrap around (two's complement)
and step averages divide the sum as an unsigned number by the step count. We
reproduce that (``tfprof_lite.model.int64``), so every value ``add_step`` accepts
gives TensorFlow's reports, fits the returned messages and survives
``serialize_to_string()`` / ``Profiler.load``.

The first part needs no TensorFlow: every field at its limits is accepted, every
view, the advisor and the CLI answer, the saved profile loads back and reports
the same, and hand-computed wrapped values appear in the returned messages. The
last test is differential: TF's tfprof is fed the same bytes and its reports,
returned messages, advice and serialized profile must equal ours.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfprof_lite
from tests.handmade import CPU, GPU, STREAM_ALL, HandCase, Mem, node, ns, op_log, run_meta
from tfprof_lite.model.int64 import INT64_MAX, INT64_MIN, unsigned_mean, wrap64
from tfprof_lite.proto import messages as pb

U64_MAX = 2**64 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
U32_MAX = 2**32 - 1
I64_VALUES = (INT64_MAX, INT64_MIN, -1)

_STEP_FIELDS = (
    "all_start_micros",
    "op_start_rel_micros",
    "op_end_rel_micros",
    "all_end_rel_micros",
    "scheduled_micros",
    "all_start_nanos",
    "op_start_rel_nanos",
    "op_end_rel_nanos",
    "all_end_rel_nanos",
    "scheduled_nanos",
)
_MEMORY_FIELDS = (
    "total_bytes",
    "peak_bytes",
    "live_bytes",
    "allocator_bytes_in_use",
    "allocation_records[0].alloc_micros",
    "allocation_records[0].alloc_bytes",
)
_STATS_FIELDS = (
    "temp_memory_size",
    "persistent_memory_size",
    "device_temp_memory_size",
    "device_persistent_memory_size",
)
_ALLOC = "output[0].tensor_description.allocation_description"


def _cases() -> list[tuple[str, str, int]]:
    """(record, field path, value): every int field of the records tfprof reads."""
    out = [("b", f, v) for f in _STEP_FIELDS for v in I64_VALUES]
    out += [("b", "thread_id", U32_MAX)]
    for target in ("b", "g"):  # a CPU and a GPU allocator
        out += [(target, f"memory[0].{f}", v) for f in _MEMORY_FIELDS for v in I64_VALUES]
        out += [(target, f"memory_stats.{f}", v) for f in _STATS_FIELDS for v in I64_VALUES]
    out += [("b", "output[0].slot", v) for v in (I32_MAX, I32_MIN, -1)]
    for f in ("requested_bytes", "allocated_bytes", "allocation_id"):
        out += [("b", f"{_ALLOC}.{f}", v) for v in I64_VALUES]
    out += [("b", f"{_ALLOC}.ptr", v) for v in (U64_MAX, 2**63)]
    out += [("b", "output[0].tensor_description.dtype", v) for v in (I32_MAX, I32_MIN, -1)]
    out += [("gs", f, v) for f in ("op_end_rel_micros", "all_start_micros") for v in I64_VALUES]
    out += [("oplog", "float_ops", v) for v in I64_VALUES]
    return out


CASES = _cases()


def _nodes() -> list[Any]:
    return [
        node("a", "VariableV2", shape=[2, 2], outputs=[[2, 2]]),
        node("s/b", "MatMul", inputs=["a", "a"], outputs=[[2, 2]]),
        node("s/c", "Add", inputs=["s/b", "a"], outputs=[[2, 2]]),
        node("g", "Mul", inputs=["s/c", "a"], outputs=[[2, 2]]),
    ]


def _records() -> dict[str, Any]:
    return {
        "a": ns("a", 100, 10, [Mem("cpu", 64, 64, 64, 128, ((100, 64),))], [64], temp=8, persist=4),
        "b": ns("s/b", 120, 20, [Mem("cpu", 32, 48, 16, 200, ((120, 32),))], [16, 8], 2, 1),
        "c": ns("s/c", 150, 5, [Mem("cpu", 16, 16, 16, 210, ((150, 16),))], [16]),
        "g": ns(
            "g", 160, 7, [Mem("GPU_0_bfc", 40, 40, 40, 300, ((161, 40), (162, -8)))], [40], 3, 2
        ),
        "gs": ns("g:Mul", 170, 9),
    }


def _set(msg: Any, path: str, value: int) -> None:
    """Set a dotted field path (``memory[0].total_bytes``) of ``msg``."""
    *parts, last = path.split(".")
    for part in parts:
        name, _, index = part.partition("[")
        msg = getattr(msg, name)
        if index:
            msg = msg[int(index[:-1])]
    setattr(msg, last, value)


def make_case(target: str, path: str, value: int) -> HandCase:
    """Two equal steps; ``path`` set to ``value`` on record ``target`` (and on the
    next CPU record for ``b``, so sums of two extreme values happen too), or the
    op log's FLOPs of two nodes (``oplog``)."""
    recs = _records()
    log = None
    if target == "oplog":
        log = op_log([pb.OpLogEntry(name=n, float_ops=value) for n in ("s/b", "s/c")])
    else:
        _set(recs[target], path, value)
        if target == "b":
            _set(recs["c"], path, value)
    meta = run_meta(
        [(CPU, [recs["a"], recs["b"], recs["c"]]), (GPU, [recs["g"]]), (STREAM_ALL, [recs["gs"]])]
    )
    return HandCase.make(f"{target}.{path}={value}", _nodes(), [(0, meta), (1, meta)], log)


SELECT = [
    "micros",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "params",
    "float_ops",
    "occurrence",
    "device",
    "op_types",
    "input_shapes",
    "accelerator_micros",
    "cpu_micros",
]
TF_ADVICE = (
    "ExpensiveOperationChecker",
    "AcceleratorUtilizationChecker",
    "JobChecker",
    "OperationChecker",
)


def options(step: int, order_by: str = "name") -> dict[str, Any]:
    """Everything shown: no threshold filters out even a negative (wrapped) value."""
    opts: dict[str, Any] = dict(tfprof_lite.ProfileOptionBuilder.time_and_memory())
    opts.update(
        max_depth=100,
        min_bytes=INT64_MIN,
        min_peak_bytes=INT64_MIN,
        min_residual_bytes=INT64_MIN,
        min_output_bytes=INT64_MIN,
        min_micros=INT64_MIN,
        min_accelerator_micros=INT64_MIN,
        min_cpu_micros=INT64_MIN,
        min_params=INT64_MIN,
        min_float_ops=INT64_MIN,
        step=step,
        order_by=order_by,
        select=SELECT,
        output="none",
    )
    return opts


def ours(case: HandCase) -> tfprof_lite.Profiler:
    prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log or None)
    for step, data in case.run_metas:
        prof.add_step(step, data)
    return prof


METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
}


def _text(prof: tfprof_lite.Profiler, view: str, opts: dict[str, Any], tmp: Path) -> str:
    path = tmp / f"{view}.txt"
    getattr(prof, METHODS[view])(dict(opts, output=f"file:outfile={path}"))
    return path.read_text(encoding="utf-8") if path.exists() else ""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with contextlib.redirect_stdout(io.StringIO()):
        yield


# ------------------------------------------------------------------ no TensorFlow


@pytest.mark.parametrize(
    ("target", "path", "value"), CASES, ids=[f"{t}.{p}={v}" for t, p, v in CASES]
)
def test_accepted_values_report_serialize_and_load(
    target: str, path: str, value: int, tmp_path: Path
) -> None:
    prof = ours(make_case(target, path, value))
    loaded = tfprof_lite.Profiler.load(prof.serialize_to_string())
    for step in (-1, 0):
        for order_by in ("name", "bytes", "micros"):
            opts = options(step, order_by)
            for view in METHODS:
                text = _text(prof, view, opts, tmp_path)
                assert "Profile:" in text
                assert _text(loaded, view, opts, tmp_path) == text
                message = getattr(prof, METHODS[view])(opts)
                assert message.ByteSize() > 0
    with _quiet():
        advice = prof.advise({name: {} for name in TF_ADVICE})
    assert advice.checkers and set(advice.checkers) <= set(TF_ADVICE)
    assert loaded.serialize_to_string()


def _scope_node(prof: tfprof_lite.Profiler, step: int, name: str) -> Any:
    root = prof.profile_name_scope(options(step))
    stack = list(root.children)
    while stack:
        current = stack.pop()
        if current.name == name:
            return current
        stack.extend(current.children)
    raise AssertionError(f"{name} not in the scope view")


def test_memory_sums_wrap_around_like_int64() -> None:
    prof = ours(make_case("b", "memory_stats.temp_memory_size", INT64_MAX))
    # s/b: total 32 + persistent 1 + temp (2**63 - 1), modulo 2**64.
    b = _scope_node(prof, 0, "s/b")
    assert b.requested_bytes == 32 + 1 + INT64_MAX - 2**64 == INT64_MIN + 32
    assert b.peak_bytes == 48 + 1 + INT64_MAX - 2**64
    assert b.residual_bytes == 16 + 1  # temp is not residual
    # Two steps: the sum wraps once more, then the unsigned mean halves it.
    assert _scope_node(prof, -1, "s/b").requested_bytes == ((INT64_MIN + 32) * 2 % 2**64) // 2


def test_step_average_is_an_unsigned_division() -> None:
    # -1 byte in both steps: the sum -2 read as unsigned, halved: 2**63 - 1.
    prof = ours(make_case("b", "memory[0].total_bytes", -1))
    assert _scope_node(prof, 0, "s/b").requested_bytes == -1 + 1 + 2
    c = _scope_node(prof, -1, "s/c")
    assert c.requested_bytes == (2 * (-1) % 2**64) // 2 == INT64_MAX


def test_end_time_wraps_in_the_saved_profile() -> None:
    prof = ours(make_case("b", "op_end_rel_micros", INT64_MAX))
    saved = pb.ProfileProto.FromString(prof.serialize_to_string())
    b = next(n for n in saved.nodes.values() if n.name == "s/b")
    assert b.execs[0].latest_end_micros == max(120 + INT64_MAX - 2**64, 0)
    assert b.execs[0].memory_execs[0].memory_micros == 120 + INT64_MAX - 2**64


def test_negative_start_keeps_no_memory() -> None:
    # tfprof records memory only for a positive start time (it logs "no start time").
    prof = ours(make_case("b", "all_start_micros", -1))
    b = _scope_node(prof, 0, "s/b")
    assert (b.requested_bytes, b.exec_micros, b.run_count) == (0, 0, 0)


def test_flops_times_run_count_wraps() -> None:
    prof = ours(make_case("oplog", "float_ops", INT64_MAX))
    b = _scope_node(prof, 0, "s/b")
    assert b.float_ops == INT64_MAX  # ran once in step 0
    root = prof.profile_name_scope(options(0))
    assert root.total_float_ops == wrap64(2 * INT64_MAX)


def test_int64_helpers() -> None:
    assert wrap64(INT64_MAX + 1) == INT64_MIN
    assert wrap64(INT64_MIN - 1) == INT64_MAX
    assert wrap64(5) == 5
    total = np.asarray([-2, 7, INT64_MIN, 3], dtype=np.int64)
    count = np.asarray([2, 2, 2, 0], dtype=np.int64)
    assert unsigned_mean(total, count).tolist() == [INT64_MAX, 3, 2**62, 0]


def test_cli_reads_an_extreme_profile(tmp_path: Path) -> None:
    prof = ours(make_case("b", "memory_stats.temp_memory_size", INT64_MAX))
    saved = tmp_path / "profile_1"
    saved.write_bytes(prof.serialize_to_string())
    for cmd in ("scope", "op", "graph", "advise"):
        done = subprocess.run(
            [sys.executable, "-m", "tfprof_lite", cmd, str(saved)],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ against TensorFlow


@pytest.mark.tf
@pytest.mark.parametrize(
    ("target", "path", "value"), CASES, ids=[f"{t}.{p}={v}" for t, p, v in CASES]
)
def test_same_as_tensorflow(target: str, path: str, value: int) -> None:
    pytest.importorskip("tensorflow")
    from tensorflow.core.profiler import tfprof_log_pb2

    from tests.integration import hand_oracle, tf_oracle

    case = make_case(target, path, value)
    oracle = hand_oracle.HandOracle(case)
    prof = ours(case)
    for step in (-1, 0):
        for order_by in ("bytes",):
            opts = options(step, order_by)
            for view in METHODS:
                assert hand_oracle.our_text(prof, view, opts) == oracle.text(view, opts)
                assert hand_oracle.our_proto(prof, view, opts) == oracle.proto(view, opts)
    advice = {name: {} for name in TF_ADVICE}
    with _quiet():
        mine = prof.advise(advice).SerializeToString(deterministic=True)
    assert mine == oracle.advise(advice)
    canonical = tf_oracle.canonical_proto(tfprof_log_pb2.ProfileProto, prof.serialize_to_string())
    assert canonical == oracle.serialized_profile()


def test_analyses_take_a_start_whose_end_wraps() -> None:
    """A start of 2**63-1 wraps its end past int64: the step's wall span ends at its
    start, and the advisor's and overview's analyses answer instead of raising."""
    from tfprof_lite.analysis.input_pipeline import input_pipeline
    from tfprof_lite.analysis.overview import overview
    from tfprof_lite.analysis.steptime import step_times

    prof = tfprof_lite.Profiler()
    prof.add_step(0, run_meta([(CPU, [ns("lonely", INT64_MAX, 5)])]))
    assert prof.model.steps[0].wall_span() == (INT64_MAX, INT64_MAX)
    assert [s.wall_micros for s in input_pipeline(prof.model).steps] == [0]
    assert overview(prof.model).to_text()
    assert step_times(prof.model)
    advice = prof.advise(tfprof_lite.ALL_ADVICE)
    assert "InputPipelineChecker" in advice.checkers

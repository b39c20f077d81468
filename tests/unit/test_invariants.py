"""Properties of the views on random hand-made profiles (no TensorFlow).

Random GraphDefs (scoped names, a few op types, inputs to earlier nodes,
optional ``shape`` attrs), op logs and RunMetadata (CPU, GPU, stream:all and
ignored devices, zero start times and durations, memory, pseudo nodes, several
steps) are built with ``tfprof_lite.proto.messages`` and checked for:

* scope view, everything accounted and shown: every node's total is its self
  value plus its children's totals;
* filters and accounting regexes never increase the root totals (scope, graph);
* ``serialize_to_string`` -> ``Profiler.load`` gives the same reports and
  messages (minus the missing-stream warning, which tfprof does not save);
* op view: row totals are suffix sums of the displayed rows.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfprof_lite
from tests.handmade import ALL_SELECT as HANDMADE_SELECT
from tests.handmade import (
    CPU,
    GPU,
    MEMCPY,
    STREAM_7,
    STREAM_ALL,
    HandCase,
    Mem,
    code_entry,
    node,
    ns,
    op_log,
    run_meta,
)
from tfprof_lite.options.builder import ProfileOptionBuilder as B
from tfprof_lite.outputs.text import MISSING_STREAM_WARNING
from tfprof_lite.proto import messages as pb

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}
#: (self field, total field) pairs shared by GraphNodeProto and MultiGraphNodeProto.
STAT_FIELDS = [
    (name, f"total_{name}")
    for name in (
        "exec_micros",
        "accelerator_exec_micros",
        "cpu_exec_micros",
        "requested_bytes",
        "peak_bytes",
        "residual_bytes",
        "output_bytes",
        "parameters",
        "float_ops",
    )
]
TREE_FIELDS = [*STAT_FIELDS, ("run_count", "total_run_count")]
#: Every column but ``tensor_value`` (no hand-made node records a value).
ALL_SELECT = [name for name in HANDMADE_SELECT if name != "tensor_value"]
OPS = ("Const", "MatMul", "Add", "Identity", "Relu", "VariableV2")
DEVICES = (CPU, CPU, GPU, STREAM_ALL, STREAM_7, MEMCPY)
EVERYTHING = B().with_max_depth(10**6).select(ALL_SELECT).with_empty_output().build()

_segments = st.sampled_from(["a", "b", "B", "c", "_s", "grad", "x1"])
_names = st.lists(_segments, min_size=1, max_size=3).map("/".join)


@st.composite
def profiles(draw: st.DrawFn) -> HandCase:
    """A random GraphDef + op log + 1-3 steps of RunMetadata."""
    names = draw(st.lists(_names, min_size=1, max_size=10, unique=True))
    nodes = []
    for i, name in enumerate(names):
        inputs = draw(st.lists(st.sampled_from(names[:i]), max_size=3)) if i else []
        shape: Any = draw(
            st.sampled_from([False, None, [], [3], [2, 4], [-1, 2]])
        )  # False: no attr
        nodes.append(node(name, draw(st.sampled_from(OPS)), inputs, shape, outputs=[[2, 2]]))
    strings: dict[str, int] = {"none": 0}
    entries = [
        code_entry(
            name,
            [("/m.py", 1, "main"), ("/m.py", draw(st.integers(2, 4)), f"f{i % 3}")],
            strings,
            types=draw(st.sampled_from([[], ["_trainable_variables"]])),
            float_ops=draw(st.integers(0, 50)),
        )
        for i, name in enumerate(names)
        if draw(st.booleans())
    ]
    pool = [*names, "pseudo/op", "RecvTensor", "_SOURCE"]
    steps = []
    for step in draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)):
        devices = []
        for device in draw(st.lists(st.sampled_from(DEVICES), min_size=1, max_size=3)):
            records = []
            for name in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6)):
                start = draw(st.sampled_from([0, 5, 100, 1000]))
                dur = draw(st.integers(0, 3000))
                mem = [Mem("cpu", *draw(st.tuples(*[st.integers(0, 500)] * 3)))]
                if draw(st.booleans()):
                    mem.append(Mem("GPU_0_bfc", 64, 32, 16, 128))
                outs = draw(st.lists(st.integers(0, 100), max_size=2))
                temp, persist = draw(st.integers(0, 20)), draw(st.integers(0, 20))
                suffix = draw(st.sampled_from(["", ":0", ":MatMul"]))
                records.append(ns(name + suffix, start, dur, mem, outs, temp, persist))
            devices.append((device, records))
        steps.append((step, run_meta(devices)))
    return HandCase.make("random", nodes, steps, op_log(entries, strings) if entries else None)


def _profiler(case: HandCase) -> tfprof_lite.Profiler:
    prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log or None)
    for step, data in case.run_metas:
        prof.add_step(step, data)
    return prof


def _walk(msg: Any) -> list[Any]:
    out, stack = [], [msg]
    while stack:
        cur = stack.pop()
        out.append(cur)
        stack.extend(cur.children)
    return out


@SETTINGS
@given(case=profiles(), step=st.sampled_from([-1, 0, 1, 2, 3]))
def test_scope_totals_are_self_plus_children(case: HandCase, step: int) -> None:
    prof = _profiler(case)
    opts = dict(EVERYTHING, step=step)
    root = prof.profile_name_scope(opts)
    if step >= 0 and step not in prof.model.steps:
        assert root.ByteSize() == 0
        return
    for msg in _walk(root):
        for self_field, total_field in TREE_FIELDS:
            expected = getattr(msg, self_field) + sum(getattr(c, total_field) for c in msg.children)
            assert getattr(msg, total_field) == expected, (msg.name, total_field)
        own = 0 if msg is root else 1
        definitions = sum(c.total_definition_count for c in msg.children)
        assert msg.total_definition_count == own + definitions
    shown = {m.name for m in _walk(root)} - {"_TFProfRoot"}
    assert set(prof.model.names) <= shown


@st.composite
def filters(draw: st.DrawFn) -> dict[str, Any]:
    """Random filter/accounting options (any combination)."""
    b = B().select(ALL_SELECT).with_empty_output().with_max_depth(draw(st.integers(1, 6)))
    b.with_min_execution_time(
        min_micros=draw(st.sampled_from([0, 1, 50, 2000])),
        min_accelerator_micros=draw(st.sampled_from([0, 1, 100])),
        min_cpu_micros=draw(st.sampled_from([0, 1, 100])),
    )
    b.with_min_memory(
        min_bytes=draw(st.sampled_from([0, 1, 300])),
        min_peak_bytes=draw(st.sampled_from([0, 1, 300])),
    )
    b.with_min_parameters(draw(st.sampled_from([0, 1, 5])))
    b.with_min_float_operations(draw(st.sampled_from([0, 1])))
    b.with_min_occurrence(draw(st.sampled_from([0, 1, 2])))
    regexes = st.lists(st.sampled_from([".*", "a.*", ".*/b.*", "B", "MatMul", "_.*", "c/.*"]))
    b.with_accounted_types(
        draw(st.sampled_from([[".*"], ["MatMul"], [".*cpu:0"], ["Add", "Re.*"]]))
    )
    b.with_node_names(
        start_name_regexes=draw(st.sampled_from([[".*"], ["a"], ["B.*", "c/.*"]])),
        show_name_regexes=draw(st.sampled_from([[".*"], ["a.*"], [".*/.*"]])),
        hide_name_regexes=draw(regexes.map(lambda r: [x for x in r if x != ".*"])),
        trim_name_regexes=draw(regexes.map(lambda r: [x for x in r if x != ".*"])),
    )
    b.account_displayed_op_only(draw(st.booleans()))
    b.order_by(draw(st.sampled_from(["name", "micros", "bytes", "occurrence", "params"])))
    return b.build()


@SETTINGS
@given(case=profiles(), opts=filters(), view=st.sampled_from(["scope", "graph"]))
def test_filters_never_increase_root_totals(
    case: HandCase, opts: dict[str, Any], view: str
) -> None:
    prof = _profiler(case)
    method = getattr(prof, METHODS[view])
    base = method(EVERYTHING)
    root = method(opts)
    for _, total_field in TREE_FIELDS:
        assert getattr(root, total_field) <= getattr(base, total_field), total_field
    assert root.total_definition_count <= base.total_definition_count + 1  # adoo: +root


def _canonical(data: bytes) -> bytes:
    """ProfileProto bytes with maps in key order (map order is not canonical) and
    without ``miss_accelerator_stream`` (tfprof does not restore it on load)."""
    msg = pb.ProfileProto.FromString(data)
    msg.ClearField("miss_accelerator_stream")
    out: bytes = msg.SerializeToString(deterministic=True)
    return out


def _report(prof: tfprof_lite.Profiler, view: str, opts: dict[str, Any]) -> tuple[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.txt")
        msg = getattr(prof, METHODS[view])(dict(opts, output=f"file:outfile={path}"))
        text = ""
        if os.path.exists(path):
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8")
    return text, msg.SerializeToString(deterministic=True)


@SETTINGS
@given(
    case=profiles(),
    view=st.sampled_from(sorted(METHODS)),
    step=st.sampled_from([-1, 0, 1]),
    order_by=st.sampled_from(["name", "micros", "bytes", "occurrence"]),
)
def test_serialize_load_round_trip(case: HandCase, view: str, step: int, order_by: str) -> None:
    prof = _profiler(case)
    data = prof.serialize_to_string()
    loaded = tfprof_lite.Profiler.load(data)
    assert _canonical(loaded.serialize_to_string()) == _canonical(data)
    opts = B().select(ALL_SELECT).with_step(step).order_by(order_by).build()
    text, msg = _report(prof, view, opts)
    if text.startswith(MISSING_STREAM_WARNING):  # tfprof does not save the flag
        text = text[len(MISSING_STREAM_WARNING) :]
    assert _report(loaded, view, opts) == (text, msg)


@SETTINGS
@given(case=profiles(), order_by=st.sampled_from(["name", "micros", "bytes", "params"]))
def test_op_view_totals_are_suffix_sums(case: HandCase, order_by: str) -> None:
    prof = _profiler(case)
    root = prof.profile_operations(dict(EVERYTHING, order_by=order_by))
    rows = []
    row = root
    while row.children:
        assert len(row.children) == 1
        row = row.children[0]
        rows.append(row)
    assert len(rows) == len(set(prof.model.ops))
    for i, row in enumerate(rows):
        for self_field, total_field in STAT_FIELDS:
            below = getattr(rows[i + 1], total_field) if i + 1 < len(rows) else 0
            assert getattr(row, total_field) == getattr(row, self_field) + below, total_field
    for self_field, total_field in STAT_FIELDS:
        assert getattr(root, total_field) == sum(getattr(r, self_field) for r in rows)

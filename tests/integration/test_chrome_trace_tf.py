"""``tfprof_lite.Timeline`` equals ``tensorflow.python.client.timeline.Timeline``.

For every combination of ``show_dataflow``, ``show_memory`` and ``op_time``
(``schedule``, ``gpu``, ``all``) the JSON text of TF's and our chrome trace must be
equal (parsed and raw; TF's output is deterministic), and so must the
``allocator_maximums`` of ``analyze_step_stats``. Inputs: every traced step of the
real models (CPU sessions; one with two CPUs, so flows cross devices) and
hand-made GPU-style step stats (canonical GPU device, ``stream:all`` / per-stream /
``memcpy`` GPU-tracer devices with kernel labels, ``RecvTensor``, ``/_N`` inputs,
several allocators, overlapping ops, multi-output nodes, odd names).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import tfprof_lite
from tests.handmade import CPU, GPU, MEMCPY, STREAM_7, STREAM_ALL
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")
tf_models = pytest.importorskip("tests.integration.tf_models")

from tensorflow.core.framework import step_stats_pb2  # noqa: E402
from tensorflow.python.client import timeline as tf_timeline  # noqa: E402

OP_TIMES = ("schedule", "gpu", "all")
FLAGS = list(itertools.product((True, False), (True, False), OP_TIMES))
CAPTURE_STEPS = [(name, i) for name in sorted(tf_models.ALL_CAPTURES) for i in range(3)]


def _tf_stats(data: bytes) -> Any:
    stats = step_stats_pb2.StepStats()
    stats.ParseFromString(data)
    return stats


def _maximums(analysis: Any) -> dict[str, tuple[int, int, list[str]]]:
    return {
        name: (m.timestamp, m.num_bytes, sorted(m.tensors))
        for name, m in analysis.allocator_maximums.items()
    }


def _check(data: bytes, graph: Any, show_dataflow: bool, show_memory: bool, op_time: str) -> str:
    """Compare the JSON text and the analysis of TF's and our timeline; returns TF's text."""
    theirs = tf_timeline.Timeline(_tf_stats(data), graph)
    expected = theirs.generate_chrome_trace_format(show_dataflow, show_memory, op_time)
    ours = tfprof_lite.Timeline(data, graph)
    got = ours.generate_chrome_trace_format(
        show_dataflow=show_dataflow, show_memory=show_memory, op_time=op_time
    )
    assert json.loads(got) == json.loads(expected)
    assert got == expected
    their_analysis = tf_timeline.Timeline(_tf_stats(data)).analyze_step_stats(
        show_dataflow, show_memory, op_time
    )
    our_analysis = tfprof_lite.Timeline(data).analyze_step_stats(
        show_dataflow, show_memory, op_time
    )
    assert _maximums(our_analysis) == _maximums(their_analysis)
    compact = our_analysis.chrome_trace.format_to_string()
    assert compact == their_analysis.chrome_trace.format_to_string()
    return expected


def _step_stats_bytes(capture: Any, index: int) -> bytes:
    data: bytes = capture.run_metadata(index).step_stats.SerializeToString()
    return data


# ----------------------------------------------------------------- real models


@pytest.mark.parametrize(("name", "index"), CAPTURE_STEPS)
@pytest.mark.parametrize(("show_dataflow", "show_memory", "op_time"), FLAGS)
def test_real_models(
    name: str, index: int, show_dataflow: bool, show_memory: bool, op_time: str
) -> None:
    capture = tf_models.ALL_CAPTURES[name]()
    data = _step_stats_bytes(capture, index)
    text = _check(data, capture.graph, show_dataflow, show_memory, op_time)
    phases = {event["ph"] for event in json.loads(text)["traceEvents"]}
    assert {"M", "X"} <= phases
    if show_memory:
        assert {"N", "O", "D", "C"} <= phases


def test_two_cpus_has_cross_device_flows() -> None:
    capture = tf_models.ALL_CAPTURES["two_cpus"]()
    text = _check(_step_stats_bytes(capture, 0), None, True, False, "schedule")
    events = json.loads(text)["traceEvents"]
    flow_pids = {(e["pid"]) for e in events if e["ph"] in "st"}
    assert len(flow_pids) >= 2


# ----------------------------------------------------------------- hand-made GPU-style stats

GPU_BFC = "GPU_0_bfc"
HOST = "cuda_host_bfc"


def _node(
    name: str,
    start: int,
    dur: int,
    label: str = "",
    outputs: tuple[tuple[str, int, tuple[int, ...]], ...] = (),
) -> Any:
    """A NodeExecStats; ``outputs``: (allocator, requested bytes, dims) per output."""
    msg = pb.NodeExecStats(
        node_name=name,
        all_start_micros=start,
        op_start_rel_micros=1,
        op_end_rel_micros=max(dur - 1, 0),
        all_end_rel_micros=dur,
        timeline_label=label,
    )
    for slot, (allocator, nbytes, dims) in enumerate(outputs):
        out = msg.output.add()
        out.slot = slot
        desc = out.tensor_description
        desc.dtype = 1
        for d in dims:
            desc.shape.dim.add().size = d
        alloc = desc.allocation_description
        alloc.requested_bytes = nbytes
        alloc.allocated_bytes = nbytes + 8
        alloc.allocator_name = allocator
        alloc.allocation_id = slot + 1
        alloc.ptr = 4096 * (slot + 1)
    return msg


def _gpu_stats(t: int) -> Any:
    stats = pb.StepStats()
    devices = [
        (
            GPU,
            [
                _node("_SOURCE", t, 1, "_SOURCE = NoOp()"),
                _node("x", t + 2, 5, "x = _Recv()", ((HOST, 32, (2, 4)),)),
                _node("w/read", t + 2, 3, "w/read = Identity(w)", ((GPU_BFC, 64, (4, 4)),)),
                _node("mm", t + 7, 10, "mm = MatMul(x/_3, w/read)", ((GPU_BFC, 32, (2, 4)),)),
                _node("mm", t + 7, 4, "mm = MatMul(x, w/read)", ((GPU_BFC, 32, (2, 4)),)),
                _node(
                    "split",
                    t + 17,
                    6,
                    "split = Split(dim, mm)",
                    ((GPU_BFC, 16, (2, 2)), (GPU_BFC, 16, (2, 2)), (GPU_BFC, 0, ())),
                ),
                _node("relu", t + 30, 2, "relu = Relu(split:1, missing)", ((GPU_BFC, 16, (2, 2)),)),
                _node("né", t + 40, 0, "né = Identity(relu)", ((GPU_BFC, 16, (2, 2)),)),
                _node('q"b', t + 41, 1, 'q"b = NoOp(^né)'),
                _node("odd", t + 45, 3, "not a label"),
                _node("RecvTensor", t + 46, 2, "whatever = Recv(x)"),
                _node("late", 0, 0, "late = Const()", ((GPU_BFC, 8, ()),)),
            ],
        ),
        (
            STREAM_ALL,
            [
                _node("mm", t + 9, 20, "MatMul @@mm:MatMul#id=7#"),
                _node("relu:Relu", t + 33, 5, "Relu"),
                _node("split", t + 31, 9, "Split kernel @@split#"),
                _node("nolabel", t + 50, 1, ""),
                _node("mm:MatMul", t + 60, 3, "a#b@@c"),
            ],
        ),
        (STREAM_7, [_node("mm:MatMul", t + 9, 20, "MatMul @@mm:MatMul#id=7#")]),
        (MEMCPY, [_node("MEMCPYHtoD", t + 1, 2, "MEMCPYHtoD 32 bytes")]),
        (
            CPU,
            [
                _node("w", t, 2, "w = VariableV2()", (("cpu", 64, (4, 4)),)),
                _node("dim", t, 2, "dim = Const()", (("cpu", 4, ()),)),
                _node("loss", t + 60, 3, 'loss = Sum(né, q"b)', (("cpu", 4, ()),)),
                _node("x", t + 70, 1, "x = Identity(loss)", (("cpu", 4, ()),)),
            ],
        ),
    ]
    for device, nodes in devices:
        dev = stats.dev_stats.add()
        dev.device = device
        dev.node_stats.extend(nodes)
    return stats


def _same_device_twice() -> Any:
    stats = _gpu_stats(1000)
    extra = stats.dev_stats.add()
    extra.device = CPU
    extra.node_stats.extend([_node("again", 1100, 5, "again = Add(x, w)", (("cpu", 4, ()),))])
    return stats


def _output_name_collision() -> Any:
    """A node named like another node's second output ("split:1")."""
    stats = _gpu_stats(1000)
    stats.dev_stats[0].node_stats.extend(
        [
            _node("split:1", 1020, 2, "split:1 = Identity(mm)", ((GPU_BFC, 8, ()),)),
            _node("use", 1050, 2, "use = Add(split:1, split:2)", ((GPU_BFC, 8, ()),)),
        ]
    )
    return stats


def _unique_names(t: int = 1000) -> Any:
    """Unique node names without ":" (flows are drawn without reading every node's
    outputs): partitioning "/_N" suffixes, a producer without outputs, outputs
    that were not recorded, control inputs, two devices and overlapping lanes."""
    stats = pb.StepStats()
    one = ((GPU_BFC, 16, (2, 2)),)
    devices = [
        (
            GPU,
            [
                _node("x", t + 2, 5, "x = _Recv()", ((HOST, 32, (2, 4)),)),
                _node("noout", t + 3, 9, "noout = NoOp()"),
                _node("mm", t + 7, 10, "mm = MatMul(x/_3, w/_1)", ((GPU_BFC, 32, (2, 4)),)),
                _node("split", t + 8, 6, "split = Split(mm, noout/_2)", one * 3),
                _node("use", t + 20, 2, "use = Add(split:1, split:2, split:3, split:01)", one),
                _node("late", t + 21, 9, "late = Add(noout, ^use, missing, w)", one),
                _node("cut", t + 22, 1, "cut = Identity(use/_7, split:2/_4)", one),
            ],
        ),
        (
            CPU,
            [
                _node("w", t, 2, "w = VariableV2()", (("cpu", 64, (4, 4)),)),
                _node("loss", t + 31, 3, "loss = Sum(late, mm, x/_9)", (("cpu", 4, ()),)),
            ],
        ),
    ]
    for device, nodes in devices:
        dev = stats.dev_stats.add()
        dev.device = device
        dev.node_stats.extend(nodes)
    return stats


def _staggered_chain(escaped: bool, t: int = 1000, size: int = 40) -> Any:
    """Each node starts before the previous one ends (nodes alternate two lanes)
    and uses the two nodes before it, so most inputs get a flow; every fifth node
    recorded no output, some names need JSON escaping (``escaped``), and a second
    device uses the first one's nodes."""
    stats = pb.StepStats()
    one = ((GPU_BFC, 16, (2, 2)),)
    names = [f'n{i}"\\é' if escaped and i % 7 == 3 else f"n{i}" for i in range(size)]
    gpu = [
        _node(
            name,
            t + 2 * i,
            3,
            f"{name} = Add({', '.join(names[max(i - 2, 0) : i])})",
            () if i % 5 == 4 else one,
        )
        for i, name in enumerate(names)
    ]
    cpu = [
        _node(f"c{i}", t + 200 + i, 1, f"c{i} = Sum({names[i]}, {names[-1 - i]})", one)
        for i in range(size // 2)
    ]
    for device, nodes in ((GPU, gpu), (CPU, cpu)):
        dev = stats.dev_stats.add()
        dev.device = device
        dev.node_stats.extend(nodes)
    return stats


HAND_CASES = {
    "gpu": lambda: _gpu_stats(1000),
    "unique_names": _unique_names,
    "staggered_chain": lambda: _staggered_chain(escaped=False),
    "staggered_chain_escaped": lambda: _staggered_chain(escaped=True),
    "output_name_collision": _output_name_collision,
    "gpu_big_times": lambda: _gpu_stats(1_600_000_000_000_000),
    "duplicate_device": _same_device_twice,
    "empty": pb.StepStats,
}


@pytest.mark.parametrize("case", sorted(HAND_CASES))
@pytest.mark.parametrize(("show_dataflow", "show_memory", "op_time"), FLAGS)
def test_hand_made(case: str, show_dataflow: bool, show_memory: bool, op_time: str) -> None:
    data = HAND_CASES[case]().SerializeToString()
    _check(data, None, show_dataflow, show_memory, op_time)


# ----------------------------------------------------------------- API behaviour


def test_repeated_calls_accumulate_like_tf() -> None:
    data = _gpu_stats(1000).SerializeToString()
    theirs = tf_timeline.Timeline(_tf_stats(data))
    ours = tfprof_lite.Timeline(data)
    for flags in [(True, True, "schedule"), (False, True, "gpu"), (True, False, "all")]:
        assert ours.generate_chrome_trace_format(*flags) == theirs.generate_chrome_trace_format(
            *flags
        )


SEQUENCES = [
    [(False, False, "schedule"), (True, True, "schedule")],
    [(True, False, "schedule"), (False, True, "gpu")],
    [(False, False, "all"), (False, False, "schedule"), (True, True, "gpu")],
    [(True, False, "gpu"), (True, False, "schedule"), (False, True, "schedule")],
]


@pytest.mark.parametrize("flags", SEQUENCES)
@pytest.mark.parametrize("case", ["gpu", "two_cpus"])
def test_calls_without_memory_then_with_memory_like_tf(
    case: str, flags: list[tuple[bool, bool, str]]
) -> None:
    """Tensor bookkeeping left pending by calls without show_memory is done by the
    next call: memory events and maximums then equal TF's."""
    if case == "gpu":
        data = _gpu_stats(1000).SerializeToString()
    else:
        data = _step_stats_bytes(tf_models.ALL_CAPTURES["two_cpus"](), 0)
    theirs = tf_timeline.Timeline(_tf_stats(data))
    ours = tfprof_lite.Timeline(data)
    for step_flags in flags:
        assert ours.generate_chrome_trace_format(*step_flags) == (
            theirs.generate_chrome_trace_format(*step_flags)
        )
    their_analysis = theirs.analyze_step_stats(True, True)
    assert _maximums(ours.analyze_step_stats(True, True)) == _maximums(their_analysis)


@pytest.mark.parametrize("kind", ["ours", "tf", "bytes"])
def test_accepts_our_message_tf_message_and_bytes(kind: str) -> None:
    data = _gpu_stats(1000).SerializeToString()
    given = {"ours": pb.StepStats.FromString(data), "tf": _tf_stats(data), "bytes": data}[kind]
    expected = tf_timeline.Timeline(_tf_stats(data)).generate_chrome_trace_format(True, True)
    assert tfprof_lite.Timeline(given).generate_chrome_trace_format(True, True) == expected


def _thread_ids(stats: Any) -> list[list[int]]:
    return [[n.thread_id for n in dev.node_stats] for dev in stats.dev_stats]


def test_schedule_writes_lanes_into_the_message_like_tf() -> None:
    ours = _gpu_stats(1000)
    theirs = _tf_stats(ours.SerializeToString())
    tfprof_lite.Timeline(ours).generate_chrome_trace_format()
    tf_timeline.Timeline(theirs).generate_chrome_trace_format()
    assert _thread_ids(ours) == _thread_ids(theirs)
    assert max(max(ids) for ids in _thread_ids(ours)) >= 2


@pytest.mark.parametrize("kind", ["none", "tf_graph", "tf_graph_def", "our_graph_def", "bytes"])
def test_graph_argument(kind: str) -> None:
    capture = tf_models.ALL_CAPTURES["dense_net"]()
    graph_def = capture.graph.as_graph_def()
    graph = {
        "none": None,
        "tf_graph": capture.graph,
        "tf_graph_def": graph_def,
        "our_graph_def": pb.GraphDef.FromString(graph_def.SerializeToString()),
        "bytes": graph_def.SerializeToString(),
    }[kind]
    data = _step_stats_bytes(capture, 0)
    expected = tf_timeline.Timeline(_tf_stats(data), graph).generate_chrome_trace_format()
    ours = tfprof_lite.Timeline(data, graph)
    assert ours.generate_chrome_trace_format() == expected
    assert (ours.graph is None) == (graph is None)


@pytest.mark.parametrize("bad", [b"\xff\xff", 42, pb.GraphDef()])
def test_rejects_bad_step_stats(bad: Any) -> None:
    with pytest.raises(tfprof_lite.InvalidInputError, match="^step_stats: "):
        tfprof_lite.Timeline(bad)


def test_rejects_bad_graph() -> None:
    with pytest.raises(tfprof_lite.InvalidInputError, match="^graph: "):
        tfprof_lite.Timeline(pb.StepStats(), graph=3.5)

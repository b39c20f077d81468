"""FLOPs without RunMetadata and the opt-in corrected FLOP table, on real TF graphs.

* Default behaviour is TensorFlow's: ``profile(graph, cmd='op',
  options=float_operation())`` and ``trainable_variables_parameter()`` give the
  text report TF's ``tf.compat.v1.profiler.profile`` gives, with and without a
  RunMetadata, on a CNN (conv/bias/batch norm/pooling + gradients), an MLP with
  batch ``None``, attention (BatchMatMulV2, Einsum) and control flow
  (``tf.while_loop``, ``tf.cond``, a ``tf.function`` call).
* ``corrected_flops`` matches hand-computed values for every op family
  (numbers in the test names' docstrings), fills batch ``None`` from the
  RunMetadata where TF cannot, counts loop bodies x iterations, honours the
  conventions, never mutates the graph.

The corrected table in profiles and ``missing_flops_report`` are checked in
``test_flops_profiles.py``; the graphs are built in ``flops_models.py``.

Every graph is built twice (``_build``) so TF's and our default runs each see a
graph that the other's shape fill did not touch.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tensorflow")

import tensorflow as tf  # noqa: E402

import tfprof_lite  # noqa: E402
from tests.integration import tf_oracle  # noqa: E402
from tests.integration.flops_models import (  # noqa: E402
    BUILDERS,
    _body_row,
    _run,
    _table,
    _traced,
    tf1,
)
from tfprof_lite.capture import flops as F  # noqa: E402
from tfprof_lite.options.builder import ProfileOptionBuilder as B  # noqa: E402
from tfprof_lite.proto import messages as pb  # noqa: E402

pytestmark = pytest.mark.tf


# ------------------------------------------------------------------ default = TF's
def _ours_text(graph: Any, meta: Any, options: dict[str, Any], path: str) -> Any:
    return tfprof_lite.profile(
        graph, meta, cmd="op", options=dict(options, output=f"file:outfile={path}")
    )


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("with_meta", [False, True], ids=["static", "run_meta"])
@pytest.mark.parametrize("preset", ["float_operation", "trainable_variables_parameter"])
def test_default_matches_tf(name: str, with_meta: bool, preset: str, tmp_path: Any) -> None:
    """Default ``profile(cmd='op')``: the text and totals TF's profile gives."""
    options = getattr(B, preset)()
    theirs_model = BUILDERS[name]()
    meta = _run(theirs_model) if with_meta else None
    data = meta.SerializeToString() if meta is not None else None
    text, proto = tf_oracle.one_shot(theirs_model[0], data, "op", options)
    ours_graph = BUILDERS[name]()[0]  # a twin TF's shape fill did not touch
    msg = _ours_text(ours_graph, meta, options, str(tmp_path / "r.txt"))
    assert tf_oracle._read_text(str(tmp_path / "r.txt")) == text
    expected = pb.MultiGraphNodeProto.FromString(proto)
    assert (msg.total_float_ops, msg.total_parameters) == (
        expected.total_float_ops,
        expected.total_parameters,
    )


# ------------------------------------------------------------------ corrected values
def test_mlp_batch_none_filled_from_run_metadata() -> None:
    """MLP fed batch 3: mm1 2*3*16*8=768, bias1/relu 48, mm2 2*3*4*16=384. TF has no
    value for mm1 even with the RunMetadata (x is recorded as ``_arg_x_0_*``)."""
    table = _table("mlp")
    expected = {"mm1": 768, "bias1": 48, "relu": 48, "mm2": 384, "softmax": 5 * 12}
    assert {name: table.row(name).flops for name in expected} == expected
    mm1 = table.row("mm1")
    assert (mm1.tf_flops, mm1.tf_reason, mm1.status) == (None, F.REASON_INCOMPLETE_SHAPE, "added")
    assert table.row("relu").tf_reason == F.REASON_NO_FORMULA
    assert any("shape inference re-run" in note for note in table.notes)
    static = _table("mlp", with_meta=False)
    assert (static.row("mm1").flops, static.row("mm1").reason) == (
        None,
        F.REASON_INCOMPLETE_SHAPE,
    )


def test_graph_not_mutated() -> None:
    """corrected_flops never changes the caller's graph (TF's own fill does)."""
    (graph, _, _), meta = _traced("mlp")
    F.corrected_flops(graph, meta)
    assert graph.get_tensor_by_name("x:0").shape.as_list() == [None, 8]
    assert graph.get_tensor_by_name("mm2:0").shape.as_list() == [None, 4]


def test_cnn_conv_pool_batch_norm() -> None:
    """Batch 2: conv 2*(2*12*12*8)*(3*3*3)=124416 (= TF), bias/relu 2304, batch norm
    (inference) 2*2304, max pool 4*576, avg pool 4*144, filter gradient 124416."""
    table = _table("cnn")
    expected = {
        "conv": 124416,
        "conv_bias": 2304,
        "bn": 4608,
        "relu": 2304,
        "maxpool": 2304,
        "avgpool": 576,
        "gradients/conv_grad/Conv2DBackpropFilter": 124416,
    }
    assert {name: table.row(name).flops for name in expected} == expected
    assert table.row("gradients/conv_grad/Conv2DBackpropFilter").status in ("tf", "added")
    assert table.row("bn").tf_reason == F.REASON_NO_FORMULA


def test_nchw_ops_unsupported_by_tf() -> None:
    """NCHW (static graph, never run): TF's pool / conv-backprop formulas raise on the
    data_format; ours: max pool 4*|out| = 4*(2*8*6*6) = 2304, backprops = the forward
    conv 2*(2*8*12*12)*27 = 124416; Conv2D itself is format independent (= TF)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [2, 3, 12, 12], name="x")
        filt = tf.ones([3, 3, 3, 8])
        conv = tf.nn.conv2d(x, filt, 1, "SAME", data_format="NCHW", name="conv")
        pool = tf.nn.max_pool2d(conv, 2, 2, "VALID", data_format="NCHW", name="pool")
        tf.gradients(tf.reduce_sum(pool), [x, filt])
    table = F.corrected_flops(graph)
    conv_row = table.row("conv")
    assert (conv_row.flops, conv_row.tf_flops, conv_row.status) == (124416, 124416, "tf")
    for name, value in [
        ("pool", 2304),
        ("gradients/conv_grad/Conv2DBackpropInput", 124416),
        ("gradients/conv_grad/Conv2DBackpropFilter", 124416),
    ]:
        row = table.row(name)
        assert (row.flops, row.tf_flops, row.tf_reason) == (value, None, F.REASON_DATA_FORMAT)
    report = F.missing_flops_report(graph)
    assert sorted(report.names(F.REASON_DATA_FORMAT)) == [
        "gradients/conv_grad/Conv2DBackpropFilter",
        "gradients/conv_grad/Conv2DBackpropInput",
        "gradients/pool_grad/MaxPoolGrad",
        "pool",
    ]


def test_batch_matmul_adjoint_and_einsum() -> None:
    """Attention fed batch 2 (TF: no value, batch None even with the RunMetadata):
    scores (adj_y) 2*2*4*6*8=768, context 2*2*4*5*6=480, kv (adj_x, k=6) 2*2*8*5*6=960,
    einsum 'bij,jk->bik' 2*2*4*8*3=384, softmax 5*48=240."""
    table = _table("attention")
    expected = {"scores": 768, "context": 480, "kv": 960, "proj/Einsum": 384, "probs": 240}
    assert {name: table.row(name).flops for name in expected} == expected
    assert table.row("kv").op == "BatchMatMulV2"
    assert table.row("proj/Einsum").tf_reason == F.REASON_NO_FORMULA


def test_batch_matmul_adjoint_vs_tf() -> None:
    """Known shapes. adj_x (a [2,6,8]^T x b [2,6,5], k=6): 2*2*8*5*6 = 960; TF reads the
    non-existent ``transpose_a`` attr and uses k=8: 1280. adj_y agrees with TF (768).
    BatchMatMulV3 has the same bug."""
    graph = tf.Graph()
    with graph.as_default():
        a, b = tf.ones([2, 6, 8]), tf.ones([2, 6, 5])
        tf.matmul(a, b, adjoint_a=True, name="adj_x")
        tf.matmul(tf.ones([2, 4, 8]), tf.ones([2, 6, 8]), adjoint_b=True, name="adj_y")
        tf.raw_ops.BatchMatMulV3(x=a, y=b, Tout=tf.float32, adj_x=True, name="v3")
    table = F.corrected_flops(graph)
    rows = [table.row(n) for n in ("adj_x", "adj_y", "v3")]
    assert [(r.op, r.flops, r.tf_flops, r.status) for r in rows] == [
        ("BatchMatMulV2", 960, 1280, "corrected"),
        ("BatchMatMulV2", 768, 768, "tf"),
        ("BatchMatMulV3", 960, 1280, "corrected"),
    ]


def test_einsum_equations() -> None:
    """Einsum: contraction 2*prod(all labels); elementwise/outer 1/element; a one-operand
    reduction |in|-|out|; transpose 0; ellipsis broadcast."""
    graph = tf.Graph()
    with graph.as_default():
        a = tf.ones([2, 5, 3])
        b = tf.ones([2, 3, 7])
        tf.einsum("bij,bjk->bik", a, b, name="bmm")  # 2*2*5*3*7 = 420
        tf.einsum("...ij,...jk->...ik", a, b, name="ellipsis")  # same: 420
        tf.einsum("i,j->ij", tf.ones([4]), tf.ones([6]), name="outer")  # 24
        tf.einsum("bij->bj", a, name="reduce")  # 30 - 6 = 24
        tf.einsum("bij->bji", a, name="transpose")  # 0
    table = F.corrected_flops(graph)
    values = {r.name.split("/")[0]: r.flops for r in table if r.op == "Einsum"}
    assert values == {"bmm": 420, "ellipsis": 420, "outer": 24, "reduce": 24, "transpose": 0}


def test_while_loop_counts_iterations() -> None:
    """Loop body matmul [3,8]x[8,8] = 384 FLOPs x 5 iterations; the cond's Less runs 6
    times; without a RunMetadata the trip count (and batch) is unknown."""
    table = _table("control_flow")
    mm = _body_row(table, "loop/body/", "MatMul")
    assert (mm.flops, mm.count, mm.total, mm.tf_reason) == (384, 5, 1920, F.REASON_FUNCTION_BODY)
    assert mm.runtime_names and all(n.startswith("loop/body/_") for n in mm.runtime_names)
    assert _body_row(table, "loop/cond/", "Less").count == 6
    static = _table("control_flow", with_meta=False)
    adds = [r for r in static if r.name.startswith("loop/body/") and r.op == "AddV2"]
    assert len(adds) == 2  # the loop counter and i + 1: scalars, 1 FLOP per iteration
    assert all((r.flops, r.count, r.reason) == (1, None, F.REASON_UNKNOWN_COUNT) for r in adds)
    assert _body_row(static, "loop/body/", "MatMul").reason == F.REASON_INCOMPLETE_SHAPE


def test_cond_branches_and_function_call() -> None:
    """tf.cond with p=True: then-branch matmul 384 and relu 24 run once, the else
    tanh (24) zero times; the tf.function matmul [2,4]x[4,4] = 64 and exp 8 run once
    per call, known even without a RunMetadata."""
    table = _table("control_flow")
    assert (
        _body_row(table, "cnd/then/", "MatMul").total,
        _body_row(table, "cnd/then/", "Relu").total,
    ) == (384, 24)
    tanh = _body_row(table, "cnd/else/", "Tanh")
    assert (tanh.flops, tanh.count, tanh.total) == (24, 0, 0)
    static = _table("control_flow", with_meta=False)
    calls = {r.name: r for r in static if r.function and r.op in ("MatMul", "Exp")}
    call_mm = next(r for name, r in calls.items() if name.endswith("/MatMul"))
    call_exp = next(r for name, r in calls.items() if name.endswith("/fexp"))
    assert (call_mm.total, call_exp.total) == (64, 8)
    assert _body_row(static, "cnd/then/", "MatMul").count is None


def test_nested_loops() -> None:
    """Inner loop (2 iterations) inside the outer loop (5): the matmul runs 10 times."""
    table = _table("nested")
    row = _body_row(table, "outer/body/inner", "MatMul")
    assert (row.flops, row.count, row.total) == (384, 10, 3840)


def test_conventions() -> None:
    """MatMul [3,8]x[8,16]: 2mnk = 768; MACs (flops_per_mac=1) 384; mn(2k-1) = 720;
    per-element override Relu=3 -> 144."""
    macs = _table("mlp", conventions=F.FlopConventions(flops_per_mac=1))
    exact = _table("mlp", conventions=F.FlopConventions(exact_dot_products=True))
    custom = _table("mlp", conventions=F.FlopConventions(per_element={"Relu": 3}))
    assert (macs.row("mm1").flops, exact.row("mm1").flops) == (384, 3 * 16 * 15)
    assert custom.row("relu").flops == 144
    with pytest.raises(tfprof_lite.InvalidOptionError):
        F.FlopConventions(flops_per_mac=3)
    with pytest.raises(tfprof_lite.InvalidOptionError):
        F.FlopConventions(flops_per_mac=1, exact_dot_products=True)


def test_fused_kernels_in_graph_def() -> None:
    """A grappler-optimized GraphDef: _FusedConv2D(BiasAdd, Relu) = conv
    2*(2*8*8*4)*27 + 2*512 = 28672; _FusedMatMul(BiasAdd, Relu) = 2*2*10*256 + 2*20."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.grappler import tf_optimizer

    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        x = tf1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
        conv = tf.nn.conv2d(x, tf.ones([3, 3, 3, 4]), 1, "SAME")
        relu = tf.nn.relu(tf.nn.bias_add(conv, tf.ones([4])), name="relu")
        flat = tf.reshape(relu, [2, -1])
        out = tf.nn.relu(tf.nn.bias_add(tf.matmul(flat, tf.ones([256, 10])), tf.ones([10])))
        tf1.add_to_collection("train_op", tf.identity(out, name="out"))
        meta_graph = tf1.train.export_meta_graph(graph=graph)
    config = config_pb2.ConfigProto()
    config.graph_options.rewrite_options.min_graph_nodes = -1
    graph_def = tf_optimizer.OptimizeGraph(config, meta_graph)
    fused = {n.name: n.op for n in graph_def.node if n.op.startswith("_Fused")}
    if sorted(fused.values()) != ["_FusedConv2D", "_FusedMatMul"]:
        pytest.skip(f"grappler did not fuse as expected here: {fused}")
    table = F.corrected_flops(graph_def)
    values = {table.row(name).op: table.row(name).flops for name in fused}
    assert values == {"_FusedConv2D": 28672, "_FusedMatMul": 10240 + 40}
    assert all(table.row(name).tf_reason == F.REASON_NO_FORMULA for name in fused)


def test_elementwise_convention() -> None:
    """1 FLOP per element for Relu, Tanh, Sigmoid, Exp (TF: no formula)."""
    graph = tf.Graph()
    with graph.as_default():
        t = tf.ones([4, 5])
        for fn in (tf.nn.relu, tf.tanh, tf.sigmoid, tf.exp):
            fn(t, name=fn.__name__)
    table = F.corrected_flops(graph)
    rows = [r for r in table if r.op in ("Relu", "Tanh", "Sigmoid", "Exp")]
    assert [(r.flops, r.tf_reason) for r in rows] == [(20, F.REASON_NO_FORMULA)] * 4

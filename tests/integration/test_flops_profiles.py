"""The opt-in corrected FLOP table in profiles and the missing-FLOPs report, on real
TF graphs.

* ``profile(..., flops="corrected")`` / ``Profiler(..., flops="corrected")`` put
  the table's total into the profile; user op-log FLOPs win.
* ``missing_flops_report`` lists the expected ops with the right reasons (text and
  JSON).

The default reports and the table's values are checked in ``test_flops.py``.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tensorflow")


import tfprof_lite  # noqa: E402
from tests.integration.flops_models import (  # noqa: E402
    BUILDERS,
    _control_flow,
    _mlp,
    _run,
    _traced,
)
from tfprof_lite.capture import flops as F  # noqa: E402
from tfprof_lite.ingest import one_shot_model  # noqa: E402
from tfprof_lite.options.builder import ProfileOptionBuilder as B  # noqa: E402
from tfprof_lite.proto import messages as pb  # noqa: E402

pytestmark = pytest.mark.tf


# ------------------------------------------------------------------ into profiles
@pytest.mark.parametrize("name", ["mlp", "attention", "control_flow"])
def test_profile_corrected_total(name: str) -> None:
    """``profile(..., flops='corrected')``: the op view total is the table's total
    (loop bodies on their RunMetadata pseudo nodes); the default stays TF's."""
    model = BUILDERS[name]()  # profile() refines the graph's shapes as TF does: a fresh one
    graph, meta = model[0], _run(model)
    table = F.corrected_flops(graph, meta)
    options = dict(B.float_operation(), output="none")
    corrected = tfprof_lite.profile(graph, meta, cmd="op", options=options, flops="corrected")
    assert corrected.total_float_ops == table.total_flops > table.tf_total_flops
    default = tfprof_lite.profile(graph, meta, cmd="op", options=options)
    assert default.total_float_ops == F.corrected_flops(graph, meta).tf_total_flops


def test_profiler_corrected() -> None:
    """``Profiler(graph, flops='corrected')``: static corrections at construction (the
    tf.function body is attributed to its call node), the loop after ``add_step``."""
    model = _control_flow()
    graph, meta = model[0], _run(model)
    options = dict(B.float_operation(), output="none")
    prof = tfprof_lite.Profiler(graph, flops="corrected")
    static = F.corrected_flops(graph)
    assert prof.profile_operations(options).total_float_ops == static.total_flops
    prof.add_step(0, meta)
    table = F.corrected_flops(graph, meta)
    assert prof.profile_operations(options).total_float_ops == table.total_flops


def test_user_op_log_wins_and_bad_mode() -> None:
    """User op-log FLOPs are kept in corrected mode; an unknown mode is an option error."""
    model = _mlp()
    graph, meta = model[0], _run(model)
    user = pb.OpLogProto()
    user.log_entries.add(name="mm1", float_ops=7)
    model = one_shot_model(graph, meta, user, add_trace=False, flops="corrected")
    assert model.static_float_ops[model.index["mm1"]] == 7
    assert model.static_float_ops[model.index["mm2"]] == 384
    with pytest.raises(tfprof_lite.InvalidOptionError):
        tfprof_lite.profile(graph, cmd="op", flops="exact")


# ------------------------------------------------------------------ missing report
def test_missing_report_reasons() -> None:
    """Static MLP + control flow: incomplete shapes (batch None), no formula (Relu),
    function bodies; with the RunMetadata the corrected table recovers them."""
    (graph, _, _), meta = _traced("control_flow")
    report = F.missing_flops_report(graph)
    body_ops = {e.op for e in report.entries if e.reason == F.REASON_FUNCTION_BODY}
    assert {"MatMul", "Relu", "Tanh", "Exp", "Less"} <= body_ops
    assert "y" not in report.names()  # AddV2 of two scalars: TF counts it
    (mlp_graph, _, _), mlp_meta = _traced("mlp")
    mlp = F.missing_flops_report(mlp_graph)
    assert sorted(mlp.names(F.REASON_INCOMPLETE_SHAPE)) == [
        "BiasAdd",
        "bias1",
        "mm1",
        "mm2",
        "softmax",
        "y",
    ]
    assert "relu" in mlp.names(F.REASON_NO_FORMULA)
    assert all(not e.recovered for e in mlp.entries if e.reason == F.REASON_INCOMPLETE_SHAPE)
    refined = F.missing_flops_report(mlp_graph, mlp_meta)
    assert all(e.recovered for e in refined.entries if e.op in ("MatMul", "BiasAdd", "Relu"))
    with_loop = F.missing_flops_report(graph, meta)
    loop_mm = [e for e in with_loop.entries if e.name.startswith("loop/body/") and e.op == "MatMul"]
    assert [(e.recovered, e.corrected, e.count) for e in loop_mm] == [(True, 384, 5)]


def test_missing_report_renderings() -> None:
    """Text: a summary line, a reason table, one line per op; JSON: the same data."""
    (graph, _, _), _ = _traced("mlp")
    report = F.missing_flops_report(graph)
    text = report.to_text()
    assert text.startswith(f"Ops without FLOPs in TensorFlow's tfprof: {len(report.entries)} ")
    assert "incomplete_shape" in text and "mm1" in text and "Shape (None, 8)" in text
    data = json.loads(report.to_json())
    by_reason = data["summary"]["by_reason"]
    assert by_reason[F.REASON_INCOMPLETE_SHAPE]["ops"] == 6
    assert {op["name"] for op in data["ops"]} == set(report.names())
    assert data["summary"]["zero_cost_ops_omitted"] == report.zero_cost_ops > 0
    table_text = F.corrected_flops(graph).format_text(only_changed=True)
    assert "total corrected FLOPs:" in table_text and "relu" in table_text

"""FLOP rates and FLOP cards count the nodes that ran, on hand-made profiles.

tfprof's views give every defined node its FLOPs, run or not (kept byte-identical
here); a rate that divides those by the time of the nodes that ran is impossible
when grappler merged identical nodes (4,000 MatMuls defined, 10 run). The model
below defines 100 MatMuls of 1 MFLOP and 100 Muls of 1 kFLOP; step 0 runs two
MatMuls and one Mul, step 1 one MatMul and the same Mul.
"""

from __future__ import annotations

import pytest

from tfprof_lite import ProfileOptionBuilder, Profiler
from tfprof_lite.analysis.overview import TopOp, overview
from tfprof_lite.proto import messages as pb
from tfprof_lite.report import render_html
from tfprof_lite.report.sections import run_flops

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
BLOCKS = 100
MATMUL_FLOPS = 1_000_000
MUL_FLOPS = 1_000
#: Step -> (node, micros) of what ran.
RAN = {
    0: [("block0/MatMul", 500), ("block1/MatMul", 300), ("block0/mul", 10)],
    1: [("block0/MatMul", 400), ("block0/mul", 20)],
}


def _profiler() -> Profiler:
    graph, log = pb.GraphDef(), pb.OpLogProto()
    for i in range(BLOCKS):
        for name, op, flops in (("MatMul", "MatMul", MATMUL_FLOPS), ("mul", "Mul", MUL_FLOPS)):
            graph.node.add(name=f"block{i}/{name}", op=op)
            log.log_entries.add(name=f"block{i}/{name}", float_ops=flops)
    prof = Profiler(graph, op_log=log)
    for step, ran in RAN.items():
        meta = pb.RunMetadata()
        dev = meta.step_stats.dev_stats.add(device=CPU)
        start = 1000 + 10_000 * step
        for name, micros in ran:
            dev.node_stats.add(
                node_name=name,
                all_start_micros=start,
                op_end_rel_micros=micros,
                all_end_rel_micros=micros,
            )
            start += micros
        prof.add_step(step, meta)
    return prof


@pytest.fixture(scope="module")
def prof() -> Profiler:
    return _profiler()


def _top(prof: Profiler) -> dict[str, TopOp]:
    return {op.op: op for op in overview(prof.model).top_ops}


def test_rates_count_only_the_nodes_that_ran(prof: Profiler) -> None:
    top = _top(prof)
    matmul, mul = top["MatMul"], top["Mul"]
    # Per-node averages over the steps each node ran in: block0 450us, block1 300us.
    assert (matmul.self_micros, matmul.nodes, matmul.nodes_run) == (750, BLOCKS, 2)
    assert matmul.float_ops == 2 * MATMUL_FLOPS  # not 100 * 1 MFLOP
    assert matmul.flops_per_sec == pytest.approx(2 * MATMUL_FLOPS / 750e-6, abs=0.1)
    assert (mul.self_micros, mul.nodes, mul.nodes_run, mul.float_ops) == (15, BLOCKS, 1, MUL_FLOPS)
    assert mul.flops_per_sec == pytest.approx(MUL_FLOPS / 15e-6, abs=0.1)
    # The defined-node sum tfprof shows would give 100 MFLOP / 750 us = 133.33 GFLOP/s.
    lines = overview(prof.model).to_text().splitlines()
    line = next(x for x in lines if x.lstrip().startswith("MatMul"))
    assert line.split()[3:] == ["2/100", "2.00", "MFLOPs", "2.67", "GFLOP/s"]


def test_tfprof_views_keep_every_defined_node(prof: Profiler) -> None:
    """The op view (tfprof's columns) still counts defined nodes' FLOPs."""
    opts = ProfileOptionBuilder(ProfileOptionBuilder.float_operation())
    node = prof.profile_operations(opts.with_empty_output().build())
    by_type = {child.name: child for child in node.children}
    # Two MatMuls ran (once each per step they ran in), 98 never did.
    assert by_type["MatMul"].float_ops == 2 * MATMUL_FLOPS + 98 * MATMUL_FLOPS


def test_run_flops_per_step(prof: Profiler) -> None:
    model = prof.model
    assert run_flops(model, 0) == 2 * MATMUL_FLOPS + MUL_FLOPS
    assert run_flops(model, 1) == MATMUL_FLOPS + MUL_FLOPS  # block1 did not run in step 1
    assert run_flops(model, -1) == 2 * MATMUL_FLOPS + MUL_FLOPS
    assert run_flops(Profiler(pb.GraphDef()).model, -1) == 0


def test_report_cards_and_column_say_what_they_count(prof: Profiler) -> None:
    page = render_html(prof.model)
    assert '<div class="k">FLOPs per step (nodes that ran)</div><div class="v">2.00 M</div>' in page
    defined = BLOCKS * (MATMUL_FLOPS + MUL_FLOPS)
    assert (
        '<div class="k">FLOPs of every defined node (tfprof)</div>'
        f'<div class="v">{defined / 1e6:.2f} M</div>'
    ) in page
    assert ">FLOPs (defined)</th>" in page
    assert "<dt>FLOPs (defined)</dt><dd>tfprof&#x27;s FLOP count, per defined node" in page


def test_op_with_no_run_node_has_no_rate() -> None:
    graph, log = pb.GraphDef(), pb.OpLogProto()
    for name, op in (("a", "MatMul"), ("b", "Relu")):
        graph.node.add(name=name, op=op)
    log.log_entries.add(name="a", float_ops=MATMUL_FLOPS)
    prof = Profiler(graph, op_log=log)
    meta = pb.RunMetadata()
    meta.step_stats.dev_stats.add(device=CPU).node_stats.add(
        node_name="b", all_start_micros=1000, op_end_rel_micros=5, all_end_rel_micros=5
    )
    prof.add_step(0, meta)
    top = _top(prof)
    assert (top["MatMul"].float_ops, top["MatMul"].flops_per_sec, top["MatMul"].nodes_run) == (
        0,
        0.0,
        0,
    )
    line = next(x for x in overview(prof.model).to_text().splitlines() if "MatMul" in x)
    assert line.split()[-1] == "-"

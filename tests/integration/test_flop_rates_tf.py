"""FLOP rates on a real TF1 graph whose identical blocks grappler merges.

The graph defines :data:`BLOCKS` identical blocks ``matmul(x, w) * 2``; grappler's
common-subgraph elimination runs a handful of them, so tfprof's op view says
``run|defined`` like ``1|300``. tfprof's FLOPs column (kept as it is) counts every
defined node; the overview's rates and the report's FLOPs-per-step card must count
only the nodes that ran. TensorFlow's own tfprof gives the per-node FLOPs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorflow")

import tensorflow as tf  # noqa: E402

from tests.integration.tf_models import _session_config  # noqa: E402
from tfprof_lite import ProfileOptionBuilder, Profiler  # noqa: E402
from tfprof_lite.analysis.overview import overview  # noqa: E402
from tfprof_lite.report import render_html  # noqa: E402
from tfprof_lite.report.sections import run_flops  # noqa: E402

pytestmark = pytest.mark.tf
tf1 = tf.compat.v1
BLOCKS = 300
STEPS = 3
SIZE = 64


def _build() -> tuple[Any, Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [SIZE, SIZE], name="x")
        w = tf.constant(np.full((SIZE, SIZE), 0.5, np.float32), name="w")
        outs = []
        for i in range(BLOCKS):
            with tf1.name_scope(f"block{i}"):
                outs.append(tf.matmul(x, w) * 2.0)
        total = tf.add_n(outs, name="total")
    return graph, x, total


@pytest.fixture(scope="module")
def traced() -> dict[str, Any]:
    graph, x, total = _build()
    prof = Profiler(graph)
    ran: dict[str, set[str]] = {"MatMul": set(), "Mul": set()}
    op_of = {op.name: op.type for op in graph.get_operations()}
    with tf1.Session(graph=graph, config=_session_config()) as sess:
        feed = {x: np.ones((SIZE, SIZE), np.float32)}
        for step in range(STEPS):
            meta = tf1.RunMetadata()
            options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
            sess.run(total, feed, options=options, run_metadata=meta)
            prof.add_step(step, meta)
            for dev in meta.step_stats.dev_stats:
                for node in dev.node_stats:
                    if op_of.get(node.node_name) in ran:
                        ran[op_of[node.node_name]].add(node.node_name)
    tf_opts = tf1.profiler.ProfileOptionBuilder(
        tf1.profiler.ProfileOptionBuilder.float_operation()
    ).with_empty_output()
    tf_op_view = tf1.profiler.profile(graph, cmd="op", options=tf_opts.build())
    defined: dict[str, int] = {}  # tfprof's op view is a chain: each row holds the next
    row = tf_op_view
    while row.children:
        row = row.children[0]
        defined[row.name] = row.float_ops
    return {"prof": prof, "ran": ran, "tf_defined": defined}


def test_grappler_merged_the_blocks(traced: dict[str, Any]) -> None:
    """The premise: few of the defined MatMuls and Muls ran, and the drop-in op
    view says so in tfprof's own words (``run|defined``)."""
    ran = traced["ran"]
    assert 1 <= len(ran["MatMul"]) <= BLOCKS // 10 and 1 <= len(ran["Mul"]) <= BLOCKS // 10
    opts = ProfileOptionBuilder(ProfileOptionBuilder.float_operation())
    node = traced["prof"].profile_operations(
        opts.with_empty_output().select(["float_ops", "occurrence"]).build()
    )
    rows = {}
    while node.children:
        node = node.children[0]
        rows[node.name] = node.float_ops
    # tfprof's FLOPs column (per defined node) is unchanged: TF's own numbers.
    assert rows["MatMul"] == traced["tf_defined"]["MatMul"] == BLOCKS * 2 * SIZE**3
    assert rows["Mul"] == traced["tf_defined"]["Mul"] == BLOCKS * SIZE**2


def test_overview_rates_count_only_the_nodes_that_ran(traced: dict[str, Any]) -> None:
    prof, ran = traced["prof"], traced["ran"]
    top = {op.op: op for op in overview(prof.model, top=20).top_ops}
    for op_type in ("MatMul", "Mul"):
        per_node = traced["tf_defined"][op_type] // BLOCKS  # TF's FLOPs of one block's op
        entry = top[op_type]
        assert (entry.nodes, entry.nodes_run) == (BLOCKS, len(ran[op_type]))
        assert entry.float_ops == per_node * len(ran[op_type])
        assert entry.self_micros > 0
        assert entry.flops_per_sec == pytest.approx(
            entry.float_ops / (entry.self_micros / 1e6), rel=1e-6, abs=0.1
        )
    assert traced["tf_defined"]["MatMul"] // BLOCKS == 2 * SIZE**3
    text = overview(prof.model, top=20).to_text().splitlines()
    line = next(x for x in text if x.lstrip().startswith("MatMul "))
    assert f" {len(ran['MatMul'])}/{BLOCKS} " in line  # the merge shows in the table


def test_report_flop_cards(traced: dict[str, Any]) -> None:
    prof, ran = traced["prof"], traced["ran"]
    model = prof.model
    stats = model.stats(-1)
    per_run = {
        name: int(stats.float_ops[model.index[name]]) for names in ran.values() for name in names
    }
    assert per_run and all(per_run.values())
    expected = int(stats.float_ops[stats.run_count > 0].sum())
    assert run_flops(model, -1) == expected
    assert expected >= sum(per_run.values())
    assert expected < traced["tf_defined"]["MatMul"] // 10  # far below the defined sum
    page = render_html(model)
    assert '<div class="k">FLOPs per step (nodes that ran)</div>' in page
    assert '<div class="k">FLOPs of every defined node (tfprof)</div>' in page

"""The metric table (``tfprof_lite.base.metrics``) agrees with every list it feeds."""

from __future__ import annotations

import dataclasses

from tfprof_lite.base import metrics
from tfprof_lite.model.profile import NodeStats
from tfprof_lite.outputs.pprof import PPROF_SELECTS
from tfprof_lite.proto import messages as pb
from tfprof_lite.report import GLOSSARY, op_columns, tree_columns
from tfprof_lite.views.stats import ORDER_BY_STAT


def test_stats_are_the_vector_positions() -> None:
    assert [m.stat for m in metrics.BY_STAT] == list(range(metrics.N_STATS))
    assert len({m.name for m in metrics.METRICS}) == metrics.N_STATS


def test_tf_name_lists_cover_the_table() -> None:
    selects = {m.select for m in metrics.METRICS if m.select}
    attributes = {a.select for a in metrics.ATTRIBUTES}
    assert set(metrics.SELECT_NAMES) == selects | attributes
    assert len(metrics.SELECT_NAMES) == len(set(metrics.SELECT_NAMES)) == 14
    assert set(metrics.ORDER_BY_NAMES) == selects | {"name"}
    assert set(ORDER_BY_STAT) == selects - {"occurrence"}


def test_model_and_messages_use_the_names() -> None:
    columns = {f.name for f in dataclasses.fields(NodeStats)} - {"step"}
    assert columns == {m.name for m in metrics.METRICS if m.stat != metrics.DEFINITION}
    graph = pb.GraphNodeProto.DESCRIPTOR.fields_by_name
    multi = pb.MultiGraphNodeProto.DESCRIPTOR.fields_by_name
    for metric in metrics.METRICS:
        assert "total_" + metric.name in graph
        if metric.stat not in (metrics.RUN, metrics.DEFINITION):
            assert metric.name in multi and "total_" + metric.name in multi


def test_docs_are_tfprof_texts() -> None:
    assert metrics.select_doc("micros").splitlines() == [
        metrics.BY_STAT[metrics.EXEC].doc.splitlines()[0],
        metrics.BY_STAT[metrics.CPU].doc,
        metrics.BY_STAT[metrics.ACC].doc,
    ]
    assert metrics.select_doc("params") == "param: Number of parameters (in the Variable)."
    assert metrics.select_doc("nope") == "Unknown select: nope"


def test_outputs_read_the_table() -> None:
    assert list(PPROF_SELECTS) == [m.select for m in metrics.METRICS if m.pprof_unit]
    for column in op_columns(1) + tree_columns("Scope"):
        assert column.term in GLOSSARY
    assert metrics.shown_stats(["micros"]) == {metrics.EXEC, metrics.ACC, metrics.CPU}
    assert metrics.BY_SELECT["bytes"].format(2048) == "2.05KB"

"""The XLA compatibility report logic and its profile encoding, without TensorFlow."""

from __future__ import annotations

import pytest

from tfprof_lite.advisor import run_advisor
from tfprof_lite.analysis.xla_compat import (
    OpInfo,
    build_report,
    captured_targets,
    op_log_of,
    report_from_model,
)
from tfprof_lite.analysis.xla_ops import host_kind
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model import decode
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb


def op(
    name: str, kind: str, inputs: tuple[str, ...] = (), ok: bool = True, host: str = ""
) -> OpInfo:
    return OpInfo(name, kind, inputs, ok, "" if ok else f"no XLA_CPU_JIT kernel for {kind}", host)


#: x -> a/mm -> a/relu -> b/py -> b/str -> c/mm -> c/out;  a/relu -> d/print (a dead end)
OPS = [
    op("x", "Placeholder", host="source"),
    op("a/mm", "MatMul", ("x",)),
    op("a/relu", "Relu", ("a/mm",)),
    op("b/py", "PyFunc", ("a/relu",), ok=False),
    op("b/str", "StringJoin", ("b/py",), ok=False),
    op("c/mm", "MatMul", ("b/str",)),
    op("c/out", "Sum", ("c/mm",)),
    op("d/print", "PrintV2", ("a/relu",), ok=False),
    op("e/alone", "AsString", (), ok=False),
    op("save/SaveV2", "SaveV2", ("x",), ok=False, host="saver"),
]


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("save/Const", "Const", "saver"),
        ("save_1/RestoreV2", "RestoreV2", "saver"),
        ("loss_1", "ScalarSummary", "summary"),
        ("dense/w/Initializer/random_uniform", "RandomUniform", "initializer"),
        ("init", "NoOp", "initializer"),
        ("dense/w/Assign", "Assign", "initializer"),
        ("other/Assign", "Assign", ""),
        ("IteratorGetNext", "IteratorGetNext", "input"),
        ("x", "Placeholder", "source"),
        ("group_deps", "NoOp", "control"),
        ("dense/MatMul", "MatMul", ""),
    ],
)
def test_host_kind(name: str, kind: str, expected: str) -> None:
    assert host_kind(name, kind, frozenset({"dense/w"})) == expected


def test_roles_scopes_types_segments() -> None:
    report = build_report("XLA_CPU_JIT", OPS)
    roles = {o.name: o.role for o in report.incompatible}
    assert roles == {
        "b/py": "splits",
        "b/str": "splits",
        "d/print": "blocks",
        "e/alone": "isolated",
    }
    assert report.segments == 2 and report.largest_segment == 2
    assert report.share == round(4 / 8, 4) and not report.fully_compatible
    scopes = {s.scope: s for s in report.scopes}
    assert scopes["b"].share == 0.0 and scopes["a"].share == 1.0
    assert scopes["save"].ops == 0 and scopes["save"].host == 1 and scopes["save"].share == 1.0
    assert [t.op for t in report.types if t.incompatible] == [
        "AsString",
        "PrintV2",
        "PyFunc",
        "StringJoin",
    ]
    lines = report.advice_lines(max_ops=1)
    assert lines[0].startswith("XLA_CPU_JIT: 50.0% of 8 compute ops compatible; 4 incompatible")
    assert "splits a JIT cluster: ... and 1 more" in lines
    assert report.to_dict()["incompatible_ops"] == 4


def profile_with(ops: list[OpInfo]) -> ProfileModel:
    graph = pb.GraphDef()
    for info in ops:
        node = graph.node.add()
        node.name, node.op = info.name, info.op
        node.input.extend(info.inputs)
    model = ProfileModel()
    model.add_graph(decode.graph_nodes(graph))
    return model


def test_profile_round_trip_and_checker() -> None:
    live = [build_report(t, OPS, depth=2) for t in ("XLA_CPU_JIT", "XLA_GPU_JIT")]
    model = profile_with(OPS)
    assert report_from_model(model) is None and captured_targets(model) == []
    model.add_op_log(*decode.op_log_entries(op_log_of(live)))
    assert captured_targets(model) == ["XLA_CPU_JIT", "XLA_GPU_JIT"]
    assert "_xla_incompatible:XLA_CPU_JIT" in model.op_types[model.index["b/py"]]
    assert "_xla_host:saver" in model.op_types[model.index["save/SaveV2"]]
    for report in live:
        stored = report_from_model(model, report.target, depth=2)
        assert stored is not None and stored.ops == report.ops and stored.scopes == report.scopes
    advice = run_advisor(model, {"XlaCompatibilityChecker": {"scope_depth": "2"}}).advice
    assert list(advice.checkers["XlaCompatibilityChecker"].reports) == live[0].advice_lines()
    with pytest.raises(InvalidOptionError, match="scope_depth"):
        run_advisor(model, {"XlaCompatibilityChecker": {"scope_depth": "0"}})

"""Our text reports and returned messages equal TensorFlow's tfprof, byte for byte.

Every real model of :mod:`tests.integration.tf_models` is profiled by TF's tfprof
(the oracle) and by tfprof_lite from the same ``tf.Graph`` and RunMetadata; every
view is queried with each option set below and the file-output text and the
returned message are compared.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import pytest

import tfprof_lite
from tests.handmade import ALL_SELECT
from tfprof_lite.options.builder import ProfileOptionBuilder as B

pytestmark = pytest.mark.tf

tf_oracle = pytest.importorskip("tests.integration.tf_oracle")
tf_models = pytest.importorskip("tests.integration.tf_models")

VIEWS = ("scope", "graph", "op", "code")
METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}


def _opts(builder: Callable[[], B]) -> Callable[[], dict[str, Any]]:
    return lambda: builder().build()


OPTION_SETS: dict[str, Callable[[], dict[str, Any]]] = {
    "default": _opts(B),
    "params": lambda: B.trainable_variables_parameter(),
    "float_ops": lambda: B.float_operation(),
    "time_and_memory": lambda: B.time_and_memory(),
    "time_and_memory_all": lambda: B(B.time_and_memory()).select(ALL_SELECT).build(),
    "all_select": _opts(lambda: B().select(ALL_SELECT)),
    "all_select_depth2": _opts(lambda: B().select(ALL_SELECT).with_max_depth(2)),
    "empty_select": _opts(lambda: B().select([])),
    "acc_cpu": _opts(lambda: B().select(["accelerator_micros", "cpu_micros", "occurrence"])),
    "depth1": _opts(lambda: B().with_max_depth(1)),
    "depth3": _opts(lambda: B().with_max_depth(3).select(["micros", "occurrence"])),
    "min_bytes": _opts(lambda: B().with_min_memory(min_bytes=1).select(["bytes"])),
    "min_peak": _opts(lambda: B().with_min_memory(min_peak_bytes=100).select(["peak_bytes"])),
    "min_residual": _opts(
        lambda: B().with_min_memory(min_residual_bytes=1).select(["residual_bytes"])
    ),
    "min_output": _opts(lambda: B().with_min_memory(min_output_bytes=64).select(["output_bytes"])),
    "min_micros": _opts(lambda: B().with_min_execution_time(min_micros=20)),
    "min_cpu": _opts(lambda: B().with_min_execution_time(min_cpu_micros=5)),
    "min_acc": _opts(lambda: B().with_min_execution_time(min_accelerator_micros=1)),
    "min_params": _opts(lambda: B().with_min_parameters(10).select(["params"])),
    "min_flops": _opts(lambda: B().with_min_float_operations(100).select(["float_ops"])),
    "min_occurrence": _opts(lambda: B().with_min_occurrence(2).select(["occurrence"])),
    "account_matmul": _opts(
        lambda: B().with_accounted_types([".*MatMul.*", "Variable.*", ".*Conv.*"])
    ),
    "account_cpu": _opts(
        lambda: B().with_accounted_types([".*cpu:0"]).select(["micros", "device"])
    ),
    "account_adoo": _opts(
        lambda: B().with_accounted_types(["Mul", "Add.*"]).account_displayed_op_only(True)
    ),
    "start": _opts(lambda: B().with_node_names(start_name_regexes=[".*gradients.*", ".*Relu"])),
    "show": _opts(lambda: B().with_node_names(show_name_regexes=[".*/.*"])),
    "hide": _opts(lambda: B().with_node_names(hide_name_regexes=[".*Assign.*", "_.*"])),
    "hide_adoo": _opts(
        lambda: B().with_node_names(hide_name_regexes=[".*read.*"]).account_displayed_op_only(True)
    ),
    "trim": _opts(lambda: B().with_node_names(trim_name_regexes=["gradients", ".*/.*/.*"])),
    "show_hide_trim": _opts(
        lambda: B().with_node_names(
            show_name_regexes=[".*"], hide_name_regexes=["Const.*"], trim_name_regexes=["train.*"]
        )
    ),
}
ORDER_BY = [
    "name",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "micros",
    "accelerator_micros",
    "cpu_micros",
    "params",
    "float_ops",
    "occurrence",
    "no_such_key",
]

_ours: dict[int, tfprof_lite.Profiler] = {}


def ours_for(capture: Any) -> tfprof_lite.Profiler:
    """Our profiler on ``capture`` (built once per capture)."""
    prof = _ours.get(id(capture))
    if prof is None:
        prof = tfprof_lite.Profiler(capture.graph)
        for step, data in capture.run_metas:
            prof.add_step(step, data)
        _ours[id(capture)] = prof
    return prof


def our_text(prof: tfprof_lite.Profiler, view: str, options: dict[str, Any]) -> str:
    """Our report text written with ``-output file``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.txt")
        getattr(prof, METHODS[view])(dict(options, output=f"file:outfile={path}"))
        if not os.path.exists(path):
            return ""
        with open(path, encoding="utf-8") as handle:
            return handle.read()


def our_proto(prof: tfprof_lite.Profiler, view: str, options: dict[str, Any]) -> bytes:
    """Our returned message, in the oracle's canonical serialization."""
    msg = getattr(prof, METHODS[view])(dict(options, output="none"))
    cls = tf_oracle._PROTO_CLASSES[view]
    return tf_oracle.canonical_proto(cls, msg.SerializeToString())


def check(capture: Any, oracle: Any, view: str, options: dict[str, Any]) -> None:
    """Assert text and message agree with TF for one query."""
    prof = ours_for(capture)
    expected = oracle.text(view, options)
    assert our_text(prof, view, options) == expected
    assert our_proto(prof, view, options) == oracle.proto(view, options)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", sorted(OPTION_SETS))
def test_option_sets(capture: Any, oracle: Any, view: str, name: str) -> None:
    check(capture, oracle, view, OPTION_SETS[name]())


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("order_by", ORDER_BY)
def test_order_by(capture: Any, oracle: Any, view: str, order_by: str) -> None:
    sel = ["micros", "bytes", "peak_bytes", "params", "float_ops", "occurrence"]
    check(capture, oracle, view, B().order_by(order_by).select(sel).build())


@pytest.mark.parametrize("view", VIEWS)
def test_steps(capture: Any, oracle: Any, view: str) -> None:
    steps = [step for step, _ in capture.run_metas]
    for step in [-1, *steps, max(steps) + 100]:
        sel = ["micros", "bytes", "occurrence", "float_ops", "output_bytes"]
        check(capture, oracle, view, B().with_step(step).select(sel).build())


@pytest.mark.parametrize("view", VIEWS)
def test_stdout_framing(capture: Any, oracle: Any, view: str, capsys: Any) -> None:
    options = B().with_max_depth(3).select(["micros", "occurrence"]).build()
    expected = oracle.stdout(view, options)
    capsys.readouterr()
    getattr(ours_for(capture), METHODS[view])(options)
    assert capsys.readouterr().out == expected

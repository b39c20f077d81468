"""Hand-made profiles: our reports and messages equal TensorFlow's, byte for byte.

Each case of :mod:`tests.hand_cases` (hand-made GraphDef, op log and RunMetadata)
is loaded into TF's tfprof (`hand_oracle.HandOracle`, fed through the pywrap) and
into ours; every listed (view, options) query compares the ``-output file`` text
and the returned message (`tf_oracle.canonical_proto`). A real ``tf.Graph`` with
the GPU-style steps goes through the public ``Profiler(graph)`` path of both
(`tf_models.Capture` + `tf_oracle.oracle_for`). A few extra asserts make sure the
cases really exercise what they are for (so "both empty" cannot pass silently).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("tensorflow")

import tensorflow as tf  # noqa: E402
from tensorflow.core.profiler import tfprof_output_pb2  # noqa: E402
from tensorflow.python.profiler import tfprof_logger  # noqa: E402

from tests import hand_cases  # noqa: E402
from tests.handmade import ALL_SELECT, code_entry, op_log  # noqa: E402
from tests.integration import hand_oracle as ho  # noqa: E402
from tests.integration import tf_models, tf_oracle  # noqa: E402
from tfprof_lite.options.builder import ProfileOptionBuilder as B  # noqa: E402
from tfprof_lite.outputs.text import MISSING_STREAM_WARNING  # noqa: E402

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1

NUMERIC = ["micros", "bytes", "peak_bytes", "residual_bytes", "output_bytes", "occurrence"]
COUNTS = [*NUMERIC, "params", "float_ops"]
ACC_CPU = ["accelerator_micros", "cpu_micros", "occurrence", "device"]


def _b(make: Callable[[], B]) -> Callable[[], dict[str, Any]]:
    return lambda: make().build()


OPTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "default": _b(B),
    "all": _b(lambda: B().select(ALL_SELECT)),
    "all_depth2": _b(lambda: B().select(ALL_SELECT).with_max_depth(2)),
    "deep": _b(lambda: B().with_max_depth(3000).select(["micros", "occurrence"])),
    "time_and_memory": lambda: B.time_and_memory(),
    "params": lambda: B.trainable_variables_parameter(),
    "float_ops": lambda: B.float_operation(),
    "acc_cpu": _b(lambda: B().select(ACC_CPU)),
    "acc_only": _b(lambda: B().select(["accelerator_micros"])),
    "cpu_only": _b(lambda: B().select(["cpu_micros"])),
    "order_name": _b(lambda: B().order_by("name").select(COUNTS)),
    "order_acc": _b(lambda: B().order_by("accelerator_micros").select(ACC_CPU)),
    "order_cpu": _b(lambda: B().order_by("cpu_micros").select(ACC_CPU)),
    "order_micros": _b(lambda: B().order_by("micros").select(COUNTS)),
    "order_bytes": _b(lambda: B().order_by("bytes").select(COUNTS)),
    "order_peak": _b(lambda: B().order_by("peak_bytes").select(COUNTS)),
    "order_residual": _b(lambda: B().order_by("residual_bytes").select(COUNTS)),
    "order_output": _b(lambda: B().order_by("output_bytes").select(COUNTS)),
    "order_params": _b(lambda: B().order_by("params").select(COUNTS)),
    "order_flops": _b(lambda: B().order_by("float_ops").select(COUNTS)),
    "order_occurrence": _b(lambda: B().order_by("occurrence").select(COUNTS)),
    "order_unknown": _b(lambda: B().order_by("no_such_key").select(COUNTS)),
    "min_acc": _b(lambda: B().with_min_execution_time(min_accelerator_micros=50).select(ACC_CPU)),
    "min_cpu": _b(lambda: B().with_min_execution_time(min_cpu_micros=10).select(ACC_CPU)),
    "min_micros": _b(lambda: B().with_min_execution_time(min_micros=20)),
    "min_bytes": _b(lambda: B().with_min_memory(min_bytes=100).select(NUMERIC)),
    "min_peak": _b(lambda: B().with_min_memory(min_peak_bytes=60).select(NUMERIC)),
    "min_residual": _b(lambda: B().with_min_memory(min_residual_bytes=20).select(NUMERIC)),
    "min_output": _b(lambda: B().with_min_memory(min_output_bytes=30).select(NUMERIC)),
    "min_params": _b(lambda: B().with_min_parameters(10).select(["params"])),
    "min_flops": _b(lambda: B().with_min_float_operations(1).select(["float_ops"])),
    "min_occurrence": _b(lambda: B().with_min_occurrence(2).select(["occurrence"])),
    "min_adoo": _b(
        lambda: (
            B().with_min_execution_time(min_micros=6).account_displayed_op_only(True).select(COUNTS)
        )
    ),
    "account_gpu": _b(lambda: B().with_accounted_types([".*gpu:0"]).select(ACC_CPU)),
    "account_cpu": _b(lambda: B().with_accounted_types([".*cpu:0"]).select(ACC_CPU)),
    "account_multi": _b(
        lambda: B().with_accounted_types(["MatMul", ".*Mat.*", "Dense"]).select(COUNTS)
    ),
    "account_multi_all": _b(
        lambda: B().with_accounted_types(["MatMul", ".*", "Identity"]).select(COUNTS)
    ),
    "account_multi_adoo": _b(
        lambda: (
            B()
            .with_accounted_types([".*Mat.*", "MatMul", "Relu", "Identity", "Const"])
            .account_displayed_op_only(True)
            .select(COUNTS)
        )
    ),
    "empty_select": _b(lambda: B().select([])),
    "unknown_select": _b(lambda: B().select(["zz_unknown", "micros", "bogus"])),
    "start": _b(
        lambda: B().with_node_names(start_name_regexes=["s1", ".*Relu.*", "n1500", "b", "[kx].*"])
    ),
    "show_hide": _b(
        lambda: B().with_node_names(show_name_regexes=[".*/.*"], hide_name_regexes=[".*read.*"])
    ),
    "hide_adoo": _b(
        lambda: (
            B()
            .with_node_names(hide_name_regexes=["s2.*", "[A-Z].*", ".*layers.*"])
            .account_displayed_op_only(True)
        )
    ),
    "trim": _b(lambda: B().with_node_names(trim_name_regexes=["s1", "b", ".*model.*", "Mul"])),
    "depth1": _b(lambda: B().with_max_depth(1)),
    "depth3": _b(lambda: B().with_max_depth(3).select(COUNTS)),
}

VIEWS = ("scope", "graph", "op", "code")
TREE_AND_OP = ("scope", "graph", "op")

#: Which option sets each hand-made case is queried with, per view group.
CASE_QUERIES: dict[str, dict[tuple[str, ...], tuple[str, ...]]] = {
    "gpu": {
        TREE_AND_OP: (
            "default",
            "all",
            "all_depth2",
            "time_and_memory",
            "acc_cpu",
            "acc_only",
            "cpu_only",
            "order_acc",
            "order_cpu",
            "order_micros",
            "order_bytes",
            "order_peak",
            "order_residual",
            "order_output",
            "min_acc",
            "min_cpu",
            "min_micros",
            "min_bytes",
            "min_peak",
            "min_residual",
            "min_output",
            "account_gpu",
            "account_cpu",
            "account_multi_all",
            "empty_select",
            "unknown_select",
            "order_unknown",
            "start",
            "show_hide",
            "hide_adoo",
            "trim",
        ),
        ("code",): ("default",),
    },
    "gpu_no_stream": {TREE_AND_OP: ("default", "all", "acc_cpu", "account_gpu")},
    "shapes": {
        TREE_AND_OP: ("all", "params", "min_params", "order_params", "float_ops", "min_flops"),
        ("code",): ("all",),
    },
    "numbers": {
        VIEWS: ("all", "order_bytes", "order_params", "order_flops", "order_micros"),
        TREE_AND_OP: ("float_ops", "order_occurrence"),
    },
    "names": {
        TREE_AND_OP: (
            "all",
            "order_name",
            "order_micros",
            "order_unknown",
            "start",
            "show_hide",
            "hide_adoo",
            "trim",
        ),
    },
    "chain": {
        TREE_AND_OP: ("default", "deep", "start", "account_multi_all", "min_adoo", "min_micros"),
        ("graph",): ("all_depth2", "depth3", "hide_adoo", "show_hide"),
    },
    "many_ops": {
        ("op",): (
            "all",
            "order_name",
            "order_micros",
            "order_bytes",
            "order_peak",
            "order_residual",
            "order_output",
            "order_occurrence",
            "order_unknown",
            "min_bytes",
            "min_micros",
            "min_occurrence",
            "depth3",
            "start",
            "trim",
            "hide_adoo",
        ),
        ("scope", "graph"): ("order_micros", "order_bytes", "order_occurrence", "all_depth2"),
    },
    "code": {
        ("code", "op"): (
            "default",
            "all",
            "all_depth2",
            "order_micros",
            "order_bytes",
            "order_occurrence",
            "order_params",
            "order_flops",
            "order_name",
            "params",
            "float_ops",
            "account_multi",
            "account_multi_all",
            "account_multi_adoo",
            "min_micros",
            "min_flops",
            "min_params",
            "min_occurrence",
            "start",
            "show_hide",
            "hide_adoo",
            "trim",
            "depth1",
            "depth3",
            "empty_select",
            "unknown_select",
        ),
        ("scope", "graph"): ("all", "params", "float_ops", "account_multi"),
    },
    "steps": {
        VIEWS: ("all", "float_ops", "order_occurrence"),
    },
    "graphy": {VIEWS: ("all", "order_micros", "start", "acc_cpu")},
}


def _queries() -> Iterator[Any]:
    for case, groups in CASE_QUERIES.items():
        for views, names in groups.items():
            for view in views:
                for name in names:
                    yield pytest.param(case, view, name, id=f"{case}-{view}-{name}")


@pytest.mark.parametrize(("case", "view", "name"), list(_queries()))
def test_query(case: str, view: str, name: str) -> None:
    ho.check(hand_cases.ALL_CASES[case](), view, OPTIONS[name]())


STEP_CASES = {"steps": (-1, 0, 1, 2, 5, 9), "gpu": (-1, 0, 1, 3), "graphy": (-1, 0, 1)}


@pytest.mark.parametrize(
    ("case", "step"),
    [(case, step) for case, steps in STEP_CASES.items() for step in steps],
)
@pytest.mark.parametrize("view", VIEWS)
def test_steps(case: str, step: int, view: str) -> None:
    """Per-step values, step -1 averaging and unknown steps (empty result, no file)."""
    sel = [*COUNTS, "accelerator_micros", "cpu_micros"]
    ho.check(hand_cases.ALL_CASES[case](), view, B().with_step(step).select(sel).build())


# ------------------------------------------------------------ the public tf.Graph path


@functools.cache
def gpu_capture() -> Any:
    """`hand_cases.gpu_case`'s steps on a real ``tf.Graph`` with the same node names."""

    def build() -> Any:
        graph = tf.Graph()
        with graph.as_default():
            x = tf1.placeholder(tf.float32, [2, 3], name="x")
            with tf1.variable_scope("s1"):
                w = tf1.get_variable("w", [3, 4], use_resource=False)
                m = tf.matmul(x, w, name="m")
            with tf1.name_scope("s2"):
                r = tf.nn.relu(m, name="r")
                y = tf.add(r, r, name="add")
            tf.identity(y, name="z")
        return graph

    graph = tf_models._in_fresh_thread(build)
    run_metas = hand_cases.gpu_case().run_metas
    for _, data in run_metas:
        tfprof_logger._fill_missing_graph_shape(graph, tf_oracle._parse_run_meta(data))
    return tf_models.Capture("gpu_tf_graph", graph, list(run_metas))


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize(
    "name", ["all", "params", "float_ops", "acc_cpu", "order_acc", "min_cpu", "account_gpu"]
)
def test_tf_graph_capture(view: str, name: str) -> None:
    """GPU-style steps through ``Profiler(tf.Graph)`` + ``add_step`` on both sides."""
    ho.check_capture(gpu_capture(), view, OPTIONS[name]())


def _user_op_log() -> bytes:
    """A user op log for `gpu_capture`: FLOPs over a registered (MatMul) and an
    unregistered (Relu) formula, extra types, a code trace, an unknown name."""
    strings = {"none": 0}
    entries = [
        code_entry("s1/m", [("/u/user.py", 3, "user_fn")], strings, ["U"], 7),
        code_entry("s2/r", [], strings, ["U", "V"], 5),
        code_entry("s2/add", [], strings, ["V"]),
        code_entry("no/such/node", [], strings, ["U"], 9),
    ]
    return bytes(op_log(entries, strings).SerializeToString())


@functools.cache
def _gpu_capture_prefix(steps: int) -> Any:
    """`gpu_capture` with only its first ``steps`` steps (same graph)."""
    full = gpu_capture()
    return tf_models.Capture(f"gpu_tf_graph_{steps}", full.graph, full.run_metas[:steps])


@pytest.mark.parametrize("steps", [0, 1, 2])
@pytest.mark.parametrize("view", VIEWS)
def test_tf_graph_with_user_op_log(steps: int, view: str) -> None:
    """``Profiler(graph, op_log)``: user FLOPs hold until the first ``add_step``, which
    re-sends TF's default op log (registered FLOPs win again; types stay)."""
    capture = _gpu_capture_prefix(steps)
    options = B().select(["float_ops", "op_types", "micros"]).order_by("float_ops").build()
    ho.check_logged_capture(capture, _user_op_log(), view, options)
    account = B(options).with_accounted_types(["U"]).build()
    ho.check_logged_capture(capture, _user_op_log(), view, account)


# ------------------------------------------------------------ the cases do what they say


def _text(case: str, view: str, options: dict[str, Any]) -> str:
    return ho.check(hand_cases.ALL_CASES[case](), view, options)


def test_missing_stream_warning() -> None:
    """GPU device without stream:all: warning before the Doc section (not with it)."""
    opts = B().select(["micros"]).build()
    for view in TREE_AND_OP:
        assert _text("gpu_no_stream", view, opts).startswith(MISSING_STREAM_WARNING + "\nDoc:\n")
        assert _text("gpu", view, opts).startswith("\nDoc:\n")
    assert _text("graphy", "scope", opts).startswith(MISSING_STREAM_WARNING)  # XLA_GPU only


def test_missing_stream_stdout_framing(capsys: pytest.CaptureFixture[str]) -> None:
    """``-output stdout``: Options block, banners, then the warning and the report."""
    case = hand_cases.gpu_no_stream_case()
    for view in TREE_AND_OP:
        options = B().select(["micros", "device"]).build()
        expected = ho.hand_oracle_for(case).stdout(view, options)
        capsys.readouterr()
        getattr(ho.ours_for(case), ho.METHODS[view])(options)
        assert capsys.readouterr().out == expected
        assert MISSING_STREAM_WARNING in expected


def test_gpu_time_columns() -> None:
    """Accelerator time only from stream:all, cpu time from the canonical device."""
    text = _text("gpu", "scope", B().with_step(0).select(["micros"]).build())
    assert "s1/m (450us/450us, 400us/400us, 50us/50us)" in text
    assert "z (3us/3us, 0us/0us, 3us/3us)" in text  # stream:7<memcpyh2d> ignored
    assert "RecvTensor" not in text and "_SOURCE" not in text and "MEMCPY" not in text
    assert "extra (" in text  # pseudo node parent scope


def test_unicode_op_row_padding() -> None:
    """Op view rows pad names to 25 *bytes* (C ``%-25s``)."""
    text = _text("names", "op", B().select(["micros"]).build())
    rows = [line for line in text.splitlines() if line.startswith("ψ/pseudo_ñ")]
    assert len(rows) == 1
    name = "ψ/pseudo_ñ"  # 10 characters, 12 bytes
    pad = 25 - len(name.encode("utf-8"))
    assert pad == 13 and rows[0].startswith(name + " " * pad)
    field = rows[0][len(name) + pad :]
    assert field[:30].lstrip().startswith("8us (") and field[30] == ","


def test_code_frame_names() -> None:
    """20-byte function-name cut, gradient replay, ``gradients_1/`` as a plain node."""
    text = _text("code", "code", B().select(["micros"]).with_max_depth(10).build())
    assert "layers.py:30:" + hand_cases.FUNC_19 + " (" in text
    assert "layers.py:31:" + "g" * 17 + "... (" in text
    assert "layers.py:32:" + "h" * 17 + "... (gradient) (" in text
    assert "ünï.py:7:función_ñandú_... (" in text  # 19 characters, 22 bytes
    assert "ünï.py:8:ab数据集管道... (" in text  # 9 characters, 23 bytes
    assert "optimizer.py:4:minimize (" in text  # gradients_1/... has its own frame
    assert "train.py:10:main (gradient) (" in text


def test_multiple_account_regexes_double_count() -> None:
    """A node matched by k regexes counts k times in op and code views (as in TF)."""
    case = hand_cases.code_case()
    prof = ho.ours_for(case)
    once = B().with_accounted_types(["MatMul"]).select(["micros"]).with_empty_output().build()
    twice = B(once).with_accounted_types(["MatMul", ".*Mat.*"]).build()
    for view in ("op", "code"):
        ho.check(case, view, twice)
        single = getattr(prof, ho.METHODS[view])(once).total_exec_micros
        assert getattr(prof, ho.METHODS[view])(twice).total_exec_micros == 2 * single > 0


def test_chain_is_deeper_than_recursion_limit() -> None:
    """The graph view walks the whole chain (TF's own Python cannot parse its result)."""
    case = hand_cases.chain_case()
    text = _text("chain", "graph", OPTIONS["deep"]())
    assert text.count("\n") > hand_cases.CHAIN_LENGTH
    msg = ho.ours_for(case).profile_graph(B().with_max_depth(3000).with_empty_output().build())
    depth = 0
    while msg.children:
        msg = msg.children[0]
        depth += 1
    assert depth == hand_cases.CHAIN_LENGTH


def test_empty_and_unknown_select_doc() -> None:
    """Empty select: bare Doc section; unknown select names get ``Unknown select:``."""
    empty = _text("gpu", "scope", OPTIONS["empty_select"]())
    assert empty.startswith("\nDoc:\nscope: ") and "\n\n\nProfile:\nnode name | \n" in empty
    unknown = _text("gpu", "op", OPTIONS["unknown_select"]())
    assert "Unknown select: bogus\n" in unknown and "Unknown select: zz_unknown\n" in unknown


def test_op_view_proto_after_empty_display() -> None:
    """A query that displays no row after one that did returns no stale children."""
    case = hand_cases.many_ops_case()
    oracle = ho.hand_oracle_for(case)
    full = B().order_by("micros").build()
    nothing = B().with_min_execution_time(min_micros=10**9).build()
    for view in TREE_AND_OP:
        oracle.proto(view, full)
        expected = oracle.proto(view, nothing)
        assert ho.our_proto(ho.ours_for(case), view, nothing) == expected
    root = tfprof_output_pb2.MultiGraphNodeProto.FromString(oracle.proto("op", nothing))
    assert not root.children


def test_frame_cut_inside_a_character() -> None:
    """Where the 17-byte cut splits a UTF-8 character TF writes invalid UTF-8 (its
    oracle cannot read that report); we drop the partial character instead."""
    from tfprof_lite.model.records import CodeFrame
    from tfprof_lite.views.code import trace_string

    frame = CodeFrame(file="/a/b.py", lineno=3, function="数据集管道函数")  # 21 bytes
    assert trace_string(frame, {}) == "b.py:3:数据集管道..."

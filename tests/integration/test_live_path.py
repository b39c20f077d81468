"""The path users take: ``Profiler(sess.graph)`` on a live graph with unknown
dimensions, steps added as they run, views asked between steps.

TensorFlow's tfprof and ours watch the *same* fresh ``tf.Graph`` (see
:mod:`tests.integration.live_models`), in several call orders; whichever profiler
adds a step first refines the graph's shapes, and both must still give the same
text, returned messages and serialized profile as TensorFlow's for every view,
option set and step value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

import tfprof_lite
from tfprof_lite.options.builder import ProfileOptionBuilder as B

pytestmark = pytest.mark.tf

tf_oracle = pytest.importorskip("tests.integration.tf_oracle")
live_models = pytest.importorskip("tests.integration.live_models")
differential = pytest.importorskip("tests.integration.test_differential")

NUM_STEPS = 3
#: Option sets asked between steps and in the shorter scenarios.
QUICK_SETS = ("float_ops", "time_and_memory_all", "all_select_depth2", "params")


def _compare(
    ours: tfprof_lite.Profiler, tf_prof: Any, view: str, name: str, options: dict[str, Any]
) -> list[str]:
    """Where our answer for one query differs from TensorFlow's (empty: none)."""
    problems = []
    if differential.our_text(ours, view, options) != tf_prof.text(view, options):
        problems.append(f"{view}/{name}: text")
    if differential.our_proto(ours, view, options) != tf_prof.proto(view, options):
        problems.append(f"{view}/{name}: message")
    return problems


def _compare_sets(
    ours: tfprof_lite.Profiler, tf_prof: Any, names: Iterable[str], steps: Iterable[int]
) -> list[str]:
    problems: list[str] = []
    for view in differential.VIEWS:
        for name in names:
            options = differential.OPTION_SETS[name]()
            problems += _compare(ours, tf_prof, view, name, options)
        for step in steps:
            options = B(B.float_operation()).with_step(step).build()
            options["select"] = ["float_ops", "micros", "bytes", "occurrence", "params"]
            problems += _compare(ours, tf_prof, view, f"step={step}", options)
    return problems


def _compare_profiles(ours: tfprof_lite.Profiler, tf_prof: Any) -> list[str]:
    mine = tf_oracle.canonical_proto(
        tf_oracle.tfprof_log_pb2.ProfileProto, ours.serialize_to_string()
    )
    return [] if mine == tf_prof.serialized_profile() else ["serialize_to_string"]


def _run(
    model_name: str,
    ours_first: bool,
    between: Callable[[tfprof_lite.Profiler, Any, int], list[str]] | None = None,
) -> tuple[tfprof_lite.Profiler, Any, list[str]]:
    """Both profilers on one fresh model, ``NUM_STEPS`` traced steps in the given order."""
    model = live_models.LIVE_MODELS[model_name]()
    problems: list[str] = []
    try:
        if ours_first:
            ours = tfprof_lite.Profiler(model.graph)
            tf_prof = tf_oracle.LiveTf(model.graph)
        else:
            tf_prof = tf_oracle.LiveTf(model.graph)
            ours = tfprof_lite.Profiler(model.graph)
        for step in range(NUM_STEPS):
            data = model.traced_step()
            meta = tf_oracle._parse_run_meta(data)
            if ours_first:
                ours.add_step(step, data)
                tf_prof.add_step(step, meta)
            else:
                tf_prof.add_step(step, meta)
                ours.add_step(step, data)
            if between is not None:
                problems += between(ours, tf_prof, step)
    finally:
        model.close()
    return ours, tf_prof, problems


@pytest.mark.parametrize("model_name", sorted(live_models.LIVE_MODELS))
def test_every_view_and_option_set(model_name: str) -> None:
    """Ours created before TF's, every option set and step value after the steps."""
    ours, tf_prof, _ = _run(model_name, ours_first=True)
    steps = [-1, *range(NUM_STEPS), NUM_STEPS + 10]
    problems = _compare_sets(ours, tf_prof, sorted(differential.OPTION_SETS), steps)
    problems += _compare_profiles(ours, tf_prof)
    assert problems == []


@pytest.mark.parametrize("model_name", sorted(live_models.LIVE_MODELS))
def test_tf_refines_the_graph_first(model_name: str) -> None:
    """TF's profiler made first and fed each step first: the graph is refined for us."""
    ours, tf_prof, _ = _run(model_name, ours_first=False)
    problems = _compare_sets(ours, tf_prof, QUICK_SETS, [-1, NUM_STEPS - 1])
    assert problems + _compare_profiles(ours, tf_prof) == []


@pytest.mark.parametrize("model_name", sorted(live_models.LIVE_MODELS))
def test_views_between_steps(model_name: str) -> None:
    """Views asked after every step agree with TF's at that point."""

    def between(ours: tfprof_lite.Profiler, tf_prof: Any, step: int) -> list[str]:
        found = _compare_sets(ours, tf_prof, QUICK_SETS, [step])
        return [f"after step {step}: {p}" for p in found]

    _, _, problems = _run(model_name, ours_first=True, between=between)
    assert problems == []


@pytest.mark.parametrize("model_name", ["mlp", "conv", "rnn"])
@pytest.mark.parametrize("cmd", differential.VIEWS)
def test_one_shot_before_and_after_steps(model_name: str, cmd: str) -> None:
    """``profile()`` on the unrefined graph, then with a step's RunMetadata."""
    model = live_models.LIVE_MODELS[model_name]()
    options = B.float_operation()
    try:
        expected = tf_oracle.one_shot(model.graph, None, cmd, options)
        mine = _one_shot(model.graph, None, cmd, options)
        assert mine == expected
        data = model.traced_step()
        mine = _one_shot(model.graph, data, cmd, options)
        assert mine == tf_oracle.one_shot(model.graph, data, cmd, options)
    finally:
        model.close()


def _one_shot(graph: Any, run_meta: bytes | None, cmd: str, options: dict[str, Any]) -> Any:
    """Our ``profile()`` as ``(text, canonical message)``, like ``tf_oracle.one_shot``."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.txt")
        message = tfprof_lite.profile(
            graph, run_meta=run_meta, cmd=cmd, options=dict(options, output=f"file:outfile={path}")
        )
        text = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    cls = tf_oracle._PROTO_CLASSES[cmd]
    return text, tf_oracle.canonical_proto(cls, message.SerializeToString())


def _float_ops_of(message: Any, name: str) -> int:
    """``float_ops`` of the node ``name`` in a graph-view message (-1: absent)."""
    if message.name == name:
        return int(message.float_ops)
    for child in message.children:
        found = _float_ops_of(child, name)
        if found >= 0:
            return found
    return -1


_GRADIENT_MATMUL = "gradients/logits/MatMul_grad/MatMul_1"
_GRADIENT_MATMUL_FLOPS = 2 * 32 * 16 * 10  # [32, 16] x [16, 10], batch 16


def _gradient_matmul_flops(prof: Any) -> int:
    options = B(B.float_operation()).with_node_names(show_name_regexes=[_GRADIENT_MATMUL])
    return _float_ops_of(prof.profile_graph(dict(options.build(), output="none")), _GRADIENT_MATMUL)


def test_gradient_matmul_is_recounted_after_refinement() -> None:
    """The gradient ``MatMul_1`` of the logits layer has a static output shape
    ``[32, 10]`` but a ``[None, 32]`` input: it must be recounted once a step refines
    that input, on our side as on TF's (so the comparisons above are not between
    two equally wrong answers)."""
    ours, tf_prof, _ = _run("mlp", ours_first=True)
    assert _gradient_matmul_flops(ours) == _GRADIENT_MATMUL_FLOPS
    assert _gradient_matmul_flops(tf_prof.profiler) == _GRADIENT_MATMUL_FLOPS


def _float_ops_text(prof: Any) -> str:
    return str(differential.our_text(prof, "scope", B.float_operation()))


def _counted_mlp() -> Any:
    """The MLP, each step also advancing the global step (what the hook reads)."""
    model = live_models.LIVE_MODELS["mlp"]()
    tf1 = tf_oracle.tf.compat.v1
    with model.graph.as_default():
        global_step = tf1.train.get_or_create_global_step()
        advance = tf1.assign_add(global_step, 1)
        init = tf1.variables_initializer([global_step])
    model.session.run(init)
    model.fetches = [model.fetches, advance]
    return model


def test_profile_context_and_hook_count_tfs_flops(tmp_path: Any) -> None:
    """``ProfileContext`` and ``ProfilerHook`` profiles (built on the live graph as
    steps run) carry TF's FLOPs: the same float-ops report as TF's profiler fed
    an identical fresh model."""
    model = _counted_mlp()
    try:
        tf_prof = tf_oracle.LiveTf(model.graph)
        for step in range(2):
            tf_prof.add_step(step, tf_oracle._parse_run_meta(model.traced_step()))
        expected = tf_prof.text("scope", B.float_operation())
    finally:
        model.close()
    assert "gradients/logits/MatMul_grad/MatMul_1" in expected

    model = _counted_mlp()
    try:
        with tfprof_lite.ProfileContext(str(tmp_path / "ctx"), trace_steps=[0, 1]) as pctx:
            for _ in range(2):
                model.session.run(model.fetches, model.feed)
        assert _float_ops_text(pctx.profiler) == expected
    finally:
        model.close()

    model = _counted_mlp()
    hook = tfprof_lite.ProfilerHook(str(tmp_path / "hook"), trace_steps=range(10))
    try:
        monitored = tf_oracle.tf.compat.v1.train.MonitoredSession
        with model.graph.as_default(), monitored(hooks=[hook]) as hooked:
            for _ in range(2):
                hooked.run(model.fetches, model.feed)
    finally:
        model.close()
    # MonitoredSession adds and runs ops of its own, so the hook's report is not
    # TF's above line for line; the refined gradient MatMul is what must be right.
    dumps = sorted((tmp_path / "hook").glob("profile_*"))
    assert dumps, "the hook wrote no profile at end()"
    for prof in (hook.profiler, tfprof_lite.Profiler.load(str(dumps[-1]))):
        assert _gradient_matmul_flops(prof) == _GRADIENT_MATMUL_FLOPS


def _split_graph() -> tuple[Any, list[Any], Any]:
    """Two convolutions of a ``None``-batch input and their sum, fetched one by one,
    so each step brings runtime-only nodes (``_retval_*``) the graph does not have."""
    tf1 = tf_oracle.tf.compat.v1
    graph = tf_oracle.tf.Graph()
    with graph.as_default():
        image = tf1.placeholder(tf_oracle.tf.float32, [None, 6, 6, 3], name="image")
        kernel = tf1.get_variable("kernel", [3, 3, 3, 4])
        left = tf_oracle.tf.nn.conv2d(image, kernel, 1, "SAME")
        right = tf_oracle.tf.nn.conv2d(image, kernel * 2.0, 2, "SAME")
        both = tf_oracle.tf.reduce_sum(left) + tf_oracle.tf.reduce_sum(right)
        init = tf1.global_variables_initializer()
    return graph, [left, right, both], (image, init)


@pytest.mark.parametrize("freeze", ["views", "advise"])
def test_views_built_before_new_runtime_nodes(freeze: str) -> None:
    """A view (or ``advise``, which builds every view) before the steps: later steps'
    runtime-only nodes stay out of those views, in ours as in TF's."""
    import numpy as np

    tf1 = tf_oracle.tf.compat.v1
    graph, fetches, (image, init) = _split_graph()
    ours = tfprof_lite.Profiler(graph)
    tf_prof = tf_oracle.LiveTf(graph)
    options = dict(B.time_and_memory(min_bytes=0), output="none")
    if freeze == "advise":
        ours.advise({"ExpensiveOperationChecker": {}})
        tf_prof.advise({"ExpensiveOperationChecker": {}})
    else:
        for view in differential.VIEWS:
            getattr(ours, differential.METHODS[view])(options)
            getattr(tf_prof.profiler, differential.METHODS[view])(options)
    feed = {image: np.ones((2, 6, 6, 3), np.float32)}
    run_options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    problems: list[str] = []
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        for step, fetch in enumerate(fetches):
            meta = tf1.RunMetadata()
            sess.run(fetch, feed, options=run_options, run_metadata=meta)
            ours.add_step(step, meta.SerializeToString())
            tf_prof.add_step(step, meta)
            problems += _compare_sets(ours, tf_prof, QUICK_SETS, [step])
    problems += _compare_profiles(ours, tf_prof)
    assert problems == []
    text = differential.our_text(ours, "scope", B.time_and_memory(min_bytes=0))
    assert "_retval" not in text


@pytest.mark.parametrize("first_read", ["code", "profile"])
@pytest.mark.parametrize("model_name", ["mlp", "cond", "rnn"])
def test_call_stacks_read_before_any_step(model_name: str, first_read: str) -> None:
    """``Profiler(graph)`` leaves the ops' call stacks pending; read first by the code
    view or by a written profile, before any step, they are TF's, and so is
    everything after the first step (whose op log no longer carries them)."""
    model = live_models.LIVE_MODELS[model_name]()
    try:
        ours = tfprof_lite.Profiler(model.graph)
        tf_prof = tf_oracle.LiveTf(model.graph)
        if first_read == "code":
            options = differential.OPTION_SETS["all_select"]()
            problems = _compare(ours, tf_prof, "code", "all_select", options)
        else:
            problems = _compare_profiles(ours, tf_prof)
        problems += _compare_sets(ours, tf_prof, QUICK_SETS, [-1])
        problems += _compare_profiles(ours, tf_prof)
        data = model.traced_step()
        ours.add_step(0, data)
        tf_prof.add_step(0, tf_oracle._parse_run_meta(data))
        problems += _compare_sets(ours, tf_prof, QUICK_SETS, [0])
        problems += _compare_profiles(ours, tf_prof)
    finally:
        model.close()
    assert problems == []


def _grow(model: Any) -> None:
    """New ops (with call stacks) in the model's graph, fetched from the next step
    on: one of a known shape, and one whose batch dimension the step refines."""
    tf = tf_oracle.tf
    with model.graph.as_default(), tf.compat.v1.name_scope("grown"):
        weights = tf.compat.v1.trainable_variables()[0]
        norm = tf.reduce_sum(tf.square(weights), name="norm")
        squares = tf.square(model.graph.get_tensor_by_name("x:0"), name="squares")
        total = tf.reduce_sum(squares, name="total")
    model.fetches = [model.fetches, norm, total]


@pytest.mark.parametrize("read_before", ["nothing", "code"])
@pytest.mark.parametrize("grow_at", [0, 1])
def test_graph_grows_between_steps(grow_at: int, read_before: str) -> None:
    """Ops added to the graph after ``Profiler(graph)`` (before the first step, or
    between steps), the call stacks still pending or already read by the code
    view: every view, the code view's traces and the written profile are TF's."""
    model = live_models.LIVE_MODELS["mlp"]()
    problems: list[str] = []
    try:
        ours = tfprof_lite.Profiler(model.graph)
        tf_prof = tf_oracle.LiveTf(model.graph)
        if read_before == "code":
            options = differential.OPTION_SETS["all_select"]()
            problems += _compare(ours, tf_prof, "code", "all_select", options)
        for step in range(3):
            if step == grow_at:
                _grow(model)
            data = model.traced_step()
            ours.add_step(step, data)
            tf_prof.add_step(step, tf_oracle._parse_run_meta(data))
        assert "grown/squares" in ours.model.index
        options = differential.OPTION_SETS["all_select"]()
        problems += _compare(ours, tf_prof, "code", "all_select", options)
        problems += _compare_sets(ours, tf_prof, QUICK_SETS, [-1, 2])
        problems += _compare_profiles(ours, tf_prof)
    finally:
        model.close()
    assert problems == []

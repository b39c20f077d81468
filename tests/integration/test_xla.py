"""XLA/JIT: real HLO dumps of TF 2.21 JIT sessions, rendered with the real ``dot``.

One subprocess (so that ``TF_XLA_FLAGS``/``XLA_FLAGS`` apply: TensorFlow reads
them once per process) runs five TF1-style sessions with FULL_TRACE and
tfprof_lite's Profiler, dumping HLO into a temporary directory:

* ``on1``: a dense net trained with ``global_jit_level = ON_1`` (auto-clustering;
  on CPU it needs ``--tf_xla_cpu_global_jit``);
* ``lazy``: ON_1 with a new batch size in step 1 (XLA's lazy compilation);
* ``scope``: a graph built under ``tf.compat.v1.xla.experimental.jit_scope()``;
* ``launch``: ``tf.compat.v1.xla.experimental.compile`` (one ``XlaLaunch`` node);
* ``function``: a ``tf.function(jit_compile=True)`` called in the graph.

The tests read the dumps and the saved profiles in this process, which never
imports TensorFlow. Rendering tests skip when ``dot`` is missing (CI installs it
with scripts/install-tools.sh).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

import tfprof_lite
from tfprof_lite import xla
from tfprof_lite.model.profile import ProfileModel

pytestmark = pytest.mark.tf

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("TensorFlow is not installed", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

JIT_SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tfprof_lite

tf1 = tf.compat.v1
OUT = sys.argv[1]
TRACE = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
facts = {}


def traced(name, graph, sess, fetch, feed, steps):
    prof = tfprof_lite.Profiler(graph)
    ops = {}
    for step in range(steps):
        meta = tf1.RunMetadata()
        sess.run(fetch, feed, options=TRACE, run_metadata=meta)
        prof.add_step(step, meta)
        for dev in meta.step_stats.dev_stats:
            for ns in dev.node_stats:
                label = ns.timeline_label
                if " = " in label:
                    ops[ns.node_name] = label.split(" = ", 1)[1].split("(", 1)[0]
    with open(f"{OUT}/profile_{name}", "wb") as fh:
        fh.write(prof.serialize_to_string())
    facts[name] = ops


def dense(x, width, name):
    with tf1.variable_scope(name):
        w = tf1.get_variable("w", [int(x.shape[1]), width])
        b = tf1.get_variable("b", [width], initializer=tf1.zeros_initializer())
        return tf.nn.relu(tf.matmul(x, w) + b)


def on1():
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [32, 64], name="x")
        y = tf1.placeholder(tf.int64, [32], name="y")
        logits = dense(dense(x, 128, "layer0"), 10, "logits")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf1.global_variables_initializer()
    config = tf1.ConfigProto()
    config.graph_options.optimizer_options.global_jit_level = tf1.OptimizerOptions.ON_1
    feed = {x: np.ones([32, 64], np.float32), y: np.zeros([32], np.int64)}
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        traced("on1", graph, sess, train, feed, 3)


def scope():
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [16, 32], name="x")
        with tf1.xla.experimental.jit_scope():
            out = tf.reduce_sum(tf.sigmoid(tf.tanh(x * 1.5 + 0.5) * 2.0 - 1.0))
    with tf1.Session(graph=graph) as sess:
        traced("scope", graph, sess, out, {x: np.ones([16, 32], np.float32)}, 2)


def launch():
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [16, 32], name="x")
        (out,) = tf1.xla.experimental.compile(lambda a: tf.reduce_sum(tf.exp(a) * 3.0), [x])
    with tf1.Session(graph=graph) as sess:
        traced("launch", graph, sess, out, {x: np.ones([16, 32], np.float32)}, 2)


def function():
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [16, 32], name="x")

        @tf.function(jit_compile=True)
        def scaled_sum(a):
            return tf.reduce_sum(tf.exp(a) * 3.0)

        out = scaled_sum(x)
    with tf1.Session(graph=graph) as sess:
        traced("function", graph, sess, out, {x: np.ones([16, 32], np.float32)}, 2)


def lazy():
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 16], name="x")
        out = tf.reduce_sum(tf.sigmoid(tf.tanh(x * 1.5 + 0.5) * 2.0 - 1.0))
    config = tf1.ConfigProto()
    config.graph_options.optimizer_options.global_jit_level = tf1.OptimizerOptions.ON_1
    prof = tfprof_lite.Profiler(graph)
    with tf1.Session(graph=graph, config=config) as sess:
        for step, batch in enumerate((4, 8, 8)):
            meta = tf1.RunMetadata()
            sess.run(out, {x: np.ones([batch, 16], np.float32)}, options=TRACE, run_metadata=meta)
            prof.add_step(step, meta)
    with open(f"{OUT}/profile_lazy", "wb") as fh:
        fh.write(prof.serialize_to_string())


on1()
lazy()
scope()
launch()
function()
with open(f"{OUT}/facts.json", "w") as fh:
    json.dump(facts, fh)
"""


@dataclass(frozen=True)
class JitRun:
    """What the subprocess left behind."""

    out: Path
    dump_dir: Path
    facts: dict[str, dict[str, str]]

    def profile(self, name: str) -> tfprof_lite.Profiler:
        return tfprof_lite.Profiler.load(self.out / f"profile_{name}")


@pytest.fixture(scope="module")
def jit_run(tmp_path_factory: pytest.TempPathFactory) -> JitRun:
    out = tmp_path_factory.mktemp("xla_jit")
    dump_dir = out / "dumps"
    script = out / "jit_sessions.py"
    script.write_text(JIT_SCRIPT, encoding="utf-8")
    env = dict(os.environ)
    env.update(
        TF_XLA_FLAGS="--tf_xla_cpu_global_jit",
        XLA_FLAGS=f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_dot --xla_dump_hlo_as_text",
        TF_CPP_MIN_LOG_LEVEL="2",
        CUDA_VISIBLE_DEVICES="",
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    facts = json.loads((out / "facts.json").read_text(encoding="utf-8"))
    return JitRun(out, dump_dir, facts)


needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot is missing (scripts/install-tools.sh)",
)


def _svg_nodes(path: Path) -> list[str]:
    """Titles of the node groups of an SVG that dot wrote (it must parse as XML)."""
    ns = {"svg": "http://www.w3.org/2000/svg"}
    root = ET.parse(path).getroot()
    groups = root.findall(".//svg:g[@class='node']", ns)
    return [g.findtext("svg:title", default="", namespaces=ns) for g in groups]


def _biggest(run: JitRun, stage: str) -> xla.HloModuleDump:
    dumps = [d for d in xla.find_dumps(run.dump_dir, ("dot",)) if d.stage == stage]
    assert dumps, f"no {stage} .dot dump in {run.dump_dir}"
    return max(dumps, key=lambda d: d.path.stat().st_size)


# ---------------------------------------------------------------- facts
def test_runtime_ops_of_clusters(jit_run: JitRun) -> None:
    on1 = jit_run.facts["on1"]
    compile_ops = {n: op for n, op in on1.items() if n.endswith("/xla_compile")}
    assert compile_ops and set(compile_ops.values()) == {"_XlaCompile"}
    assert {op for n, op in on1.items() if n.endswith("/xla_run")} == {"_XlaRun"}
    assert all(re.fullmatch(r"cluster_\d+_1/xla_compile", n) for n in compile_ops)
    assert "_XlaRun" in jit_run.facts["scope"].values()
    assert jit_run.facts["launch"].get("cluster") == "XlaLaunch"


def test_find_dumps_parses_names(jit_run: JitRun) -> None:
    dumps = xla.find_dumps(jit_run.dump_dir)
    assert {d.fmt for d in dumps} == {"dot", "txt"}
    assert {d.stage for d in dumps} == {xla.STAGE_BEFORE, xla.STAGE_AFTER}
    assert {d.platform for d in dumps if d.stage == xla.STAGE_AFTER} == {"cpu"}
    assert any(re.fullmatch(r"cluster_\d+", d.cluster) for d in dumps)
    assert [d.sort_key() for d in dumps] == sorted(d.sort_key() for d in dumps)
    for dump in dumps:
        assert dump.path.name.startswith(f"module_{dump.module_id:04d}.{dump.cluster}")
        assert dump.sibling("dot") is not None


# ---------------------------------------------------------------- rendering
@needs_dot
def test_render_svg_and_png(jit_run: JitRun, tmp_path: Path) -> None:
    dump = _biggest(jit_run, xla.STAGE_AFTER)
    svg, png = xla.render(dump, tmp_path, ("svg", "png"))
    assert svg.name == f"{xla.output_stem(dump)}.svg"
    assert len(_svg_nodes(svg)) > 3
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000


@needs_dot
def test_node_cap_shrinks_the_drawing(jit_run: JitRun, tmp_path: Path) -> None:
    dump = _biggest(jit_run, xla.STAGE_BEFORE)
    (full,) = xla.render(dump, tmp_path / "full", ("svg",), max_nodes=None)
    (capped,) = xla.render(dump, tmp_path / "capped", ("svg",), max_nodes=8)
    full_nodes, capped_nodes = _svg_nodes(full), _svg_nodes(capped)
    assert len(full_nodes) > 9
    assert len(capped_nodes) == 9  # 8 kept + the note
    assert "tfprof_lite_note" in capped_nodes
    assert "max_nodes=8" in capped.read_text(encoding="utf-8")


@needs_dot
def test_focus_shrinks_the_drawing(jit_run: JitRun, tmp_path: Path) -> None:
    dump = _biggest(jit_run, xla.STAGE_BEFORE)
    names = xla.list_instructions(dump)
    target = next(n for n in names if n.startswith("MatMul"))
    (full,) = xla.render(dump, tmp_path, ("svg",), max_nodes=None)
    (near,) = xla.render(dump, tmp_path, ("svg",), focus=target, radius=1)
    assert near.name.endswith(f".focus-{target}.svg")
    full_nodes, near_nodes = _svg_nodes(full), _svg_nodes(near)
    assert 2 <= len(near_nodes) < len(full_nodes)
    with pytest.raises(xla.InstructionNotFoundError, match="no instruction named"):
        xla.render(dump, tmp_path, ("svg",), focus="no_such_instruction.1")


@needs_dot
def test_collapsed_fusions_draw_fewer_nodes(jit_run: JitRun, tmp_path: Path) -> None:
    dump = _biggest(jit_run, xla.STAGE_AFTER)
    (expanded,) = xla.render(dump, tmp_path / "e", ("svg",), max_nodes=None, collapse_fusions=False)
    (collapsed,) = xla.render(dump, tmp_path / "c", ("svg",), max_nodes=None)
    if "Fused expression" not in dump.path.read_text(encoding="utf-8"):
        pytest.skip("XLA made no fusion in this module")
    assert len(_svg_nodes(collapsed)) < len(_svg_nodes(expanded))


def test_every_dot_dump_prepares_and_reparses(jit_run: JitRun) -> None:
    from tfprof_lite.xla.dot import parse_dot

    for dump in xla.find_dumps(jit_run.dump_dir, ("dot",)):
        text = xla.prepare_dot(dump, max_nodes=None, collapse_fusions=False)
        assert "stylesheet" not in text
        assert len(parse_dot(text).nodes) == len(parse_dot(dump.path.read_text()).nodes)


# ---------------------------------------------------------------- timing
def test_cluster_times_of_auto_clustering(jit_run: JitRun) -> None:
    times = xla.cluster_times(jit_run.profile("on1"), jit_run.dump_dir)
    assert times, "no XLA cluster found in the ON_1 profile"
    main = times[0]
    assert main.kind == xla.KIND_SPLIT
    assert re.fullmatch(r"cluster_\d+", main.cluster) and main.scope == f"{main.cluster}_1"
    assert main.steps == [0, 1, 2]
    assert sorted(main.compile_micros) == [0, 1, 2] == sorted(main.run_micros)
    # The first step compiles; later steps only look the executable up.
    assert main.compile_micros[0] > main.compile_micros[2]
    assert all(v > 0 for v in main.run_micros.values())
    assert main.avg_compile_micros == pytest.approx(main.total_compile_micros / 3)
    module = main.module()
    assert module is not None and module.cluster == main.cluster
    assert module.stage == xla.STAGE_AFTER and module.fmt == "dot"
    table = xla.format_cluster_times(times)
    assert main.cluster in table and f"module_{module.module_id:04d}" in table


def test_lazy_compilation_falls_back_then_compiles(jit_run: JitRun) -> None:
    (lazy,) = xla.cluster_times(jit_run.profile("lazy"), jit_run.dump_dir)
    # Step 1 sees batch 8 for the first time: the uncompiled function runs.
    assert sorted(lazy.fallback_micros) == [1] and sorted(lazy.run_micros) == [0, 2]
    # Step 2 sees it again and compiles a second module for the same cluster.
    assert sorted(lazy.compile_micros) == [0, 1, 2] and len(lazy.module_ids) == 2
    assert lazy.compile_micros[2] > lazy.compile_micros[1]


def test_cluster_times_of_jit_scope_and_launch(jit_run: JitRun) -> None:
    scoped = xla.cluster_times(jit_run.profile("scope").model, jit_run.dump_dir)
    assert scoped and all(t.kind == xla.KIND_SPLIT for t in scoped)
    assert all(t.modules for t in scoped)
    (launch,) = xla.cluster_times(jit_run.profile("launch"), jit_run.dump_dir)
    assert launch.kind == xla.KIND_LAUNCH and launch.scope == "cluster"
    assert re.fullmatch(r"cluster_\d{6,}", launch.cluster) and launch.module() is not None
    assert sorted(launch.run_micros) == [0, 1] and not launch.compile_micros
    # XlaLaunch compiles inside its first run.
    assert launch.run_micros[0] > launch.run_micros[1]


def test_cluster_times_of_jit_compiled_function(jit_run: JitRun) -> None:
    assert jit_run.facts["function"]["PartitionedCall"] == "PartitionedCall"
    (call,) = xla.cluster_times(jit_run.profile("function"), jit_run.dump_dir)
    assert call.kind == xla.KIND_LAUNCH and call.scope == "PartitionedCall"
    assert re.fullmatch(r"a_inference_scaled_sum_\d+", call.cluster), call.cluster
    assert call.module() is not None and call.run_micros[0] > call.run_micros[1]


def test_cluster_times_without_dumps_or_jit(jit_run: JitRun) -> None:
    times = xla.cluster_times(jit_run.profile("on1"), [])
    assert times and all(t.modules == () and t.module() is None for t in times)
    assert xla.cluster_times(ProfileModel()) == []

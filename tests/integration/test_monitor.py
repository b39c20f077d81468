"""Live monitoring with real TensorFlow 2.21 sessions: ``Monitor`` and ``ProfileContext(monitor=)``.

Every test trains a tiny TF1-style model, then parses the printed lines and the
``monitor.jsonl`` records back and checks them against what the run did: step
counts, windows, traced steps, samples (utilisation, idle, input wait,
devices), the patch being restored, and the ``tfprof-lite monitor`` command on
a finished and on a live run.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import numpy as np  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from tensorflow.python.client import session as tf_session  # noqa: E402

import tfprof_lite  # noqa: E402
from tfprof_lite.analysis.monitor_log import read_runs  # noqa: E402
from tfprof_lite.analysis.monitoring import LINE_PREFIX, SUMMARY_PREFIX, parse_line  # noqa: E402
from tfprof_lite.cli.monitor import follow_lines, monitor_command  # noqa: E402

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1
LEVEL1_KEYS = ["runs", "step", "util", "util_step"]
LEVEL2_KEYS = [
    "runs",
    "step",
    "min",
    "max",
    "in_run",
    "util",
    "util_step",
    "host_idle",
    "device_idle",
    "input_wait",
    "devices",
]


class Model:
    """A tiny MLP trained with SGD, in its own graph and session."""

    def __init__(self) -> None:
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.x = tf1.placeholder(tf.float32, [None, 32], name="x")
            with tf1.variable_scope("dense"):
                w = tf1.get_variable("w", [32, 16])
            self.loss = tf.reduce_mean(tf.nn.relu(tf.matmul(self.x, w)), name="loss")
            self.train = tf1.train.GradientDescentOptimizer(0.1).minimize(self.loss)
            init = tf1.global_variables_initializer()
        self.sess = tf1.Session(graph=self.graph)
        self.sess.run(init)
        self.feed = {self.x: np.ones((8, 32), np.float32)}

    def step(self, **kwargs: Any) -> Any:
        return self.sess.run(self.train, feed_dict=self.feed, **kwargs)

    def close(self) -> None:
        self.sess.close()


@pytest.fixture
def model() -> Any:
    m = Model()
    yield m
    m.close()


def lines_of(text: str, prefix: str = LINE_PREFIX) -> list[dict[str, str]]:
    return [parse_line(line) for line in text.splitlines() if line.startswith(prefix)]


def records(directory: Path, event: str) -> list[dict[str, Any]]:
    path = directory / "monitor.jsonl"
    docs = [json.loads(line) for line in path.read_text().splitlines()]
    return [doc for doc in docs if doc["event"] == event]


def pct(text: str) -> float:
    assert text.endswith("%"), text
    return float(text[:-1]) / 100.0


def ms(text: str) -> float:
    assert text.endswith("ms"), text
    return float(text[:-2])


# ------------------------------------------------------------------ level 1
def test_level1_lines_and_json_from_a_real_run(model: Model, tmp_path: Path) -> None:
    stream = io.StringIO()
    with tfprof_lite.Monitor(tmp_path, level=1, every=10, stream=stream) as mon:
        for _ in range(35):
            model.step()
    out = stream.getvalue()
    lines = lines_of(out)
    # util_step only on the line of the window that took the sample
    assert [list(fields) for fields in lines] == [LEVEL1_KEYS] + [LEVEL1_KEYS[:-1]] * 3
    assert [fields["runs"] for fields in lines] == ["0-9", "10-19", "20-29", "30-34"]
    assert all(ms(fields["step"]) > 0 for fields in lines)
    # window 0 is sampled on its last step (sample_every=10): utilisation known
    assert 0.0 < pct(lines[0]["util"]) <= 1.0
    assert lines[0]["util_step"] == "9"  # the one sample so far
    assert all(fields["util"] == lines[0]["util"] for fields in lines)  # repeated
    (summary,) = lines_of(out, SUMMARY_PREFIX)
    assert summary["runs"] == "35" and summary["windows"] == "4" and summary["traced"] == "1"
    assert summary["util_step"] == "9"
    assert out.endswith("\n") and out.count("\n") == 5

    windows = records(tmp_path, "window")
    assert [w["steps"] for w in windows] == [10, 10, 10, 5]
    assert [w["traced"] for w in windows] == [1, 0, 0, 0]
    assert [w["timed"] for w in windows] == [9, 10, 10, 5]
    assert windows[-1]["partial"] is True and windows[0]["sample"]["step"] == 9
    for window, fields in zip(windows, lines):
        assert fields["step"] == f"{window['mean_ms']:.3f}ms"
        assert window["min_ms"] <= window["mean_ms"] <= window["max_ms"]
    (start,) = records(tmp_path, "start")
    (end,) = records(tmp_path, "end")
    assert start["run"] == end["run"] == mon.run_id and start["level"] == 1
    assert end["steps"] == 35 and end["summary"]["timed"] == 34
    umask = os.umask(0o022)
    os.umask(umask)
    assert (tmp_path / "monitor.jsonl").stat().st_mode & 0o777 == 0o666 & ~umask


def test_untraced_steps_run_exactly_as_called(model: Model) -> None:
    options = tf1.RunOptions(timeout_in_ms=60000)
    meta = tf1.RunMetadata()
    with tfprof_lite.Monitor(None, every=5, sample_every=0, stream=io.StringIO()) as mon:
        for _ in range(6):
            model.step(options=options, run_metadata=meta)
    assert options.trace_level == tf1.RunOptions.NO_TRACE  # never modified
    assert not meta.step_stats.dev_stats  # never traced
    assert mon.steps == 6 and mon.latest_sample is None
    assert [r.traced for r in mon.records] == [0, 0]


# ------------------------------------------------------------------ level 2
def test_level2_fields_and_samples(model: Model, tmp_path: Path) -> None:
    stream = io.StringIO()
    with tfprof_lite.Monitor(tmp_path, level=2, every=5, sample_every=2, stream=stream) as mon:
        for _ in range(25):
            model.step()
    lines = lines_of(stream.getvalue())
    without_step = [key for key in LEVEL2_KEYS if key != "util_step"]
    assert [list(fields) for fields in lines] == [LEVEL2_KEYS, without_step] * 2 + [LEVEL2_KEYS]
    # windows 0, 2, 4 are sampled on their last step; 1 and 3 repeat the latest
    assert [fields.get("util_step") for fields in lines] == ["4", None, "14", None, "24"]
    for fields in lines:
        assert ms(fields["min"]) <= ms(fields["step"]) <= ms(fields["max"])
        assert fields["device_idle"] == "n/a"  # CPU only: no accelerator streams
        assert fields["devices"] == "1"
        assert pct(fields["util"]) == pytest.approx(1.0 - pct(fields["host_idle"]), abs=0.0011)
        assert 0.0 <= pct(fields["input_wait"]) <= 1.0
        assert 0.0 < pct(fields["in_run"]) <= 1.5
    assert [r.traced for r in mon.records] == [1, 0, 1, 0, 1]
    sample = mon.latest_sample
    assert sample is not None and sample.util_device == "cpu" and sample.span_ms > 0


def test_input_wait_of_a_tf_data_pipeline(tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        data = tf.data.Dataset.from_tensor_slices(np.ones((4096, 64), np.float32))
        batch = tf1.data.make_one_shot_iterator(data.map(lambda v: v * 2).batch(16)).get_next()
        loss = tf.reduce_sum(tf.matmul(batch, tf.ones((64, 8))))
    stream = io.StringIO()
    monitor = tfprof_lite.Monitor(tmp_path, level=2, every=10, stream=stream)
    with tf1.Session(graph=graph) as sess, monitor as mon:
        for _ in range(20):
            sess.run(loss)
    sample = mon.latest_sample
    assert sample is not None and sample.input_wait > 0.0  # IteratorGetNext ran
    assert lines_of(stream.getvalue())[0]["input_wait"] == f"{100 * sample.input_wait:.1f}%"


def test_a_callers_own_trace_is_used_as_the_sample(model: Model) -> None:
    full = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    with tfprof_lite.Monitor(None, level=2, every=4, sample_every=0, stream=io.StringIO()) as mon:
        model.step()
        model.step(options=full, run_metadata=tf1.RunMetadata())  # step 1
        for _ in range(2):
            model.step()
    assert mon.latest_sample is not None and mon.latest_sample.step == 1
    assert mon.records[0].traced == 1 and mon.records[0].stats.timed == 3


# ------------------------------------------------------- output and errors
def test_default_stream_is_stderr_one_write_per_line(
    model: Model, capsys: pytest.CaptureFixture[str]
) -> None:
    writes: list[str] = []

    class Recorder(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return super().write(text)

    with tfprof_lite.Monitor(None, every=3, stream=Recorder()):
        for _ in range(6):
            model.step()
    assert len(writes) == 3 and all(w.count("\n") == 1 and w.endswith("\n") for w in writes)
    with tfprof_lite.Monitor(None, every=3, summary=False):
        for _ in range(3):
            model.step()
    captured = capsys.readouterr()
    assert captured.out == "" and len(lines_of(captured.err)) == 1


def test_lines_to_a_logger(model: Model, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test_monitor")
    stream = io.StringIO()
    monitor = tfprof_lite.Monitor(None, every=2, stream=stream, logger=logger)
    with caplog.at_level(logging.INFO, logger="test_monitor"), monitor:
        for _ in range(4):
            model.step()
    assert stream.getvalue() == ""
    messages = [r.getMessage() for r in caplog.records if r.name == "test_monitor"]
    assert len(lines_of("\n".join(messages))) == 2 and messages[-1].startswith(SUMMARY_PREFIX)


def test_failed_runs_propagate_and_are_not_counted(model: Model) -> None:
    with tfprof_lite.Monitor(None, every=10, stream=io.StringIO()) as mon:
        model.step()
        with pytest.raises(tf.errors.InvalidArgumentError):
            model.sess.run(model.train)  # the placeholder is not fed
        model.step()
    assert mon.steps == 2


def test_unwritable_directory_only_warns(
    model: Model, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    stream = io.StringIO()
    monitor = tfprof_lite.Monitor(blocker / "sub", every=2, stream=stream)
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"), monitor:
        for _ in range(2):
            model.step()
    assert "printing lines only" in caplog.text
    assert len(lines_of(stream.getvalue())) == 1


def test_patch_restored_and_no_nesting(model: Model) -> None:
    run, call = tf_session.BaseSession.run, tf_session.BaseSession._Callable.__call__
    with pytest.raises(ValueError, match="level"):
        tfprof_lite.Monitor(None, level=3)
    with tfprof_lite.Monitor(None, stream=io.StringIO()):
        assert tf_session.BaseSession.run is not run
        with pytest.raises(RuntimeError, match="already active"):
            tfprof_lite.Monitor(None).__enter__()
    assert tf_session.BaseSession.run is run
    assert tf_session.BaseSession._Callable.__call__ is call
    with pytest.raises(KeyError), tfprof_lite.Monitor(None, stream=io.StringIO()):
        raise KeyError("boom")
    assert tf_session.BaseSession.run is run


def test_this_thread_only(model: Model) -> None:
    with tfprof_lite.Monitor(None, every=100, stream=io.StringIO(), this_thread_only=True) as mon:
        other = threading.Thread(target=lambda: [model.step() for _ in range(3)])
        other.start()
        other.join()
        model.step()
    assert mon.steps == 1


def test_keras_graph_mode_function_calls_are_steps() -> None:
    keras_backend = pytest.importorskip("tf_keras.api._v1.keras.backend")
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, [None, 4])
        outputs = tf.reduce_sum(inputs * 2.0)
        fn = keras_backend.function([inputs], [outputs])
        keras_backend.set_session(tf1.Session(graph=graph))
        with tfprof_lite.Monitor(None, every=3, stream=io.StringIO()) as mon:
            for _ in range(6):
                fn([np.ones((2, 4), np.float32)])
    assert mon.steps == 6 and [r.steps for r in mon.records] == [3, 3]


# ----------------------------------------------------------- ProfileContext
def test_profile_context_monitor(model: Model, tmp_path: Path) -> None:
    run = tf_session.BaseSession.run
    stream = io.StringIO()
    spec = tfprof_lite.Monitor(tmp_path, level=2, every=5, stream=stream)
    with tfprof_lite.ProfileContext(
        tmp_path, trace_steps=[2, 3], dump_steps=[3], monitor=spec
    ) as pctx:
        for _ in range(12):
            model.step()
    assert pctx.monitor is spec and pctx.written_profiles == ["profile_3"]
    assert tf_session.BaseSession.run is run
    # steps 2 and 3 are traced by the context, step 4 by the monitor's sampler
    assert [r.traced for r in spec.records] == [3, 0, 0]
    assert [r.stats.timed for r in spec.records] == [2, 5, 2]
    assert sorted(pctx.profiler.model.steps) == [2, 3]  # the sample is not in the profile
    assert len(lines_of(stream.getvalue())) == 3


def test_profile_context_monitor_level_and_global_step(tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        step_var = tf1.train.get_or_create_global_step()
        train = tf1.assign_add(step_var, 1)
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        with tfprof_lite.ProfileContext(
            tmp_path, trace_steps=[], step_source="global_step", monitor=1, monitor_every=4
        ) as pctx:
            for _ in range(8):
                sess.run(train)
    monitor = pctx.monitor
    assert monitor is not None and monitor.level == 1
    assert monitor.steps == 8  # the context's own global-step reads are not steps
    assert len(records(tmp_path, "window")) == 2


def test_profile_context_without_monitor_is_unchanged(model: Model, tmp_path: Path) -> None:
    with tfprof_lite.ProfileContext(tmp_path, trace_steps=[1], dump_steps=[1]) as pctx:
        for _ in range(3):
            model.step()
    assert pctx.monitor is None and not (tmp_path / "monitor.jsonl").exists()
    with pytest.raises(ValueError, match="monitor"):
        tfprof_lite.ProfileContext(tmp_path, monitor=3)
    assert tfprof_lite.ProfileContext(tmp_path, enabled=False, monitor=2).monitor is None


def test_profile_context_monitor_clash_only_warns(
    model: Model, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outer = tfprof_lite.Monitor(None, every=100, stream=io.StringIO())
    pctx = tfprof_lite.ProfileContext(tmp_path, trace_steps=[0], monitor=1)
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"), outer, pctx:
        model.step()
    assert "monitoring is off for this ProfileContext" in caplog.text
    assert outer.steps == 1 and sorted(pctx.profiler.model.steps) == [0]


# ---------------------------------------------------------------------- CLI
def test_cli_summary_of_a_finished_run(model: Model, tmp_path: Path) -> None:
    for every in (4, 6):  # two runs appended to the same file
        with tfprof_lite.Monitor(tmp_path, level=2, every=every, stream=io.StringIO()):
            for _ in range(12):
                model.step()
    result = CliRunner().invoke(monitor_command, [str(tmp_path), "--lines"])
    assert result.exit_code == 0, result.output
    header, *window_lines, summary = result.output.splitlines()
    assert header.endswith("level 2, every 6 steps, sampled every 10 windows, finished")
    assert [parse_line(line)["runs"] for line in window_lines] == ["0-5", "6-11"]
    assert parse_line(summary)["runs"] == "12"
    result = CliRunner().invoke(monitor_command, [str(tmp_path), "--all", "--json"])
    docs = json.loads(result.output)
    assert [d["windows"] for d in docs] == [3, 2] and all(d["finished"] for d in docs)
    assert len(read_runs(tmp_path).runs) == 2
    missing = CliRunner().invoke(monitor_command, [str(tmp_path / "nothing")])
    assert missing.exit_code != 0


def test_cli_follows_a_live_run(model: Model, tmp_path: Path) -> None:
    started = threading.Event()

    def train() -> None:
        with tfprof_lite.Monitor(tmp_path, level=1, every=5, stream=io.StringIO()):
            started.set()
            for _ in range(40):
                model.step()

    worker = threading.Thread(target=train)
    worker.start()
    started.wait(30)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printed = follow_lines(str(tmp_path), until_end=True, idle_timeout=60, poll=0.01)
    worker.join()
    lines = lines_of(out.getvalue())
    assert printed == 8 and [f["runs"] for f in lines][-1] == "35-39"
    assert list(lines[0]) == LEVEL1_KEYS
    assert out.getvalue().splitlines()[-1].startswith(SUMMARY_PREFIX)
    assert os.path.getsize(tmp_path / "monitor.jsonl") > 0

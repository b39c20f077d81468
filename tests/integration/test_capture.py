"""Capture with real TensorFlow: ProfileContext on a plain ``Session`` loop.

Covers tracing, dumping and profiling on the loop, TensorFlow's auto-tracing
sampling, ``trace_next_step`` / ``dump_next_step``, the caller's own
RunOptions/RunMetadata, debug mode, the decorator, and failure handling: exact
restoration of the patched methods (also after exceptions), failing steps,
nesting, and errors logged once per kind. ``MonitoredTrainingSession``, the hook,
``tf_keras``, TensorFlow's loader and ``python -m tfprof_lite.run`` are in
``test_capture_hooks.py``. Every model is tiny.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")


import tfprof_lite  # noqa: E402
from tests.integration.capture_helpers import (  # noqa: E402
    QUIET,
    build_model,
    patched_attributes,
    session_loop,
    tf1,
)
from tfprof_lite.session.profile_context import ProfileContext  # noqa: E402

pytestmark = pytest.mark.tf


# ----------------------------------------------------------------- Session loop
def test_session_loop_traces_dumps_and_profiles(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with ProfileContext(tmp_path, trace_steps=[1, 2, 3], dump_steps=[3]) as pctx:
        assert patched_attributes() != pristine
        pctx.add_auto_profiling("scope", QUIET, [3])
        pctx.add_auto_profiling("op", QUIET, [2, 3])
        session_loop(model, 6)
    assert pctx.profiler is not None
    assert pctx.profiler.model.sorted_steps() == [1, 2, 3]
    assert sorted(os.listdir(tmp_path)) == ["profile_3"]
    assert pctx.written_profiles == ["profile_3"]
    scope = pctx.get_profiles("scope")
    assert list(scope) == [3] and scope[3].total_exec_micros > 0
    assert sorted(pctx.get_profiles("op")) == [2, 3]
    with pytest.raises(ValueError, match="No autoprofiler for command: code"):
        pctx.get_profiles("code")
    loaded = tfprof_lite.Profiler.load(tmp_path / "profile_3")
    assert loaded.model.sorted_steps() == [1, 2, 3]
    assert "dense/MatMul" in loaded.model.names or "dense/w" in loaded.model.names


def test_auto_tracing_is_tensorflow_sampling(tmp_path: Path, pristine: Any) -> None:
    """No tracing during warm-up; new fetches are traced at once; reproducible."""
    traced = []
    for _ in range(2):
        model = build_model()
        with ProfileContext(tmp_path, dump_steps=[]) as pctx, tf1.Session(graph=model.graph) as s:
            s.run(model.init)
            for step in range(1, 40):
                fetch = model.loss if step == 25 else model.train_op
                s.run(fetch, feed_dict=model.feed())
        assert pctx.profiler is not None
        traced.append(pctx.profiler.model.sorted_steps())
    assert traced[0] == traced[1]
    assert traced[0][0] == 11  # first step after WARMUP_STEPS; train_op never seen
    assert 25 in traced[0]  # the loss fetch is new


def test_trace_next_and_dump_next_step(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with (
        ProfileContext(tmp_path, trace_steps=[], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)
        sess.run(model.train_op, feed_dict=model.feed())
        pctx.trace_next_step()
        pctx.dump_next_step()
        sess.run(model.train_op, feed_dict=model.feed())  # step 2
        sess.run(model.train_op, feed_dict=model.feed())
    assert pctx.profiler is not None
    assert pctx.profiler.model.sorted_steps() == [2]
    assert os.listdir(tmp_path) == ["profile_2"]


def test_caller_options_and_run_metadata_are_honoured(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    options = tf1.RunOptions(output_partition_graphs=True)
    metas = []
    with (
        ProfileContext(tmp_path, trace_steps=[2], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)
        for _ in range(3):
            metas.append(tf1.RunMetadata())
            sess.run(model.train_op, model.feed(), options=options, run_metadata=metas[-1])
    assert options.trace_level == tf1.RunOptions.NO_TRACE  # the caller's object is untouched
    assert all(meta.partition_graphs for meta in metas)  # filled on every step
    assert [bool(meta.step_stats.dev_stats) for meta in metas] == [False, True, False]
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [2]


def test_debug_mode_writes_run_metadata(
    tmp_path: Path, pristine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    model = build_model()
    with ProfileContext(tmp_path, trace_steps=[1], dump_steps=[1], debug=True):
        session_loop(model, 2)
    assert sorted(os.listdir(tmp_path)) == ["profile_1", "run_meta_1"]
    assert "step_stats" in (tmp_path / "run_meta_1").read_text()
    err = capsys.readouterr().err
    assert "debug: tracing step: 1\n" in err and "debug: dumping file at step: 1\n" in err


def test_decorator_and_disabled(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    pctx = ProfileContext(tmp_path, trace_steps=[1, 4], dump_steps=[4])

    @pctx
    def train() -> None:
        session_loop(model, 2)

    train()  # steps 0..2
    train()  # steps 3..5: the count continues
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1, 4]
    assert os.listdir(tmp_path) == ["profile_4"]
    off = ProfileContext(tmp_path / "off", enabled=False)
    with off:
        assert patched_attributes() == pristine
        session_loop(model, 1)
    assert off.profiler is None and not (tmp_path / "off").exists()


# ------------------------------------------------------------ failure handling
def test_exceptions_restore_session_run(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with pytest.raises(RuntimeError, match="boom"), ProfileContext(tmp_path):
        raise RuntimeError("boom")
    assert patched_attributes() == pristine
    with (
        ProfileContext(tmp_path, trace_steps=[1, 2], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(model.train_op)  # step 1: x not fed; the run's error passes through
        sess.run(model.train_op, feed_dict=model.feed())  # step 2
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [2]


def test_failing_untraced_step_is_counted(tmp_path: Path, pristine: Any) -> None:
    """An untraced step (the wrapper's short path) that raises still counts as a
    step and leaves the context usable: the step after next is traced."""
    model = build_model()
    with (
        ProfileContext(tmp_path, trace_steps=[3], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)  # step 0
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(model.train_op)  # step 1: x not fed
        sess.run(model.train_op, feed_dict=model.feed())  # step 2
        sess.run(model.train_op, feed_dict=model.feed())  # step 3: traced
        sess.run(model.train_op, feed_dict=model.feed())  # step 4
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [3]
    assert patched_attributes() == pristine


def test_nesting_is_refused(tmp_path: Path, pristine: Any) -> None:
    with ProfileContext(tmp_path):
        inner = ProfileContext(tmp_path / "inner")
        with pytest.raises(RuntimeError, match="cannot be nested"), inner:
            pass
    assert patched_attributes() == pristine


def test_profiling_errors_never_break_the_loop(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        ProfileContext(blocker, trace_steps=[1], dump_steps=[1, 2]) as pctx,
    ):
        session_loop(model, 3)
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1]
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert messages == [
        "tfprof_lite: profiling failed (training continues) while writing a profile_<step> "
        f"file: profile_dir {blocker} is not a directory; pass a directory path "
        "[repeats of this failure are counted, not logged]",
        "tfprof_lite: 2 profiling failures in total, training was not affected: "
        "writing a profile_<step> file (TfprofLiteError): 2",
    ]


def test_repeated_failures_are_logged_once_per_kind(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """30 traced steps whose debug file cannot be written and 6 failing dumps:
    one warning per kind, one summary with the counts at exit; every trace kept."""
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        ProfileContext(
            blocker / "sub", trace_steps=range(1, 31), dump_steps=range(1, 7), debug=True
        ) as pctx,
    ):
        session_loop(model, 35)
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == list(range(1, 31))
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert len(messages) == 3, messages
    assert "while writing a run_meta_<step> file: cannot create profile_dir" in messages[0]
    assert "while writing a profile_<step> file: cannot create profile_dir" in messages[1]
    assert messages[2] == (
        "tfprof_lite: 36 profiling failures in total, training was not affected: "
        "writing a run_meta_<step> file (TfprofLiteError): 30, "
        "writing a profile_<step> file (TfprofLiteError): 6"
    )


def test_failure_summary_per_block_kinds_logged_once(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """As a decorator: each call that failed ends with its own summary; a kind
    already described is not described again."""
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    pctx = ProfileContext(blocker, trace_steps=[1, 4], dump_steps=[1, 2, 4])
    train = pctx(lambda: session_loop(model, 2))
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        train()  # steps 0..2: dumps at 1 and 2 fail
        train()  # steps 3..5: the dump at 4 fails
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert [m.split(":")[1].strip() for m in messages] == [
        "profiling failed (training continues) while writing a profile_<step> file",
        "2 profiling failures in total, training was not affected",
        "1 profiling failure in total, training was not affected",
    ]
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1, 4]

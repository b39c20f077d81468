"""A capture that sees no graph-mode ``Session.run`` says why, with real TensorFlow.

Keras ``fit`` in eager mode (TF2's default) inside a ``ProfileContext`` and under
``python -m tfprof_lite.run`` never calls ``Session.run``: one warning line says the
program ran eagerly, what TF1-style capture needs and what to use instead
(TensorFlow's own profiler, whose XSpace file is where the line says). A
graph-mode session does not get that line; a run whose dump step was not reached
keeps its own reason.
"""

from __future__ import annotations

import glob
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

import numpy as np  # noqa: E402

from tfprof_lite.session.autostart import ENV_DIR  # noqa: E402
from tfprof_lite.session.profile_context import ProfileContext  # noqa: E402

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[2]
#: What the eager line must say (checked phrase by phrase, not against the constant).
EAGER_PHRASES = (
    "tfprof_lite: no profile: the program ran eagerly (no graph-mode Session.run was seen)",
    "TF1-style capture needs a graph-mode session (tf.compat.v1.Session, or "
    "tf.compat.v1.disable_eager_execution()",
    "tf.profiler.experimental.start(LOGDIR) ... stop() writes "
    "LOGDIR/plugins/profile/<run>/<host>.xplane.pb",
    "TensorBoard(log_dir=D, profile_batch=...)",
    "then open it with `tfprof-lite overview LOGDIR`.",
)


def eager_lines(text: str) -> list[str]:
    """The lines of ``text`` that are the eager-mode note."""
    return [line for line in text.splitlines() if "the program ran eagerly (" in line]


def assert_eager_line(line: str) -> None:
    for phrase in EAGER_PHRASES:
        assert phrase in line


def keras_fit(steps: int = 2) -> None:
    """A tiny Keras model trained eagerly for ``steps`` batches."""
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    data = np.ones((4 * steps, 4), np.float32), np.ones((4 * steps, 2), np.float32)
    model.fit(*data, batch_size=4, epochs=1, verbose=0)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]


@pytest.fixture
def eager() -> None:
    if not tf.executing_eagerly():  # pragma: no cover - another test disabled eager mode
        pytest.skip("eager execution is disabled in this process")


def test_keras_fit_in_eager_mode_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, eager: None
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        ProfileContext(tmp_path / "prof", trace_steps=[0, 1], dump_on_exit=True) as pctx,
    ):
        keras_fit(steps=2)
    assert pctx.written_profiles == []
    assert not pctx.saw_session_run
    lines = eager_lines("\n".join(warnings_of(caplog)))
    assert len(lines) == 1 and len(warnings_of(caplog)) == 1
    assert_eager_line(lines[0])


def test_eager_note_once_per_context_and_not_after_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, eager: None
) -> None:
    decorated = ProfileContext(tmp_path / "a", dump_steps=[])(lambda: tf.constant(1.0) + 1.0)
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        decorated()
        decorated()
    assert len(eager_lines("\n".join(warnings_of(caplog)))) == 1
    caplog.clear()
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        pytest.raises(ZeroDivisionError),
        ProfileContext(tmp_path / "b", dump_steps=[]),
    ):
        _ = 1 / 0
    assert warnings_of(caplog) == []


def test_graph_mode_session_gets_no_note(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        y = tf.reduce_sum(x * 2.0)
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        ProfileContext(tmp_path / "prof", trace_steps=[1], dump_steps=[]) as pctx,
        tf1.Session(graph=graph) as sess,
    ):
        for _ in range(2):
            sess.run(y, {x: np.ones((2, 4), np.float32)})
    assert pctx.saw_session_run
    assert warnings_of(caplog) == []


def test_graph_mode_without_runs_says_so_without_eager_advice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        tf.Graph().as_default(),
        ProfileContext(tmp_path / "prof", dump_steps=[]),
    ):
        tf.constant(1.0)
    assert warnings_of(caplog) == [
        "tfprof_lite: no profile: no Session.run was seen while profiling was active."
    ]


def test_tensorflow_profiler_writes_where_the_note_says(tmp_path: Path, eager: None) -> None:
    logdir = tmp_path / "logdir"
    tf.profiler.experimental.start(str(logdir))
    try:
        keras_fit(steps=2)
    finally:
        tf.profiler.experimental.stop()
    assert glob.glob(str(logdir / "plugins" / "profile" / "*" / "*.xplane.pb"))


# ------------------------------------------------------- python -m tfprof_lite.run
EAGER_SCRIPT = """
    import numpy as np
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), batch_size=4, verbose=0)
    print("trained")
"""

GRAPH_SCRIPT = """
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        y = tf.reduce_sum(tf.ones([2, 2]))
    with tf1.Session(graph=graph) as sess:
        for _ in range(3):
            sess.run(y)
    print("trained")
"""


def run_script(tmp_path: Path, source: str, **env_vars: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(ROOT), **env_vars)
    env[ENV_DIR] = "out"
    proc = subprocess.run(
        [sys.executable, "-m", "tfprof_lite.run", "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "trained" in proc.stdout
    return proc


def test_run_on_an_eager_keras_script_says_why(tmp_path: Path) -> None:
    proc = run_script(tmp_path, EAGER_SCRIPT)
    lines = eager_lines(proc.stderr)
    assert len(lines) == 1
    assert_eager_line(lines[0])
    assert (
        "tfprof_lite: profiles in out: none (the program ran eagerly: "
        "no graph-mode Session.run was seen)\n"
    ) in proc.stderr
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_run_with_runs_but_no_dump_step_keeps_its_reason(tmp_path: Path) -> None:
    proc = run_script(
        tmp_path, GRAPH_SCRIPT, TFPROF_LITE_DUMP_STEPS="", TFPROF_LITE_DUMP_ON_EXIT="0"
    )
    assert eager_lines(proc.stderr) == []
    assert "no profile" not in proc.stderr
    assert (
        "tfprof_lite: profiles in out: none (Session.run calls were seen, "
        "but no dump step was reached)\n"
    ) in proc.stderr


def test_run_without_tensorflow_says_profiling_never_started(tmp_path: Path) -> None:
    proc = run_script(tmp_path, 'print("trained")')
    assert eager_lines(proc.stderr) == []
    assert (
        "tfprof_lite: profiles in out: none (TensorFlow was not imported, "
        "so profiling never started)\n"
    ) in proc.stderr

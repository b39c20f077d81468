"""Real XSpace captures for the XSpace tests: TensorFlow 2.21 on CPU, and the JAX GPU samples.

Each TensorFlow capture runs a small program in a child process (the profiler is
process-wide, and one TF import per capture keeps them independent), writes a
TensorBoard logdir ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb`` and, beside
the logdir, ``host_steps.json``: what the host measured around each step
(``time.perf_counter`` for the wall time, ``time.time_ns`` for the absolute
start and end, so steps can be matched with the profile's clock).

Cases (:data:`TF_CASES`):

* ``keras_fit``: Keras 3 ``model.fit`` profiled the way its ``TensorBoard``
  callback does with ``profile_batch=(2, 6)`` (batches 2 to 6, counted from 1):
  ``tf.profiler.experimental.start/stop`` and each batch inside
  ``Trace("Profiled batch", step_num=batch)``, no ``_r`` (the callback itself
  needs the ``tensorboard`` package for its summaries, which ``tensorflow-cpu``
  does not install).
* ``session_markers``: a TF1 ``tf.compat.v1.Session`` loop under
  ``tf.profiler.experimental.start/stop``, each step inside
  ``tf.profiler.experimental.Trace("train", step_num=i, _r=1)``.
* ``session_plain``: the same loop without markers.
* ``input_bound``: a ``tf.data`` pipeline whose ``py_function`` sleeps
  :data:`INPUT_SLEEP_S` per element (no prefetch), feeding a ``tf.function``
  train step, each step inside a ``train`` marker.

Use :func:`tf_capture` (made once per test run, xdist workers included; set
``TFPROF_LITE_XSPACE_CACHE`` to a folder to keep the captures across runs) or
the session fixtures below (import them into a test module or a conftest), and
:func:`jax_sample` for the H100 files in ``../shared/data/xspace`` beside the
checkout (missing: skipped, or an error under ``CI=true``).

Run ``python -m tests.integration.xspace_captures CASE OUTDIR`` to make one by hand.
"""

from __future__ import annotations

import atexit
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.stepcols import skip_or_fail

#: The TensorFlow capture cases, in the order the tests use them.
TF_CASES = ("keras_fit", "session_markers", "session_plain", "input_bound")
#: The JAX GPU samples in ``shared/data/xspace``.
JAX_CASES = ("jax_h100_mlp", "jax_h100_transformer_bf16")
#: Steps each Session / tf.data case runs under the profiler.
STEPS = 8
#: Keras: batches in the epoch, and the traced range of the TensorBoard callback.
KERAS_BATCHES = 8
KERAS_PROFILE_BATCH = (2, 6)
#: Seconds each tf.data element sleeps in the input-bound case.
INPUT_SLEEP_S = 0.02
#: The host-measurement file written beside each logdir.
HOST_STEPS = "host_steps.json"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_ENV = "TFPROF_LITE_XSPACE_CACHE"
CHILD_TIMEOUT_S = 300


@dataclasses.dataclass(frozen=True)
class HostStep:
    """One step as the host measured it."""

    step: int
    wall_s: float
    start_ns: int
    end_ns: int
    traced: bool


@dataclasses.dataclass(frozen=True)
class XCapture:
    """A capture on disk: its logdir, run directory, XSpace file and host steps."""

    name: str
    logdir: Path
    run_dir: Path
    xplane: Path
    steps: tuple[HostStep, ...]
    markers: bool
    meta: dict[str, Any]

    @property
    def traced_steps(self) -> tuple[HostStep, ...]:
        """The steps run while the profiler was on."""
        return tuple(s for s in self.steps if s.traced)


# ---------------------------------------------------------------- the child programs


def _timed(fn: Callable[[], object]) -> tuple[float, int, int]:
    start_ns, t0 = time.time_ns(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, start_ns, time.time_ns()


def _step_record(step: int, timing: tuple[float, int, int], traced: bool) -> dict[str, Any]:
    wall, start_ns, end_ns = timing
    return {"step": step, "wall_s": wall, "start_ns": start_ns, "end_ns": end_ns, "traced": traced}


def _session_graph(tf: Any) -> tuple[Any, Any, Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        x = tf.compat.v1.placeholder(tf.float32, [64, 128], name="x")
        with tf.compat.v1.variable_scope("dense"):
            w = tf.compat.v1.get_variable("w", [128, 64])
            hidden = tf.nn.relu(tf.matmul(x, w))
        with tf.compat.v1.variable_scope("out"):
            v = tf.compat.v1.get_variable("v", [64, 10])
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, v)))
        train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    return graph, x, train, init


def _run_session(tf: Any, logdir: str, markers: bool) -> list[dict[str, Any]]:
    import numpy as np

    graph, x, train, init = _session_graph(tf)
    feed = {x: np.random.default_rng(0).standard_normal((64, 128)).astype("float32")}
    records = []
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(train, feed)  # warm-up, not traced
        tf.profiler.experimental.start(logdir)
        for i in range(STEPS):
            if markers:
                with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                    timing = _timed(lambda: sess.run(train, feed))
            else:
                timing = _timed(lambda: sess.run(train, feed))
            records.append(_step_record(i, timing, True))
        tf.profiler.experimental.stop()
    return records


def _run_keras(tf: Any, logdir: str) -> list[dict[str, Any]]:
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    data = rng.standard_normal((32 * KERAS_BATCHES, 64)).astype("float32")
    labels = rng.integers(0, 10, 32 * KERAS_BATCHES)
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    first, last = KERAS_PROFILE_BATCH
    records: list[dict[str, Any]] = []

    class ProfiledSteps(keras.callbacks.Callback):  # type: ignore[misc]
        """What Keras 3's TensorBoard(profile_batch=...) does, plus host step times."""

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.traced = first <= batch + 1 <= last  # Keras counts batches from 1 here
            if batch + 1 == first:
                tf.profiler.experimental.start(logdir)
            if self.traced:
                self.trace = tf.profiler.experimental.Trace("Profiled batch", step_num=batch)
                self.trace.__enter__()
            self.t0, self.start_ns = time.perf_counter(), time.time_ns()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            wall = time.perf_counter() - self.t0
            records.append(_step_record(batch, (wall, self.start_ns, time.time_ns()), self.traced))
            if self.traced:
                self.trace.__exit__(None, None, None)
            if batch + 1 == last:
                tf.profiler.experimental.stop()

    model.fit(data, labels, batch_size=32, epochs=1, verbose=0, callbacks=[ProfiledSteps()])
    return records


def _run_input_bound(tf: Any, logdir: str) -> list[dict[str, Any]]:
    def slow_element(i: Any) -> Any:
        time.sleep(INPUT_SLEEP_S)
        return tf.fill([32, 64], tf.cast(i, tf.float32) / 100.0)

    def load(i: Any) -> Any:
        out = tf.py_function(slow_element, [i], tf.float32)
        out.set_shape([32, 64])
        return out

    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False  # no prefetch at all
    dataset = tf.data.Dataset.range(STEPS + 2).map(load).with_options(options)
    weights = tf.Variable(tf.ones([64, 16]) / 64.0)

    @tf.function
    def train_step(batch: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(batch, weights)))
        weights.assign_sub(0.01 * tape.gradient(loss, weights))
        return loss

    iterator = iter(dataset)
    train_step(next(iterator))  # warm-up (traces the function), not profiled
    records = []
    tf.profiler.experimental.start(logdir)
    for i in range(STEPS):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            timing = _timed(lambda: train_step(next(iterator)))
        records.append(_step_record(i, timing, True))
    tf.profiler.experimental.stop()
    return records


def run_case(case: str, out_dir: Path) -> None:
    """Make capture ``case`` in ``out_dir`` (``logdir/`` and ``host_steps.json``); child side."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    logdir = str(out_dir / "logdir")
    runners: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "keras_fit": lambda: _run_keras(tf, logdir),
        "session_markers": lambda: _run_session(tf, logdir, markers=True),
        "session_plain": lambda: _run_session(tf, logdir, markers=False),
        "input_bound": lambda: _run_input_bound(tf, logdir),
    }
    records = runners[case]()
    meta = {
        "case": case,
        "tf": tf.__version__,
        "markers": case != "session_plain" and case != "keras_fit",
    }
    meta["steps"] = records
    (out_dir / HOST_STEPS).write_text(json.dumps(meta, indent=1))


# ---------------------------------------------------------------- the parent side

_CACHE: dict[str, XCapture] = {}


def _cache_root() -> Path:
    """``TFPROF_LITE_XSPACE_CACHE``; else one folder per test run, shared by the
    pytest-xdist workers of that run (``PYTEST_XDIST_TESTRUNUID``); else a
    temporary folder removed at exit."""
    configured = os.environ.get(CACHE_ENV)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if configured or run_id:
        root = Path(configured or Path(tempfile.gettempdir()) / f"tfprof_lite_xspace_{run_id}")
        root.mkdir(parents=True, exist_ok=True)
        return root
    root = Path(tempfile.mkdtemp(prefix="tfprof_lite_xspace_"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


_ROOT: list[Path] = []


def _root() -> Path:
    if not _ROOT:
        _ROOT.append(_cache_root())
    return _ROOT[0]


def load_capture(name: str, out_dir: Path) -> XCapture:
    """The capture written in ``out_dir`` (its single ``*.xplane.pb`` and host steps)."""
    files = sorted((out_dir / "logdir").glob("plugins/profile/*/*.xplane.pb"))
    if len(files) != 1:
        raise AssertionError(f"{name}: expected one .xplane.pb under {out_dir}, found {files}")
    meta = json.loads((out_dir / HOST_STEPS).read_text())
    steps = tuple(HostStep(**record) for record in meta["steps"])
    return XCapture(
        name, out_dir / "logdir", files[0].parent, files[0], steps, bool(meta["markers"]), meta
    )


def _make(case: str, out_dir: Path) -> None:
    pytest.importorskip("tensorflow")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    command = [sys.executable, "-m", "tests.integration.xspace_captures", case, str(out_dir)]
    done = subprocess.run(
        command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
    )
    if done.returncode != 0:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise AssertionError(f"capture {case} failed ({done.returncode}):\n{done.stderr[-4000:]}")


def tf_capture(case: str) -> XCapture:
    """Capture ``case`` (one of :data:`TF_CASES`), made once per test run in a child process."""
    if case not in TF_CASES:
        raise ValueError(f"unknown capture {case!r}; one of {TF_CASES}")
    if case in _CACHE:
        return _CACHE[case]
    out_dir = _root() / case
    with open(_root() / f"{case}.lock", "w") as lock:  # one maker per case across workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out_dir / HOST_STEPS).exists():
            _make(case, out_dir)
    _CACHE[case] = load_capture(case, out_dir)
    return _CACHE[case]


def _checkouts() -> list[Path]:
    """This checkout, and the main one when this is a git worktree (``.git`` is a file)."""
    found = [REPO_ROOT]
    marker = REPO_ROOT / ".git"
    if marker.is_file():
        text = marker.read_text().strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            if gitdir.parent.name == "worktrees":
                found.append(gitdir.parents[2])
    return found


def shared_xspace_dir() -> Path:
    """``shared/data/xspace`` beside the checkout (``TFPROF_LITE_SHARED_DATA`` overrides)."""
    configured = os.environ.get("TFPROF_LITE_SHARED_DATA")
    if configured:
        return Path(configured) / "xspace"
    candidates = [root.parent / "shared" / "data" / "xspace" for root in _checkouts()]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def jax_sample(case: str) -> XCapture:
    """JAX H100 sample ``case`` (read-only files); skipped when absent, an error under CI=true."""
    if case not in JAX_CASES:
        raise ValueError(f"unknown JAX sample {case!r}; one of {JAX_CASES}")
    folder = shared_xspace_dir() / case
    files = sorted(folder.glob("plugins/profile/*/*.xplane.pb"))
    if len(files) != 1:
        skip_or_fail(f"the JAX sample {folder} is missing (shared/data/xspace beside the checkout)")
    meta = json.loads((folder / "meta.json").read_text())
    traced = set(meta["traced_steps"])
    steps = tuple(
        HostStep(i, wall, 0, 0, i in traced) for i, wall in enumerate(meta["host_step_s"])
    )
    return XCapture(
        case, folder, files[0].parent, files[0], steps, bool(meta["step_markers"]), meta
    )


def xspace_case(name: str) -> XCapture:
    """Any capture by name: a TF case or a JAX sample."""
    return jax_sample(name) if name in JAX_CASES else tf_capture(name)


@pytest.fixture(scope="session", params=TF_CASES)
def tf_xspace(request: pytest.FixtureRequest) -> XCapture:
    """Each TensorFlow 2.21 CPU capture in turn (made once per session)."""
    return tf_capture(request.param)


@pytest.fixture(scope="session", params=JAX_CASES)
def jax_xspace(request: pytest.FixtureRequest) -> XCapture:
    """Each JAX H100 sample in turn."""
    return jax_sample(request.param)


if __name__ == "__main__":
    run_case(sys.argv[1], Path(sys.argv[2]))

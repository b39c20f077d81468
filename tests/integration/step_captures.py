"""Real captures for the step-finding tests, each made in a child process.

* :func:`jax_loop`: ``tests/jax_step_capture.py`` (a JAX CPU loop with or
  without ``StepTraceAnnotation``, a staging program run twice per step,
  irregular steps, or programs run once each), profiled mid-loop;
* :func:`keras_fit`: Keras 3 ``model.fit`` of a small CNN on TF 2.21's CPU,
  profiled with ``tf.profiler.experimental.start/stop`` around the whole
  ``fit`` (no batch markers) after an untraced ``fit`` that builds the
  functions; a callback times every batch from the end of the previous one
  (``time.perf_counter()`` in ``on_train_batch_end``; the first batch from
  ``on_train_begin``) and writes ``capture.json`` beside the logdir.

Each capture is made once per test process (xdist workers make their own),
under a temporary folder removed at exit. Missing JAX or TensorFlow: skipped,
or an error under ``CI=true`` (:func:`tests.stepcols.skip_or_fail`).

Run ``python -m tests.integration.step_captures keras OUTDIR`` to make the
Keras capture by hand.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.keras_timer import batch_timer
from tests.stepcols import skip_or_fail

REPO_ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 300
#: Keras: batches of the traced epoch, and the batch size.
KERAS_BATCHES, KERAS_BATCH = 12, 32


@dataclasses.dataclass(frozen=True)
class Capture:
    """A capture on disk: its XSpace file and what the loop measured.

    ``seconds[i]``: the loop's time for iteration ``i`` (from the end of the
    previous one); ``traced``: the iterations run while the profiler was on.
    """

    xplane: Path
    seconds: tuple[float, ...]
    traced: tuple[int, ...]
    meta: dict[str, Any]


_MADE: dict[str, Capture] = {}
_ROOT: list[Path] = []


def _root() -> Path:
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="tfprof_lite_steps_")))
        atexit.register(shutil.rmtree, _ROOT[0], ignore_errors=True)
    return _ROOT[0]


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        skip_or_fail(f"{module} is not installed: the step captures need it")


def _child(args: list[str], name: str, after: tuple[str, ...] = ()) -> Path:
    """Run ``python ARGS OUT AFTER`` into a new folder OUT; returns OUT."""
    out = _root() / name
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")  # fmt: skip
    done = subprocess.run([sys.executable, *args, str(out), *after], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"capture {name} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return out


def _load(out: Path, xplane: Path) -> Capture:
    meta = json.loads((out / "capture.json").read_text())
    return Capture(xplane, tuple(meta["step_seconds"]), tuple(meta["traced"]), meta)


def jax_loop(mode: str) -> Capture:
    """The JAX CPU loop of ``tests/jax_step_capture.py`` in ``mode``."""
    key = f"jax_{mode}"
    if key not in _MADE:
        _require("jax")
        out = _child([str(REPO_ROOT / "tests" / "jax_step_capture.py")], key, (mode,))
        _MADE[key] = _load(out, Path(json.loads((out / "capture.json").read_text())["xspace"]))
    return _MADE[key]


def keras_fit() -> Capture:
    """The Keras ``fit`` capture (see the module docstring)."""
    if "keras" not in _MADE:
        _require("tensorflow")
        out = _child(["-m", "tests.integration.step_captures", "keras"], "keras")
        (xplane,) = sorted((out / "logdir").glob("plugins/profile/*/*.xplane.pb"))
        _MADE["keras"] = _load(out, xplane)
    return _MADE["keras"]


# ---------------------------------------------------------------- the Keras child


def _keras(out: Path) -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((KERAS_BATCHES * KERAS_BATCH, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, len(x))
    model = keras.Sequential([
        keras.Input((32, 32, 3)),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
    ])  # fmt: skip
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=KERAS_BATCH, epochs=1, verbose=0)  # builds the functions
    seconds: list[float] = []

    tf.profiler.experimental.start(str(out / "logdir"))
    model.fit(x, y, batch_size=KERAS_BATCH, epochs=1, verbose=0, callbacks=[batch_timer(seconds)])
    tf.profiler.experimental.stop()
    summary = {"tf": tf.__version__, "step_seconds": seconds, "traced": list(range(len(seconds)))}
    (out / "capture.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    if sys.argv[1] == "keras":
        _keras(Path(sys.argv[2]))

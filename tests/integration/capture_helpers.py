"""Helpers of the capture tests with real TensorFlow (``test_capture.py``,
``test_capture_hooks.py``, ``test_tf_suite_parity.py``): a tiny TF1 model with a global
step, the session methods a ``ProfileContext`` replaces (``conftest.py``'s ``pristine``
fixture checks they are restored),
a plain ``Session`` loop and TensorFlow's own loader of a dumped profile (``_tf_text``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import numpy as np  # noqa: E402
from tensorflow.python.client import session as tf_session  # noqa: E402
from tensorflow.python.profiler import model_analyzer  # noqa: E402

import tfprof_lite  # noqa: E402

tf1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[2]
BUILDER = tfprof_lite.ProfileOptionBuilder
QUIET = dict(BUILDER.time_and_memory(), output="none")


@dataclasses.dataclass
class Model:
    """A tiny TF1 regression model with a global step."""

    graph: Any
    x: Any
    loss: Any
    train_op: Any
    init: Any

    def feed(self) -> dict[Any, Any]:
        return {self.x: np.ones((8, 4), np.float32)}


def build_model() -> Model:
    """Global step, one dense layer, squared loss, SGD that increments the step."""
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf1.train.get_or_create_global_step()
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        with tf1.variable_scope("dense"):
            w = tf1.get_variable("w", [4, 2])
            y = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(y), name="loss")
        train_op = tf1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
        init = tf1.global_variables_initializer()
    return Model(graph, x, loss, train_op, init)


def patched_attributes() -> list[Any]:
    """The methods a ProfileContext replaces, as stored in the class dicts."""
    base = tf_session.BaseSession
    return [
        base.__dict__["run"],
        base.__dict__["_make_callable_from_options"],
        base._Callable.__dict__["__call__"],
    ]


def session_loop(model: Model, steps: int, **kwargs: Any) -> None:
    """Step 0 is the initializer, steps 1..steps train."""
    with tf1.Session(graph=model.graph) as sess:
        sess.run(model.init)
        for _ in range(steps):
            sess.run(model.train_op, feed_dict=model.feed(), **kwargs)


def _tf_text(path: Path, cmd: str, options: dict[str, Any], out: Path) -> str:
    """TensorFlow's tfprof loaded from ``path`` (ProfilerFromFile), one view as text."""
    from tests.integration import tf_oracle

    tf_oracle.close_current()
    try:
        tf_oracle._pywrap.ProfilerFromFile(str(path))
        opts = model_analyzer._build_options(dict(options, output=f"file:outfile={out}"))
        raw = tf_oracle._pywrap.Profile(cmd.encode(), opts.SerializeToString())
        assert raw
    finally:
        tf_oracle.close_current()
    return out.read_text()

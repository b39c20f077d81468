"""``Profiler(graph_def, op_log)`` given TensorFlow's messages equals TensorFlow's tfprof.

The inputs are what a user holds: a real graph's ``as_graph_def(add_shapes=True)``
and its default op log with call stacks (``tfprof_logger.merge_default_with_oplog``),
as TensorFlow's message objects. TF's C++ profiler is fed them the way its own
``Profiler`` does (``NewProfiler(graph_def.SerializeToString(),
op_log.SerializeToString())``, then ``AddStep`` per captured step); ours is
``tfprof_lite.Profiler(graph_def, op_log)`` + ``add_step``. The messages are
changed after our constructor returns and before anything is read (our inputs
are decoded on the first read): every view's ``-output file`` text and returned
message still equal TF's, byte for byte.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

pytest.importorskip("tensorflow")

from tensorflow.python.profiler import tfprof_logger  # noqa: E402

import tfprof_lite  # noqa: E402
from tests.handmade import HandCase  # noqa: E402
from tests.integration import hand_oracle as ho  # noqa: E402
from tests.integration import tf_models  # noqa: E402
from tfprof_lite.options.builder import ProfileOptionBuilder as B  # noqa: E402

pytestmark = pytest.mark.tf

OPTIONS = {
    "default": lambda: B().build(),
    "float_ops": lambda: B.float_operation(),
    "params": lambda: B.trainable_variables_parameter(),
    "time_and_memory": lambda: B.time_and_memory(),
}


@functools.cache
def _inputs() -> tuple[HandCase, Any, Any]:
    """TF's oracle case (serialized messages and steps) and the two messages."""
    capture = tf_models.dense_net()
    graph_def = capture.graph.as_graph_def(add_shapes=True)
    op_log = tfprof_logger.merge_default_with_oplog(capture.graph)
    case = HandCase(
        name="dense_net_messages",
        graph_def=graph_def.SerializeToString(),
        run_metas=capture.run_metas,
        op_log=op_log.SerializeToString(),
    )
    return case, graph_def, op_log


@functools.cache
def _ours() -> tfprof_lite.Profiler:
    """Ours from the message objects, which are changed right after (copies, so
    the cached inputs stay as TF gets them)."""
    case, graph_def, op_log = _inputs()
    graph_msg, log_msg = type(graph_def)(), type(op_log)()
    graph_msg.CopyFrom(graph_def)
    log_msg.CopyFrom(op_log)
    prof = tfprof_lite.Profiler(graph_msg, log_msg)
    graph_msg.node.add(name="added_later", op="Late")
    log_msg.log_entries[0].float_ops = 123456789
    log_msg.log_entries.add(name="added_later", types=["late"])
    del log_msg.log_entries[1]
    for step, data in case.run_metas:
        prof.add_step(step, data)
    return prof


def test_inputs_reach_what_they_are_for() -> None:
    """The op log carries call stacks and FLOPs; ours left its inputs pending."""
    case, graph_def, op_log = _inputs()
    assert any(e.code_def.traces for e in op_log.log_entries)
    assert any(e.float_ops for e in op_log.log_entries)
    prof = tfprof_lite.Profiler(graph_def, op_log)
    assert prof._ingest._pending is not None
    assert len(prof.model) == len(graph_def.node) and prof.model.has_trace


@pytest.mark.parametrize("view", sorted(ho.METHODS))
@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_views_equal_tensorflow(view: str, name: str) -> None:
    case = _inputs()[0]
    text = ho._compare(_ours(), ho.hand_oracle_for(case), view, OPTIONS[name]())
    assert text

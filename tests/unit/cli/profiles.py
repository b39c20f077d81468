"""Small synthetic profiles for the CLI tests, built without TensorFlow.

:func:`graph_def`, :func:`run_meta` and :func:`op_log` build the messages with
tfprof_lite's own proto classes (wire-compatible with TensorFlow's);
:func:`profile_bytes` turns them into a saved ``profile_<step>`` (ProfileProto
bytes) and :func:`write_inputs` writes every input form the CLI accepts into a
directory. ``variant="b"`` is a second version of the model for the diff tests:
``dense1/MatMul`` is slower, ``dense2/Relu`` is gone and ``dense3/MatMul`` is new.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from tfprof_lite import Profiler
from tfprof_lite.proto import messages as pb

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
#: A node name that must stay text in every output (HTML report, tables).
SCRIPT_NAME = "<script>alert(1)</script>"
#: A node name holding the sequence that ends an HTML script element.
CLOSE_NAME = "odd/</script><b>x"


@dataclass(frozen=True)
class Op:
    """One graph node: name, op type, inputs, variable shape, base time, bytes."""

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    shape: tuple[int, ...] | None = None
    micros: int = 0
    nbytes: int = 0


def _ops(variant: str) -> list[Op]:
    slow = 3 if variant == "b" else 1
    ops = [
        Op("x", "Placeholder", micros=2, nbytes=256),
        Op("dense1/w", "VariableV2", shape=(4, 8), micros=3),
        Op("dense1/MatMul", "MatMul", ("x", "dense1/w"), micros=40 * slow, nbytes=1024),
        Op("dense1/Relu", "Relu", ("dense1/MatMul",), micros=10, nbytes=1024),
        Op("dense2/w", "VariableV2", shape=(8, 2), micros=3),
        Op("dense2/MatMul", "MatMul", ("dense1/Relu", "dense2/w"), micros=30, nbytes=512),
        Op(SCRIPT_NAME, "Identity", ("dense2/MatMul",), micros=5, nbytes=64),
        Op(CLOSE_NAME, "Identity", ("dense2/MatMul",), micros=4, nbytes=64),
    ]
    if variant == "b":
        ops.append(Op("dense3/MatMul", "MatMul", ("dense1/Relu", "dense2/w"), micros=25))
    else:
        ops.append(Op("dense2/Relu", "Relu", ("dense2/MatMul",), micros=7, nbytes=512))
    return ops


def graph_def(variant: str = "a") -> Any:
    """The GraphDef of the synthetic model."""
    msg = pb.GraphDef()
    for op in _ops(variant):
        node = msg.node.add(name=op.name, op=op.op)
        node.input.extend(op.inputs)
        if op.shape is not None:
            dims = node.attr["shape"].shape
            for size in op.shape:
                dims.dim.add().size = size
    return msg


def run_meta(step: int, variant: str = "a") -> Any:
    """One step's RunMetadata: every op runs once, a little slower each step."""
    msg = pb.RunMetadata()
    dev = msg.step_stats.dev_stats.add(device=CPU)
    start = 1000 + 10_000 * step
    for op in _ops(variant):
        stats = dev.node_stats.add(
            node_name=op.name,
            all_start_micros=start,
            op_end_rel_micros=op.micros + step,
            all_end_rel_micros=op.micros + step,
        )
        if op.nbytes:
            used = stats.memory.add(allocator_name="cpu")
            used.total_bytes = op.nbytes
            used.peak_bytes = op.nbytes
            used.live_bytes = op.nbytes // 2
            out = stats.output.add(slot=0)
            out.tensor_description.allocation_description.requested_bytes = op.nbytes
            out.tensor_description.allocation_description.allocated_bytes = op.nbytes
        start += op.micros + step
    return msg


def op_log(variant: str = "a") -> Any:
    """An op log giving every op a two-frame code trace (``model.py`` -> ``layer``)."""
    msg = pb.OpLogProto()
    strings = {"train.py": 0, "main": 1, "model.py": 2, "layer": 3, "main()": 4, "x()": 5}
    for text, sid in strings.items():
        msg.id_to_string[sid] = text
    for i, op in enumerate(_ops(variant)):
        entry = msg.log_entries.add(name=op.name)
        if op.op == "MatMul":
            entry.float_ops = 64
        outer = entry.code_def.traces.add(file_id=0, lineno=10, function_id=1, line_id=4)
        outer.func_start_line = 1
        inner = entry.code_def.traces.add(file_id=2, lineno=20 + i, function_id=3, line_id=5)
        inner.func_start_line = 15
    return msg


def profiler(steps: tuple[int, ...] = (0, 1, 2), variant: str = "a") -> Profiler:
    """A Profiler holding the synthetic model and ``steps``."""
    prof = Profiler(graph_def(variant), op_log=op_log(variant))
    for step in steps:
        prof.add_step(step, run_meta(step, variant))
    return prof


def profile_bytes(steps: tuple[int, ...] = (0, 1, 2), variant: str = "a") -> bytes:
    """A saved profile (ProfileProto bytes) of the synthetic model."""
    return profiler(steps, variant).serialize_to_string()


def write_profile(path: Path, steps: tuple[int, ...] = (0, 1, 2), variant: str = "a") -> Path:
    """Writes :func:`profile_bytes` to ``path`` and returns it."""
    path.write_bytes(profile_bytes(steps, variant))
    return path


@dataclass(frozen=True)
class Inputs:
    """Paths of the raw inputs written by :func:`write_inputs`."""

    graph: Path
    graph_text: Path
    run_metas: tuple[Path, ...]
    run_meta_text: Path
    op_log: Path


def write_inputs(directory: Path, steps: int = 2, variant: str = "a") -> Inputs:
    """Writes GraphDef (binary and text), RunMetadata files and an op log."""
    graph = graph_def(variant)
    (directory / "graph.pb").write_bytes(graph.SerializeToString())
    (directory / "graph.pbtxt").write_text(text_format.MessageToString(graph))
    metas = []
    for step in range(steps):
        path = directory / f"run_meta_{step}.pb"
        path.write_bytes(run_meta(step, variant).SerializeToString())
        metas.append(path)
    (directory / "run_meta_0.pbtxt").write_text(text_format.MessageToString(run_meta(0, variant)))
    (directory / "op_log.pb").write_bytes(op_log(variant).SerializeToString())
    return Inputs(
        graph=directory / "graph.pb",
        graph_text=directory / "graph.pbtxt",
        run_metas=tuple(metas),
        run_meta_text=directory / "run_meta_0.pbtxt",
        op_log=directory / "op_log.pb",
    )


#: The warm-up model's device: a long name, as TensorFlow's are.
WARMUP_DEVICE = "/job:worker/replica:0/task:0/device:CPU:0"
#: The warm-up model's code: a frame far wider than the report's name column.
WARMUP_LINE = "h = tf.nn.relu(tf.matmul(x, w1) + b1) + a_long_expression_that_keeps_going_on"
#: FLOPs of each of the warm-up model's MatMuls.
WARMUP_FLOPS = 85_030_000
_WARMUP_OPS = (
    ("x", "Placeholder", ()),
    ("dense/w", "VariableV2", ()),
    ("dense/MatMul", "MatMul", ("x", "dense/w")),
    ("gradients/dense/MatMul_grad/MatMul", "MatMul", ("x",)),
)


def _warmup_meta(step: int, warmup: int) -> Any:
    """Step ``step`` of :func:`warmup_profiler`: ~4.5 ms of ops, ``warmup`` times
    slower in step 0; every op records 1000 bytes on the CPU."""
    msg = pb.RunMetadata()
    dev = msg.step_stats.dev_stats.add(device=WARMUP_DEVICE)
    start = 1000 + 100_000 * step
    for name, op, _ in _WARMUP_OPS:
        micros = (2000 if op == "MatMul" else 100) + (step * 37 % 11) * 25
        micros *= warmup if step == 0 else 1
        stats = dev.node_stats.add(
            node_name=name,
            all_start_micros=start,
            op_end_rel_micros=micros,
            all_end_rel_micros=micros,
        )
        stats.memory.add(allocator_name="cpu").total_bytes = 1000
        start += micros
    return msg


def warmup_profiler(steps: int = 50, warmup: int = 9) -> Profiler:
    """A profile whose step 0 is a warm-up (``warmup`` times the others, ~4.5 ms),
    with a forward MatMul and its gradient under one long code frame, MatMuls of
    :data:`WARMUP_FLOPS` and one long device name (the report's readability cases)."""
    graph = pb.GraphDef()
    log = pb.OpLogProto()
    texts = ("/home/user/project/model/train_loop.py", "build_model", WARMUP_LINE)
    for sid, text in enumerate(texts):
        log.id_to_string[sid] = text
    for name, op, inputs in _WARMUP_OPS:
        graph.node.add(name=name, op=op).input.extend(inputs)
        entry = log.log_entries.add(name=name)
        entry.float_ops = WARMUP_FLOPS if op == "MatMul" else 0
        entry.code_def.traces.add(file_id=0, lineno=54, function_id=1, line_id=2)
    prof = Profiler(graph, op_log=log)
    for step in range(steps):
        prof.add_step(step, _warmup_meta(step, warmup))
    return prof

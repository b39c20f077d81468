"""ProfileModel -> ProfileProto: writing the ``profile_<step>`` file format.

:func:`encode` builds the message of everything tfprof keeps (nodes, op types,
devices, code traces, attributes and per-step executions) so TensorFlow's
``ProfilerFromFile`` and ``tfprof --profile_path`` read our files.
:func:`encode_bytes` gives its wire bytes: through the optional native encoder
(``tfprof_lite._native._profileencode``, fed the model's node lists and each
step's columns sorted by node) when it is built and ``TFPROF_LITE_PURE_PYTHON``
is not set, else by serializing :func:`encode`'s message. Both parse to equal
messages (map entries may come in another order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfprof_lite._native import load
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU, MEM_VALUES, MemoryExec, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.steps import pure_forced
from tfprof_lite.proto.wire import int_field, len_field

__all__ = ["encode", "encode_bytes"]


def _trace_message(msg: Any, trace: list[CodeFrame]) -> None:
    for frame in trace:
        t = msg.traces.add()
        t.file_id = frame.file_id
        t.lineno = frame.lineno
        t.function_id = frame.function_id
        t.line_id = frame.line_id
        t.func_start_line = frame.func_start_line


def _node_message(msg: Any, model: ProfileModel, nid: int) -> None:
    msg.name = model.names[nid]
    msg.op = model.ops[nid]
    msg.id = nid
    for pos, src in model.inputs[nid].items():
        producer = model.index.get(src)
        if producer is not None:
            msg.inputs[pos] = producer
            msg.src_output_index[producer] = model.src_output[nid].get(src, 0)
    for idx, dims in model.output_shapes[nid].items():
        msg.output_shapes[idx].int64_values.extend(dims)
    msg.shape.extend(model.shapes[nid] or [])
    msg.op_types.extend(sorted(model.op_types[nid]))
    msg.canonical_device = model.canonical_device[nid]
    msg.host_device = model.host_device[nid]
    msg.float_ops = model.static_float_ops[nid]
    trace = model.traces[nid]
    if trace is not None:
        msg.trace.SetInParent()
        _trace_message(msg.trace, trace)
    for key, raw in model.attrs[nid].items():
        msg.attrs[key].ParseFromString(raw)


def _exec_message(msg: Any, execs: StepExecs, nid: int, times: dict[int, Any]) -> None:
    per_kind = times.get(nid, {})
    msg.run_count = sum(len(v) for v in per_kind.get(KIND_CPU, {}).values())
    msg.all_start_micros = execs.all_start.get(nid, 0)
    msg.latest_end_micros = execs.latest_end.get(nid, 0)
    for kind, field in ((KIND_ACCELERATOR, msg.accelerator_execs), (KIND_CPU, msg.cpu_execs)):
        for dev, pairs in per_kind.get(kind, {}).items():
            for start, dur in pairs:
                field[dev].times.add().int64_values.extend((start, dur))
    msg.devices.extend(sorted(execs.devices.get(nid, ())))


def encode(model: ProfileModel) -> Any:
    """The model as a ProfileProto message."""
    out = pb.ProfileProto()
    out.has_trace = model.has_trace
    out.miss_accelerator_stream = model.miss_accelerator_stream
    out.steps.extend(model.sorted_steps())
    for key, text in model.id_to_string.items():
        out.id_to_string[key] = text
    for nid in range(len(model)):
        _node_message(out.nodes[nid], model, nid)
    for step, execs in model.steps.items():
        times = execs.times_by_node()
        memory: dict[int, list[MemoryExec]] = {}
        for mem in execs.memory:
            memory.setdefault(mem.node, []).append(mem)
        for nid in execs.devices:
            msg = out.nodes[nid].execs[step]
            _exec_message(msg, execs, nid, times)
            for mem in memory.get(nid, ()):
                _memory_message(msg.memory_execs.add(), mem)
            for event in execs.allocations.get(nid, ()):
                rec = msg.allocations.add()
                rec.alloc_micros = event.alloc_micros
                rec.alloc_bytes = event.alloc_bytes
    return out


def _memory_message(msg: Any, mem: MemoryExec) -> None:
    for name in MEM_VALUES:
        setattr(msg, name, getattr(mem, name))
    for slot, out in mem.output_memory.items():
        msg.output_memory[slot].bytes = out.bytes
        msg.output_memory[slot].ptr = out.ptr


# ----------------------------------------------------------------- native


def _native() -> Any:
    """The extension module, or None when it is not built."""
    return load("_profileencode")


def encode_bytes(model: ProfileModel) -> bytes:
    """The model as serialized ProfileProto bytes (see the module docstring)."""
    module = _native()
    if module is None or pure_forced():
        data: bytes = encode(model).SerializeToString()
        return data
    header = pb.ProfileProto(
        has_trace=model.has_trace,
        miss_accelerator_stream=model.miss_accelerator_stream,
        steps=model.sorted_steps(),
        id_to_string=model.id_to_string,
    ).SerializeToString()
    nodes = (
        model.names,
        model.ops,
        model.index,
        model.inputs,
        model.src_output,
        model.output_shapes,
        model.shapes,
        model.op_types,
        model.canonical_device,
        model.host_device,
        model.static_float_ops,
        _code_defs(model.traces),
        model.attrs,
    )
    steps = [_step_columns(step, execs) for step, execs in model.steps.items()]
    out: bytes = module.encode(header, nodes, steps)
    return out


def _code_defs(traces: list[list[CodeFrame] | None]) -> list[bytes | None]:
    """Each node's CodeDef bytes (None: no trace); shared stacks encoded once."""
    done: dict[int, bytes] = {}
    out: list[bytes | None] = []
    for trace in traces:
        if trace is None:
            out.append(None)
            continue
        got = done.get(id(trace))
        if got is None:
            got = done[id(trace)] = b"".join(
                len_field(
                    1,
                    int_field(2, f.lineno)
                    + int_field(5, f.func_start_line)
                    + int_field(6, f.file_id)
                    + int_field(7, f.function_id)
                    + int_field(8, f.line_id),
                )
                for f in trace
            )
        out.append(got)
    return out


def _by(key: Any) -> Any:
    return np.argsort(key, kind="stable")


def _step_columns(step: int, execs: StepExecs) -> tuple[Any, ...]:
    """The step's record groups sorted by node, in the native encoder's order."""
    pairs, times, mem, outs, allocs = execs.pairs, execs.times, execs.mem, execs.outs, execs.allocs
    p, t, m = _by(pairs["node"]), _by(times["node"]), _by(mem["node"])
    o, a = _by(outs["mem"]), _by(allocs["node"])
    s_node, s_start, s_end = execs.node_spans()
    cols: list[tuple[Any, Any]] = [
        (pairs["node"][p], np.int32),
        (pairs["dev"][p], np.int32),
        (s_node, np.int64),
        (s_start, np.int64),
        (s_end, np.int64),
        (times["node"][t], np.int32),
        (times["kind"][t], np.int8),
        (times["dev"][t], np.int32),
        (times["start"][t], np.int64),
        (times["dur"][t], np.int64),
        (mem["node"][m], np.int32),
        *((mem[name][m], np.int64) for name in MEM_VALUES),
        (m, np.int64),
        (outs["mem"][o], np.int64),
        (outs["slot"][o], np.int32),
        (outs["bytes"][o], np.int64),
        (outs["ptr"][o], np.uint64),
        (allocs["node"][a], np.int32),
        (allocs["micros"][a], np.int64),
        (allocs["bytes"][a], np.int64),
    ]
    blobs = [np.ascontiguousarray(col, dtype=dtype).tobytes() for col, dtype in cols]
    return (step, execs.device_names, *blobs)

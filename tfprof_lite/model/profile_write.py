"""ProfileModel -> ProfileProto: writing the ``profile_<step>`` file format.

:func:`encode` writes everything tfprof keeps (nodes, op types, devices, code
traces, attributes and per-step executions) so TensorFlow's ``ProfilerFromFile``
and ``tfprof --profile_path`` read our files.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU, MEM_VALUES, MemoryExec, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.proto import messages as pb

__all__ = ["encode"]


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

"""ProfileProto <-> ProfileModel: the ``profile_<step>`` file format.

:func:`encode` writes everything tfprof keeps (nodes, op types, devices, code
traces, attributes and per-step executions) so TensorFlow's ``ProfilerFromFile``
and ``tfprof --profile_path`` read our files; :func:`decode` reads files written
by TensorFlow or by us. Like tfprof, reading does not restore the
missing-accelerator-stream flag.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.base.metrics import METRICS
from tfprof_lite.model.decode import code_frames
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU, MemoryExec, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import AllocationEvent, CodeFrame, OutputMemory
from tfprof_lite.proto import messages as pb

__all__ = ["decode", "encode"]

# The fields of a memory record (ExecMemory), ``memory_micros`` first; the
# statistics among them are those the metric table marks as memory fields.
_MEMORY_FIELDS = (
    "memory_micros",
    "host_temp_bytes",
    "host_persistent_bytes",
    "accelerator_temp_bytes",
    "accelerator_persistent_bytes",
    *(m.name for m in METRICS if m.memory),
    "allocator_bytes_in_use",
)


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
    for name in _MEMORY_FIELDS:
        setattr(msg, name, getattr(mem, name))
    for slot, out in mem.output_memory.items():
        msg.output_memory[slot].bytes = out.bytes
        msg.output_memory[slot].ptr = out.ptr


def decode(profile: Any, model: ProfileModel) -> None:
    """Load a ProfileProto message into an empty model."""
    for key, text in profile.id_to_string.items():
        model.id_to_string[key] = text
    ordered = sorted(profile.nodes.values(), key=lambda n: n.id)
    by_id = {node.id: node.name for node in ordered}
    for node in ordered:
        nid = model.load_node(node.name, node.op)
        model.shapes[nid] = list(node.shape) if len(node.shape) else None
        model.output_shapes[nid] = {
            idx: list(t.int64_values) for idx, t in sorted(node.output_shapes.items())
        }
        for pos, producer in sorted(node.inputs.items()):
            src = by_id.get(producer, "")
            model.inputs[nid][pos] = src
            model.src_output[nid][src] = node.src_output_index.get(producer, 0)
        model.op_types[nid] = set(node.op_types)
        model.canonical_device[nid] = node.canonical_device
        model.host_device[nid] = node.host_device
        model.static_float_ops[nid] = node.float_ops
        if node.HasField("trace"):
            model.traces[nid] = code_frames(node.trace)
        model.attrs[nid] = {k: v.SerializeToString() for k, v in node.attrs.items()}
        for step, exec_pb in node.execs.items():
            _decode_exec(model, nid, step, exec_pb)
    model.has_trace = profile.has_trace
    for step in profile.steps:
        model.steps.setdefault(step, StepExecs())
    model.data_version += 1


def _decode_exec(model: ProfileModel, nid: int, step: int, exec_pb: Any) -> None:
    execs = model.steps.setdefault(step, StepExecs())
    model.has_execs[nid] = True
    for dev in exec_pb.devices:
        execs.touch(nid, dev)
    if nid not in execs.devices:
        execs.devices[nid] = set()
    if exec_pb.all_start_micros:
        execs.all_start[nid] = exec_pb.all_start_micros
    if exec_pb.latest_end_micros:
        execs.latest_end[nid] = exec_pb.latest_end_micros
    for kind, field in (
        (KIND_ACCELERATOR, exec_pb.accelerator_execs),
        (KIND_CPU, exec_pb.cpu_execs),
    ):
        for dev in sorted(field):
            for pair in field[dev].times:
                start, dur = (list(pair.int64_values) + [0, 0])[:2]
                execs.t_node.append(nid)
                execs.t_kind.append(kind)
                execs.t_dev.append(dev)
                execs.t_start.append(start)
                execs.t_dur.append(dur)
    for mem_pb in exec_pb.memory_execs:
        mem = MemoryExec(node=nid, memory_micros=mem_pb.memory_micros)
        for name in _MEMORY_FIELDS[1:]:
            setattr(mem, name, getattr(mem_pb, name))
        for slot, out in mem_pb.output_memory.items():
            mem.output_memory[slot] = OutputMemory(slot, out.bytes, out.ptr)
        execs.memory.append(mem)
    events = [AllocationEvent(a.alloc_micros, a.alloc_bytes) for a in exec_pb.allocations]
    if events:
        execs.allocations.setdefault(nid, []).extend(events)

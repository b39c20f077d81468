"""ProfileProto -> ProfileModel: reading the ``profile_<step>`` file format.

:func:`decode` reads files written by TensorFlow or by us into an empty model.
Like tfprof, reading does not restore the missing-accelerator-stream flag.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.model.decode import code_frames
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU, MEM_VALUES, StepExecs
from tfprof_lite.model.profile import ProfileModel

__all__ = ["decode"]


def decode(profile: Any, model: ProfileModel) -> None:
    """Load a ProfileProto message into an empty model."""
    for key, text in profile.id_to_string.items():
        model.id_to_string[key] = text
    ordered = sorted(profile.nodes.values(), key=lambda n: n.id)
    by_id = {node.id: node.name for node in ordered}
    blocks: dict[int, _StepBlock] = {}
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
            model.has_execs[nid] = True
            block = blocks.get(step)
            if block is None:
                block = blocks[step] = _StepBlock(model.steps.setdefault(step, StepExecs()))
            block.add(nid, exec_pb)
    for block in blocks.values():
        block.flush()
    model.has_trace = profile.has_trace
    for step in profile.steps:
        model.steps.setdefault(step, StepExecs())
    model.data_version += 1


class _StepBlock:
    """One step's executions read from a profile, gathered into column lists."""

    def __init__(self, execs: StepExecs) -> None:
        self.execs = execs
        self.pairs: tuple[list[int], list[int]] = ([], [])
        self.spans: tuple[list[int], list[int], list[int]] = ([], [], [])
        self.times: tuple[list[int], ...] = ([], [], [], [], [])
        self.mem: list[list[int]] = [[] for _ in range(len(MEM_VALUES) + 1)]
        self.outs: tuple[list[int], ...] = ([], [], [], [])
        self.allocs: tuple[list[int], ...] = ([], [], [])

    def add(self, nid: int, exec_pb: Any) -> None:
        code = self.execs.device_code
        devs = sorted({code(dev) for dev in exec_pb.devices}) or [-1]
        self.pairs[0].extend([nid] * len(devs))
        self.pairs[1].extend(devs)
        if exec_pb.all_start_micros or exec_pb.latest_end_micros:
            for col, value in zip(
                self.spans, (nid, exec_pb.all_start_micros, exec_pb.latest_end_micros)
            ):
                col.append(value)
        for kind, field in (
            (KIND_ACCELERATOR, exec_pb.accelerator_execs),
            (KIND_CPU, exec_pb.cpu_execs),
        ):
            for dev in sorted(field):
                dcode = code(dev)
                for pair in field[dev].times:
                    start, dur = (list(pair.int64_values) + [0, 0])[:2]
                    for col, value in zip(self.times, (nid, kind, dcode, start, dur)):
                        col.append(value)
        for mem_pb in exec_pb.memory_execs:
            row = len(self.mem[0])
            self.mem[0].append(nid)
            for col, name in zip(self.mem[1:], MEM_VALUES):
                col.append(getattr(mem_pb, name))
            for slot, out in mem_pb.output_memory.items():
                for col, value in zip(self.outs, (row, slot, out.bytes, out.ptr)):
                    col.append(value)
        for a in exec_pb.allocations:
            for col, value in zip(self.allocs, (nid, a.alloc_micros, a.alloc_bytes)):
                col.append(value)

    def flush(self) -> None:
        execs = self.execs
        base = len(execs.mem)
        execs.pairs.append(node=self.pairs[0], dev=self.pairs[1])
        execs.spans.append(node=self.spans[0], start=self.spans[1], end=self.spans[2])
        execs.times.append(**dict(zip(("node", "kind", "dev", "start", "dur"), self.times)))
        execs.mem.append(node=self.mem[0], **dict(zip(MEM_VALUES, self.mem[1:])))
        execs.outs.append(
            mem=[row + base for row in self.outs[0]],
            slot=self.outs[1],
            bytes=self.outs[2],
            ptr=self.outs[3],
        )
        execs.allocs.append(**dict(zip(("node", "micros", "bytes"), self.allocs)))
        execs.changed()

"""Hand-built XLA programs with a buffer assignment, for the program tools' tests.

``basic_program()`` is an ``HloProto`` (:mod:`tfprof_lite.proto.xla_program`)
whose memory is known: parameters 1024 + 256 B, temporaries of 512, 128 and
64 B in a 768 B allocation, a 64 B output, a 16 B constant and a 4 B
thread-local (total 2,132 B, heap peak 2,004 B). ``xspace_file`` writes an
XSpace whose ``/host:metadata`` plane holds programs and whose host ran one op
of program 7, as a JAX CPU run records them. ``new_program``, ``add_logical``,
``add_allocation`` and ``add_trace`` build others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.xspace_files import SpaceBuilder, stat
from tfprof_lite.programs.buffers_heap import ALLOC, FREE
from tfprof_lite.proto.xla_program import HloProto

F32, TUPLE = 11, 13

#: Instructions of the entry computation: id -> (name, dims or tuple of dims, scope).
INSTRUCTIONS: dict[int, tuple[str, Any, str]] = {
    1: ("p0", [256], "params['w']"),
    2: ("p1", [64], "x"),
    3: ("fusion.a", [128], "jit(f)/dense/dot_general"),
    4: ("fusion.b", [32], "jit(f)/relu"),
    5: ("fusion.c", [16], "jit(f)/add"),
    6: ("tuple.out", ([16], [256]), ""),
    7: ("constant.1", [4], ""),
    8: ("reduce.1", [], "jit(f)/reduce_sum"),
    9: ("fusion.d", ([8], [25]), "jit(f)/split"),
}


def set_shape(msg: Any, dims: Any) -> None:
    """Make ``msg`` an f32 array of ``dims``, or a tuple of such for a tuple of dims."""
    if isinstance(dims, tuple):
        msg.element_type = TUPLE
        for part in dims:
            set_shape(msg.tuple_shapes.add(), part)
    else:
        msg.element_type = F32
        msg.dimensions.extend(dims)


def new_program() -> Any:
    """An ``HloProto`` of module ``jit_f`` holding :data:`INSTRUCTIONS`, no assignment."""
    proto = HloProto()
    module = proto.hlo_module
    module.name = "jit_f"
    module.entry_computation_id = 1
    comp = module.computations.add(name="main", id=1, root_id=6)
    for iid, (name, dims, scope) in INSTRUCTIONS.items():
        inst = comp.instructions.add(name=name, id=iid, opcode="fusion")
        inst.metadata.op_name = scope
        set_shape(inst.shape, dims)
    return proto


def add_logical(
    proto: Any, lid: int, size: int, iid: int, index: tuple[int, ...] = (), color: int = 0
) -> None:
    buf = proto.buffer_assignment.logical_buffers.add(id=lid, size=size, color=color)
    buf.defined_at.instruction_id = iid
    buf.defined_at.instruction_name = INSTRUCTIONS[iid][0]
    buf.defined_at.shape_index.extend(index)


def add_allocation(
    proto: Any, index: int, size: int, assigned: list[tuple[int, int]], **flags: Any
) -> Any:
    alloc = proto.buffer_assignment.buffer_allocations.add(index=index, size=size, **flags)
    for lid, offset in assigned:
        size_of = {b.id: b.size for b in proto.buffer_assignment.logical_buffers}[lid]
        alloc.assigned.add(logical_buffer_id=lid, offset=offset, size=size_of)
    return alloc


def add_trace(proto: Any, events: list[tuple[int, int] | tuple[int, int, int]]) -> Any:
    trace = proto.buffer_assignment.heap_simulator_traces.add(whole_module_simulation=True)
    trace.buffer_allocation_index = 99  # XLA's own index is not trusted
    names = {b.id: b.defined_at.instruction_name for b in proto.buffer_assignment.logical_buffers}
    for kind, lid, *shared in events:
        event = trace.events.add(kind=kind, buffer_id=lid, computation_name="main")
        event.instruction_name = names.get(lid, "unknown")
        event.share_with_canonical_id = shared[0] if shared else 0
    return trace


def basic_program(events: bool = True) -> Any:
    """Parameters 1024 + 256 B, temporaries a 512, b 128, c 64 in a 768 B
    allocation, an output 64 B, a constant 16 B, a thread-local 4 B."""
    proto = new_program()
    for lid, size, iid in ((1, 1024, 1), (2, 256, 2), (3, 512, 3), (4, 128, 4), (5, 64, 5)):
        add_logical(proto, lid, size, iid)
    add_logical(proto, 6, 64, 5)
    add_logical(proto, 7, 16, 7)
    add_logical(proto, 8, 4, 8)
    add_allocation(
        proto, 0, 1024, [(1, 0)], is_entry_computation_parameter=True, parameter_number=0
    )
    add_allocation(proto, 1, 256, [(2, 0)], is_entry_computation_parameter=True, parameter_number=1)
    add_allocation(proto, 2, 768, [(3, 0), (4, 512), (5, 0)])
    add_allocation(proto, 3, 64, [(6, 0)], maybe_live_out=True)
    add_allocation(proto, 4, 16, [(7, 0)], is_constant=True)
    add_allocation(proto, 5, 4, [(8, 0)], is_thread_local=True)
    if events:
        add_trace(proto, [(ALLOC, 3), (ALLOC, 4), (FREE, 3), (ALLOC, 5), (FREE, 4), (FREE, 5)])
    return proto


def xspace_file(path: Path, programs: list[tuple[int, Any]]) -> Path:
    """An XSpace file whose metadata plane holds ``programs`` (id, ``HloProto``)."""
    b = SpaceBuilder()
    meta = b.space.planes.add(id=1, name="/host:metadata")
    names: dict[str, int] = {}
    for at, (program_id, proto) in enumerate(programs, start=1):
        meta.event_metadata[at].id = at
        meta.event_metadata[at].name = f"{proto.hlo_module.name}({program_id})"
        data = proto.SerializeToString()
        meta.event_metadata[at].stats.append(stat(meta, names, "Hlo Proto", bytes_value=data))
        meta.event_metadata[at].stats.append(
            stat(meta, names, "program_id", int64_value=program_id)
        )
    worker = b.line(b.host, 2, "tf_XLAPjRtCpuClient/1")
    b.event(b.host, worker, "dot", 1000, 100, hlo_op="fusion.a", hlo_module="jit_f", program_id=7)
    path.write_bytes(b.bytes())
    return path

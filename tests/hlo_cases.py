"""HloProto inputs of the native HLO decoder's tests, and the comparison they use.

:func:`canonical` turns a program (or any of its parts) into plain values, from
protobuf's messages of ``hlo.proto`` or from the decoder's named tuples alike:
every field the tuple class has, scalars with their type (a bool is not an
int), repeated fields as tuples, the schedule's map as a dict. :func:`full_program`
is an ``HloProto`` that sets every field of the schema, with extreme values;
:func:`jax_protos` the ``Hlo Proto`` stats of both JAX captures.
"""

from __future__ import annotations

from typing import Any

from tests.xspace_files import jax_cases, jax_file
from tfprof_lite.formats.xspace.read.events import event_table
from tfprof_lite.formats.xspace.read.xla import hlo_protos
from tfprof_lite.formats.xspace.wire.decode import decode_xspace_file
from tfprof_lite.proto import hlo
from tfprof_lite.proto import hlo_module as hm

__all__ = ["TUPLE_OF", "canonical", "full_program", "jax_protos"]

#: The named tuple of each message of ``hlo.proto`` (by its short name).
TUPLE_OF: dict[str, type] = {
    "HloProto": hm.HloProgram, "HloModuleProto": hm.HloModule,
    "HloComputationProto": hm.HloComputation, "HloInstructionProto": hm.HloInstruction,
    "OpMetadata": hm.OpMetadata, "HloScheduleProto": hm.HloSchedule,
    "InstructionSequence": hm.InstructionSequence, "StackFrameIndexProto": hm.StackFrameIndex,
    "FileLocation": hm.FileLocation, "StackFrame": hm.StackFrame, "ShapeProto": hm.Shape,
    "LayoutProto": hm.Layout, "Window": hm.Window, "WindowDimension": hm.WindowDimension,
    "DotDimensionNumbers": hm.DotDimensionNumbers,
    "ConvolutionDimensionNumbers": hm.ConvolutionDimensionNumbers,
    "PaddingConfig": hm.PaddingConfig, "PaddingConfigDimension": hm.PaddingDimension,
    "SliceDimensions": hm.SliceDimensions, "HloInputOutputAliasProto": hm.InputOutputAlias,
    "AliasEntryProto": hm.AliasEntry, "BufferAssignmentProto": hm.BufferAssignment,
    "LogicalBufferProto": hm.LogicalBuffer, "Location": hm.Location,
    "BufferAllocationProto": hm.BufferAllocation, "Assigned": hm.Assigned,
    "HeapSimulatorTrace": hm.HeapSimulatorTrace, "Event": hm.Event,
    "BufferAlias": hm.BufferAlias,
}  # fmt: skip


def canonical(value: Any) -> Any:
    """``value`` (a message or named tuple, or a field of one) as plain values."""
    if hasattr(value, "DESCRIPTOR"):
        fields = TUPLE_OF[value.DESCRIPTOR.name]._fields  # type: ignore[attr-defined]
        return tuple(canonical(getattr(value, f)) for f in fields)
    if hasattr(value, "_fields"):
        return tuple(canonical(getattr(value, f)) for f in value._fields)
    if isinstance(value, (str, bytes, bool, int)):
        return (type(value).__name__, value)
    if hasattr(value, "items"):
        return {k: canonical(v) for k, v in value.items()}
    return tuple(canonical(v) for v in value)


def jax_protos() -> list[bytes]:
    """The ``Hlo Proto`` bytes of every program of both JAX captures."""
    out: list[bytes] = []
    for case in jax_cases():
        cols = decode_xspace_file(str(jax_file(case)), "test")
        out.extend(data for _, data in hlo_protos(event_table(cols)))
    return out


def _shape(shape: Any, kind: int, *dims: int) -> Any:
    shape.element_type = kind
    shape.dimensions.extend(dims)
    shape.layout.minor_to_major.extend(reversed(range(len(dims))))
    shape.is_dynamic_dimension.extend([False] * len(dims))
    return shape


def _module(mod: Any) -> None:
    mod.name, mod.entry_computation_name, mod.id, mod.entry_computation_id = "m", "main", -5, 2
    fused = mod.computations.add(name="fused", id=1, root_id=11, is_fusion_computation=True)
    fused.execution_thread = "main"
    dot = fused.instructions.add(name="dot.1", opcode="dot", id=11, operand_ids=[-1, 2**62])
    dnums = dot.dot_dimension_numbers
    dnums.lhs_contracting_dimensions.append(1)
    dnums.rhs_contracting_dimensions.append(0)
    dnums.lhs_batch_dimensions.extend([2, 3])
    dnums.rhs_batch_dimensions.extend([-(2**63), 2**63 - 1])
    out = _shape(dot.shape, 13)
    _shape(out.tuple_shapes.add(), 16, 8, 2**40).layout.element_size_in_bits = 4
    out.tuple_shapes.add().CopyFrom(out.tuple_shapes[0])
    inner = out.tuple_shapes.add(element_type=13)
    _shape(inner.tuple_shapes.add(), 11).layout.memory_space = -1
    out.tuple_shapes[0].is_dynamic_dimension[1] = True
    main = mod.computations.add(name="main", id=2, root_id=21)
    call = main.instructions.add(name="fusion.1", opcode="fusion", id=21, fusion_kind="kCustom")
    call.called_computation_ids.extend([1, 1])
    call.custom_call_target = "__cublas$gemm"
    call.backend_config = b'{"known_trip_count":{"n":"3"}}\xff'
    call.parameter_number, call.tuple_index = 2**31, -1
    call.dimensions.extend([0, 2])
    call.dynamic_slice_sizes.append(7)
    call.fft_length.extend([8, 16])
    call.gather_slice_sizes.append(1)
    call.feature_group_count, call.batch_group_count = 3, -(2**63)
    call.slice_dimensions.add(start=1, limit=9, stride=2)
    call.slice_dimensions.add()
    call.padding_config.dimensions.add(edge_padding_low=-1, edge_padding_high=2, interior_padding=3)
    call.window.dimensions.add(size=3, stride=2, padding_low=1, padding_high=1, window_dilation=1,
                               base_dilation=2, window_reversal=True)  # fmt: skip
    call.window.dimensions.add()
    conv = call.convolution_dimension_numbers
    conv.input_batch_dimension, conv.input_feature_dimension = 0, 3
    conv.input_spatial_dimensions.extend([1, 2])
    conv.kernel_input_feature_dimension, conv.kernel_output_feature_dimension = 2, 3
    conv.kernel_spatial_dimensions.extend([0, 1])
    conv.output_batch_dimension, conv.output_feature_dimension = 0, 3
    conv.output_spatial_dimensions.extend([1, 2])
    _shape(call.shape, 11, 4, 4)
    meta = call.metadata
    meta.op_type, meta.op_name, meta.source_file = "MatMul", "jit(f)/dot", "f.py"
    meta.source_line, meta.stack_frame_id = -(2**31), 2**31 - 1
    meta.deduplicated_name, meta.scheduling_name = "d", "s\u00e9"
    main.instructions.add(name="p", opcode="parameter", id=22).shape.element_type = 11
    mod.schedule.sequences[2].instruction_ids.extend([21, 0])
    mod.schedule.sequences[-7].SetInParent()
    alias = mod.input_output_alias.entries.add(parameter_number=1, kind=2)
    alias.output_shape_index.extend([0, 1])
    alias.parameter_shape_index.append(3)
    mod.input_output_alias.entries.add()
    index = mod.stack_frame_index
    index.file_names.extend(["a.py", ""])
    index.function_names.append("f")
    index.file_locations.add(
        file_name_id=1, function_name_id=1, line=3, column=-1, end_line=4, end_column=2**31 - 1
    )
    index.stack_frames.add(file_location_id=1, parent_frame_id=0)
    index.stack_frames.add(file_location_id=1, parent_frame_id=1)


def _assignment(ba: Any) -> None:
    first = ba.logical_buffers.add(id=5, size=2**40, color=1)
    first.defined_at.instruction_name, first.defined_at.instruction_id = "dot.1", 11
    first.defined_at.shape_index.extend([0, 2])
    ba.logical_buffers.add(id=-6)
    ba.buffer_aliases.add(source_buffer_id=5).location.instruction_name = "fusion.1"
    ba.buffer_aliases.add()
    alloc = ba.buffer_allocations.add(index=0, size=4096, is_thread_local=True, color=1)
    alloc.is_entry_computation_parameter, alloc.parameter_number = True, 3
    alloc.maybe_live_out, alloc.is_tuple, alloc.is_constant = True, True, True
    alloc.assigned.add(logical_buffer_id=5, offset=64, size=128)
    alloc.assigned.add()
    alloc.parameter_shape_index.extend([1, -1])
    ba.buffer_allocations.add(index=1)
    trace = ba.heap_simulator_traces.add(whole_module_simulation=True, buffer_allocation_index=-2)
    trace.events.add(kind=0, buffer_id=5, computation_name="main", instruction_name="dot.1")
    trace.events.add(kind=2, buffer_id=6, share_with_canonical_id=5)
    trace.events.add(kind=-(2**31), instruction_name="\u00e9")
    ba.heap_simulator_traces.add()


def full_program() -> bytes:
    """An ``HloProto`` that sets every field of ``hlo.proto``, extremes included."""
    proto = hlo.HloProto()
    _module(proto.hlo_module)
    _assignment(proto.buffer_assignment)
    return bytes(proto.SerializeToString())

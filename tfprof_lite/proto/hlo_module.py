"""An XLA program's ``HloProto``, read without protobuf where it can be.

Contract: :func:`read_hlo_module` returns the ``hlo_module`` of serialized
``HloProto`` bytes (what XLA's profiler stores in the ``Hlo Proto`` stat of an
XSpace's ``/host:metadata`` plane), leaving the buffer assignment unread;
:func:`native_program` gives the whole ``HloProto`` (module and buffer
assignment) for the program tools
(:func:`tfprof_lite.proto.xla_program.parse_program`). The native decoder
(``_native/_hlodecode.c``) gives them as the named tuples below, one per
message of ``hlo.proto``, with the values protobuf's parse gives the same
fields: repeated fields as tuples, the schedule's ``sequences`` as a dict, an
absent message as its defaults (so ``instruction.shape.layout.memory_space`` is
0 without a layout, as protobuf gives), enums as ints, bools as bools. Equal
shapes may be one shared tuple. A few fields of the schema that nothing reads
(``OpMetadata``'s ``deduplicated_name`` and ``scheduling_name``, a
computation's ``execution_thread``, a ``FileLocation``'s column and end) are
checked as protobuf checks them but not kept. Opening an XSpace thus imports no
protobuf. When the extension is not built, is turned off
(``TFPROF_LITE_PURE_PYTHON``) or declines the bytes (anything outside the plain
wire format it reads), :func:`read_hlo_module` parses them with protobuf
(:func:`tfprof_lite.proto.hlo.parse_hlo_module`) and returns the message, which
its readers use through the same field names; its errors are that path's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tfprof_lite._native import active

__all__ = [
    "AliasEntry",
    "Assigned",
    "BufferAlias",
    "BufferAllocation",
    "BufferAssignment",
    "ConvolutionDimensionNumbers",
    "DotDimensionNumbers",
    "Event",
    "FileLocation",
    "HeapSimulatorTrace",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloProgram",
    "HloSchedule",
    "InputOutputAlias",
    "InstructionSequence",
    "Layout",
    "Location",
    "LogicalBuffer",
    "OpMetadata",
    "PaddingConfig",
    "PaddingDimension",
    "Shape",
    "SliceDimensions",
    "StackFrame",
    "StackFrameIndex",
    "Window",
    "WindowDimension",
    "native_module",
    "native_program",
    "read_hlo_module",
]

_MODULE = "_hlodecode"


class OpMetadata(NamedTuple):
    """``xla.OpMetadata`` (the fields read): where an instruction came from."""

    op_type: str = ""
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    stack_frame_id: int = 0


class Layout(NamedTuple):
    """``xla.LayoutProto``: dimension order and packing of an array."""

    minor_to_major: tuple[int, ...] = ()
    element_size_in_bits: int = 0
    memory_space: int = 0


class Shape(NamedTuple):
    """``xla.ShapeProto``: an array (``element_type``, a ``PrimitiveType``
    value, and ``dimensions``) or a tuple (type 13, ``tuple_shapes``)."""

    element_type: int = 0
    dimensions: tuple[int, ...] = ()
    tuple_shapes: tuple[Shape, ...] = ()
    layout: Layout = Layout()
    is_dynamic_dimension: tuple[bool, ...] = ()


class WindowDimension(NamedTuple):
    """``xla.WindowDimension``: one dimension of a window."""

    size: int = 0
    stride: int = 0
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 0
    base_dilation: int = 0
    window_reversal: bool = False


class Window(NamedTuple):
    """``xla.Window``: the window of a convolution or reduce-window."""

    dimensions: tuple[WindowDimension, ...] = ()


class DotDimensionNumbers(NamedTuple):
    """``xla.DotDimensionNumbers``."""

    lhs_contracting_dimensions: tuple[int, ...] = ()
    rhs_contracting_dimensions: tuple[int, ...] = ()
    lhs_batch_dimensions: tuple[int, ...] = ()
    rhs_batch_dimensions: tuple[int, ...] = ()


class ConvolutionDimensionNumbers(NamedTuple):
    """``xla.ConvolutionDimensionNumbers``."""

    kernel_input_feature_dimension: int = 0
    kernel_output_feature_dimension: int = 0
    kernel_spatial_dimensions: tuple[int, ...] = ()
    input_batch_dimension: int = 0
    input_feature_dimension: int = 0
    output_batch_dimension: int = 0
    output_feature_dimension: int = 0
    input_spatial_dimensions: tuple[int, ...] = ()
    output_spatial_dimensions: tuple[int, ...] = ()


class PaddingDimension(NamedTuple):
    """``xla.PaddingConfig.PaddingConfigDimension``."""

    edge_padding_low: int = 0
    edge_padding_high: int = 0
    interior_padding: int = 0


class PaddingConfig(NamedTuple):
    """``xla.PaddingConfig``: the padding of a ``pad`` instruction."""

    dimensions: tuple[PaddingDimension, ...] = ()


class SliceDimensions(NamedTuple):
    """``xla.HloInstructionProto.SliceDimensions``: one dimension of a slice."""

    start: int = 0
    limit: int = 0
    stride: int = 0


class HloInstruction(NamedTuple):
    """``xla.HloInstructionProto``'s fields that tfprof_lite reads."""

    name: str = ""
    opcode: str = ""
    metadata: OpMetadata = OpMetadata()
    fusion_kind: str = ""
    custom_call_target: str = ""
    id: int = 0
    operand_ids: tuple[int, ...] = ()
    called_computation_ids: tuple[int, ...] = ()
    backend_config: bytes = b""
    shape: Shape = Shape()
    parameter_number: int = 0
    tuple_index: int = 0
    dimensions: tuple[int, ...] = ()
    window: Window = Window()
    convolution_dimension_numbers: ConvolutionDimensionNumbers = ConvolutionDimensionNumbers()
    slice_dimensions: tuple[SliceDimensions, ...] = ()
    dynamic_slice_sizes: tuple[int, ...] = ()
    padding_config: PaddingConfig = PaddingConfig()
    dot_dimension_numbers: DotDimensionNumbers = DotDimensionNumbers()
    fft_length: tuple[int, ...] = ()
    gather_slice_sizes: tuple[int, ...] = ()
    feature_group_count: int = 0
    batch_group_count: int = 0


class HloComputation(NamedTuple):
    """``xla.HloComputationProto``'s fields that tfprof_lite reads."""

    name: str = ""
    instructions: tuple[HloInstruction, ...] = ()
    id: int = 0
    root_id: int = 0
    is_fusion_computation: bool = False


class InstructionSequence(NamedTuple):
    """``xla.HloScheduleProto.InstructionSequence``."""

    instruction_ids: tuple[int, ...] = ()


class HloSchedule(NamedTuple):
    """``xla.HloScheduleProto``: computation id -> its instructions in order."""

    sequences: dict[int, InstructionSequence]


class FileLocation(NamedTuple):
    """``xla.StackFrameIndexProto.FileLocation``'s file, function and line (ids
    are 1-based)."""

    file_name_id: int = 0
    function_name_id: int = 0
    line: int = 0


class StackFrame(NamedTuple):
    """``xla.StackFrameIndexProto.StackFrame`` (ids are 1-based, 0 = none)."""

    file_location_id: int = 0
    parent_frame_id: int = 0


class StackFrameIndex(NamedTuple):
    """``xla.StackFrameIndexProto``: the module's Python call stacks."""

    file_names: tuple[str, ...] = ()
    function_names: tuple[str, ...] = ()
    file_locations: tuple[FileLocation, ...] = ()
    stack_frames: tuple[StackFrame, ...] = ()


class AliasEntry(NamedTuple):
    """``xla.HloInputOutputAliasProto.AliasEntryProto``: an output that reuses
    a parameter's buffer (``kind``: 1 may alias, 2 must alias)."""

    output_shape_index: tuple[int, ...] = ()
    parameter_number: int = 0
    parameter_shape_index: tuple[int, ...] = ()
    kind: int = 0


class InputOutputAlias(NamedTuple):
    """``xla.HloInputOutputAliasProto``: the module's input/output aliases."""

    entries: tuple[AliasEntry, ...] = ()


class HloModule(NamedTuple):
    """``xla.HloModuleProto``'s fields that tfprof_lite reads."""

    name: str
    entry_computation_name: str
    computations: tuple[HloComputation, ...]
    id: int
    entry_computation_id: int
    schedule: HloSchedule
    stack_frame_index: StackFrameIndex
    input_output_alias: InputOutputAlias = InputOutputAlias()


class Location(NamedTuple):
    """``xla.LogicalBufferProto.Location``: the instruction (and the index in
    its tuple shape) that defines a buffer."""

    instruction_name: str = ""
    shape_index: tuple[int, ...] = ()
    instruction_id: int = 0


class LogicalBuffer(NamedTuple):
    """``xla.LogicalBufferProto``: one value's buffer (``color``: memory space)."""

    id: int = 0
    size: int = 0
    defined_at: Location = Location()
    color: int = 0


class Assigned(NamedTuple):
    """``xla.BufferAllocationProto.Assigned``: a logical buffer in an allocation."""

    logical_buffer_id: int = 0
    offset: int = 0
    size: int = 0


class BufferAllocation(NamedTuple):
    """``xla.BufferAllocationProto``: one allocation and what it holds."""

    index: int = 0  # type: ignore[assignment]  # shadows tuple.index, as XLA names it
    size: int = 0
    is_thread_local: bool = False
    is_entry_computation_parameter: bool = False
    parameter_number: int = 0
    maybe_live_out: bool = False
    color: int = 0
    assigned: tuple[Assigned, ...] = ()
    parameter_shape_index: tuple[int, ...] = ()
    is_tuple: bool = False
    is_constant: bool = False


class Event(NamedTuple):
    """``xla.HeapSimulatorTrace.Event`` (``kind``: 0 alloc, 1 free, 2 share with)."""

    kind: int = 0
    buffer_id: int = 0
    computation_name: str = ""
    instruction_name: str = ""
    share_with_canonical_id: int = 0


class HeapSimulatorTrace(NamedTuple):
    """``xla.HeapSimulatorTrace``: the heap simulator's events in program order."""

    events: tuple[Event, ...] = ()
    whole_module_simulation: bool = False
    buffer_allocation_index: int = 0


class BufferAlias(NamedTuple):
    """``xla.BufferAssignmentProto.BufferAlias``."""

    source_buffer_id: int = 0
    location: Location = Location()


class BufferAssignment(NamedTuple):
    """``xla.BufferAssignmentProto``: a compiled program's buffers."""

    logical_buffers: tuple[LogicalBuffer, ...] = ()
    buffer_aliases: tuple[BufferAlias, ...] = ()
    buffer_allocations: tuple[BufferAllocation, ...] = ()
    heap_simulator_traces: tuple[HeapSimulatorTrace, ...] = ()


class HloProgram(NamedTuple):
    """``xla.HloProto``: a module and its buffer assignment."""

    hlo_module: HloModule
    buffer_assignment: BufferAssignment = BufferAssignment()


#: The classes the native decoder builds, in its order (``_hlodecode.c``'s
#: ``K_*`` constants).
CLASSES = (
    HloModule,
    HloComputation,
    HloInstruction,
    OpMetadata,
    HloSchedule,
    InstructionSequence,
    StackFrameIndex,
    FileLocation,
    StackFrame,
    Shape,
    Layout,
    Window,
    WindowDimension,
    DotDimensionNumbers,
    ConvolutionDimensionNumbers,
    PaddingConfig,
    PaddingDimension,
    SliceDimensions,
    InputOutputAlias,
    AliasEntry,
    HloProgram,
    BufferAssignment,
    LogicalBuffer,
    Location,
    BufferAllocation,
    Assigned,
    HeapSimulatorTrace,
    Event,
    BufferAlias,
)


def native_module(data: bytes) -> HloModule | None:
    """The module of serialized ``HloProto`` ``data`` from the native decoder, or
    None: not built, turned off, or declined (the buffer assignment is skipped,
    as protobuf's parse of an ``HloProtoModule`` leaves it unread)."""
    module = active(_MODULE)
    if module is None:
        return None
    found: HloModule | None = module.decode(bytes(data), CLASSES)
    return found


def native_program(data: bytes) -> HloProgram | None:
    """The whole serialized ``HloProto`` ``data`` (module and buffer assignment)
    from the native decoder, or None: not built, turned off, or declined."""
    module = active(_MODULE)
    if module is None:
        return None
    found: HloProgram | None = module.decode_program(bytes(data), CLASSES)
    return found


def read_hlo_module(data: bytes, what: str = "HLO proto") -> Any:
    """The ``hlo_module`` of serialized ``HloProto`` ``data`` (see the module
    docstring for which form).

    Raises:
        InvalidInputError: the bytes are not an ``HloProto`` (``what`` names them).
    """
    found = native_module(data)
    if found is not None:
        return found
    from tfprof_lite.proto.hlo import parse_hlo_module

    return parse_hlo_module(data, what)

"""Message classes for TensorFlow's profiler and framework protos, without TensorFlow.

Contract:

* The classes are built at import time from ``descriptors.binpb`` (compiled from the
  ``.proto`` files next to this module by ``scripts/gen_protos.py``), loaded into a
  private :class:`~google.protobuf.descriptor_pool.DescriptorPool`. Nothing is added
  to protobuf's default pool, so this module can be imported in the same process as
  TensorFlow, whose own descriptors use the ``tensorflow`` package names.
* The messages are wire-compatible with TensorFlow 2.21's (same field numbers,
  types, labels and enum values) and live in proto package ``tfprof_lite.tf``; the
  pprof messages mirror ``perftools.profiles`` and live in ``tfprof_lite.pprof``; the
  XSpace messages mirror ``tensorflow.profiler`` (xplane.proto) and live in
  ``tfprof_lite.xplane``.
  Bytes written by TensorFlow parse with these classes and re-serialize to equal
  messages; fields unknown to these schemas are kept as unknown fields.
* Nested messages are attributes of their parent (``CodeDef.Trace``,
  ``AdviceProto.Checker``, ``CostGraphDef.Node``, ``RunMetadata.FunctionGraphs``...).
* Works with protobuf 4.25 through 7.x (``GetMessageClass`` where it exists, else
  ``MessageFactory.GetPrototype``).

The classes are typed ``Any``: they are generated at run time, so no static stubs
exist for them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "POOL",
    "AdviceProto",
    "AdvisorOptionsProto",
    "AllocationDescription",
    "AllocationRecord",
    "AllocatorMemoryUsed",
    "AttrValue",
    "CodeDef",
    "CostGraphDef",
    "DeviceStepStats",
    "ExecMemory",
    "ExecProfile",
    "ExecTime",
    "GraphDef",
    "GraphNodeProto",
    "Memory",
    "MemoryStats",
    "MultiGraphNodeProto",
    "NodeDef",
    "NodeExecStats",
    "NodeOutput",
    "OpLogEntry",
    "OpLogProto",
    "OptionsProto",
    "PprofFunction",
    "PprofLabel",
    "PprofLine",
    "PprofLocation",
    "PprofProfile",
    "PprofSample",
    "PprofValueType",
    "ProfileNode",
    "ProfileProto",
    "RunMetadata",
    "StepStats",
    "TensorDescription",
    "TensorProto",
    "TensorShapeProto",
    "Tuple",
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XStat",
    "XStatMetadata",
]

_DESCRIPTORS = "descriptors.binpb"


def _read_descriptors() -> bytes:
    try:
        return resources.files(__name__.rpartition(".")[0]).joinpath(_DESCRIPTORS).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, TypeError):  # e.g. a zip without data
        return Path(__file__).with_name(_DESCRIPTORS).read_bytes()


def _load_pool(data: bytes) -> Any:
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(data)
    pool = descriptor_pool.DescriptorPool()
    for file_proto in fds.file:  # protoc --include_imports writes dependencies first
        pool.AddSerializedFile(file_proto.SerializeToString())
    return pool


#: The private descriptor pool holding every ``tfprof_lite.*`` descriptor.
POOL: Any = _load_pool(_read_descriptors())


def _class_of(descriptor: Any) -> Any:
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:  # protobuf >= 4.21
        return get_class(descriptor)
    return message_factory.MessageFactory(POOL).GetPrototype(descriptor)  # pragma: no cover


def _cls(full_name: str) -> Any:
    """The message class of ``full_name`` in :data:`POOL`, with its nested message
    classes set as attributes (upb does that itself, the pure-Python backend not)."""
    cls = _class_of(POOL.FindMessageTypeByName(full_name))
    for nested in cls.DESCRIPTOR.nested_types:
        nested_cls = _cls(nested.full_name)
        if not hasattr(cls, nested.name):
            setattr(cls, nested.name, nested_cls)
    return cls


_TF = "tfprof_lite.tf."
_PPROF = "tfprof_lite.pprof."
_XPLANE = "tfprof_lite.xplane."

# RunMetadata and step statistics.
RunMetadata: Any = _cls(_TF + "RunMetadata")
StepStats: Any = _cls(_TF + "StepStats")
DeviceStepStats: Any = _cls(_TF + "DeviceStepStats")
NodeExecStats: Any = _cls(_TF + "NodeExecStats")
AllocatorMemoryUsed: Any = _cls(_TF + "AllocatorMemoryUsed")
AllocationRecord: Any = _cls(_TF + "AllocationRecord")
NodeOutput: Any = _cls(_TF + "NodeOutput")
MemoryStats: Any = _cls(_TF + "MemoryStats")
TensorDescription: Any = _cls(_TF + "TensorDescription")
AllocationDescription: Any = _cls(_TF + "AllocationDescription")
CostGraphDef: Any = _cls(_TF + "CostGraphDef")

# Graphs.
GraphDef: Any = _cls(_TF + "GraphDef")
NodeDef: Any = _cls(_TF + "NodeDef")
AttrValue: Any = _cls(_TF + "AttrValue")
TensorShapeProto: Any = _cls(_TF + "TensorShapeProto")
TensorProto: Any = _cls(_TF + "TensorProto")

# tfprof op log, profile, output and options.
OpLogProto: Any = _cls(_TF + "OpLogProto")
OpLogEntry: Any = _cls(_TF + "OpLogEntry")
CodeDef: Any = _cls(_TF + "CodeDef")
ProfileProto: Any = _cls(_TF + "ProfileProto")
ProfileNode: Any = _cls(_TF + "ProfileNode")
ExecProfile: Any = _cls(_TF + "ExecProfile")
ExecTime: Any = _cls(_TF + "ExecTime")
ExecMemory: Any = _cls(_TF + "ExecMemory")
Tuple: Any = _cls(_TF + "Tuple")
Memory: Any = _cls(_TF + "Memory")
GraphNodeProto: Any = _cls(_TF + "GraphNodeProto")
MultiGraphNodeProto: Any = _cls(_TF + "MultiGraphNodeProto")
AdviceProto: Any = _cls(_TF + "AdviceProto")
OptionsProto: Any = _cls(_TF + "OptionsProto")
AdvisorOptionsProto: Any = _cls(_TF + "AdvisorOptionsProto")

# pprof (perftools.profiles).
PprofProfile: Any = _cls(_PPROF + "Profile")
PprofSample: Any = _cls(_PPROF + "Sample")
PprofLocation: Any = _cls(_PPROF + "Location")
PprofLine: Any = _cls(_PPROF + "Line")
PprofFunction: Any = _cls(_PPROF + "Function")
PprofValueType: Any = _cls(_PPROF + "ValueType")
PprofLabel: Any = _cls(_PPROF + "Label")

# XSpace (the profiler's ``*.xplane.pb``).
XSpace: Any = _cls(_XPLANE + "XSpace")
XPlane: Any = _cls(_XPLANE + "XPlane")
XLine: Any = _cls(_XPLANE + "XLine")
XEvent: Any = _cls(_XPLANE + "XEvent")
XStat: Any = _cls(_XPLANE + "XStat")
XEventMetadata: Any = _cls(_XPLANE + "XEventMetadata")
XStatMetadata: Any = _cls(_XPLANE + "XStatMetadata")

"""Unit tests of tfprof_lite.proto: descriptors, message classes and codec.parse.

No TensorFlow needed; the wire-compatibility tests against TensorFlow's own classes
are in tests/integration/test_proto_wire.py (they reuse :func:`populate` from here).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import messages
from tfprof_lite.proto.codec import parse

ROOT = Path(__file__).resolve().parents[2]
MAX_DEPTH = 4

EXPORTED = [name for name in messages.__all__ if name != "POOL"]


# ---------------------------------------------------------------- helpers


def _is_repeated(field: Any) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf >= 5.29; `label` is gone in 7
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _is_map(field: Any) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _scalar(field: Any, seed: int) -> Any:
    cpp = field.cpp_type
    if cpp in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64):
        return -seed
    if cpp == FieldDescriptor.CPPTYPE_UINT32:
        return 2**31 + seed
    if cpp == FieldDescriptor.CPPTYPE_UINT64:
        return 2**63 + seed
    if cpp in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        return seed + 0.5
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return True
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        return field.enum_type.values[-1].number
    if field.type == FieldDescriptor.TYPE_BYTES:
        return b"\x00\xff" + bytes([seed % 256])
    return f"{field.name}-\u00e9-{seed}"


def populate(msg: Any, depth: int = 0) -> Any:
    """Set every field of ``msg`` (one member per oneof) to a non-default value,
    recursing into message fields up to ``MAX_DEPTH`` levels; returns ``msg``."""
    for field in msg.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.fields[depth % len(oneof.fields)] is not field:
            continue
        seed = field.number + depth
        if field.message_type is not None and depth >= MAX_DEPTH and not _is_map(field):
            continue
        if _is_map(field):
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            key = _scalar(key_field, seed)
            if value_field.message_type is not None:
                if depth < MAX_DEPTH:
                    populate(getattr(msg, field.name)[key], depth + 1)
                else:
                    getattr(msg, field.name)[key].SetInParent()
            else:
                getattr(msg, field.name)[key] = _scalar(value_field, seed)
        elif _is_repeated(field):
            if field.message_type is not None:
                populate(getattr(msg, field.name).add(), depth + 1)
            else:
                getattr(msg, field.name).extend([_scalar(field, seed), _scalar(field, seed + 1)])
        elif field.message_type is not None:
            populate(getattr(msg, field.name), depth + 1)
        else:
            setattr(msg, field.name, _scalar(field, seed))
    return msg


def load_gen_protos() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def foreign_run_metadata_class() -> Any:
    """A RunMetadata from another package and pool (as TensorFlow's would be), with
    only ``session_metadata`` (field 5) declared."""
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="foreign/run_metadata.proto", package="foreign", syntax="proto3"
    )
    session = file_proto.message_type.add(name="SessionMetadata")
    session.field.add(name="name", number=1, type=FieldDescriptor.TYPE_STRING, label=1)
    run = file_proto.message_type.add(name="RunMetadata")
    run.field.add(
        name="session_metadata",
        number=5,
        type=FieldDescriptor.TYPE_MESSAGE,
        type_name=".foreign.SessionMetadata",
        label=1,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    descriptor = pool.FindMessageTypeByName("foreign.RunMetadata")
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:
        return get_class(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


# ---------------------------------------------------------------- descriptors


def test_committed_descriptors_are_current() -> None:
    pytest.importorskip("grpc_tools")
    gen = load_gen_protos()
    assert gen.check(), "descriptors.binpb is stale: run python scripts/gen_protos.py"
    assert gen.main(["--check"]) == 0


def test_check_detects_stale_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("grpc_tools")
    gen = load_gen_protos()
    stale = descriptor_pb2.FileDescriptorSet.FromString(gen.OUTPUT.read_bytes())
    stale.file[-1].message_type[0].field[0].number += 1000
    monkeypatch.setattr(gen, "OUTPUT", tmp_path / "descriptors.binpb")
    assert not gen.check()  # missing file
    gen.OUTPUT.write_bytes(stale.SerializeToString())
    assert not gen.check()
    assert gen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err


def test_descriptors_live_in_private_pool_under_own_packages() -> None:
    packages = {
        messages.POOL.FindMessageTypeByName(
            getattr(messages, name).DESCRIPTOR.full_name
        ).file.package
        for name in EXPORTED
    }
    assert packages == {"tfprof_lite.tf", "tfprof_lite.pprof", "tfprof_lite.xplane"}
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindMessageTypeByName("tfprof_lite.tf.RunMetadata")


def test_exports() -> None:
    expected = {
        "RunMetadata", "StepStats", "DeviceStepStats", "NodeExecStats", "AllocatorMemoryUsed",
        "AllocationRecord", "NodeOutput", "MemoryStats", "TensorDescription",
        "AllocationDescription", "CostGraphDef", "GraphDef", "NodeDef", "AttrValue",
        "TensorShapeProto", "TensorProto", "OpLogProto", "OpLogEntry", "CodeDef",
        "ProfileProto", "ProfileNode", "ExecProfile", "ExecTime", "ExecMemory", "Tuple",
        "Memory", "GraphNodeProto", "MultiGraphNodeProto", "AdviceProto", "OptionsProto",
        "AdvisorOptionsProto", "PprofProfile", "PprofSample", "PprofLocation", "PprofLine",
        "PprofFunction", "PprofValueType", "PprofLabel", "XSpace", "XPlane", "XLine",
        "XEvent", "XStat", "XEventMetadata", "XStatMetadata",
    }  # fmt: skip
    assert set(EXPORTED) == expected
    for name in EXPORTED:
        short = name.removeprefix("Pprof")
        assert getattr(messages, name).DESCRIPTOR.name == short
    assert messages.PprofProfile.DESCRIPTOR.full_name == "tfprof_lite.pprof.Profile"
    assert messages.CodeDef.Trace.DESCRIPTOR.full_name == "tfprof_lite.tf.CodeDef.Trace"
    assert messages.AdviceProto.Checker(reports=["r"]).reports == ["r"]
    assert type(messages.CodeDef().traces.add()) is messages.CodeDef.Trace
    assert type(messages.AdviceProto().checkers["c"]) is messages.AdviceProto.Checker
    assert messages.RunMetadata.FunctionGraphs.DESCRIPTOR.name == "FunctionGraphs"
    assert messages.CostGraphDef.Node.InputInfo.DESCRIPTOR.name == "InputInfo"
    assert messages.TensorShapeProto.Dim(size=3).size == 3


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", EXPORTED)
def test_every_class_round_trips_a_populated_message(name: str) -> None:
    cls = getattr(messages, name)
    msg = populate(cls())
    set_fields = {field.name for field, _ in msg.ListFields()}
    oneof_losers = {f.name for o in cls.DESCRIPTOR.oneofs for f in o.fields if f is not o.fields[0]}
    assert set_fields == {f.name for f in cls.DESCRIPTOR.fields} - oneof_losers
    data = msg.SerializeToString(deterministic=True)
    again = cls.FromString(data)
    assert again == msg
    assert again.SerializeToString(deterministic=True) == data
    assert parse(cls, data, name) == msg


def test_unknown_fields_round_trip() -> None:
    # Field 99 (varint 7) on the top level and inside a nested NodeDef.
    unknown = b"\x98\x06\x07"
    node = messages.NodeDef(name="n").SerializeToString() + unknown
    graph = b"\x0a" + bytes([len(node)]) + node + unknown
    parsed = parse(messages.GraphDef, graph, "graph")
    assert parsed.node[0].name == "n"
    assert parsed.SerializeToString() == graph
    # The string fields TensorFlow dropped from CodeDef.Trace (1: file) survive too
    # (protobuf writes unknown fields after the known ones, so put it last).
    legacy_trace = messages.CodeDef.Trace(lineno=3).SerializeToString() + b"\x0a\x04a.py"
    trace = messages.CodeDef.Trace.FromString(legacy_trace)
    assert trace.lineno == 3
    assert trace.SerializeToString() == legacy_trace


def test_graph_debug_info_keeps_proto2_presence() -> None:
    graph = messages.GraphDef()
    graph.debug_info.frames_by_id[1].line = 0  # explicitly set to the default
    again = messages.GraphDef.FromString(graph.SerializeToString())
    assert again.debug_info.frames_by_id[1].HasField("line")


# ---------------------------------------------------------------- codec.parse


def test_parse_accepts_own_message_bytes_and_foreign_message() -> None:
    own = messages.RunMetadata(session_metadata={"name": "s", "version": 2})
    assert parse(messages.RunMetadata, own, "run_meta") is own
    data = own.SerializeToString()
    for raw in (data, bytearray(data), memoryview(data)):
        assert parse(messages.RunMetadata, raw, "run_meta") == own
    assert parse(messages.RunMetadata, b"", "run_meta") == messages.RunMetadata()

    foreign = foreign_run_metadata_class()()
    foreign.session_metadata.name = "from-elsewhere"
    parsed = parse(messages.RunMetadata, foreign, "run_meta")
    assert type(parsed) is messages.RunMetadata
    assert parsed.session_metadata.name == "from-elsewhere"


def _error(cls: Any, data: object, what: str = "run_meta") -> str:
    with pytest.raises(InvalidInputError) as info:
        parse(cls, data, what)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{what}: ")
    assert isinstance(info.value, ValueError)
    return message


def test_parse_rejects_garbage_bytes() -> None:
    message = _error(messages.RunMetadata, b"\xff\xff\xff\xff")
    assert "4 bytes are not a valid RunMetadata message" in message


def test_parse_rejects_truncated_bytes() -> None:
    data = populate(messages.RunMetadata()).SerializeToString()
    for cut in (1, len(data) // 2, len(data) - 1):
        message = _error(messages.RunMetadata, data[:cut], "profile file")
        assert f"{cut} bytes are not a valid RunMetadata message" in message


def test_parse_rejects_invalid_utf8_in_string_field() -> None:
    bad = b"\x0a\x02\xff\xfe"  # NodeDef.name = invalid UTF-8
    assert "not a valid NodeDef message" in _error(messages.NodeDef, bad, "node")


@pytest.mark.parametrize(
    ("value", "type_name"),
    [("abc", "str"), (5, "int"), (None, "NoneType"), ({"a": 1}, "dict"), ([b""], "list")],
)
def test_parse_rejects_unsupported_python_types(value: object, type_name: str) -> None:
    message = _error(messages.RunMetadata, value)
    assert message == (
        f"run_meta: expected serialized bytes or a RunMetadata message, got {type_name}"
    )


def test_parse_rejects_wrong_message_type() -> None:
    message = _error(messages.RunMetadata, messages.GraphDef())
    assert message == (
        "run_meta: expected a RunMetadata message, got a tfprof_lite.tf.GraphDef message; "
        "pass it as graph="
    )
    message = _error(messages.GraphDef, descriptor_pb2.FileDescriptorSet(), "graph")
    assert message == (
        "graph: expected a GraphDef message, got a google.protobuf.FileDescriptorSet message"
    )

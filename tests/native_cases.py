"""Hand-made RunMetadata inputs of the native step decoder's tests (no TensorFlow).

Valid inputs built with our message classes (:data:`MESSAGES`) and as hand-written
wire bytes that exercise protobuf's merge rules (:data:`WIRE`), and inputs the
native decoder must decline: invalid UTF-8 (:func:`bad_utf8_cases`), unknown fields
(:func:`unknown_field_cases`), wrong wire types (:func:`wrong_wire_cases`) and
malformed or non-canonical encodings (:data:`MALFORMED`). :func:`all_inputs` is
every one of them, for the sanitizer run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.handmade import CPU, GPU, STREAM_ALL, Mem, graph_def, node, ns, run_meta
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.wire import len_field, varint

I64_MIN, I64_MAX = -(2**63), 2**63 - 1

# ---------------------------------------------------------------- wire helpers


def key(number: int, wire: int) -> bytes:
    """A field key (tag), minimally encoded."""
    return varint(number << 3 | wire)


def vfield(number: int, value: int) -> bytes:
    """A varint field, written even for 0."""
    return key(number, 0) + varint(value)


def meta_of(*devices: bytes) -> bytes:
    """RunMetadata{step_stats{dev_stats: each of ``devices`` (DeviceStepStats bytes)}}."""
    stats = b"".join(len_field(1, d) for d in devices)
    return len_field(1, stats)


def device_of(*nodes: bytes, name: bytes = b"/cpu:0") -> bytes:
    """DeviceStepStats bytes: ``name`` and the NodeExecStats bytes ``nodes``."""
    return len_field(1, name) + b"".join(len_field(2, n) for n in nodes)


def node_of(*fields: bytes, name: bytes = b"n") -> bytes:
    """NodeExecStats bytes: node_name then ``fields`` as given."""
    return len_field(1, name) + b"".join(fields)


def in_node(*fields: bytes) -> bytes:
    """A RunMetadata of one device holding one node made of ``fields``."""
    return meta_of(device_of(node_of(*fields)))


# ---------------------------------------------------------------- valid inputs


def rich() -> Any:
    """Several devices; GPU and host allocators with and without records; outputs
    with and without descriptions; memory_stats present, absent and empty."""
    gpu = Mem("GPU_0_bfc", 400, 300, 200, 5000, ((1000, 64), (1040, -32)))
    meta = run_meta(
        [
            (
                GPU,
                [
                    ns("a", 1000, 50, [gpu, Mem("cpu", 8, 8, 8, 1, ((5, 5),))], [32, 16], 16, 8),
                    ns("b", 1100, 20, [Mem("GPU_1_bfc", 40, 40, 0, 6000)], [32], temp=4),
                    ns("c", 1200, 30, persist=12),
                    ns("d", 1300, 1, memory_stats=True),
                ],
            ),
            (STREAM_ALL, [ns("a", 1010, 300, [Mem("my_GPU_host", 1, 2, 3, -9, ((7, 8),))])]),
            ("", []),
            (CPU, [ns("x:0", 900, 5, out_bytes=[24]), ns("", 0, 0, [Mem("gpu_lower", 5)])]),
        ]
    )
    node_stats = meta.step_stats.dev_stats[0].node_stats[0]
    node_stats.timeline_label = "a = MatMul(x, w) \u00e9\u4e2d"
    node_stats.memory_stats.persistent_tensor_alloc_ids.extend([1, 2**40, -1])
    node_stats.referenced_tensor.add(requested_bytes=9, allocator_name="GPU_0_bfc", ptr=7)
    node_stats.output.add(slot=5)  # no tensor_description
    node_stats.output.add(slot=6).tensor_description.dtype = 3  # no allocation_description
    empty_alloc = node_stats.output.add(slot=-1).tensor_description
    empty_alloc.allocation_description.SetInParent()  # present but all defaults
    empty_alloc.shape.dim.add(size=-1, name="batch")
    empty_alloc.shape.unknown_rank = True
    node_stats.thread_id = 2**32 - 1
    node_stats.all_start_nanos = I64_MAX
    node_stats.scheduled_micros = I64_MIN
    meta.step_stats.dev_stats[0].thread_names[7] = "worker \u00e9"
    return meta


def extremes() -> Any:
    """int64 extremes; memory sums that wrap around; negative and huge sizes."""
    top = Mem("GPU_0_bfc", I64_MAX, I64_MAX, I64_MIN, I64_MAX, ((I64_MIN, I64_MAX),))
    meta = run_meta(
        [
            (
                GPU,
                [
                    ns("wrap", I64_MAX, I64_MIN, [top, top, Mem("GPU_x", 2, 2, -1, I64_MIN)]),
                    ns("one", I64_MIN, -1, [top], [I64_MAX], I64_MIN, I64_MAX),
                    ns("neg", -5, -7, [Mem("cpu", -1, -2, -3)], temp=-1, persist=-2),
                ],
            )
        ]
    )
    out = meta.step_stats.dev_stats[0].node_stats[1].output.add(slot=2**31 - 1)
    alloc = out.tensor_description.allocation_description
    alloc.requested_bytes, alloc.allocated_bytes, alloc.ptr = I64_MIN, -1, 2**64 - 1
    return meta


def others() -> Any:
    """Step stats next to every other top-level field."""
    meta = run_meta([(CPU, [ns("a", 10, 2, [Mem("cpu", 4, 4, 4)])])])
    meta.partition_graphs.add().CopyFrom(graph_def([node("a", "Const")]))
    meta.partition_graphs.add()
    meta.cost_graph.node.add(name="a", id=1, device=CPU)
    meta.function_graphs.add().pre_optimization_graph.node.add(name="f", op="Add")
    meta.session_metadata.name = "sess"
    meta.session_metadata.version = -3
    return meta


def only_others() -> Any:
    meta = others()
    meta.ClearField("step_stats")
    return meta


def empty_step_stats() -> Any:
    meta = pb.RunMetadata()
    meta.step_stats.SetInParent()
    return meta


def many_nodes() -> Any:
    records = [
        ns(f"n{i}", i, i % 7, [Mem("GPU_0_bfc", i, i, i, i, ((i, -i),))]) for i in range(300)
    ]
    return run_meta([(GPU, records[:150]), (CPU, records[150:])])


MESSAGES: dict[str, Callable[[], Any]] = {
    "rich": rich,
    "extremes": extremes,
    "others": others,
    "only_others": only_others,
    "empty_step_stats": empty_step_stats,
    "absent_step_stats": pb.RunMetadata,
    "one_empty_device": lambda: run_meta([("", [])]),
    "unicode_names": lambda: run_meta([("d\u00e9v", [ns("\U0001f525/x:\u00e9", 1, 1)])]),
    "many_nodes": many_nodes,
}

#: Hand-written wire bytes protobuf accepts, with the merge rules it applies.
WIRE: dict[str, bytes] = {
    # A singular string twice: the last one wins (device and node name).
    "last_name_wins": meta_of(
        device_of(node_of(len_field(1, b"second")), name=b"first") + len_field(1, b"dev")
    ),
    # Singular scalars twice: the last one wins.
    "last_scalar_wins": in_node(vfield(2, 5), vfield(4, 9), vfield(2, -7)),
    # memory_stats twice: merged (temp from the first, persist from the second).
    "memory_stats_merge": in_node(
        len_field(12, vfield(1, 11) + vfield(3, 1)), len_field(12, vfield(3, 22))
    ),
    # tensor_description in two parts: the allocation description of the first holds.
    "tensor_description_merge": in_node(
        len_field(7, len_field(3, len_field(4, vfield(1, 5))) + len_field(3, vfield(1, 1)))
    ),
    # allocation_description in two parts: fields merge.
    "allocation_description_merge": in_node(
        len_field(
            7,
            len_field(3, len_field(4, vfield(1, 5) + vfield(6, 99)))
            + len_field(3, len_field(4, vfield(2, 50))),
        )
    ),
    # allocator_name after the records, then renamed: the last name decides GPU-ness.
    "allocator_renamed": in_node(
        len_field(6, len_field(6, vfield(1, 3)) + len_field(1, b"cpu") + len_field(1, b"GPU"))
    ),
    # step_stats twice: the device lists concatenate.
    "step_stats_twice": meta_of(device_of(node_of(), name=b"a"))
    + meta_of(device_of(node_of(name=b"m"), name=b"b")),
    # Packed and unpacked repeated int64 in one message.
    "packed_and_unpacked": in_node(
        len_field(12, len_field(5, varint(1) + varint(2**63)) + vfield(5, 3) + len_field(6, b""))
    ),
    # Non-minimal encodings protobuf accepts: a two-byte tag, a five-byte length.
    "overlong_tag": b"\x8a\x00\x00",
    "overlong_length": b"\x0a\x80\x80\x80\x80\x00",
    # A ten-byte varint whose last byte is 1, and an int32 slot given 64 bits.
    "ten_byte_varint": in_node(key(2, 0) + b"\xff" * 9 + b"\x01"),
    "wide_int32_slot": in_node(
        len_field(7, vfield(1, 2**40 + 7) + len_field(3, len_field(4, b"")))
    ),
    "nanos_and_thread": in_node(*(vfield(n, 2**64 - n) for n in (3, 5, 9, 10, 13, 14, 15, 16, 17))),
    "map_entry_bare": meta_of(device_of(node_of()) + len_field(3, b"")),
}


#: Invalid UTF-8, one of each kind protobuf refuses.
BAD_UTF8: dict[str, bytes] = {
    "overlong_2": b"\xc0\xaf",
    "overlong_3": b"\xe0\x80\xaf",
    "overlong_4": b"\xf0\x80\x80\xaf",
    "surrogate": b"\xed\xa0\x80",
    "above_max": b"\xf4\x90\x80\x80",
    "lead_f5": b"\xf5\x80\x80\x80",
    "byte_ff": b"\xff",
    "truncated": b"\xe4\xb8",
    "lone_continuation": b"\x80",
    "bad_continuation": b"\xc3\x28",
}


def bad_utf8_cases() -> dict[str, bytes]:
    """Invalid UTF-8 in every string field walked (an overlong '/'), and every kind
    of invalid UTF-8 both in a string that is decoded (``device``) and in one that is
    only checked (``allocator_name``)."""
    bad = b"ok\xc0\xaf"
    alloc_desc = len_field(4, len_field(3, bad))
    cases = {
        "device": meta_of(device_of(name=bad)),
        "node_name": meta_of(device_of(node_of(name=bad))),
        "timeline_label": in_node(len_field(8, bad)),
        "memory_allocator": in_node(len_field(6, len_field(1, bad))),
        "output_allocator": in_node(len_field(7, len_field(3, alloc_desc))),
        "referenced_allocator": in_node(len_field(11, len_field(3, bad))),
        "dim_name": in_node(
            len_field(7, len_field(3, len_field(2, len_field(2, len_field(2, bad)))))
        ),
        "thread_name": meta_of(device_of() + len_field(3, vfield(1, 1) + len_field(2, bad))),
    }
    for kind, text in BAD_UTF8.items():
        cases[f"device_{kind}"] = meta_of(device_of(name=b"a" + text + b"z"))
        cases[f"allocator_{kind}"] = in_node(len_field(6, len_field(1, b"a" + text + b"z")))
    return cases


def unknown_field_cases() -> dict[str, bytes]:
    unknown = vfield(99, 1)
    return {
        "run_metadata": meta_of(device_of()) + unknown,
        "step_stats": len_field(1, len_field(1, device_of()) + unknown),
        "device": meta_of(device_of() + unknown),
        "node": in_node(unknown),
        "memory": in_node(len_field(6, unknown)),
        "record": in_node(len_field(6, len_field(6, unknown))),
        "output": in_node(len_field(7, unknown)),
        "tensor_description": in_node(len_field(7, len_field(3, unknown))),
        "allocation_description": in_node(len_field(7, len_field(3, len_field(4, unknown)))),
        "shape": in_node(len_field(7, len_field(3, len_field(2, unknown)))),
        "dim": in_node(len_field(7, len_field(3, len_field(2, len_field(2, unknown))))),
        "memory_stats": in_node(len_field(12, unknown)),
        "referenced_tensor": in_node(len_field(11, unknown)),
        "thread_name": meta_of(device_of() + len_field(3, unknown)),
        "fixed64": in_node(key(40, 1) + b"\x00" * 8),
        "fixed32": in_node(key(40, 5) + b"\x00" * 4),
        "group": in_node(key(40, 3) + key(40, 4)),
    }


def wrong_wire_cases() -> dict[str, bytes]:
    return {
        "node_name_as_varint": meta_of(device_of(vfield(1, 1))),
        "start_as_len": in_node(len_field(2, b"\x01")),
        "start_as_fixed64": in_node(key(2, 1) + b"\x01" * 8),
        "memory_as_varint": in_node(vfield(6, 1)),
        "slot_as_len": in_node(len_field(7, len_field(1, b""))),
        "device_as_varint": meta_of(vfield(1, 3)),
        "step_stats_as_varint": vfield(1, 0),
        "partition_graphs_as_varint": vfield(3, 0),
        "records_as_varint": in_node(len_field(6, vfield(6, 1))),
        "alloc_ids_as_fixed": in_node(len_field(12, key(5, 1) + b"\x00" * 8)),
    }


MALFORMED: dict[str, bytes] = {
    "varint_tenth_byte_above_one": in_node(key(2, 0) + b"\xff" * 9 + b"\x02"),
    "varint_eleven_bytes": in_node(key(2, 0) + b"\xff" * 10 + b"\x01"),
    "varint_unterminated": in_node(key(2, 0) + b"\xff\xff"),
    "three_byte_tag": b"\x8a\x80\x00\x00",
    "six_byte_length": b"\x0a\x80\x80\x80\x80\x80\x00",
    "length_past_end": b"\x0a\x05\x0a\x00",
    "field_number_zero": in_node(b"\x00\x00"),
    "wire_type_6": in_node(b"\x0e"),
    "wire_type_7": in_node(b"\x0f"),
    "end_group_at_top": b"\x0c",
    "packed_varint_cut": in_node(len_field(12, len_field(5, b"\x01\x80"))),
    "key_cut": in_node(b"\x80"),
    "top_level_field_6": len_field(6, b""),
    "others_do_not_parse": meta_of(device_of()) + len_field(3, len_field(1, b"\x0a\x02\xff\xff")),
}


def graph_of_two_nodes() -> bytes:
    """A GraphDef (another input kind) as bytes."""
    return graph_def([node("a", "Const"), node("b", "Identity", ["a"])]).SerializeToString()


def all_inputs() -> dict[str, bytes]:
    """Every input above by a unique name (messages serialized)."""
    out = {f"message:{k}": make().SerializeToString() for k, make in MESSAGES.items()}
    out.update({f"wire:{k}": v for k, v in WIRE.items()})
    out.update({f"utf8:{k}": v for k, v in bad_utf8_cases().items()})
    out.update({f"unknown:{k}": v for k, v in unknown_field_cases().items()})
    out.update({f"wrong_wire:{k}": v for k, v in wrong_wire_cases().items()})
    out.update({f"malformed:{k}": v for k, v in MALFORMED.items()})
    return out

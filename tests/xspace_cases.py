"""Hand-made XSpace inputs of the native XSpace decoder's tests (no TensorFlow).

:data:`MESSAGES` builds valid XSpaces with our message classes (both timestamp
conventions, every stat kind, derived lines, empty planes, missing metadata,
extreme values), :data:`WIRE` writes wire bytes by hand that exercise protobuf's
rules (map entries with repeated keys, oneof members replacing each other, fields
in any order, packed and unpacked ``child_id``), and :data:`DECLINED` holds inputs
the native decoder must give back to protobuf (unknown fields, wrong wire types,
invalid UTF-8, a map value written twice, a corrupt compressed string, times out
of range, bytes that are not an XSpace). :func:`all_inputs` is every one.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

from tests import xspace_files
from tests.native_cases import BAD_UTF8, I64_MAX, I64_MIN, key, vfield
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.wire import len_field

__all__ = ["DECLINED", "MESSAGES", "WIRE", "all_inputs"]

START = 1_700_000_000_000_000_000


def _derived_lines() -> Any:
    """A GPU plane with its stream and the derived lines XProf adds."""
    b = xspace_files.SpaceBuilder()
    gpu = b.gpu_plane()
    stream = b.line(gpu, 14, "Stream #14(Compute)")
    b.event(gpu, stream, "fusion_3", 10, 5, correlation_id=7, hlo_op="fusion.3")
    for line_id, name in ((1, "Steps"), (2, "XLA Modules"), (3, "XLA Ops"), (4, "Framework Ops")):
        b.event(gpu, b.line(gpu, 100 + line_id, name), f"{name} event", 10, 5, group_id=0)
    host = b.line(b.host, 3, "python3")
    b.event(b.host, host, "train", 0, 40, "step", _r=1, step_num=0)
    return b.space


def _empty_planes() -> Any:
    space = pb.XSpace()
    space.planes.add(id=3, name="/device:GPU:3")
    space.planes.add()
    named = space.planes.add(id=1, name="/host:CPU")
    named.lines.add(id=1, name="idle")
    return space


def _missing_metadata() -> Any:
    space = pb.XSpace(errors=["lost events"], warnings=["w1", ""])
    plane = space.planes.add(name="/host:CPU")
    plane.stat_metadata[4].name = "named"
    line = plane.lines.add(id=1, timestamp_ns=5)
    event = line.events.add(metadata_id=12, offset_ps=-3, duration_ps=I64_MAX)
    event.stats.add(metadata_id=9, ref_value=4)
    event.stats.add(metadata_id=4, ref_value=9)
    event.stats.add(metadata_id=4, ref_value=(1 << 64) - 1)
    event.stats.add(metadata_id=4)
    event.stats.add(metadata_id=-1, int64_value=I64_MIN)
    line.events.add(metadata_id=0, num_occurrences=I64_MAX)
    return space


def _sparse_ids() -> Any:
    """Negative and huge metadata ids (looked up by search, not by a dense table)."""
    space = pb.XSpace()
    plane = space.planes.add(name="/host:CPU")
    for mid in (-5, 3, 1 << 40):
        plane.event_metadata[mid].name = f"e{mid}"
    for mid in (-2, 1 << 33):
        plane.stat_metadata[mid].name = f"s{mid}"
    line = plane.lines.add(id=1, timestamp_ns=1)
    for mid in (-5, 3, 1 << 40, 4, -6, 1 << 41):
        event = line.events.add(metadata_id=mid, offset_ps=mid & 0xFFFF)
        event.stats.add(metadata_id=-2, ref_value=1 << 33)
        event.stats.add(metadata_id=1 << 33, int64_value=mid)
        event.stats.add(metadata_id=7, ref_value=(1 << 64) - 2)
    return space


def _metadata_stats() -> Any:
    space = pb.XSpace()
    plane = space.planes.add(name="/host:metadata")
    plane.stat_metadata[1].name = "Hlo Proto"
    plane.stat_metadata[2].name = "program_id"
    for mid in (9, 3, 7):
        meta = plane.event_metadata[mid]
        meta.name, meta.display_name = f"module_{mid}", f"m{mid}"
        meta.metadata = b"\x08\x01"
        meta.child_id.extend([1, mid])
        meta.stats.add(metadata_id=1, bytes_value=bytes([mid]) * 4)
        meta.stats.add(metadata_id=2, uint64_value=mid)
    plane.stats.add(metadata_id=2, double_value=-0.0)
    return space


def _start_variants(value: dict[str, int], stamps: tuple[int, ...]) -> Callable[[], Any]:
    """A Task Environment whose ``profile_start_time`` is ``value``, lines at ``stamps``."""

    def make() -> Any:
        space = pb.XSpace()
        host = space.planes.add(name="/host:CPU")
        host.event_metadata[1].name = "op"
        for i, stamp in enumerate(stamps):
            host.lines.add(id=i, timestamp_ns=stamp).events.add(metadata_id=1, offset_ps=7)
        env = space.planes.add(name="Task Environment")
        names: dict[str, int] = {}
        env.stats.append(xspace_files.stat(env, names, "profile_start_time", str_value="x"))
        env.stats.append(xspace_files.stat(env, names, "profile_start_time", **value))
        env.stats.append(xspace_files.stat(env, names, "profile_stop_time", uint64_value=9))
        return space

    return make


def _compressed() -> Any:
    space = pb.XSpace()
    plane = space.planes.add(name="/device:GPU:0")
    plane.stat_metadata[1].name = "long"
    plane.stat_metadata[2].name = "\u00e9t\u00e9 \u2603"
    line = plane.lines.add(id=1, timestamp_ns=START)
    event = line.events.add(metadata_id=0, offset_ps=0)
    for text in ("long", "x" * 5000, "\u00e9t\u00e9 \u2603", ""):
        event.stats.add(metadata_id=1, compressed_str_value=gzip.compress(text.encode()))
    event.stats.add(metadata_id=2, str_value="long")
    return space


MESSAGES: dict[str, Callable[[], Any]] = {
    "relative": lambda: xspace_files.hand_space(True),
    "absolute": lambda: xspace_files.hand_space(False),
    "derived_lines": _derived_lines,
    "empty_planes": _empty_planes,
    "missing_metadata": _missing_metadata,
    "metadata_stats": _metadata_stats,
    "sparse_ids": _sparse_ids,
    "compressed": _compressed,
    "start_int64": _start_variants({"int64_value": START}, (5, START + 5, 100)),
    "start_negative": _start_variants({"int64_value": -50}, (-60, -40, I64_MAX // 1000 - 100)),
    "start_zero": _start_variants({"uint64_value": 0}, (30, 10, 20)),
    "start_absent": _start_variants({"double_value": 1.5}, (I64_MIN // 1000, -5)),
}

# ---------------------------------------------------------------- wire bytes


def _space(*planes: bytes) -> bytes:
    return b"".join(len_field(1, plane) for plane in planes)


def _entry(number: int, *fields: bytes) -> bytes:
    return len_field(number, b"".join(fields))


def _named(*fields: bytes, name: bytes = b"/host:CPU") -> bytes:
    return len_field(2, name) + b"".join(fields)


def _event_line(*events: bytes) -> bytes:
    return len_field(3, vfield(3, 100) + b"".join(len_field(4, e) for e in events))


_META_A = _entry(4, vfield(1, 1), len_field(2, len_field(2, b"a")))
_META_B = _entry(4, vfield(1, 1), len_field(2, len_field(2, b"b")))
_STAT_META = _entry(5, len_field(2, len_field(2, b"s")), vfield(1, 2))
_EVENT = vfield(1, 1) + vfield(2, 5)

WIRE: dict[str, bytes] = {
    "map_key_repeated": _space(_named(_META_A, _META_B, _event_line(_EVENT))),
    "map_key_twice_in_entry": _space(
        _named(_entry(4, vfield(1, 7), len_field(2, len_field(2, b"a")), vfield(1, 1)))
    ),
    "map_entry_without_key_or_value": _space(_named(_entry(4), _entry(5, vfield(1, 3)))),
    "oneof_offset_then_count": _space(
        _named(_META_A, _event_line(vfield(2, 9) + vfield(5, 3) + vfield(1, 1)))
    ),
    "oneof_count_then_offset": _space(_named(_META_A, _event_line(vfield(5, 3) + vfield(2, 9)))),
    "stat_value_replaced": _space(
        _named(
            _STAT_META,
            len_field(6, vfield(1, 2) + vfield(4, 5) + len_field(5, b"text")),
            len_field(6, vfield(1, 2) + len_field(5, b"t") + key(2, 1) + b"\x00" * 7 + b"\x40"),
        )
    ),
    "fields_in_any_order": _space(
        _event_line(_EVENT + len_field(4, vfield(1, 2) + vfield(7, 2)))
        + len_field(6, vfield(1, 2) + vfield(3, 1))
        + _STAT_META
        + _META_A
        + _named(vfield(1, 4), name=b"first")
        + len_field(2, b"second")
    ),
    "line_fields_after_events": _space(
        _named(_META_A, len_field(3, len_field(4, _EVENT) + vfield(3, 5) + vfield(3, 6)))
    ),
    "child_id_packed_and_not": _space(
        _named(
            _entry(
                4,
                vfield(1, 1),
                len_field(2, vfield(6, 4) + len_field(6, b"\x01\x02\xff\x01") + vfield(6, 9)),
            )
        )
    ),
    "two_byte_keys": _space(
        _named(len_field(3, b"\xd0\x00" + b"\x05" + key(11, 2) + b"\x01z")),
    )
    + len_field(4, b"host"),
}

# ---------------------------------------------------------------- declined


def _declined() -> dict[str, bytes]:
    bad_gzip = pb.XSpace()
    plane = bad_gzip.planes.add(name="/host:CPU")
    plane.lines.add().events.add().stats.add(compressed_str_value=b"not gzip")
    late = pb.XSpace()
    host = late.planes.add(name="/host:CPU")
    host.lines.add(timestamp_ns=10).events.add(offset_ps=I64_MAX)
    host.lines.add(timestamp_ns=0)
    huge = _start_variants({"uint64_value": (1 << 64) - 1}, (1, 2))()
    out = {
        "unknown_event_field": _space(_named(_META_A, _event_line(_EVENT + vfield(9, 1)))),
        "unknown_space_field": _space(_named()) + vfield(5, 1),
        "line_id_as_bytes": _space(_named(len_field(3, len_field(1, b"x")))),
        "group_in_plane": _space(_named(key(7, 3) + key(7, 4))),
        "fixed32_stat": _space(_named(len_field(6, key(2, 5) + b"\x00" * 4))),
        "map_value_twice": _space(
            _named(_entry(4, vfield(1, 1), len_field(2, len_field(2, b"a")), len_field(2, b"")))
        ),
        "bad_gzip": bad_gzip.SerializeToString(),
        "event_start_overflow": late.SerializeToString(),
        "huge_uint64_start": huge.SerializeToString(),
        "no_named_plane": _space(len_field(3, b"")),
        "empty": b"",
        "truncated": _space(_named(_META_A))[:-3],
        "profile_proto": pb.ProfileProto(steps=[1, 2]).SerializeToString(),
    }
    for name, raw in BAD_UTF8.items():
        out[f"bad_utf8_plane_{name}"] = _space(len_field(2, raw))
        out[f"bad_utf8_str_stat_{name}"] = _space(_named(len_field(6, len_field(5, raw))))
        out[f"bad_utf8_gzip_{name}"] = _space(
            _named(len_field(6, len_field(8, gzip.compress(raw))))
        )
    return out


DECLINED = _declined()


def all_inputs() -> list[bytes]:
    """Every hand-made input: messages serialized, wire bytes, declined bytes."""
    out = [make().SerializeToString() for make in MESSAGES.values()]
    return out + list(WIRE.values()) + list(DECLINED.values())

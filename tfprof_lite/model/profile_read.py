"""ProfileProto -> ProfileModel: reading the ``profile_<step>`` file format.

:func:`load_bytes` reads a file's bytes (the native decoder when it is built and
takes them, else a protobuf parse and the pure-Python walk); :func:`decode`
reads an already parsed message. Both end in :func:`apply`, which puts the
decoded :class:`~tfprof_lite.proto.profiles.ProfileColumns` into an empty model:
nodes in id order (bulk appends), call stacks shared between nodes with equal
traces, and one column block per step. Like tfprof, reading does not restore
the missing-accelerator-stream flag.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tfprof_lite.model.decode import code_stacks
from tfprof_lite.model.execs import MEM_VALUES, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.proto.profiles import (
    ProfileColumns,
    StepBlock,
    columns_from_profile,
    native_profile_columns,
)

__all__ = ["apply", "decode", "load_bytes"]


def decode(profile: Any, model: ProfileModel) -> None:
    """Load a parsed ProfileProto message into an empty model."""
    apply(columns_from_profile(profile), model)


def load_bytes(raw: bytes, model: ProfileModel, parse: Callable[[bytes], Any]) -> None:
    """Load serialized ProfileProto ``raw`` into an empty model.

    ``parse`` turns the bytes into a message when the native decoder is not used
    (it raises the caller's usual errors for bad input).
    """
    collecting = gc.isenabled()
    gc.disable()  # many small containers; none of them is garbage
    try:
        cols = native_profile_columns(raw)
        if cols is None or not cols.nodes:  # an empty result: let the parse explain
            cols = columns_from_profile(parse(raw))
        apply(cols, model)
    finally:
        if collecting:
            gc.enable()


def apply(cols: ProfileColumns, model: ProfileModel) -> None:
    """Put decoded profile columns into ``model`` (an empty one)."""
    model.id_to_string.update(cols.id_to_string)
    rows = cols.nodes
    fields = list(zip(*rows)) if rows else [()] * 13
    (names, ops, inputs, src_output, out_shapes, shapes, op_types) = fields[:7]
    (canonical, host, flops, traces, attrs, has_execs) = fields[7:]
    base = model.extend_nodes(
        names,
        ops,
        inputs=inputs,
        src_output=src_output,
        output_shapes=out_shapes,
        shapes=shapes,
        op_types=op_types,
        canonical_device=canonical,
        host_device=host,
        static_float_ops=flops,
        traces=_traces(traces),
        attrs=attrs,
        has_execs=has_execs,
    )
    for block in sorted(cols.blocks, key=lambda b: b.step):
        _add_block(model, block, base)
    model.has_trace = cols.has_trace
    for step in cols.steps:
        model.steps.setdefault(step, StepExecs())
    model.data_version += 1


def _traces(raw: Sequence[bytes | None]) -> list[list[CodeFrame] | None]:
    """Call stacks from their packed frames; equal stacks share one list, equal
    frames one (immutable) object."""
    distinct = list(dict.fromkeys(packed for packed in raw if packed is not None))
    stacks: dict[bytes | None, list[CodeFrame] | None] = dict(zip(distinct, code_stacks(distinct)))
    stacks[None] = None
    return [stacks[packed] for packed in raw]


def _add_block(model: ProfileModel, block: StepBlock, base: int) -> None:
    execs = model.steps.get(block.step)
    if execs is None:
        execs = model.steps[block.step] = StepExecs()
    remap = np.asarray([execs.device_code(d) for d in block.devices] + [-1], dtype=np.int32)
    c = block.cols
    mem_base = len(execs.mem)
    execs.pairs.append(node=c["pair_node"] + base, dev=remap[c["pair_dev"]])
    execs.spans.append(node=c["span_node"] + base, start=c["span_start"], end=c["span_end"])
    execs.times.append(
        node=c["t_node"] + base,
        kind=c["t_kind"],
        dev=remap[c["t_dev"]],
        start=c["t_start"],
        dur=c["t_dur"],
    )
    execs.mem.append(node=c["m_node"] + base, **{name: c[f"m_{name}"] for name in MEM_VALUES})
    execs.outs.append(
        mem=c["o_row"] + mem_base, slot=c["o_slot"], bytes=c["o_bytes"], ptr=c["o_ptr"]
    )
    execs.allocs.append(node=c["a_node"] + base, micros=c["a_micros"], bytes=c["a_bytes"])
    execs.changed()

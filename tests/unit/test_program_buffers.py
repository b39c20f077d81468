"""The memory viewer on hand-built buffer assignments whose numbers are known.

Each case is a small ``HloProto`` (:mod:`tfprof_lite.proto.xla_program`): an
entry computation, logical buffers, allocations with XLA's flags and a heap
simulator trace. The real programs (JAX on the CPU, the H100 captures, XLA's
own reports and XProf) are checked in
``tests/integration/test_program_memory_jax.py``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.program_cases import (
    add_allocation,
    add_logical,
    add_trace,
    basic_program,
    new_program,
    xspace_file,
)
from tfprof_lite.model.xla_programs import ProgramRecord
from tfprof_lite.programs.buffers import Buffer, ProgramMemory, allocation_kind, program_memory
from tfprof_lite.programs.buffers_heap import ALLOC, FREE, SHARE_WITH, pick_trace, simulate
from tfprof_lite.programs.hlo import Program
from tfprof_lite.programs.memory_chart import heap_svg, nice_ticks

SVG = "{http://www.w3.org/2000/svg}"


def _memory(proto: Any, color: int = 0) -> ProgramMemory:
    return program_memory(Program(proto), 7, "jit_f", color)


def test_totals_categories_and_their_relation() -> None:
    memory = _memory(basic_program())
    assert memory.total_bytes == 1024 + 256 + 768 + 64 + 16 + 4
    assert (memory.argument_bytes, memory.output_bytes, memory.alias_bytes) == (1280, 64, 0)
    assert (memory.temp_bytes, memory.constant_bytes, memory.thread_local_bytes) == (768, 16, 4)
    assert memory.total_bytes == (
        memory.argument_bytes + memory.output_bytes - memory.alias_bytes + memory.temp_bytes
        + memory.constant_bytes + memory.thread_local_bytes
    )  # fmt: skip


def test_heap_peak_and_buffers_at_the_peak() -> None:
    memory = _memory(basic_program())
    base = 1024 + 256 + 64 + 16 + 4
    assert memory.base_bytes == base
    assert memory.heap == [base + h for h in (0, 512, 640, 128, 192, 64, 0)]
    assert (memory.peak_bytes, memory.peak_at) == (base + 640, 2)
    assert memory.peak_instruction == "fusion.b"
    assert memory.steps == [
        "",
        "fusion.a",
        "fusion.b",
        "fusion.a",
        "fusion.c",
        "fusion.b",
        "fusion.c",
    ]
    assert memory.peak_bytes <= memory.total_bytes
    assert sum(b.bytes for b in memory.buffers_at_peak) == memory.peak_bytes
    assert [b.bytes for b in memory.buffers_at_peak] == [1024, 512, 256, 128, 64, 16, 4]
    assert memory.buffers_at_peak[1] == Buffer(
        512, "f32[128]", "fusion.a", "jit(f)/dense/dot_general", "temporary"
    )
    kinds = {b.instruction: b.kind for b in memory.buffers_at_peak}
    assert kinds == {
        "p0": "parameter", "fusion.a": "temporary", "p1": "parameter", "fusion.b": "temporary",
        "fusion.c": "output", "constant.1": "constant", "reduce.1": "thread-local",
    }  # fmt: skip


def test_the_first_highest_point_is_the_peak() -> None:
    proto = basic_program(events=False)
    add_trace(proto, [(ALLOC, 3), (FREE, 3), (ALLOC, 3), (FREE, 3)])
    memory = _memory(proto)
    assert memory.peak_at == 1 and memory.heap[3] == memory.peak_bytes


def test_no_buffer_assignment() -> None:
    memory = _memory(new_program())
    assert (memory.total_bytes, memory.peak_bytes, memory.peak_at) == (0, 0, 0)
    assert memory.heap == [0] and memory.buffers_at_peak == [] and memory.peak_instruction == ""
    assert memory.to_dict()["buffers_at_peak"] == []
    assert "jit_f(7)" in memory.to_text() and "no heap trace" in memory.to_text()
    ET.fromstring(heap_svg(memory).split("\n", 1)[1])


def test_without_a_trace_every_allocation_lives_for_the_whole_program() -> None:
    memory = _memory(basic_program(events=False))
    assert memory.heap == [memory.total_bytes] and memory.peak_at == 0
    assert memory.peak_bytes == memory.total_bytes == memory.base_bytes
    temporary = [b for b in memory.buffers_at_peak if b.kind == "temporary"]
    assert [(b.bytes, b.instruction) for b in temporary] == [(768, "fusion.a")]  # largest named
    assert sum(b.bytes for b in memory.buffers_at_peak) == memory.peak_bytes


def test_an_empty_trace_is_no_trace() -> None:
    proto = basic_program(events=False)
    add_trace(proto, [])
    assert _memory(proto).heap == [_memory(basic_program(events=False)).total_bytes]


def test_share_with_takes_the_canonical_buffers_memory() -> None:
    proto = basic_program(events=False)
    # b and c share a's memory: one 512 B buffer live until its last user frees it.
    add_trace(
        proto,
        [(ALLOC, 3), (SHARE_WITH, 4, 3), (FREE, 3), (SHARE_WITH, 5, 4), (FREE, 4), (FREE, 5)],
    )
    memory = _memory(proto)
    assert [h - memory.base_bytes for h in memory.heap] == [0, 512, 512, 512, 512, 512, 0]
    at_peak = [b for b in memory.buffers_at_peak if b.kind == "temporary"]
    assert [(b.bytes, b.instruction) for b in at_peak] == [(512, "fusion.a")]


def test_share_with_a_freed_buffer_allocates_it_again() -> None:
    sizes = {3: 512, 4: 128}
    proto = basic_program(events=False)
    trace = add_trace(proto, [(ALLOC, 3), (FREE, 3), (SHARE_WITH, 4, 3), (FREE, 4)])
    run = simulate(trace, sizes)
    assert run.heap == [0, 512, 0, 512, 0]
    assert (run.peak, run.peak_at, run.live_at_peak) == (512, 1, [3])


def test_unknown_buffers_and_double_frees_change_nothing() -> None:
    proto = basic_program(events=False)
    trace = add_trace(
        proto, [(ALLOC, 3), (FREE, 3), (FREE, 3), (ALLOC, 42), (FREE, 42), (ALLOC, 4)]
    )
    run = simulate(trace, {3: 512, 4: 128})
    assert run.heap == [0, 512, 0, 0, 0, 0, 128]
    assert run.seen == {3, 4}
    assert simulate(None, {}).heap == [0]


def test_several_memory_spaces_are_apart() -> None:
    proto = basic_program()
    add_logical(proto, 20, 1000, 3, color=1)
    add_logical(proto, 21, 3000, 4, color=1)
    add_allocation(proto, 6, 3000, [(20, 0), (21, 0)], color=1)
    add_allocation(proto, 7, 500, [], color=1, is_entry_computation_parameter=True)
    add_trace(proto, [(ALLOC, 20), (FREE, 20), (ALLOC, 21), (FREE, 21)])
    default = _memory(proto)
    assert default.total_bytes == 2132 and default.peak_bytes == 1364 + 640
    other = _memory(proto, color=1)
    assert (other.color, other.total_bytes, other.argument_bytes) == (1, 3500, 500)
    assert other.heap == [500, 1500, 500, 3500, 500]
    assert (other.peak_bytes, other.peak_at) == (3500, 3)
    color_of = {b.id: b.color for b in proto.buffer_assignment.logical_buffers}
    assert (
        pick_trace(proto.buffer_assignment, color_of, 1)
        is proto.buffer_assignment.heap_simulator_traces[1]
    )
    assert pick_trace(proto.buffer_assignment, color_of, 5) is None


def test_aliased_parameters_count_as_argument_and_output() -> None:
    proto = basic_program()
    alloc = proto.buffer_assignment.buffer_allocations[0]
    alloc.maybe_live_out = True
    proto.hlo_module.input_output_alias.entries.add(parameter_number=0, output_shape_index=[1])
    memory = _memory(proto)
    assert (memory.argument_bytes, memory.output_bytes, memory.alias_bytes) == (1280, 1088, 1024)
    assert memory.total_bytes == 1280 + 1088 - 1024 + 768 + 16 + 4
    assert allocation_kind(alloc) == "parameter"  # a parameter first, as XProf


def test_tuple_elements_are_named_with_their_shape_index() -> None:
    proto = basic_program(events=False)
    add_logical(proto, 30, 32, 9, index=(0,))
    add_logical(proto, 31, 100, 9, index=(1,))
    add_allocation(proto, 6, 132, [(30, 0), (31, 32)])
    add_trace(proto, [(ALLOC, 30), (ALLOC, 31), (FREE, 30), (FREE, 31)])
    memory = _memory(proto)
    temporaries = [b for b in memory.buffers_at_peak if b.instruction.startswith("fusion.d")]
    assert [(b.instruction, b.shape, b.scope) for b in temporaries] == [
        ("fusion.d{1}", "f32[25]", "jit(f)/split"),
        ("fusion.d{0}", "f32[8]", "jit(f)/split"),
    ]
    output = next(b for b in memory.buffers_at_peak if b.kind == "output")
    assert output.shape == "f32[16]"


def test_to_dict_keys() -> None:
    data = _memory(basic_program()).to_dict()
    assert {"program", "program_id", "total_bytes", "peak_bytes", "buffers_at_peak"} <= set(data)
    assert (data["program"], data["program_id"], data["peak_bytes"]) == ("jit_f", 7, 2004)
    assert set(data["buffers_at_peak"][0]) >= {"bytes", "shape", "instruction", "scope"}
    assert data["heap"][data["peak_at"]] == data["peak_bytes"]


def test_to_text() -> None:
    text = _memory(basic_program()).to_text(top=3)
    lines = text.splitlines()
    assert lines[0] == "jit_f(7) (memory space 0)"
    assert "2,132 B" in lines[1] and "thread-local 4 B" in lines[1]
    assert "2,004 B" in lines[2] and "at step 2 of 6 (fusion.b)" in lines[2]
    assert "(3 of 7)" in text
    assert "fusion.a  jit(f)/dense/dot_general" in text
    assert len(lines) == 4 + 2 + 3


def test_heap_svg_is_valid_and_marks_the_peak() -> None:
    memory = _memory(basic_program())
    memory.program = "jit_<odd>&name"
    svg = heap_svg(memory)
    assert svg.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg')
    root = ET.fromstring(svg.encode())
    assert root.tag == f"{SVG}svg"
    assert root.find(f"{SVG}title").text.startswith("jit_<odd>&name(7)")  # type: ignore[union-attr]
    texts = "".join(root.itertext())
    assert "peak 1.96 KiB at step 2 (fusion.b)" in texts
    assert len(root.findall(f"{SVG}circle")) == 1
    assert "<script" not in svg


def test_nice_ticks() -> None:
    assert nice_ticks(90.1) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(1.0) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert nice_ticks(0) == [0, 1]


def test_select_programs_by_name_label_or_id() -> None:
    from tfprof_lite.cli.memory_viewer import select_programs

    records = [
        ProgramRecord(1, "jit_step", b""),
        ProgramRecord(2, "jit_step", b""),
        ProgramRecord(3, "jit_init", b""),
        ProgramRecord(None, "jit_other", b""),
    ]
    assert [r.program_id for r in select_programs(records, "jit_step")] == [1, 2]
    assert [r.program_id for r in select_programs(records, "jit_step(2)")] == [2]
    assert [r.program_id for r in select_programs(records, "3")] == [3]
    assert [r.module for r in select_programs(records, "jit_other")] == ["jit_other"]
    assert select_programs(records, "jit_nothing") == []
    assert len(select_programs(records, None)) == 4


def test_the_command_on_a_hand_built_xspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfprof_lite.cli import main

    path = xspace_file(tmp_path / "host.xplane.pb", [(7, basic_program()), (8, new_program())])
    assert main(["memory-viewer", str(path), "--json"]) == 0
    (program,) = json.loads(capsys.readouterr().out)["programs"]  # 8 has no assignment
    assert (program["program_id"], program["total_bytes"], program["peak_bytes"]) == (7, 2132, 2004)
    assert main(["memory-viewer", str(path), "--program", "jit_f(7)"]) == 0
    assert capsys.readouterr().out.startswith("jit_f(7) (memory space 0)\n  total ")
    assert main(["memory-viewer", str(path), "-o", str(tmp_path / "h.svg")]) == 0
    assert ET.parse(tmp_path / "h.svg").getroot().tag == f"{SVG}svg"
    capsys.readouterr()
    assert main(["memory-viewer", str(path), "--program", "8"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"tfprof-lite: error: {path}: no program named '8' has a buffer assignment; profile a "
        "run whose programs XLA compiled with one (a JAX or TF-with-XLA run on CPU or GPU)\n"
    )

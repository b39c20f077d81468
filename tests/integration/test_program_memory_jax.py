"""The memory viewer against XLA itself and against XProf, on real programs.

* JAX programs compiled and profiled on the CPU in a child process
  (``tests/jax_memory_programs.py``, once per session): ``total_bytes`` equals
  the "Total bytes" of XLA's ``*-memory-usage-report.txt`` for that very module,
  and relates exactly to ``compiled.memory_analysis()``: argument, output, alias
  and temp bytes are XLA's, and ``total = argument + output - alias + temp +
  constant + thread_local``.
* The two H100 captures of ``shared/data/xspace``: ``total_bytes`` of
  ``jit_train_step`` equals the "Total bytes" of the dump beside the capture.
* XProf's memory viewer as a second opinion (skipped without XProf, failed then
  under ``CI=true``): XProf leaves thread-local allocations out of every number
  (on CPU they are stack slots, on GPU registers), so its total, peak and heap
  are ours less ``thread_local_bytes``; its peak position is the index of the
  event that reached the peak (ours is the heap point after it: one more); the
  temporaries it lists at the peak are among ours.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.stepcols import skip_or_fail
from tests.xspace_data import JAX_CASES, data_dir, jax_file
from tfprof_lite import Profiler
from tfprof_lite.model.xla_programs import ProgramRecord, programs_of
from tfprof_lite.programs.buffers import ProgramMemory, program_memory
from tfprof_lite.programs.hlo import Program
from tfprof_lite.proto.xla_program import parse_program

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "jax_memory_programs.py"
#: The programs of the script, by the name of their function.
NAMES = ("mlp_train_step", "conv_net_step", "rnn_scan", "big_temporary", "constant_passthrough")
_TOTAL_RE = re.compile(r"^Total bytes: (\d+)", re.MULTILINE)


@dataclass(frozen=True)
class JaxRun:
    """What the script wrote: its summary, the XSpace and each program's memory."""

    summary: dict[str, dict[str, object]]
    xspace: Path
    memories: dict[str, ProgramMemory]


def _memory(record: ProgramRecord) -> ProgramMemory:
    return program_memory(Program(parse_program(record.hlo)), record.program_id, record.module)


@pytest.fixture(scope="session")
def jax_run(tmp_path_factory: pytest.TempPathFactory) -> JaxRun:
    """The CPU programs, compiled, measured and profiled once per session."""
    try:
        import jax  # noqa: F401
    except ImportError:
        skip_or_fail("jax is not installed: pip install -e '.[test]' (jax[cpu])")
    out = tmp_path_factory.mktemp("jax_memory")
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "programs.json").read_text())
    xspace = Path(summary["xspace"])
    programs = programs_of(Profiler.load(str(xspace)).model)
    assert programs is not None
    by_id = {r.program_id: r for r in programs.programs}
    records = {p["name"]: p for p in summary["programs"]}
    memories = {name: _memory(by_id[p["program_id"]]) for name, p in records.items()}
    return JaxRun(records, xspace, memories)


@pytest.mark.parametrize("name", NAMES)
def test_total_is_xlas_total_bytes(jax_run: JaxRun, name: str) -> None:
    memory = jax_run.memories[name]
    assert memory.program == f"jit_{name}"
    assert memory.total_bytes == jax_run.summary[name]["total_bytes"]


@pytest.mark.parametrize("name", NAMES)
def test_total_relates_exactly_to_memory_analysis(jax_run: JaxRun, name: str) -> None:
    memory = jax_run.memories[name]
    stats: dict[str, int] = jax_run.summary[name]["memory_analysis"]  # type: ignore[assignment]
    assert memory.argument_bytes == stats["argument_size_in_bytes"]
    assert memory.output_bytes == stats["output_size_in_bytes"]
    assert memory.alias_bytes == stats["alias_size_in_bytes"]
    assert memory.temp_bytes == stats["temp_size_in_bytes"]
    assert memory.total_bytes == (
        stats["argument_size_in_bytes"] + stats["output_size_in_bytes"]
        - stats["alias_size_in_bytes"] + stats["temp_size_in_bytes"]
        + memory.constant_bytes + memory.thread_local_bytes
    )  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_peak_heap_and_buffers_at_the_peak(jax_run: JaxRun, name: str) -> None:
    memory = jax_run.memories[name]
    assert 0 < memory.peak_bytes <= memory.total_bytes
    assert memory.heap[memory.peak_at] == memory.peak_bytes == max(memory.heap)
    assert memory.heap[0] == memory.base_bytes and min(memory.heap) >= memory.base_bytes
    assert sum(b.bytes for b in memory.buffers_at_peak) == memory.peak_bytes
    sizes = [b.bytes for b in memory.buffers_at_peak]
    assert sizes == sorted(sizes, reverse=True)
    assert memory.peak_bytes - memory.base_bytes <= memory.temp_bytes


def test_what_each_program_shows(jax_run: JaxRun) -> None:
    m = jax_run.memories
    # Donated parameters are given back as outputs.
    assert m["mlp_train_step"].alias_bytes > 0
    assert {b.kind for b in m["mlp_train_step"].buffers_at_peak} >= {"parameter", "output"}
    # The captured 64x64 table is a constant; without temporaries there is no trace.
    assert m["constant_passthrough"].constant_bytes >= 64 * 64 * 4
    assert m["constant_passthrough"].heap == [m["constant_passthrough"].total_bytes]
    # 1024x1024 products are temporaries of 4 MiB, live at the peak with their scope.
    big = [b for b in m["big_temporary"].buffers_at_peak if b.kind == "temporary"]
    assert big and big[0].bytes == 4 << 20 and big[0].shape == "f32[1024,1024]"
    assert big[0].scope.startswith("jit(big_temporary)/")
    for name in ("conv_net_step", "rnn_scan", "mlp_train_step"):
        assert len(m[name].heap) > 2 and m[name].peak_bytes > m[name].base_bytes, name


def _xprof_agrees(memory: ProgramMemory, xprof: object) -> None:
    """XProf's numbers are ours without the thread-local allocations."""
    from tests.xprof_memory_viewer import XprofMemory

    assert isinstance(xprof, XprofMemory)
    local = memory.thread_local_bytes
    assert xprof.total_bytes == memory.total_bytes - local
    assert xprof.peak_bytes == memory.peak_bytes - local
    if xprof.heap:  # XProf draws no heap without a trace
        assert list(xprof.heap) == [h - local for h in memory.heap]
        assert xprof.peak_position + 1 == memory.peak_at
    listed = {
        (o["instructionName"], round(o["logicalBufferSizeMib"] * (1 << 20)))
        for o in xprof.raw.get("maxHeap", [])
        if o.get("groupName") == "Temporary"
    }
    ours = {(b.instruction, b.bytes) for b in memory.buffers_at_peak if b.kind == "temporary"}
    assert listed <= ours


def test_xprof_agrees_on_the_cpu_programs(jax_run: JaxRun) -> None:
    from tests.xprof_memory_viewer import xprof_memory

    labels = {name: jax_run.memories[name].label for name in NAMES}
    found = xprof_memory(jax_run.xspace, list(labels.values()))
    for name, label in labels.items():
        _xprof_agrees(jax_run.memories[name], found[label])


def _train_step(case: str) -> tuple[ProgramMemory, int]:
    """The H100 capture's ``jit_train_step`` and its dump's "Total bytes"."""
    programs = programs_of(Profiler.load(str(jax_file(case))).model)
    assert programs is not None
    (record,) = [r for r in programs.programs if r.module == "jit_train_step"]
    reports = sorted((data_dir() / case / "hlo").glob("*jit_train_step*memory-usage-report.txt"))
    if len(reports) != 1:
        skip_or_fail(f"{case}: {len(reports)} memory-usage reports of jit_train_step, not 1")
    assert reports[0].name.startswith(f"module_{record.program_id}.")
    match = _TOTAL_RE.search(reports[0].read_text())
    assert match is not None
    return _memory(record), int(match.group(1))


@pytest.mark.parametrize("case", JAX_CASES)
def test_h100_total_is_xlas_total_bytes(case: str) -> None:
    memory, total = _train_step(case)
    assert memory.total_bytes == total
    assert memory.total_bytes == (
        memory.argument_bytes + memory.output_bytes - memory.alias_bytes + memory.temp_bytes
        + memory.constant_bytes + memory.thread_local_bytes
    )  # fmt: skip
    assert memory.peak_bytes <= memory.total_bytes
    assert memory.heap[memory.peak_at] == memory.peak_bytes
    assert sum(b.bytes for b in memory.buffers_at_peak) == memory.peak_bytes


@pytest.mark.parametrize("case", JAX_CASES)
def test_xprof_agrees_on_the_h100_train_step(case: str) -> None:
    from tests.xprof_memory_viewer import xprof_memory

    memory, _ = _train_step(case)
    found = xprof_memory(jax_file(case), [memory.label])
    _xprof_agrees(memory, found[memory.label])

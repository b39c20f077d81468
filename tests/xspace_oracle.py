"""XProf as the oracle for XSpace files: run its converters, parse what they return.

:func:`xprof_tool` runs ``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` (XProf
:data:`XPROF_VERSION`, PyPI ``xprof``, Linux x86-64, installed by the ``[test]``
extra) on a temporary copy of the file, because XProf writes caches beside its input
(``ALL_HOSTS.op_stats_v2.pb``, even with ``use_saved_result=False``). The
conversion runs in a child interpreter: XProf's converter is a 42 MB C++ library
with its own protobuf and absl, which stays out of the test process that also
loads TensorFlow, and a crash in it fails one test instead of the session. The
child is ``sys.executable`` when it has ``xprof``; ``TFPROF_LITE_XPROF_PYTHON``
names another interpreter. Without XProf the tests that need it are skipped with
a note, and fail under ``CI=true``. Results are cached per process.

The parsers turn XProf's outputs into plain Python data:

* ``overview_page``: a JSON array of Google DataTables; :func:`overview` reads the
  step-time table (``stepnum``, ``stepTimeMs``) and the diagnostics table
  (``severity``, ``message``; "No step marker observed ..." when there are no steps).
* ``kernel_stats``: one DataTable; :func:`kernel_rows`.
* ``framework_op_stats``: two DataTables, with and without the ``IDLE`` rows;
  :func:`framework_op_rows`.
* ``memory_profile``: a MemoryProfile JSON object; :func:`memory_profile`.
* ``trace_viewer``: Chrome trace JSON; :func:`trace_events`.

Run as a script (``python tests/xspace_oracle.py TOOL PATH PARAMS_JSON OUT REPEAT``)
it is the child: it imports nothing but the standard library and ``xprof``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Union

#: The XProf release the facts and agreement tests are written against.
XPROF_VERSION = "2.24.2"
#: Names another interpreter (with ``xprof`` installed) for the conversions.
PYTHON_ENV = "TFPROF_LITE_XPROF_PYTHON"
#: XProf's overview diagnostic when it finds no step.
NO_STEP_MARKER = "No step marker observed"
CHILD_TIMEOUT_S = 600
INSTALL_HINT = (
    f"XProf {XPROF_VERSION} is not installed: pip install -e '.[test]' "
    f"(or set {PYTHON_ENV} to a Python that has xprof=={XPROF_VERSION})"
)


class XprofError(RuntimeError):
    """XProf failed on a file, or returned no data for a tool."""


@dataclasses.dataclass(frozen=True)
class ToolOutput:
    """What one XProf conversion returned, and how long each conversion took in the
    child: wall seconds, and CPU seconds of the child process (all its threads)."""

    tool: str
    data: bytes
    content_type: str
    seconds: tuple[float, ...]
    cpu_seconds: tuple[float, ...]

    def json(self) -> Any:
        """The output parsed as JSON."""
        return json.loads(self.data)


# ---------------------------------------------------------------- running XProf


@functools.cache
def xprof_python() -> Optional[str]:
    """The interpreter that has XProf :data:`XPROF_VERSION`, or None."""
    candidate = os.environ.get(PYTHON_ENV) or sys.executable
    probe = "import importlib.metadata as m; print(m.version('xprof'))"
    try:
        done = subprocess.run([candidate, "-c", probe], capture_output=True, text=True, timeout=120)
    except OSError:
        return None
    if done.returncode != 0 or done.stdout.strip() != XPROF_VERSION:
        return None
    return candidate


def require_xprof() -> str:
    """The XProf interpreter; skips the test without one (fails it under ``CI=true``)."""
    from tests.stepcols import skip_or_fail

    python = xprof_python()
    if python is None:
        skip_or_fail(INSTALL_HINT)
    return python


def _run_child(path: Path, tool: str, params: dict[str, Any], repeat: int) -> ToolOutput:
    python = require_xprof()
    with tempfile.TemporaryDirectory(prefix="xprof_oracle_") as tmp:
        copy = Path(tmp) / "run" / path.name  # XProf wants an absolute path
        copy.parent.mkdir()
        shutil.copyfile(path, copy)
        out = Path(tmp) / "out"
        command = [python, __file__, tool, str(copy), json.dumps(params), str(out), str(repeat)]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONNOUSERSITE="1")
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env
        )
        if done.returncode != 0:
            raise XprofError(f"XProf {tool} failed on {path}:\n{done.stderr[-3000:]}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if not report["ok"]:
            raise XprofError(f"XProf {tool} returned no data for {path}")
        data = out.read_bytes()
    return ToolOutput(
        tool, data, report["content_type"], tuple(report["seconds"]), tuple(report["cpu_seconds"])
    )


@functools.cache
def _cached(key: tuple[str, int, int], tool: str, params_json: str) -> ToolOutput:
    return _run_child(Path(key[0]), tool, json.loads(params_json), 1)


def xprof_tool(
    path: Union[str, Path], tool: str, params: Optional[dict[str, Any]] = None
) -> ToolOutput:
    """XProf's ``tool`` output for the XSpace at ``path`` (cached per process).

    ``params`` are added to ``{"use_saved_result": False}``.
    """
    resolved = Path(path).resolve()
    stat = resolved.stat()
    merged = {"use_saved_result": False, **(params or {})}
    key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    return _cached(key, tool, json.dumps(merged, sort_keys=True))


def time_tool(path: Union[str, Path], tool: str, repeat: int = 5) -> ToolOutput:
    """``repeat`` conversions of ``path`` by ``tool`` in one child (not cached): the
    output's ``seconds`` and ``cpu_seconds`` hold one entry per conversion."""
    return _run_child(Path(path).resolve(), tool, {"use_saved_result": False}, repeat)


# ---------------------------------------------------------------- DataTable helpers


def datatable_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """A Google DataTable's rows as dicts from column id to value (empty cells: None)."""
    ids = [col["id"] for col in table.get("cols", [])]
    rows = []
    for row in table.get("rows", []):
        cells = row.get("c", [])
        if len(cells) != len(ids):
            raise ValueError(f"a row has {len(cells)} cells for {len(ids)} columns")
        rows.append({key: (cell or {}).get("v") for key, cell in zip(ids, cells)})
    return rows


def find_table(tables: list[dict[str, Any]], *column_ids: str) -> dict[str, Any]:
    """The first DataTable of ``tables`` that has every one of ``column_ids``."""
    for table in tables:
        ids = {col.get("id") for col in table.get("cols", [])}
        if set(column_ids) <= ids:
            return table
    raise ValueError(f"no table with columns {column_ids}")


def _tables(data: Union[ToolOutput, Any]) -> list[dict[str, Any]]:
    parsed = data.json() if isinstance(data, ToolOutput) else data
    return parsed if isinstance(parsed, list) else [parsed]


# ---------------------------------------------------------------- overview_page


@dataclasses.dataclass(frozen=True)
class OverviewStep:
    """One step of the overview's step-time graph (XProf's numbers, in ms)."""

    name: str
    step_ms: float
    parts_ms: dict[str, float]

    @property
    def micros(self) -> float:
        """The step time in microseconds."""
        return self.step_ms * 1000.0


@dataclasses.dataclass(frozen=True)
class Overview:
    """What the overview page says about steps."""

    steps: tuple[OverviewStep, ...]
    diagnostics: tuple[tuple[str, str], ...]
    average_ms: Optional[float]
    input_conclusion: str
    hardware_type: str

    @property
    def steps_found(self) -> bool:
        """Whether XProf found steps (it has step rows and no "no step marker" warning)."""
        no_marker = any(NO_STEP_MARKER in message for _, message in self.diagnostics)
        return bool(self.steps) and not no_marker


def overview(data: Union[ToolOutput, Any]) -> Overview:
    """Parse ``overview_page`` output (the tool's JSON array of DataTables)."""
    tables = _tables(data)
    step_table = find_table(tables, "stepnum", "stepTimeMs")
    steps = []
    for row in datatable_rows(step_table):
        parts = {k: float(v) for k, v in row.items() if k.endswith("TimeMs") and k != "stepTimeMs"}
        steps.append(OverviewStep(str(row["stepnum"]), float(row["stepTimeMs"]), parts))
    try:
        diag_rows = datatable_rows(find_table(tables, "severity", "message"))
    except ValueError:
        diag_rows = []
    props = step_table.get("p", {})
    average = props.get("steptime_ms_average")
    return Overview(
        steps=tuple(steps),
        diagnostics=tuple((str(r["severity"]), str(r["message"])) for r in diag_rows),
        average_ms=float(average) if average is not None else None,
        input_conclusion=str(props.get("input_conclusion", "")),
        hardware_type=str(props.get("hardware_type", "")),
    )


# ---------------------------------------------------------------- kernel_stats


@dataclasses.dataclass(frozen=True)
class KernelRow:
    """One row of XProf's GPU kernel stats (durations in microseconds)."""

    kernel: str
    grid: str
    block: str
    registers_per_thread: int
    shared_mem_bytes: int
    occupancy_pct: float
    tensor_core_eligible: bool
    uses_tensor_core: bool
    op_name: str
    count: int
    total_us: float
    avg_us: float
    min_us: float
    max_us: float


def kernel_rows(data: Union[ToolOutput, Any]) -> list[KernelRow]:
    """Parse ``kernel_stats`` output (one DataTable; no rows on a CPU-only profile)."""
    table = find_table(_tables(data), "kernel_name", "occurrences")
    return [
        KernelRow(
            kernel=str(row["kernel_name"]),
            grid=str(row["grid_dim"]),
            block=str(row["block_dim"]),
            registers_per_thread=int(row["registers_per_thread"]),
            shared_mem_bytes=int(row["shmem_bytes"]),
            occupancy_pct=float(row["occupancy_pct"]),
            tensor_core_eligible=bool(row["is_op_tensor_core_eligible"]),
            uses_tensor_core=bool(row["is_kernel_using_tensor_core"]),
            op_name=str(row["op_name"]),
            count=int(row["occurrences"]),
            total_us=float(row["total_duration_us"]),
            avg_us=float(row["avg_duration_us"]),
            min_us=float(row["min_duration_us"]),
            max_us=float(row["max_duration_us"]),
        )
        for row in datatable_rows(table)
    ]


# ---------------------------------------------------------------- framework_op_stats


@dataclasses.dataclass(frozen=True)
class FrameworkOpRow:
    """One row of XProf's framework op stats (times in microseconds)."""

    host_or_device: str
    op_type: str
    op_name: str
    count: int
    total_us: float
    self_us: float
    execution: str


def framework_op_rows(
    data: Union[ToolOutput, Any], include_idle: bool = False
) -> list[FrameworkOpRow]:
    """Parse ``framework_op_stats`` output; the ``IDLE`` rows only with ``include_idle``."""
    table = find_table(_tables(data), "host_or_device", "total_self_time")
    rows = [
        FrameworkOpRow(
            host_or_device=str(row["host_or_device"]),
            op_type=str(row["type"]),
            op_name=str(row["operation"]),
            count=int(row["occurrences"]),
            total_us=float(row["total_time"]),
            self_us=float(row["total_self_time"]),
            execution=str(row.get("eager") or ""),
        )
        for row in datatable_rows(table)
    ]
    return [r for r in rows if include_idle or r.op_type != "IDLE"]


# ---------------------------------------------------------------- memory_profile


@dataclasses.dataclass(frozen=True)
class AllocatorMemory:
    """One allocator of XProf's memory profile (bytes; times in ps from the profile start)."""

    name: str
    peak_heap_bytes: int
    peak_bytes_lifetime: int
    peak_time_ps: int
    capacity_bytes: int
    timeline: tuple[tuple[int, int], ...]


def memory_profile(data: Union[ToolOutput, Any]) -> dict[str, AllocatorMemory]:
    """Parse ``memory_profile`` output: per allocator its peaks and sampled timeline.

    ``timeline`` is XProf's sampled ``(time offset ps, heap allocated bytes)`` series.
    """
    parsed = data.json() if isinstance(data, ToolOutput) else data
    result = {}
    for name, allocator in parsed.get("memoryProfilePerAllocator", {}).items():
        summary = allocator.get("profileSummary", {})
        peak = summary.get("peakStats", {})
        samples = allocator.get("sampledTimelineSnapshots", [])
        timeline = tuple(
            (int(s["timeOffsetPs"]), int(s["aggregationStats"].get("heapAllocatedBytes", 0)))
            for s in samples
        )
        result[name] = AllocatorMemory(
            name=name,
            peak_heap_bytes=int(peak.get("heapAllocatedBytes", 0)),
            peak_bytes_lifetime=int(summary.get("peakBytesUsageLifetime", 0)),
            peak_time_ps=int(summary.get("peakStatsTimePs", 0)),
            capacity_bytes=int(summary.get("memoryCapacity", 0)),
            timeline=timeline,
        )
    return result


# ---------------------------------------------------------------- trace_viewer


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    """One trace-viewer event, with its process and thread names resolved (times in µs)."""

    process: str
    thread: str
    name: str
    phase: str
    ts_us: float
    dur_us: float
    args: dict[str, Any]


def trace_events(
    data: Union[ToolOutput, Any], phases: tuple[str, ...] = ("X",)
) -> list[TraceEvent]:
    """Parse ``trace_viewer`` output (Chrome trace JSON) into events of ``phases``."""
    parsed = data.json() if isinstance(data, ToolOutput) else data
    events = parsed.get("traceEvents", [])
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for event in events:
        if event.get("ph") != "M":
            continue
        if event.get("name") == "process_name":
            processes[event.get("pid")] = str(event["args"]["name"])
        elif event.get("name") == "thread_name":
            threads[(event.get("pid"), event.get("tid"))] = str(event["args"]["name"])
    return [
        TraceEvent(
            process=processes.get(event.get("pid"), str(event.get("pid"))),
            thread=threads.get((event.get("pid"), event.get("tid")), str(event.get("tid"))),
            name=str(event.get("name", "")),
            phase=str(event["ph"]),
            ts_us=float(event.get("ts", 0.0)),
            dur_us=float(event.get("dur", 0.0)),
            args=dict(event.get("args", {})),
        )
        for event in events
        if event.get("ph") in phases
    ]


# ---------------------------------------------------------------- the child


def _child_main(argv: list[str]) -> int:
    """Convert once or ``repeat`` times; write the last output to OUT, a JSON report to stdout."""
    tool, path, params_json, out, repeat = argv
    from xprof.convert import raw_to_tool_data

    params = json.loads(params_json)
    seconds, cpu_seconds = [], []
    data: Any = None
    content_type = ""
    for _ in range(int(repeat)):
        start, cpu_start = time.perf_counter(), time.process_time()
        data, content_type = raw_to_tool_data.xspace_to_tool_data([path], tool, params)
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
    if data is not None:
        Path(out).write_bytes(data.encode() if isinstance(data, str) else data)
    report = {
        "ok": data is not None,
        "content_type": content_type,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))

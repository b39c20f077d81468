"""The report's trace viewer data, per-step breakdown, tree tables, kernel table
and size budget, without a browser (``tests/integration/cli/test_report_browser.py``
drives the page in headless Chromium)."""

from __future__ import annotations

import gc
import json
import random
import re
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

import tfprof_lite
from tests.handmade import CPU, GPU, MEMCPY, STREAM_7, STREAM_ALL, graph_def, node, ns, run_meta
from tests.unit.cli import profiles
from tests.unit.test_event_window import _space as window_space
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.analysis.steptime import step_times as wall_times
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.proto import messages as pb
from tfprof_lite.report import page as report_page
from tfprof_lite.report import render_html
from tfprof_lite.report.steps import step_rows
from tfprof_lite.report.trace import front_code, pack_rows, trace_data


def _script(page: str, element_id: str) -> Any:
    found = re.search(f'<script type="application/json" id="{element_id}">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


def _decode(data: dict[str, Any]) -> list[tuple[str, str, int, int, int]]:
    """(device, node name, row, start, dur) of every event, as the page decodes them."""
    names: list[str] = []
    prev = ""
    for pre, suf in zip(data["namePre"], data["nameSuf"]):
        prev = prev[:pre] + suf
        names.append(prev)
    out = []
    e = ref = 0
    for lane, count in zip(data["lanes"], data["laneCount"]):
        t = 0
        for _ in range(count):
            t += data["start"][e]
            ref += data["node"][e]
            out.append((lane["dev"], names[ref], data["row"][e], t, data["dur"][e]))
            e += 1
    return out


def test_pack_rows_and_front_code() -> None:
    rows, count = pack_rows([0, 0, 5, 10, 12], [10, 3, 2, 5, 1])
    assert (rows, count) == ([0, 1, 1, 0, 1], 2)
    names = ["a/b/c", "a/b/d", "a/x", "b", "b"]
    pre, suf = front_code(names)
    assert pre == [0, 4, 2, 0, 1] and suf == ["a/b/c", "d", "x", "b", ""]


def _first_free_row(starts: list[int], durs: list[int]) -> list[int]:
    """The packing rule spelled out: each event takes the lowest row that has ended."""
    ends: list[int] = []
    rows = []
    for start, dur in zip(starts, durs):
        row = next((r for r, end in enumerate(ends) if end <= start), len(ends))
        ends[row : row + 1] = [start + dur]
        rows.append(row)
    return rows


def test_pack_rows_takes_the_lowest_free_row() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randrange(40)
        starts = sorted(rng.randrange(60) for _ in range(n))
        durs = [rng.choice((0, 0, 1, 2, 5, 9, 30)) for _ in range(n)]
        rows, count = pack_rows(starts, durs)
        assert rows == _first_free_row(starts, durs)
        assert count == (max(rows) + 1 if rows else 0)
    # Out of start order (no caller does it): the same rule.
    starts, durs = [5, 0, 3, 9], [2, 4, 1, 1]
    assert pack_rows(starts, durs) == ([0, 1, 2, 0], 3)
    assert _first_free_row(starts, durs) == [0, 1, 2, 0]


def test_trace_data_holds_every_record() -> None:
    model = profiles.profiler().model
    data = trace_data(model)
    events = _decode(data)
    assert len(events) == 27 == sum(len(model.steps[s].times) for s in model.steps)
    t0 = 1000  # the first record of step 0
    expected = set()
    for step in model.sorted_steps():
        execs = model.steps[step]
        for nid, start, dur in zip(execs.t_node, execs.t_start, execs.t_dur):
            expected.add((CPU.lower(), model.names[nid], start - t0, dur))
    assert {(d, n, s, u) for d, n, _, s, u in events} == expected
    assert data["steps"] == [[0, 0, 104], [1, 10_000, 10_113], [2, 20_000, 20_122]]
    assert data["lanes"] == [{"dev": CPU.lower(), "kind": "cpu", "rows": 1}]
    # Node table: op types, inputs as indices, output shapes where known.
    first = data["nameSuf"][0]
    assert first == "x" and data["ops"][data["nodeOp"][0]] == "Placeholder"
    names = [name for _, name, *_ in events]
    matmul = names.index("dense1/MatMul")
    ref = sum(data["node"][: matmul + 1])
    inputs = {names[names.index(n)] for n in ("x", "dense1/w")}
    assert {_decode_name(data, i) for i in data["inputs"][ref]} == inputs


def _decode_name(data: dict[str, Any], index: int) -> str:
    if index < 0:
        return str(data["extIn"][-1 - index])
    prev = ""
    for pre, suf in list(zip(data["namePre"], data["nameSuf"]))[: index + 1]:
        prev = prev[:pre] + suf
    return prev


def test_overlapping_steps_are_laid_one_after_another() -> None:
    prof = tfprof_lite.Profiler(profiles.graph_def())
    prof.add_step(0, profiles.run_meta(0))
    prof.add_step(1, profiles.run_meta(0))  # the same timestamps again
    data = trace_data(prof.model)
    assert data["steps"] == [[0, 0, 104], [1, 114, 218]]
    events = _decode(data)
    assert all(row == 0 for _, _, row, _, _ in events)  # sequential ops: one row
    starts = [s for _, _, _, s, _ in events]
    assert starts == sorted(starts) and len(events) == 18


def _input_model() -> tfprof_lite.Profiler:
    nodes = [
        node("it", "IteratorGetNext", outputs=[[8, 4]]),
        node("mm", "MatMul", ["it", "w"], outputs=[[8, 2]]),
        node("w", "VariableV2"),
        node("relu", "Relu", ["mm"]),
    ]
    prof = tfprof_lite.Profiler(graph=graph_def(nodes))
    # input 0-30, compute 30-80 (w overlaps mm), idle 80-100, compute 100-110.
    records = [ns("it", 1000, 30), ns("mm", 1030, 50), ns("w", 1040, 10), ns("relu", 1100, 10)]
    prof.add_step(0, run_meta([(CPU, records)]))
    return prof


def test_step_rows_split_the_wall_time() -> None:
    model = _input_model().model
    (row,) = step_rows(model)
    assert (row.wall, row.input, row.compute, row.idle) == (110, 30, 60, 20)
    assert row.op_total == 100 and row.cpu == 100 and row.accelerator == 0
    assert row.wall == wall_times(model).steps[0].wall_micros  # the overview's time per step
    page = render_html(model)
    assert '<i class="swatch input"></i>Input (wall)' in page
    assert '<i class="swatch idle"></i>Idle (wall)' in page
    assert "Accelerator" not in page.split('id="steps"')[1].split("</section>")[0]
    assert 'class="swatch acc"' not in page
    assert '<th data-kind="time">Accelerator time' not in page  # no such table column


def test_legend_shows_only_what_the_profile_has() -> None:
    page = render_html(profiles.profiler().model)
    steps = page.split('<section id="steps">')[1].split("</section>")[0]
    assert "Compute (wall)" in steps and "CPU op time (summed)" in steps
    for absent in ("Input (wall)", "Idle (wall)", "Accelerator"):
        assert absent not in steps
    assert "Accelerator time" not in page.split('<section id="ops">')[1].split("</table>")[0]


def _gpu_model() -> tfprof_lite.Profiler:
    nodes = [node("x", "Placeholder"), node("a/mm", "MatMul", ["x"]), node("a/relu", "Relu")]
    prof = tfprof_lite.Profiler(graph=graph_def(nodes))
    k1 = "volta_sgemm_128x64_nn regs:126 shm:16384 grid:4,1,1 block:256,1,1@@a/mm:MatMul"
    kernels = [ns("a/mm:MatMul", 1010, 30), ns("a/relu:Relu", 1050, 5)]
    kernels[0].timeline_label = k1
    kernels[1].timeline_label = "relu_kernel regs:16 shm:0 grid:1,1,1 block:1,1,1@@a/relu:Relu"
    records = [ns("x", 990, 5), ns("a/mm", 1000, 12), ns("a/relu", 1045, 4)]
    copies = [pb.NodeExecStats.FromString(k.SerializeToString()) for k in kernels]
    h2d = ns("x", 985, 3)
    h2d.timeline_label = "x bytes:128"
    devices = [(GPU, records), (STREAM_ALL, kernels), (STREAM_7, copies), (MEMCPY, [h2d])]
    prof.add_step(0, run_meta(devices))
    return prof


def test_gpu_profile_has_kernel_table_lanes_and_accelerator_legend() -> None:
    model = _gpu_model().model
    page = render_html(model)
    assert '<section id="kernels">' in page and 'id="t-kernels"' in page
    assert "volta_sgemm_128x64_nn" in page
    assert '<a href="#kernels">GPU kernels</a>' in page
    steps = page.split('<section id="steps">')[1].split("</section>")[0]
    assert "Accelerator op time (summed)" in steps
    data = _script(page, "trace-data")
    assert [(lane["dev"], lane["kind"]) for lane in data["lanes"]] == [
        (GPU.lower(), "cpu"),
        (STREAM_ALL.lower(), "accelerator"),
        (MEMCPY.lower(), "memcpy"),
        (STREAM_7.lower(), "kernel"),
    ]
    events = _decode(data)
    on_stream = [(name, start) for dev, name, _, start, _ in events if dev == STREAM_7.lower()]
    assert on_stream == [("volta_sgemm_128x64_nn", 25), ("relu_kernel", 65)]  # t0 = 985
    assert [(d, n) for d, n, *_ in events if d == MEMCPY.lower()] == [(MEMCPY.lower(), "Memcpy")]
    launchers = {_decode_name(data, i): op for i, op in data["kernels"]}
    assert launchers == {
        "volta_sgemm_128x64_nn": "a/mm",
        "relu_kernel": "a/relu",
        "Memcpy": "x",
    }
    kernel_ops = {data["ops"][data["nodeOp"][i]] for i, _ in data["kernels"]}
    assert kernel_ops == {"MatMul", "Relu", "Placeholder"}
    assert "Accelerator time" in page.split('<section id="ops">')[1].split("</table>")[0]


class _Rows(HTMLParser):
    """Rows of one table: (data-p, first cell text), and header/cell counts."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id = table_id
        self.inside = False
        self.rows: list[tuple[str | None, list[str]]] = []
        self.heads: list[int] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self.inside = found.get("id") == self.table_id
        if not self.inside:
            return
        if tag == "tr":
            self.rows.append((found.get("data-p"), []))
        if tag == "th":
            self.heads.append(len(self.rows))
        if tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self.inside:
            self.rows[-1][1].append("".join(self._cell))
            self._cell = None
        if tag == "table":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _rows(page: str, table_id: str) -> _Rows:
    parser = _Rows(table_id)
    parser.feed(page)
    return parser


def test_tree_tables_link_rows_to_their_parents() -> None:
    page = render_html(profiles.profiler().model)
    table = _rows(page, "t-scope")
    body = table.rows[1:]
    names = [cells[0] for _, cells in body]
    parents = {cells[0]: int(p or "-1") for p, cells in body}
    assert parents["dense1"] == -1
    assert names[parents["dense1/MatMul"]] == "dense1"
    assert names[parents["odd/</script><b>x"]] == "odd/<"
    assert len(table.heads) == len(body[0][1])  # a header for every column
    assert "Depth" not in page.split('id="t-scope"')[1].split("</thead>")[0]
    # A capped table links a row to its nearest kept ancestor.
    capped = _rows(render_html(profiles.profiler().model, max_rows=3), "t-scope").rows[1:]
    kept = [cells[0] for _, cells in capped]
    for parent, cells in capped:
        index = int(parent or "-1")
        assert index == -1 or cells[0].startswith(kept[index])


def test_memory_scope_table_has_a_header_for_every_column() -> None:
    page = render_html(profiles.profiler().model)
    tables = re.findall(
        r"<table class=\"data\"><thead><tr>(.*?)</tr></thead><tbody>(.*?)</tbody>", page
    )
    assert len(tables) >= 3
    for head, body in tables:
        first_row = body.split("</tr>")[0]
        assert head.count("<th") == first_row.count("<td") > 0


def test_code_view_comes_from_one_function(monkeypatch: pytest.MonkeyPatch) -> None:
    model = profiles.profiler().model
    calls: list[str] = []
    original = report_page.code_view

    def spy(m: Any, opts: Any, all_frames: bool = False) -> Any:
        calls.append("code")
        return original(m, opts, all_frames)

    monkeypatch.setattr(report_page, "code_view", spy)
    page = render_html(model)
    assert calls == ["code"]
    assert "code" in _script(page, "flame-data")["views"] and 'id="t-code"' in page
    monkeypatch.setattr(report_page, "code_view", lambda m, opts, all_frames=False: None)
    page = render_html(model)
    assert "code" not in _script(page, "flame-data")["views"] and 'id="t-code"' not in page


# ------------------------------------------------------------ size budget
_BLOCK_OPS = ("w", "b", "MatMul", "Add", "relu")


def _large_profile(n_nodes: int, steps: int) -> tfprof_lite.Profiler:
    """A graph like the benchmarks' (``block_i/layer_j/dense/{w,b,MatMul,Add,relu}``)
    with code traces, and ``steps`` single-threaded steps in which every node runs."""
    graph = pb.GraphDef()
    log = pb.OpLogProto()
    for sid, text in enumerate(("model.py", "layer", "train.py", "main", "x = f()")):
        log.id_to_string[sid] = text
    names: list[str] = []
    prev = ""
    while len(names) < n_nodes:
        i, j = divmod(len(names) // len(_BLOCK_OPS), 10)
        for op in _BLOCK_OPS:
            name = f"block_{i}/layer_{j}/dense/{op}"
            item = graph.node.add(name=name, op={"w": "Const", "b": "Const"}.get(op, op))
            if op == "MatMul":
                item.input.extend([prev or f"block_{i}/layer_{j}/dense/w", name[:-6] + "w"])
            elif op in ("Add", "relu"):
                item.input.append(prev)
            prev = name if op in ("MatMul", "Add", "relu") else prev
            names.append(name)
            entry = log.log_entries.add(name=name)
            entry.code_def.traces.add(file_id=2, lineno=5, function_id=3, line_id=4)
            entry.code_def.traces.add(file_id=0, lineno=10 + j, function_id=1, line_id=4)
    prof = tfprof_lite.Profiler(graph, op_log=log)
    for step in range(steps):
        meta = pb.RunMetadata()
        dev = meta.step_stats.dev_stats.add(device=CPU)
        start = 1_000_000 * (step + 1)
        for k, name in enumerate(names):
            dur = 1 + (k * 7 + step) % 13
            dev.node_stats.add(
                node_name=name,
                all_start_micros=start,
                op_end_rel_micros=dur,
                all_end_rel_micros=dur,
            )
            start += dur + k % 3
        prof.add_step(step, meta)
    return prof


@pytest.mark.parametrize("collecting", [True, False])
def test_rendering_pauses_the_collector_and_restores_it(
    monkeypatch: pytest.MonkeyPatch, collecting: bool
) -> None:
    seen: list[bool] = []
    original = report_page.code_view

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(report_page, "code_view", spy)
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        assert render_html(profiles.profiler().model).startswith("<!DOCTYPE html>")
        assert seen == [False] and gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()


def test_size_budget_21k_nodes_5_steps() -> None:
    model = _large_profile(21_000, 5).model
    page = render_html(model)
    size = len(page.encode("utf-8"))
    assert size <= 3 * 1024 * 1024, f"report is {size / 2**20:.2f} MB"
    data = _script(page, "trace-data")
    assert sum(data["laneCount"]) == 5 * 21_000  # every record of every step is in the trace
    assert len(data["nameSuf"]) == 21_000


def _outside_model(case: str) -> Any:
    if case == "hand":  # a kernel before the steps, a copy and a kernel after them
        return model_from_bytes(window_space(), "hand.xplane.pb")
    return tfprof_lite.Profiler.load(str(jax_file(case))).model


@pytest.mark.parametrize("case", ["hand", *JAX_CASES])
def test_gpu_events_outside_the_steps_are_in_the_trace(case: str) -> None:
    model = _outside_model(case)
    window = model.event_window
    assert window is not None
    outside = np.flatnonzero(window.device.step < 0).tolist()
    assert case != "hand" or len(outside) == 3
    events = _decode(trace_data(model))
    shown = [e for e in events if e[0].endswith("(outside steps)")]
    assert len(shown) == len(outside)
    assert sorted(name for _, name, _, _, _ in shown) == sorted(
        window.device.name[i] for i in outside
    )
    data = trace_data(model)
    assert min(e[3] for e in events) == 0  # the axis begins at the first event
    if case == "hand":  # early_kernel at 0.1 ms, before the first step
        assert [e[3] for e in shown if e[1] == "early_kernel"] == [0]
        assert data["steps"][0][1] == 910  # (its first record: gemm at 1.01 ms)
    # The steps' own records are all there, on their lanes.
    inside = [e for e in events if not e[0].endswith("(outside steps)")]
    assert inside and len(inside) + len(shown) == len(events)

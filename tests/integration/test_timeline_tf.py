"""tfprof timeline output (``-output timeline:outfile=F``) equals TensorFlow's.

Every query runs on TF's tfprof (the oracle) and on tfprof_lite with the same
options; we compare the set of files written (``F_<step>``), their bytes (and
parsed JSON, for a readable diff), what goes to stdout, and the returned message.
Inputs: the real models of :mod:`tests.integration.tf_models` (CPU sessions, one
or two CPUs: regions, lanes, cross-device flows) and hand-made GPU-style profiles
(canonical GPU devices, ``stream:all`` kernels, ``GPU_0_bfc`` allocator records:
memory counters and top allocations, several lanes, duplicate starts).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from typing import Any, Callable

import pytest

import tfprof_lite
from tests.handmade import (
    CPU,
    CPU1,
    GPU,
    GPU1,
    MEMCPY,
    STREAM_7,
    STREAM_ALL,
    HandCase,
    Mem,
    code_entry,
    node,
    ns,
    op_log,
    run_meta,
)
from tfprof_lite.options.builder import ProfileOptionBuilder as B

pytestmark = pytest.mark.tf

tf_oracle = pytest.importorskip("tests.integration.tf_oracle")
hand_oracle = pytest.importorskip("tests.integration.hand_oracle")

METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}
TREE_VIEWS = ("scope", "graph", "code")


def _opts(builder: Callable[[], B]) -> Callable[[], dict[str, Any]]:
    return lambda: builder().build()


OPTION_SETS: dict[str, Callable[[], dict[str, Any]]] = {
    "default": _opts(B),
    "time_and_memory": lambda: B.time_and_memory(),
    "displayed_only": _opts(
        lambda: B(B.time_and_memory()).account_displayed_op_only(True).order_by("micros")
    ),
    "depth3": _opts(lambda: B().with_max_depth(3).order_by("name")),
    "min_micros": _opts(lambda: B().with_min_execution_time(min_micros=3)),
    "hide_grads": _opts(lambda: B().with_node_names(hide_name_regexes=["gradients.*", ".*Grad.*"])),
    "start_train": _opts(lambda: B().with_node_names(start_name_regexes=["train.*", "loss.*"])),
    "trim": _opts(lambda: B().with_node_names(trim_name_regexes=[".*gradients.*", "mm"])),
    "account_some": _opts(
        lambda: B().with_accounted_types([".*MatMul.*", ".*Relu.*", "Identity", ".*gpu:1.*"])
    ),
}


# ----------------------------------------------------------------- machinery


@contextlib.contextmanager
def _capture_fd2() -> Iterator[Callable[[], str]]:
    """Capture what C code writes to file descriptor 2 (TF's fprintf(stderr))."""
    captured: list[str] = []
    tf_oracle._libc.fflush(None)
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lambda: captured[0]
        finally:
            tf_oracle._libc.fflush(None)
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.append(tmp.read().decode("utf-8", errors="replace"))


def _files(directory: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as handle:
            out[name] = handle.read()
    return out


def _run_tf(
    profiler: Any, view: str, options: dict[str, Any]
) -> tuple[dict[str, bytes], str, bytes]:
    """TF's files, stdout (directory shown as ``DIR``) and canonical returned message."""
    with tempfile.TemporaryDirectory() as tmp:
        opts = dict(options, output=f"timeline:outfile={tmp}/tl.json")
        tf_oracle._pywrap.last = None
        with tf_oracle._capture_fd1() as out:
            getattr(profiler, METHODS[view])(opts)
        raw = tf_oracle._take_last()
        files = _files(tmp)
        stdout = out().replace(tmp, "DIR")
    return files, stdout, tf_oracle.canonical_proto(tf_oracle._PROTO_CLASSES[view], raw)


def _run_ours(prof: Any, view: str, options: dict[str, Any]) -> tuple[dict[str, bytes], str, bytes]:
    """Ours, as `_run_tf`."""
    with tempfile.TemporaryDirectory() as tmp:
        opts = dict(options, output=f"timeline:outfile={tmp}/tl.json")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            msg = getattr(prof, METHODS[view])(opts)
        files = _files(tmp)
        stdout = buf.getvalue().replace(tmp, "DIR")
    cls = tf_oracle._PROTO_CLASSES[view]
    return files, stdout, tf_oracle.canonical_proto(cls, msg.SerializeToString())


def _parsed(files: dict[str, bytes]) -> dict[str, Any]:
    return {name: json.loads(data) for name, data in files.items()}


def _check(prof: Any, tf_profiler: Any, view: str, options: dict[str, Any]) -> dict[str, bytes]:
    """Assert files (parsed and raw), stdout and returned message agree; returns TF's files."""
    tf_files, tf_stdout, tf_msg = _run_tf(tf_profiler, view, options)
    our_files, our_stdout, our_msg = _run_ours(prof, view, options)
    assert sorted(our_files) == sorted(tf_files)
    assert _parsed(our_files) == _parsed(tf_files)
    assert our_files == tf_files
    assert our_stdout == tf_stdout
    assert our_msg == tf_msg
    return tf_files


def _steps(files: dict[str, bytes]) -> list[int]:
    return sorted(int(name.rsplit("_", 1)[1]) for name in files)


# ----------------------------------------------------------------- real models


@pytest.mark.parametrize("view", TREE_VIEWS)
@pytest.mark.parametrize("name", sorted(OPTION_SETS))
def test_real_models_average_step(capture: Any, oracle: Any, view: str, name: str) -> None:
    files = _check(
        hand_oracle.ours_for_capture(capture), oracle.profiler, view, OPTION_SETS[name]()
    )
    if view == "graph":  # one file per added step
        assert _steps(files) == [step for step, _ in capture.run_metas]
    else:
        assert _steps(files) == [-1]


@pytest.mark.parametrize("view", TREE_VIEWS)
@pytest.mark.parametrize("name", ["time_and_memory", "displayed_only", "account_some"])
def test_real_models_each_step(capture: Any, oracle: Any, view: str, name: str) -> None:
    ours = hand_oracle.ours_for_capture(capture)
    for step, _ in capture.run_metas:
        files = _check(ours, oracle.profiler, view, B(OPTION_SETS[name]()).with_step(step).build())
        assert _steps(files) == [step]


@pytest.mark.parametrize("view", TREE_VIEWS)
def test_unknown_step_writes_nothing(capture: Any, oracle: Any, view: str) -> None:
    ours = hand_oracle.ours_for_capture(capture)
    files = _check(ours, oracle.profiler, view, B().with_step(99).build())
    assert files == {}


def test_op_view_has_no_timeline(capture: Any, oracle: Any, caplog: Any) -> None:
    ours = hand_oracle.ours_for_capture(capture)
    options = B.time_and_memory()
    with _capture_fd2() as err:
        tf_files, tf_stdout, tf_msg = _run_tf(oracle.profiler, "op", options)
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        our_files, our_stdout, our_msg = _run_ours(ours, "op", options)
    message = "op view doesn't support timeline yet. Consider graph/scope/code view."
    assert message in err().splitlines()
    assert [r.getMessage() for r in caplog.records] == [message]
    assert tf_files == our_files == {}
    assert tf_stdout == our_stdout == ""
    assert our_msg == tf_msg


def test_two_cpus_has_flows() -> None:
    from tests.integration import tf_models

    capture = tf_models.ALL_CAPTURES["two_cpus"]()
    step = capture.run_metas[0][0]
    files = _check(
        hand_oracle.ours_for_capture(capture),
        tf_oracle.oracle_for(capture).profiler,
        "graph",
        B().with_step(step).build(),
    )
    events = json.loads(files[f"tl.json_{step}"])["traceEvents"]
    assert {e["ph"] for e in events} >= {"M", "X", "s", "t"}


# ----------------------------------------------------------------- hand-made GPU profiles

GPU_BFC = "GPU_0_bfc"
UNICODE = "né/out"
ODD = 'q"b\\c\tz'


def _gpu_nodes() -> list[Any]:
    return [
        node("x", "Placeholder", shape=[2, 4], outputs=[[2, 4]]),
        node("w", "VariableV2", shape=[4, 4], outputs=[[4, 4]]),
        node("w/read", "Identity", ["w"], outputs=[[4, 4]]),
        node("mm", "MatMul", ["x", "w/read"], outputs=[[2, 4]]),
        node("relu", "Relu", ["mm"], outputs=[[2, 4]]),
        node("b", "VariableV2", shape=[4], outputs=[[4]]),
        node("add", "Add", ["relu", "b"], outputs=[[2, 4]]),
        node(UNICODE, "Identity", ["add"], outputs=[[2, 4]]),
        node("out2", "Mul", ["add", "add"], outputs=[[2, 4]]),
        node("loss", "Sum", [UNICODE, "out2"], outputs=[[]]),
        node(ODD, "NoOp", ["^loss"]),
    ]


def _gpu_step(t: int, persist: int, scale: int) -> Any:
    """One GPU-style step starting at time ``t``."""

    def gmem(total: int, in_use: int, records: tuple[tuple[int, int], ...]) -> list[Mem]:
        return [Mem(GPU_BFC, total, total, total, in_use, records)]

    return run_meta(
        [
            (
                GPU,
                [
                    ns("w", t - 10, 3, mem=gmem(64, 64 * scale, ((t - 9, 64),)), persist=persist),
                    ns("w/read", t, 100, mem=gmem(64, 1000 * scale, ((t + 1, 64),))),
                    ns(
                        "mm",
                        t + 50,
                        150,
                        mem=gmem(128, 1300 * scale, ((t + 60, 256), (t + 190, -128))),
                        persist=2 * persist,
                    ),
                    ns("relu", t + 100, 50, mem=gmem(64, 1250 * scale, ((t + 120, 64),))),
                    ns("add", t + 300, 20, mem=gmem(500, 1400 * scale, ((t + 305, 500),))),
                    ns("add", t + 330, 5, mem=gmem(500, 1450 * scale, ((t + 331, 100),))),
                ],
            ),
            (
                STREAM_ALL,
                [
                    ns("mm:MatMul", t + 210, 40),
                    ns("mm", t + 400, 30),
                    ns("relu:Relu", t + 400, 10),
                    ns("relu", t + 405, 0),
                    ns("add", t + 500, 5),
                ],
            ),
            (STREAM_7, [ns("mm", t + 210, 40), ns("add", t + 500, 5)]),
            (MEMCPY, [ns("MEMCPYHtoD", t, 5)]),
            (GPU1, [ns("b", t, 10, mem=[Mem("GPU_1_bfc", 16, 16, 16, 16 * scale, ((t, 16),))])]),
            (
                CPU,
                [
                    ns("x", t - 100, 5),
                    ns(UNICODE, t + 600, 5),
                    ns("out2", t + 600, 7),
                    ns("loss", t + 700, 3),
                    ns(ODD, t + 800, 0),
                    ns("x", t + 900, 4),
                ],
            ),
        ]
    )


def _gpu_log() -> Any:
    strings: dict[str, int] = {}
    frames = [("/src/train.py", 10, "main"), ("/src/model.py", 20, "build")]
    entries = [
        code_entry(name, [*frames, ("/src/layers.py", 30 + i, f"layer_{i % 3}")], strings)
        for i, name in enumerate(["x", "w", "w/read", "mm", "relu", "b", "add", UNICODE, "out2"])
    ]
    entries.append(code_entry("loss", [frames[0], ("/src/train.py", 50, "loss_fn")], strings))
    return op_log(entries, strings)


def _top_nodes() -> list[Any]:
    return [node(f"n{i:02d}", "Fill") for i in range(14)] + [node("sink", "NoOp", ["^n00"])]


def _top_step() -> Any:
    """14 GPU nodes whose allocations overlap; ties, big values, dense points."""
    sizes = [
        500_000,
        300_000,
        300_000,
        300_000,
        2_000_000,
        123_456,
        7,
        7,
        1,
        250_000,
        250_000,
        90_000,
        45_000,
        1_000_001,
    ]
    records = []
    for i, size in enumerate(sizes):
        start = 1000 + 40 * i
        allocs = ((start + 1, size), (start + 500 + 10 * i, -size // 2))
        records.append(
            ns(
                f"n{i:02d}",
                start,
                30,
                mem=[Mem(GPU_BFC, size, size, size, 900_000 + 70_000 * i, allocs)],
                persist=11 * (i % 4),
            )
        )
    records.append(ns("sink", 5000, 1, mem=[Mem(GPU_BFC, 0, 0, 0, 4_200_000)]))
    return run_meta(
        [(GPU, records), (STREAM_ALL, [ns(f"n{i:02d}", 1005 + 40 * i, 20) for i in range(14)])]
    )


def _cpu_flow_nodes() -> list[Any]:
    return [
        node("a", "Const"),
        node("loop/body", "Mul", ["a", "a"]),
        node("b", "Add", ["loop/body", "a", "^a"]),
        node("c", "Neg", ["b"]),
        node("d", "Sub", ["c", "b"]),
    ]


def _cpu_flow_step(t: int) -> Any:
    return run_meta(
        [
            (
                CPU,
                [
                    ns("a", t, 5),
                    ns("loop/body", t + 10, 5),
                    ns("loop/body", t + 20, 5),
                    ns("c", t + 40, 5),
                ],
            ),
            (CPU1, [ns("b", t + 30, 6), ns("a", t + 31, 1), ns("d", t + 50, 2)]),
        ]
    )


CASES: dict[str, Callable[[], HandCase]] = {
    "gpu": lambda: HandCase.make(
        "timeline_gpu",
        _gpu_nodes(),
        [(0, _gpu_step(1000, 32, 1)), (1, _gpu_step(5000, 48, 2)), (1, _gpu_step(9000, 8, 3))],
        _gpu_log(),
    ),
    "top_allocations": lambda: HandCase.make("timeline_top", _top_nodes(), [(4, _top_step())]),
    "cpu_flows": lambda: HandCase.make(
        "timeline_cpu_flows",
        _cpu_flow_nodes(),
        [(0, _cpu_flow_step(100)), (3, _cpu_flow_step(900))],
    ),
}
_CACHE: dict[str, HandCase] = {}


def _case(name: str) -> HandCase:
    if name not in _CACHE:
        _CACHE[name] = CASES[name]()
    return _CACHE[name]


def _check_case(name: str, view: str, options: dict[str, Any]) -> dict[str, bytes]:
    case = _case(name)
    oracle = hand_oracle.hand_oracle_for(case)
    return _check(hand_oracle.ours_for(case), oracle.profiler, view, options)


@pytest.mark.parametrize("view", ["scope", "graph"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", sorted(OPTION_SETS))
def test_hand_made(case: str, view: str, name: str) -> None:
    _check_case(case, view, OPTION_SETS[name]())


@pytest.mark.parametrize("view", TREE_VIEWS)
@pytest.mark.parametrize("step", [0, 1, -1])
def test_gpu_steps(view: str, step: int) -> None:
    files = _check_case("gpu", view, B(B.time_and_memory()).with_step(step).build())
    if view == "graph" and step < 0:
        assert _steps(files) == [0, 1]
    else:
        assert _steps(files) == [step]


def test_gpu_memory_counters_and_lanes() -> None:
    files = _check_case("gpu", "graph", B().with_step(1).build())
    events = json.loads(files["tl.json_1"])["traceEvents"]
    names = [e["args"]["name"] for e in events if e["ph"] == "M"]
    assert "Op execution threads: /device:gpu:0/stream:all" in names
    assert "mem usage on:/job:localhost/replica:0/task:0/device:gpu:1 allocations" in names
    assert any(e["ph"] == "C" and e["name"] == "Top Allocations" for e in events)
    assert max(e.get("tid", 0) for e in events if e["ph"] == "X") >= 1
    assert any(e["ph"] == "s" for e in events)


def test_top_allocations_limit() -> None:
    files = _check_case("top_allocations", "graph", B().with_step(4).build())
    events = json.loads(files["tl.json_4"])["traceEvents"]
    tops = [e["args"] for e in events if e.get("name") == "Top Allocations"]
    assert any("Top Allocation 09" in a and a["Top Allocation 09"] != "N/A" for a in tops)


RELOAD_CASES = [(case, view) for case in sorted(CASES) for view in ("scope", "graph")]


@pytest.mark.parametrize(("case", "view"), [*RELOAD_CASES, ("gpu", "code")])
def test_reloaded_profile(case: str, view: str) -> None:
    """A profile saved by us and loaded again gives TF's timelines."""
    saved = hand_oracle.ours_for(_case(case)).serialize_to_string()
    reloaded = tfprof_lite.Profiler.load(saved)
    oracle = hand_oracle.hand_oracle_for(_case(case))
    for step in (-1, 0):
        _check(reloaded, oracle.profiler, view, B(B.time_and_memory()).with_step(step).build())


# ----------------------------------------------------------------- ours only


def test_graph_query_with_negative_step_outside_profiler(caplog: Any) -> None:
    """run_query + emit (no per-step loop) warns like tfprof's graph view and writes nothing."""
    from tfprof_lite.options.options import Options
    from tfprof_lite.outputs.answer import run_query
    from tfprof_lite.outputs.emit import emit
    from tfprof_lite.views import make_view

    prof = hand_oracle.ours_for(_case("gpu"))
    with tempfile.TemporaryDirectory() as tmp:
        opts = Options.from_dict(dict(B().build(), output=f"timeline:outfile={tmp}/tl"))
        with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
            emit(run_query(prof.model, make_view("graph", prof.model), opts))
        assert os.listdir(tmp) == []
    assert [r.getMessage() for r in caplog.records] == [
        "Must specify -step option to generate timeline in graph view."
    ]


def test_children_longer_than_parent_raise() -> None:
    """tfprof aborts (CHECK) when displayed children outlast their parent; we raise."""
    from tfprof_lite.model.profile import ProfileModel
    from tfprof_lite.options.options import Options
    from tfprof_lite.outputs import timeline
    from tfprof_lite.views.node import ROOT_NAME, ShowNode
    from tfprof_lite.views.result import ViewResult
    from tfprof_lite.views.stats import EXEC

    root, kid = ShowNode(ROOT_NAME, -1), ShowNode("a", 0)
    root.total[EXEC], kid.total[EXEC] = 5, 9
    root.children = [kid]
    opts = Options.from_dict(dict(B().build(), output="timeline:outfile=/nonexistent/tl"))
    with pytest.raises(tfprof_lite.TfprofLiteError, match="parent:5 children:9"):
        timeline.render(ViewResult("scope", root, opts, ProfileModel()))

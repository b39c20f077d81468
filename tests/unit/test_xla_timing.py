"""XLA dump file names and cluster compile/run times, on hand-made inputs (no TF)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfprof_lite import xla
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import NodeSpec
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.steps import columns_from_message

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
KERNEL = "__XlaCompiledKernel_true__XlaHasReferenceVars_false__XlaNumConstantArgs_0_"


# ---------------------------------------------------------------- file names
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            f"module_0001.cluster_1{KERNEL}.2.before_optimizations.dot",
            (1, f"cluster_1{KERNEL}.2", "cluster_1", "before_optimizations", "", "dot", ""),
        ),
        (
            f"module_0019.cluster_12{KERNEL}.23.cpu_after_optimizations.txt",
            (19, f"cluster_12{KERNEL}.23", "cluster_12", "after_optimizations", "cpu", "txt", ""),
        ),
        (
            "module_0003.a_inference_f_14__.2.sm_8.0_gpu_after_optimizations.hlo.pb",
            (3, "a_inference_f_14__.2", "a_inference_f_14", "after_optimizations", "sm_8.0_gpu",
             "hlo.pb", ""),
        ),
        (
            "module_0001.cluster_1.2.0001.simplification.after_algsimp.before_dce.dot",
            (1, "cluster_1.2", "cluster_1", "pass", "", "dot",
             "0001.simplification.after_algsimp.before_dce"),
        ),
        ("module_0000.m.1.after_optimizations.html", (0, "m.1", "m", "after_optimizations",
                                                     "", "html", "")),
    ],
)  # fmt: skip
def test_dump_names_are_parsed(name: str, expected: tuple[object, ...]) -> None:
    dump = xla.parse_dump_name(Path("/d") / name)
    assert dump is not None
    got = (dump.module_id, dump.module_name, dump.cluster, dump.stage, dump.platform, dump.fmt,
           dump.pass_label)  # fmt: skip
    assert got == expected
    assert name == f"module_{dump.module_id:04d}.{dump.module_name}.{dump.stage_label}.{dump.fmt}"


@pytest.mark.parametrize(
    "name",
    [
        "module_0001.cluster_1.2.cpu_after_optimizations-buffer-assignment.txt",
        "module_0001.cluster_1.2.cpu_after_optimizations-memory-usage-report.txt",
        "module_0001.cluster_1.2.cpu_after_optimizations.top_level.html",
        "module_0001.cluster_1.2.debug_options",
        "module_0001.cluster_1.2.wrapped_reduce_kernel_module.ir-no-opt.ll",
        "module_0001.cluster_1.2.obj-file.wrapped_reduce_kernel_module.o",
        "cluster_1.before_optimizations.dot",
        "profile_4",
    ],
)
def test_other_files_are_not_dumps(name: str) -> None:
    assert xla.parse_dump_name(name) is None


def test_cluster_of() -> None:
    assert xla.cluster_of(f"cluster_7{KERNEL}.3") == "cluster_7"
    assert xla.cluster_of("cluster_2784157183386817338__.2") == "cluster_2784157183386817338"
    assert xla.cluster_of("jit_f.5") == "jit_f"
    assert xla.cluster_of("__weird") == "__weird"


def _touch(directory: Path, *names: str) -> None:
    for name in names:
        (directory / name).write_text("digraph { }", encoding="utf-8")


def test_find_dumps_orders_and_filters(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "module_0002.cluster_0.1.cpu_after_optimizations.dot",
        "module_0002.cluster_0.1.before_optimizations.txt",
        "module_0002.cluster_0.1.before_optimizations.dot",
        "module_0010.cluster_1.1.0000.p.after_a.before_b.dot",
        "module_0010.cluster_1.1.debug_options",
        "notes.txt",
    )
    dumps = xla.find_dumps(tmp_path)
    assert [(d.module_id, d.stage_label, d.fmt) for d in dumps] == [
        (2, "before_optimizations", "dot"),
        (2, "before_optimizations", "txt"),
        (2, "cpu_after_optimizations", "dot"),
        (10, "0000.p.after_a.before_b", "dot"),
    ]
    assert [d.fmt for d in xla.find_dumps(tmp_path, "txt")] == ["txt"]
    txt = xla.find_dumps(tmp_path, ("txt",))[0]
    assert txt.sibling("dot") == dumps[0] and txt.sibling("hlo.pb") is None


def test_find_dumps_errors(tmp_path: Path) -> None:
    with pytest.raises(xla.HloDumpError, match="--xla_dump_to="):
        xla.find_dumps(tmp_path / "missing")
    with pytest.raises(InvalidOptionError, match="svg"):
        xla.find_dumps(tmp_path, ("svg",))


# ---------------------------------------------------------------- cluster times
def _attr(**kwargs: object) -> bytes:
    value = pb.AttrValue()
    if "func" in kwargs:
        value.func.name = str(kwargs["func"])
    if "b" in kwargs:
        value.b = bool(kwargs["b"])
    data: bytes = value.SerializeToString()
    return data


def _model() -> ProfileModel:
    """Two split clusters, one XlaLaunch, one jit-compiled call, plain ops."""
    model = ProfileModel()
    call_attrs = {"_XlaMustCompile": _attr(b=True), "f": _attr(func="__inference_g_3")}
    model.add_graph(
        [
            NodeSpec("x", "Placeholder"),
            NodeSpec("PartitionedCall", "PartitionedCall", attrs=call_attrs),
            NodeSpec("other", "PartitionedCall", attrs={"f": _attr(func="__inference_h_1")}),
        ]
    )
    steps = {
        0: {"cluster_1_1/xla_compile": 90000, "cluster_1_1/xla_run": 900, "MatMul": 50,
            "cluster_11_1/xla_compile": 5000, "cluster_11_1/xla_run": 20,
            "cluster_11_1/merge_oidx_0": 3, "cluster": 7000, "PartitionedCall": 4000,
            "other": 10},
        1: {"cluster_1_1/xla_compile": 40, "cluster_1_1/xla_run": 500, "MatMul": 50,
            "cluster_11_1/xla_compile": 30, "cluster_11_1/stateful_partitioned_call": 700,
            "cluster": 100, "PartitionedCall": 60, "model/partitioned_call": 9},
    }  # fmt: skip
    for step, durations in steps.items():
        meta = pb.RunMetadata()
        dev = meta.step_stats.dev_stats.add(device=CPU)
        for i, (name, dur) in enumerate(durations.items()):
            dev.node_stats.add(node_name=name, all_start_micros=1000 + i, op_end_rel_micros=dur)
        model.add_step(step, columns_from_message(meta))
    return model


def _dumps(tmp_path: Path) -> list[xla.HloModuleDump]:
    names = [
        f"module_0000.cluster_11{KERNEL}.1.cpu_after_optimizations.dot",
        f"module_0001.cluster_1{KERNEL}.4.before_optimizations.dot",
        f"module_0001.cluster_1{KERNEL}.4.cpu_after_optimizations.dot",
        f"module_0005.cluster_1{KERNEL}.9.cpu_after_optimizations.dot",
        "module_0002.cluster_5551234567__.2.cpu_after_optimizations.dot",
        "module_0003.a_inference_g_3__.2.cpu_after_optimizations.txt",
    ]
    _touch(tmp_path, *names)
    return xla.find_dumps(tmp_path)


def test_cluster_times_sums_per_step_and_links_modules(tmp_path: Path) -> None:
    times = xla.cluster_times(_model(), _dumps(tmp_path))
    by_scope = {t.scope: t for t in times}
    assert list(by_scope) == ["cluster_1_1", "cluster", "cluster_11_1", "PartitionedCall"]
    assert by_scope["cluster_1_1"].fallback_micros == {}
    main = by_scope["cluster_1_1"]
    assert (main.cluster, main.kind) == ("cluster_1", xla.KIND_SPLIT)
    assert main.compile_micros == {0: 90000, 1: 40} and main.run_micros == {0: 900, 1: 500}
    assert main.steps == [0, 1] and main.avg_compile_micros == 45020.0
    assert main.avg_run_micros == 700.0 and main.total_run_micros == 1400
    assert main.module_ids == [1, 5]
    latest = main.module()
    assert latest is not None and latest.module_id == 5
    before = main.module(xla.STAGE_BEFORE)
    assert before is not None and before.module_id == 1
    small = by_scope["cluster_11_1"]
    assert small.cluster == "cluster_11" and small.module_ids == [0]
    assert small.run_micros == {0: 20} and small.compile_micros == {0: 5000, 1: 30}
    # Lazy compilation: a new shape first runs the uncompiled function.
    assert small.fallback_micros == {1: 700} and small.total_micros == 5750
    assert "model" not in by_scope


def test_launch_nodes_and_jit_compiled_calls(tmp_path: Path) -> None:
    by_scope = {t.scope: t for t in xla.cluster_times(_model(), _dumps(tmp_path))}
    launch = by_scope["cluster"]
    assert launch.kind == xla.KIND_LAUNCH and launch.compile_micros == {}
    assert launch.run_micros == {0: 7000, 1: 100}
    assert launch.cluster == "cluster_5551234567" and launch.module_ids == [2]
    call = by_scope["PartitionedCall"]
    assert call.kind == xla.KIND_LAUNCH and call.cluster == "a_inference_g_3"
    assert call.module("after_optimizations", "txt") is not None
    assert "other" not in by_scope


def test_cluster_times_accepts_a_profiler_and_a_directory(tmp_path: Path) -> None:
    _dumps(tmp_path)

    class Holder:
        model = _model()

    times = xla.cluster_times(Holder(), tmp_path)
    assert {t.cluster for t in times} >= {"cluster_1", "cluster_11"}
    unlinked = xla.cluster_times(_model())
    assert all(t.modules == () for t in unlinked)
    assert {t.cluster for t in unlinked} == {
        "cluster_1",
        "cluster_11",
        "cluster",
        "__inference_g_3",
    }
    assert xla.cluster_times(ProfileModel()) == []


def test_format_cluster_times(tmp_path: Path) -> None:
    table = xla.format_cluster_times(xla.cluster_times(_model(), _dumps(tmp_path)))
    lines = table.splitlines()
    assert lines[0].split() == [
        "cluster", "scope", "kind", "steps", "compile", "compile/step", "run", "run/step",
        "fallback", "modules",
    ]  # fmt: skip
    assert lines[1].split() == [
        "cluster_1", "cluster_1_1", "compile+run", "2", "90.04ms", "45.02ms", "1.40ms", "700us",
        "0us", "module_0001,module_0005",
    ]  # fmt: skip
    assert len(lines) == 5

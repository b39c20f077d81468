"""Kernels to HLO instructions and layers on the real JAX captures (H100, JAX 0.11.2).

Both programs run as one CUDA-graph command buffer (every kernel has
``hlo_op=command_buffer_1``). The XSpace is read here with TensorFlow's own
``xplane_pb2`` (a second reader, tests only); the mapping under test gets only the
HloProto bytes of ``/host:metadata`` and the kernels' stats. Independent checks:
the CUDA graph node index of each fusion kernel (``cuda_graph_node_id``), XLA's
HLO text dump of the same program (``hlo/*after_optimizations.txt``), and the
captures' known JAX scopes.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.xspace_data import data_dir
from tfprof_lite.model import xla_align
from tfprof_lite.model.xla_ops import KernelRef, Resolution, XlaOpIndex

CASES = ["jax_h100_mlp", "jax_h100_transformer_bf16"]
#: Per case: (program, custom calls = library GEMM kernels per step, kernels per step).
EXPECTED = {"jax_h100_mlp": (84048, 3, 38), "jax_h100_transformer_bf16": (713131, 28, 369)}
STEPS = 8


def _case_dir(case: str) -> Path:
    return data_dir() / case


@dataclass
class Capture:
    index: XlaOpIndex
    refs: list[KernelRef]
    durations_ps: list[int]
    node_ids: list[int | None]
    resolved: list[Resolution | None]


def _value(names: dict[int, str], stat: Any) -> Any:
    kind = stat.WhichOneof("value")
    return names[stat.ref_value] if kind == "ref_value" else getattr(stat, kind)


@cache
def load(case: str) -> Capture:
    xplane_pb2 = pytest.importorskip("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    (path,) = sorted(_case_dir(case).glob("plugins/profile/*/*.xplane.pb"))
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    index = XlaOpIndex()
    refs: list[KernelRef] = []
    durations: list[int] = []
    nodes: list[int | None] = []
    for plane in space.planes:
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        if plane.name == "/host:metadata":
            for meta in plane.event_metadata.values():
                stats = {names[s.metadata_id]: _value(names, s) for s in meta.stats}
                index.add(stats["Hlo Proto"], stats.get("program_id"))
        if not plane.name.startswith("/device:GPU:"):
            continue
        for line in plane.lines:
            for ev in line.events:
                st = {names[s.metadata_id]: _value(names, s) for s in ev.stats}
                refs.append(KernelRef(
                    plane.event_metadata[ev.metadata_id].name, st.get("hlo_op", ""),
                    st.get("hlo_module", ""), st.get("program_id"), st.get("correlation_id"),
                    line.timestamp_ns * 1000 + ev.offset_ps, "kernel_details" in st, plane.id,
                ))  # fmt: skip
                durations.append(ev.duration_ps)
                node = st.get("cuda_graph_node_id")
                nodes.append(None if node is None else node & 0xFFFFFFFF)
    return Capture(index, refs, durations, nodes, index.resolve_all(refs))


def _kernels(cap: Capture) -> list[int]:
    return [i for i, r in enumerate(cap.refs) if r.is_kernel]


@pytest.mark.parametrize("case", CASES)
def test_every_kernel_maps_to_an_instruction(case: str) -> None:
    cap = load(case)
    kernels = _kernels(cap)
    mapped = [i for i in kernels if cap.resolved[i] is not None]
    program, _, per_step = EXPECTED[case]
    assert len(kernels) == per_step * STEPS
    assert len(mapped) / len(kernels) == 1.0
    assert {cap.resolved[i].op.program_id for i in mapped} == {program}  # type: ignore[union-attr]
    # Every device event with XLA stats maps too (memsets, the jit_stage copies);
    # only the host-to-device transfers of the inputs carry none.
    unmapped = {cap.refs[i].name for i, r in enumerate(cap.resolved) if r is None}
    assert unmapped == {"MemcpyH2D"}
    assert all(not cap.refs[i].hlo_op for i, r in enumerate(cap.resolved) if r is None)


@pytest.mark.parametrize("case", CASES)
def test_scope_times_sum_to_the_kernel_total(case: str) -> None:
    cap = load(case)
    per_scope: Counter[str] = Counter()
    for i in _kernels(cap):
        res = cap.resolved[i]
        assert res is not None
        per_scope[res.op.scope] += cap.durations_ps[i]
    assert sum(per_scope.values()) == sum(cap.durations_ps[i] for i in _kernels(cap))
    assert len(per_scope) > 10  # not one "XlaModule" row


@pytest.mark.parametrize("case", CASES)
def test_fusion_kernels_sit_at_their_cuda_graph_node(case: str) -> None:
    """A fusion kernel's CUDA graph node index is its command's index in the command
    buffer, i.e. its instruction's place in the schedule: an oracle for the mapping,
    also for kernels XLA reused under another fusion's name."""
    cap = load(case)
    program = cap.index.programs[EXPECTED[case][0]]
    sequence = program.sequence()
    checked = reused = 0
    for i in _kernels(cap):
        res, node = cap.resolved[i], cap.node_ids[i]
        assert res is not None and node is not None
        if cap.refs[i].name in program.by_kernel_name:
            assert sequence[node] is res.op
            checked += 1
            reused += cap.refs[i].name != res.op.kernel_name
    assert checked == len(_kernels(cap)) - EXPECTED[case][1] * STEPS
    assert reused > 0  # both programs have reused fusion kernels


@pytest.mark.parametrize("case", CASES)
def test_library_kernels_one_per_cublas_call_per_step(case: str) -> None:
    cap = load(case)
    program_id, calls, _ = EXPECTED[case]
    custom = [op for op in cap.index.programs[program_id].sequence() if op.library]
    assert len(custom) == calls
    assert {op.custom_call_target for op in custom} == {"__cublas$lt$matmul"}
    per_execution: dict[int, list[str]] = defaultdict(list)
    for i in sorted(_kernels(cap), key=lambda i: cap.refs[i].start_ps):
        res = cap.resolved[i]
        if res is not None and res.op.library:
            assert cap.refs[i].name.startswith(("nvjet_", "void cutlass::"))
            per_execution[cap.refs[i].execution or 0].append(res.op.name)
    assert len(per_execution) == STEPS
    for names in per_execution.values():
        assert names == [op.name for op in custom]
    # Each cuBLAS Memset goes with the GEMM kernel launched right after it.
    for i, ref in enumerate(cap.refs):
        if ref.name == "Memset":
            res = cap.resolved[i]
            assert res is not None and res.op.library


def _dump_entry(case: str) -> list[tuple[str, str, str]]:
    (path,) = (_case_dir(case) / "hlo").glob("*gpu_after_optimizations.txt")
    text = path.read_text()
    entry = text[text.index("\nENTRY ") :]
    entry = entry[: entry.index("\n}")]
    rows = []
    pattern = re.compile(
        r"^\s+(?:ROOT )?%(\S+) = (?:\([^)]*\)|\S+) (fusion|custom-call)\(.*?"
        r'metadata=\{(?:op_name="([^"]*)")?',
        re.M,
    )
    for name, opcode, op_name in pattern.findall(entry):
        rows.append((name, opcode, op_name))
    return rows


@pytest.mark.parametrize("case", CASES)
def test_scopes_and_order_equal_xla_text_dump(case: str) -> None:
    cap = load(case)
    program = cap.index.programs[EXPECTED[case][0]]
    ours = program.sequence()
    dump = _dump_entry(case)
    assert [(op.name, op.opcode) for op in ours] == [row[:2] for row in dump]
    for op, (_, _, op_name) in zip(ours, dump, strict=True):
        if op_name:
            assert (op.scope, op.has_metadata) == (op_name, True)
        else:  # taken from inside the fusion, or the module/instruction fallback
            assert op.scope != "" and (op.has_metadata or op.scope.endswith("/" + op.name))
    # A fusion without op_name (a softmax) takes the scope of the work inside it.
    by_name = {op.name: op for op in ours}
    if "fusion.404" in by_name:
        assert by_name["fusion.404"].scope == "jit(train_step)/jvp(Transformer)/block0/attn/div"


def test_mlp_layers_get_time_forward_and_backward() -> None:
    cap = load("jax_h100_mlp")
    per_layer: Counter[tuple[str, str]] = Counter()
    for i in _kernels(cap):
        res = cap.resolved[i]
        assert res is not None
        match = re.search(
            r"(jvp|transpose)\(jvp\(MLP\)\)/mlp/(dense\d|logits)/|jvp\(MLP\)/mlp/(dense\d|logits)/",
            res.op.scope,
        )
        if match:
            direction = "backward" if match.group(1) else "forward"
            per_layer[(direction, match.group(2) or match.group(3))] += cap.durations_ps[i]
    layers = ("dense0", "dense1", "dense2", "logits")
    assert {key for key, ps in per_layer.items() if ps > 0} == {
        (d, layer) for d in ("forward", "backward") for layer in layers
    }
    dense0 = [cap.resolved[i] for i in _kernels(cap) if cap.refs[i].name.startswith("void cutlass")]
    assert (
        Counter(r.op.scope for r in dense0 if r)["jit(train_step)/jvp(MLP)/mlp/dense0/dot_general"]
        == STEPS
    )
    op_types = {cap.resolved[i].op.op_type for i in _kernels(cap)}  # type: ignore[union-attr]
    assert {"dot_general", "add", "reduce_sum", "select_n"} <= op_types


def test_transformer_blocks_and_sublayers_get_time() -> None:
    cap = load("jax_h100_transformer_bf16")
    per_block: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    for i in _kernels(cap):
        res = cap.resolved[i]
        assert res is not None
        categories[res.op.category] += cap.durations_ps[i]
        match = re.search(r"/(block\d)/(attn/\w+|mlp_in|mlp_out)", res.op.scope)
        if match:
            per_block[match.group(0)] += cap.durations_ps[i]
    for block in range(4):
        for part in ("attn/query", "attn/key", "attn/value", "attn/out", "mlp_in", "mlp_out"):
            assert per_block[f"/block{block}/{part}"] > 0, (block, part)
    assert set(categories) == {"matmul", "fusion"}
    assert categories["matmul"] > 0.3 * sum(categories.values())


@pytest.mark.parametrize("case", CASES)
def test_search_alignment_agrees_and_survives_a_lost_kernel(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = load(case)
    program = cap.index.programs[EXPECTED[case][0]]
    first = min(r.execution for r in cap.refs if r.hlo_op.startswith("command_buffer"))
    steps = sorted(
        (i for i in _kernels(cap) if cap.refs[i].execution == first),
        key=lambda i: cap.refs[i].start_ps,
    )
    names = [cap.refs[i].name for i in steps]
    instrs = [op.kernel_name for op in program.sequence()]
    library = [op.library for op in program.sequence()]
    quick = xla_align.align(names, instrs, library, program.by_kernel_name)
    monkeypatch.setattr(xla_align, "_positional", lambda *a: None)
    assert xla_align.align(names, instrs, library, program.by_kernel_name) == quick
    # One fusion kernel and one library kernel missing: the others keep their place.
    lost = {5, names.index(next(n for n in names if n not in program.by_kernel_name))}
    kept = [n for j, n in enumerate(names) if j not in lost]
    again = xla_align.align(kept, instrs, library, program.by_kernel_name)
    assert again == [q for j, q in enumerate(quick) if j not in lost]


@pytest.mark.parametrize("case", CASES)
def test_ops_built_from_the_walk_equal_ops_described_afresh(case: str) -> None:
    """An op takes its kernel name and library flag from the walk that indexed its
    instruction: the same as describing the instruction on its own."""
    from tfprof_lite.model import xla_hlo

    cap = load(case)
    program = cap.index.programs[EXPECTED[case][0]]
    ops = program.ops
    assert isinstance(ops, xla_hlo._LazyOps)
    built = [ops[name] for name in ops]
    assert len(built) > 30
    fresh = [ops._mod.op(ops._instrs[name]) for name in ops]
    assert built == fresh
    assert {op.library for op in built} == {True, False}

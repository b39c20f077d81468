"""JAX on the CPU broken down like a GPU run: XLA's ops on host threads are the ops.

On a JAX CPU training loop profiled in a child process (the ``jax_train``
fixture), every XLA op event on a host thread (an ``hlo_op`` stat per thunk)
becomes a record of the node named by its instruction's ``jax.named_scope``
scope, typed by the framework op and HLO category, as a GPU kernel of the
instruction is; the program's execution is no longer one ``XlaModule`` node
(nor one named after XLA's ``ThunkExecutor::Execute (wait for completion)``).
Checked against the file's own events: the op view's time is the op events'
time inside the steps, the scope view follows the named scopes, the code view
has the loop script's lines, and the overview names a matmul, not idle time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tfprof_lite import Profiler
from tfprof_lite.analysis.overview import overview
from tfprof_lite.formats.xspace.wire.decode import decode_xspace_file
from tfprof_lite.options.builder import ProfileOptionBuilder


def _leaf_op_micros_in_steps(path: str) -> float:
    """The summed duration (us) of the file's host XLA op events that lie inside
    a ``train`` step marker, but for ``while``/``call``-style holders."""
    cols = decode_xspace_file(path)
    start = cols.event_start_ps
    end = start + cols.event_duration_ps
    steps = [e for e in range(len(start)) if cols.event_name(e) == "train"]
    spans = sorted((int(start[e]), int(end[e])) for e in steps)
    total = 0
    for e in range(len(start)):
        stats = cols.event_stat_dict(e)
        op = stats.get("hlo_op")
        if not op or op.startswith(("while", "call", "conditional")):
            continue
        t = int(start[e])
        if any(a <= t < b for a, b in spans):
            total += int(end[e]) - t
    return total / 1e6


@pytest.fixture(scope="module")
def loaded(jax_train: dict[str, Any]) -> Profiler:
    return Profiler.load(jax_train["xspace"])


def test_ops_are_the_xla_ops_not_one_module(loaded: Profiler, jax_train: dict[str, Any]) -> None:
    model = loaded.model
    kinds = {model.ops[i] for i in range(len(model.names))}
    assert "XlaModule" not in kinds and "wait for completion" not in model.index
    assert "dot_general (matmul)" in kinds and "tanh (fusion)" in kinds
    dense0 = "jit(train_step)/jvp(mlp)/dense0/dot_general"
    assert dense0 in model.index
    # every op event inside the steps counts once, in its node
    stats = [model.stats(step) for step in sorted(model.steps)]
    ours = sum(float(np.sum(s.exec_micros)) for s in stats)
    assert ours == pytest.approx(_leaf_op_micros_in_steps(jax_train["xspace"]), rel=0.01, abs=20)
    dense0_micros = sum(float(s.exec_micros[model.index[dense0]]) for s in stats)
    assert dense0_micros > 0.1 * ours  # the biggest matmul is the biggest op


def _options(depth: int) -> dict[str, Any]:
    built: dict[str, Any] = (
        ProfileOptionBuilder(ProfileOptionBuilder.time_and_memory(min_micros=0, min_bytes=0))
        .with_max_depth(depth)
        .with_empty_output()
        .build()
    )
    return built


def test_scope_view_follows_named_scopes(loaded: Profiler) -> None:
    names = _names(loaded.profile_name_scope(_options(8)))
    for scope in ("jvp(mlp)", "jvp(mlp)/dense0", "jvp(mlp)/logits", "transpose(jvp(mlp))"):
        assert f"jit(train_step)/{scope}" in names


def _names(node: Any) -> set[str]:
    out = {node.name}
    for child in node.children:
        out |= _names(child)
    return out


def test_code_view_has_the_loop_lines(loaded: Profiler) -> None:
    names = "\n".join(_names(loaded.profile_python(_options(20))))
    assert "jax_train_capture.py" in names and "loss" in names


def _type_micros(model: Any, step: int) -> dict[str, int]:
    """Step ``step``'s self time (us) per op type, from the model's statistics."""
    out: dict[str, int] = {}
    for nid, micros in enumerate(model.stats(step).exec_micros.tolist()):
        out[model.ops[nid]] = out.get(model.ops[nid], 0) + micros
    return out


def test_overview_names_the_matmul(loaded: Profiler) -> None:
    model = loaded.model
    page = overview(model)
    whole = [s for s in model.sorted_steps() if s not in model.cut_steps]
    per_step = [_type_micros(model, step) for step in whole]
    # The overview's top op type is the one with the most self time in the
    # whole steps.
    totals = {op: sum(step.get(op, 0) for step in per_step) for op in per_step[0]}
    assert page.top_ops and page.top_ops[0].op == max(totals, key=totals.__getitem__)
    # A matmul is what the steps spend most on: the type with the highest median
    # step time (one op of a step that the machine's load preempted can top the
    # sum: 'sub (fusion)' 0.8 ms once, with two test suites sharing 2 cores).
    medians = {op: float(np.median([step.get(op, 0) for step in per_step])) for op in totals}
    assert max(medians, key=medians.__getitem__).endswith("(matmul)"), medians
    assert "mostly waiting" not in page.recommendation

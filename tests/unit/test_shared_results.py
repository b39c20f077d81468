"""Results shared within one report run (:mod:`tfprof_lite.base.shared`)."""

from __future__ import annotations

import pytest

from tests.unit.cli import profiles
from tfprof_lite.analysis import input_pipeline as input_mod
from tfprof_lite.analysis import memory as memory_mod
from tfprof_lite.analysis import steptime as steptime_mod
from tfprof_lite.base.shared import is_sharing, shared, sharing
from tfprof_lite.report import render_html
from tfprof_lite.report import sections as sections_mod
from tfprof_lite.views import query as query_mod


def test_outside_a_block_every_call_builds() -> None:
    calls: list[int] = []
    owner = object()
    assert not is_sharing()
    for _ in range(2):
        shared("k", owner, lambda: calls.append(1))
    assert calls == [1, 1]


def test_inside_a_block_once_per_key_and_owner() -> None:
    calls: list[str] = []
    first, second = object(), object()

    def build(tag: str) -> list[str]:
        calls.append(tag)
        return [tag]

    with sharing():
        assert is_sharing()
        a = shared("k", first, lambda: build("a"))
        assert shared("k", first, lambda: build("again")) is a
        shared("other", first, lambda: build("b"))
        shared("k", second, lambda: build("c"))
        with sharing():  # nested: the same results
            assert shared("k", first, lambda: build("nested")) is a
    assert calls == ["a", "b", "c"]
    assert not is_sharing()
    with sharing():  # a new block starts empty
        assert shared("k", first, lambda: build("d")) == ["d"]


def test_memory_profile_is_the_same_for_each_top_when_shared() -> None:
    model = profiles.profiler().model
    alone = {top: memory_mod.memory_profile(model, top=top) for top in (1, 3, 10)}
    with sharing():
        together = {top: memory_mod.memory_profile(model, top=top) for top in (10, 1, 3)}
    assert any(a.by_op for s in alone[10].steps for a in s.allocators)
    for top, report in alone.items():
        assert together[top] == report


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each shared analysis is computed."""
    counts: dict[str, int] = {}
    targets = [
        (memory_mod, "_all"),
        (input_mod, "_steps"),
        (steptime_mod, "_step_times"),
        (query_mod, "make_view"),
        (sections_mod, "_step_times"),
    ]
    for module, name in targets:
        real = getattr(module, name)
        label = f"{module.__name__.rsplit('.', 1)[1]}.{name}"

        def spy(*args: object, _real: object = real, _name: str = label) -> object:
            counts[_name] = counts.get(_name, 0) + 1
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(module, name, spy)
    return counts


def test_a_report_computes_each_shared_analysis_once(counted: dict[str, int]) -> None:
    page = render_html(profiles.profiler().model, source="synthetic")
    assert "MemoryChecker" in page and "StepTimeChecker" in page
    # memory: the section and MemoryChecker; input: the step chart and its checker;
    # step times: overview, step chart, StepTimeChecker; views: scope, op and
    # code, each queried by the report and by ExpensiveOperationChecker; the
    # summed op time per step: overview and step chart
    assert counted == {
        "memory._all": 1,
        "input_pipeline._steps": 1,
        "steptime._step_times": 1,
        "query.make_view": 3,
        "sections._step_times": 1,
    }


def test_a_report_of_an_xspace_computes_its_code_stacks_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The code stacks an XSpace defers to first use are built once per report (the
    code table, flame graph and ExpensiveOperationChecker all read them)."""
    from tests.xspace_data import JAX_CASES, jax_file
    from tfprof_lite import Profiler
    from tfprof_lite.formats.xspace.read import code as xspace_code

    model = Profiler.load(str(jax_file(JAX_CASES[1]))).model
    calls: list[int] = []
    real = xspace_code.add_code_stacks

    def spy(model: object, stacks: object) -> None:
        calls.append(1)
        real(model, stacks)  # type: ignore[arg-type]

    monkeypatch.setattr(xspace_code, "add_code_stacks", spy)
    page = render_html(model, source="jax")
    assert calls == [1]
    assert 'id="t-code"' in page
